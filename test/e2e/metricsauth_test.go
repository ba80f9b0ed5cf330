package e2e

// --metrics-auth kubernetes against the fake API (fakeapi_reviews_test.go):
// the metrics port speaks TLS with the serving certificate; /metrics
// answers 401 without a token or with one the TokenReview rejects, 403 to a
// user the SubjectAccessReview denies, 200 to a reader, 503 when the API
// fails (never open), and a decision is reused for a while (two API calls,
// not two per scrape). /healthz and /readyz stay open for the probes. It is
// the default whenever the webhook uses the API.

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	readerToken = "reader-token-1"
	readerUser  = "system:serviceaccount:monitoring:prometheus"
	otherToken  = "other-token-1"
	otherUser   = "system:serviceaccount:default:nobody"
)

// startAuthedMetrics is a fake API with a reader and a non-reader, and a
// serve on it with the default --metrics-auth (kubernetes, as the API is
// used), plus extra flags.
func startAuthedMetrics(t *testing.T, extra ...string) (*fakeAPI, *instance) {
	t.Helper()
	a := startFakeAPI(t)
	a.addReviewToken(readerToken, fakeUser{Username: readerUser, UID: "u-1",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"}})
	a.addReviewToken(otherToken, fakeUser{Username: otherUser, Groups: []string{"system:authenticated"}})
	a.allowMetrics(readerUser)
	in := startInstance(t, profilesPath, append(a.apiFlags(), extra...)...)
	return a, in
}

func (in *instance) metricsHTTPS(p string) string { return "https://" + in.metrics + p }

// scrape is GET url with "Authorization: Bearer token" (none for "").
func (in *instance) scrape(t *testing.T, url, token string) (int, http.Header, string) {
	t.Helper()
	req := newRequest(t, http.MethodGet, url, "", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := in.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v%s", url, err, in.state())
	}
	return resp.StatusCode, resp.Header, string(readAll(resp))
}

func reviews(a *fakeAPI, from int) (tokenReviews, sars int) {
	tokenReviews = a.count(from, func(r apiRequest) bool { return r.Kind == "create-tokenreview" })
	sars = a.count(from, func(r apiRequest) bool { return r.Kind == "create-subjectaccessreview" })
	return
}

func TestMetricsAuthDecidesByTheAPI(t *testing.T) {
	a, in := startAuthedMetrics(t)
	if !strings.Contains(tail(in.stderrPath), `"metrics_auth":"kubernetes"`) {
		t.Errorf("the serving line should say metrics_auth kubernetes (the default with the API); stderr:\n%s", tail(in.stderrPath))
	}
	// Probes need no token, over the same TLS.
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _, body := in.scrape(t, in.metricsHTTPS(p), ""); code != http.StatusOK {
			t.Errorf("GET %s without a token: %d %q, want 200 (the kubelet's probes carry none)", p, code, body)
		}
	}
	mark := a.requestMark()
	code, h, body := in.scrape(t, in.metricsHTTPS("/metrics"), "")
	if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != "Bearer" || !strings.Contains(body, "Bearer") {
		t.Errorf("no token: %d %v %q, want 401 with WWW-Authenticate: Bearer", code, h, body)
	}
	if tr, sar := reviews(a, mark); tr+sar != 0 {
		t.Errorf("no token should ask the API nothing; it made %d TokenReviews, %d SARs", tr, sar)
	}
	if code, _, body = in.scrape(t, in.metricsHTTPS("/metrics"), "made-up-token"); code != http.StatusUnauthorized {
		t.Errorf("a token the TokenReview rejects: %d %q, want 401", code, body)
	}
	if code, _, body = in.scrape(t, in.metricsHTTPS("/metrics"), otherToken); code != http.StatusForbidden ||
		!strings.Contains(body, "rdma-webhook-metrics-reader") {
		t.Errorf("a user without get on /metrics: %d %q, want 403 naming the reader role", code, body)
	}
	if code, _, body = in.scrape(t, in.metricsHTTPS("/metrics"), readerToken); code != http.StatusOK ||
		!strings.Contains(body, "rdma_webhook_") {
		t.Errorf("a reader: %d %q, want 200 with the metrics", code, body)
	}
	// Each verdict is counted, this very scrape among the allowed.
	for _, want := range []string{`rdma_webhook_metrics_auth_total{result="allowed"} 1`,
		`rdma_webhook_metrics_auth_total{result="no_token"} 1`, `rdma_webhook_metrics_auth_total{result="bad_token"} 1`,
		`rdma_webhook_metrics_auth_total{result="forbidden"} 1`, `rdma_webhook_metrics_auth_total{result="unavailable"} 0`,
		`rdma_webhook_http_errors_total{code="401"} 2`, `rdma_webhook_http_errors_total{code="403"} 1`,
		`rdma_webhook_http_errors_total{code="500"} 0`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The SAR the webhook sent carried the reader's identity and the URL.
	found := false
	for _, r := range a.requests()[mark:] {
		if r.Kind == "create-subjectaccessreview" && strings.Contains(string(r.Body), readerUser) {
			found = true
			for _, want := range []string{`"uid":"u-1"`, `"system:serviceaccounts:monitoring"`, `"path":"/metrics"`, `"verb":"get"`} {
				if !strings.Contains(string(r.Body), want) {
					t.Errorf("the SubjectAccessReview lacks %s: %s", want, r.Body)
				}
			}
		}
	}
	if !found {
		t.Errorf("no SubjectAccessReview for %s was sent", readerUser)
	}
}

func TestMetricsAuthIsCached(t *testing.T) {
	a, in := startAuthedMetrics(t)
	mark := a.requestMark()
	for i := 0; i < 3; i++ {
		if code, _, body := in.scrape(t, in.metricsHTTPS("/metrics"), readerToken); code != http.StatusOK {
			t.Fatalf("scrape %d: %d %q", i, code, body)
		}
		if code, _, _ := in.scrape(t, in.metricsHTTPS("/metrics"), otherToken); code != http.StatusForbidden {
			t.Fatalf("denied scrape %d: %d", i, code)
		}
	}
	if tr, sar := reviews(a, mark); tr != 2 || sar != 2 {
		t.Errorf("3 scrapes each of two tokens within the cache's 10 s made %d TokenReviews and %d SARs, want 2 and 2", tr, sar)
	}
}

func TestMetricsAuthAPIDownIs503(t *testing.T) {
	a, in := startAuthedMetrics(t)
	a.setFailure("/apis/authentication.k8s.io/", http.StatusInternalServerError)
	if code, _, body := in.scrape(t, in.metricsHTTPS("/metrics"), readerToken); code != http.StatusServiceUnavailable {
		t.Errorf("TokenReview failing: %d %q, want 503 (never open)", code, body)
	}
	a.setFailure("/apis/authentication.k8s.io/", 0)
	a.setFailure("/apis/authorization.k8s.io/", http.StatusForbidden)
	if code, _, body := in.scrape(t, in.metricsHTTPS("/metrics"), readerToken); code != http.StatusServiceUnavailable {
		t.Errorf("SubjectAccessReview refused to the webhook: %d %q, want 503", code, body)
	}
	in.waitLog(t, 0, 5*time.Second, "the cannot-authorize warning", func(l obj) bool {
		msg, _ := l["msg"].(string)
		return strings.HasPrefix(msg, "cannot authorize a /metrics request")
	})
	// A 503 is not remembered: once the API answers, so does /metrics.
	a.setFailure("/apis/authorization.k8s.io/", 0)
	if code, _, body := in.scrape(t, in.metricsHTTPS("/metrics"), readerToken); code != http.StatusOK {
		t.Errorf("API back: %d %q, want 200", code, body)
	}
	// And the API down entirely: still 503, not open.
	a.stop()
	if code, _, body := in.scrape(t, in.metricsHTTPS("/metrics"), "yet-another-token"); code != http.StatusServiceUnavailable {
		t.Errorf("API down: %d %q, want 503", code, body)
	}
}

func TestMetricsAuthPlainHTTPIsRefused(t *testing.T) {
	_, in := startAuthedMetrics(t)
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + in.metrics + "/metrics")
	if err == nil {
		body := readAll(resp)
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP to the TLS metrics port got 200: %q", body)
		}
	}
}

