package e2e

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPErrors: the errors of docs/reference.md "HTTP statuses" over the wire, each followed by a good
// request that must still succeed.
func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		send   func(t *testing.T) reply
	}{
		{"GET /mutate", http.StatusMethodNotAllowed, func(t *testing.T) reply {
			return srv.get(t, srv.url("/mutate"))
		}},
		{"POST /nope", http.StatusNotFound, func(t *testing.T) reply {
			return srv.post(t, "/nope", "application/json", goodReviewBody())
		}},
		{"body not JSON", http.StatusBadRequest, func(t *testing.T) reply {
			return srv.post(t, "/mutate", "application/json", []byte("not json"))
		}},
		{"JSON that is not an AdmissionReview", http.StatusBadRequest, func(t *testing.T) reply {
			return srv.post(t, "/mutate", "application/json", []byte(`{"kind":"Pod"}`))
		}},
		{"review without request.uid", http.StatusBadRequest, func(t *testing.T) reply {
			return srv.post(t, "/mutate", "application/json", reviewWithoutUID())
		}},
		{"Content-Type text/plain", http.StatusUnsupportedMediaType, func(t *testing.T) reply {
			return srv.post(t, "/mutate", "text/plain", goodReviewBody())
		}},
		{"9 MiB body with Content-Length", http.StatusRequestEntityTooLarge, func(t *testing.T) reply {
			return srv.rawPost(t, "/mutate", hugeReview(9<<20), false)
		}},
		{"9 MiB body, chunked", http.StatusRequestEntityTooLarge, func(t *testing.T) reply {
			return srv.rawPost(t, "/mutate", hugeReview(9<<20), true)
		}},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			rep := c.send(t)
			if rep.status != c.status {
				t.Errorf("expected status %d, got %d: %q", c.status, rep.status, cut(rep.body))
			}
			if c.status == http.StatusBadRequest {
				checkOneLineReason(t, rep)
			}
			checkStillServing(t)
		})
	}
}

// checkOneLineReason: a 400 carries a one-line text/plain reason, ending in
// a newline like every other text reply.
func checkOneLineReason(t *testing.T, rep reply) {
	t.Helper()
	if !strings.HasPrefix(rep.contentType, "text/plain") {
		t.Errorf("400 Content-Type: expected text/plain, got %q", rep.contentType)
	}
	reason := strings.TrimSuffix(string(rep.body), "\n")
	if !strings.HasSuffix(string(rep.body), "\n") || strings.TrimSpace(reason) == "" ||
		strings.Contains(reason, "\n") {
		t.Errorf("400 body: expected one line of reason and a newline, got %q", rep.body)
	}
}

// checkStillServing: a good review right after must still be answered.
func checkStillServing(t *testing.T) {
	t.Helper()
	r := podCreate("kubeflow", trainingPod(8))
	if rr := srv.review(t, r); rr.patch == nil {
		t.Errorf("good request after the error: expected a patch, got none: %s", compact(rr.response))
	}
}

func goodReviewBody() []byte {
	return mustMarshal(podCreate("kubeflow", trainingPod(8)).body())
}

func reviewWithoutUID() []byte {
	review := podCreate("kubeflow", trainingPod(8)).body()
	delete(review["request"].(obj), "uid")
	return mustMarshal(review)
}

// hugeReview is a well-formed review of about size bytes (a big annotation),
// so that only its size is wrong.
func hugeReview(size int) []byte {
	pod := trainingPod(8)
	pod["metadata"].(obj)["annotations"] = obj{"e2e/padding": strings.Repeat("x", size)}
	return mustMarshal(podCreate("kubeflow", pod).body())
}

func cut(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "...(cut)"
	}
	return string(b)
}

// TestHealthEndpoints: /healthz and /readyz answer 200 "ok" on the HTTPS
// port and on the plain metrics port.
func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	plain := &http.Client{Timeout: requestTimeout}
	tlsClient := srv.shared()
	for _, p := range []string{"/healthz", "/readyz"} {
		for _, target := range []struct {
			url    string
			client *http.Client
		}{{srv.url(p), tlsClient}, {srv.metricsURL(p), plain}} {
			rep := do(t, target.client, newRequest(t, http.MethodGet, target.url, "", nil))
			if rep.status != http.StatusOK || string(bytes.TrimSpace(rep.body)) != "ok" {
				t.Errorf("GET %s: expected 200 \"ok\", got %d %q", target.url, rep.status, cut(rep.body))
			}
		}
	}
}

// TestContentTypeParameters: application/json with a charset parameter is
// still JSON.
func TestContentTypeParameters(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"application/json; charset=utf-8", "application/json;charset=UTF-8"} {
		if rep := srv.post(t, "/mutate", ct, goodReviewBody()); rep.status != http.StatusOK {
			t.Errorf("Content-Type %q: expected 200, got %d %q", ct, rep.status, cut(rep.body))
		}
	}
}