func TestMetricsAuthNoneKeepsPlainHTTP(t *testing.T) {
	a := startFakeAPI(t)
	in := startInstance(t, profilesPath, append(a.apiFlags(), "--metrics-auth", "none")...)
	if got := in.metric(t, "rdma_webhook_patch_operations_total"); got == "" {
		t.Errorf("--metrics-auth none: no rdma_webhook_patch_operations_total over plain HTTP")
	}
	if n := a.count(0, func(r apiRequest) bool { return r.Kind == "create-tokenreview" }); n != 0 {
		t.Errorf("--metrics-auth none made %d TokenReviews", n)
	}
}

func TestMetricsAuthFlagErrors(t *testing.T) {
	dir := t.TempDir()
	if err := copyCerts(dir); err != nil {
		t.Fatal(err)
	}
	base := []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--profiles", profilesPath,
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key")}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBERNETES_SERVICE_") {
			env = append(env, e)
		}
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"bad mode", []string{"--metrics-auth", "open"}, []string{"--metrics-auth", "kubernetes or none"}},
		{"with --no-kube-api", []string{"--metrics-auth", "kubernetes", "--no-kube-api"}, []string{"--no-kube-api", "--metrics-auth none"}},
		{"no API", []string{"--metrics-auth", "kubernetes"}, []string{"--kube-api", "--metrics-auth none"}},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			res, exited := runBinaryWithin(t, env, 5*time.Second, append(append([]string{}, base...), c.args...)...)
			if !exited || (res.exitCode != 1 && res.exitCode != 2) {
				t.Fatalf("want exit 1 or 2, got exited=%v %d; stderr:\n%s", exited, res.exitCode, res.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(string(res.stderr), w) {
					t.Errorf("the message should name %s:\n%s", w, res.stderr)
				}
			}
		})
	}
}

// TestMetricsAuthSlowAPIKeepsProbes: checks waiting for a slow API hold a
// thread each, at most two at once; a third new token is 503 at once, and
// the probes and a cached token are answered meanwhile (the kubelet gives a
// probe 1 s).
func TestMetricsAuthSlowAPIKeepsProbes(t *testing.T) {
	a, in := startAuthedMetrics(t)
	if code, _, _ := in.scrape(t, in.metricsHTTPS("/metrics"), readerToken); code != http.StatusOK {
		t.Fatalf("warming the cache: %d", code)
	}
	for _, tok := range []string{"slow-1", "slow-2", "slow-3"} {
		a.addReviewToken(tok, fakeUser{Username: readerUser})
	}
	const delay = 1500 * time.Millisecond
	a.setDelay("/apis/authentication.k8s.io/", delay)
	codes := make(chan int, 2)
	for _, tok := range []string{"slow-1", "slow-2"} {
		tok := tok
		go func() {
			c := in.newClient(10 * time.Second)
			defer c.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodGet, in.metricsHTTPS("/metrics"), nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := c.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			readAll(resp)
			codes <- resp.StatusCode
		}()
	}
	// Both are waiting for the fake once it has their TokenReviews.
	mark := 0
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n, _ := reviews(a, mark); n >= 3 { // the warm-up's and the two slow ones
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the two slow checks never reached the fake API")
		}
	}
	fresh := func(what, url, token string, want int) {
		c := in.newClient(5 * time.Second)
		defer c.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		start := time.Now()
		resp, err := c.Do(req)
		took := time.Since(start)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		readAll(resp)
		if resp.StatusCode != want || took > 700*time.Millisecond {
			t.Errorf("%s while two checks wait for the API: %d after %v, want %d at once", what, resp.StatusCode, took, want)
		}
	}
	fresh("/healthz", in.metricsHTTPS("/healthz"), "", http.StatusOK)
	fresh("/readyz", in.metricsHTTPS("/readyz"), "", http.StatusOK)
	fresh("a cached token", in.metricsHTTPS("/metrics"), readerToken, http.StatusOK)
	fresh("a third new token", in.metricsHTTPS("/metrics"), "slow-3", http.StatusServiceUnavailable)
	for i := 0; i < 2; i++ {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a slow check: %d, want 200 once the API answered", code)
		}
	}
}

// TestMetricsAuthPortFollowsCertRotation: the metrics port presents the
// serving pair, and a rotated pair (the files rewritten, as cert-manager
// renews a Secret) is what new handshakes get there too.
func TestMetricsAuthPortFollowsCertRotation(t *testing.T) {
	gens, roots := certGenerations(t, 2)
	crt, key := liveCopyOf(t, gens[0])
	a := startFakeAPI(t)
	in := startOwn(t, instanceOptions{profiles: profilesPath, roots: roots,
		args: append(a.apiFlags(), "--reload-interval-ms", "100", "--tls-cert-file", crt, "--tls-private-key-file", key)})
	first, second := certSerial(t, filepath.Join(gens[0], "tls.crt")), certSerial(t, filepath.Join(gens[1], "tls.crt"))
	if got := servedSerial(t, in.metrics); got != first {
		t.Fatalf("the metrics port presents serial %q, want the serving certificate's %q", got, first)
	}
	for _, f := range []string{"tls.key", "tls.crt"} {
		tmp := filepath.Join(filepath.Dir(crt), "."+f)
		copyFile(t, filepath.Join(gens[1], f), tmp)
		if err := os.Rename(tmp, filepath.Join(filepath.Dir(crt), f)); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); servedSerial(t, in.metrics) != second; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the metrics port still presents %q 10 s after the rotation, want %q", servedSerial(t, in.metrics), second)
		}
	}
	if got := servedSerial(t, in.addr); got != second {
		t.Errorf("the HTTPS port presents %q after the rotation, want %q", got, second)
	}
}
