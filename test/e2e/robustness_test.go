package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestUnprocessablePods: a well-formed review whose pod cannot be processed
// is allowed, without a patch, with a warning (docs/reference.md "HTTP statuses"), and the server
// keeps serving.
func TestUnprocessablePods(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		spoil func(obj)
	}{
		{"containers is a string", func(p obj) { p["spec"].(obj)["containers"] = "x" }},
		{"env is an object", func(p obj) { containerByName(p, "pytorch")["env"] = obj{"NCCL_DEBUG": "INFO"} }},
		{"resources.limits is an array", func(p obj) {
			containerByName(p, "pytorch")["resources"] = obj{"limits": []interface{}{"nvidia.com/gpu"}}
		}},
		{"volumes is a number", func(p obj) { p["spec"].(obj)["volumes"] = 3 }},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			pod := trainingPod(8)
			c.spoil(pod)
			rr := srv.review(t, podCreate("kubeflow", pod))
			if rr.patch != nil {
				t.Errorf("expected no patch for a pod that cannot be processed, got %s", rr.patch)
			}
			if len(rr.warnings) == 0 {
				t.Errorf("expected a warning saying the pod could not be processed, got none: %s", compact(rr.response))
			}
			checkStillServing(t)
		})
	}
}

// TestPodObjectNull: a Pod CREATE without an object is allowed untouched.
func TestPodObjectNull(t *testing.T) {
	t.Parallel()
	r := podCreate("kubeflow", nil)
	r.name = "e2e-null"
	r.object = nil
	if rr := srv.review(t, r); rr.patch != nil {
		t.Errorf("expected no patch, got %s", rr.patch)
	}
	checkStillServing(t)
}

// TestBodyUnderLimit: a 7 MiB review (under the 8 MiB default) is served.
func TestBodyUnderLimit(t *testing.T) {
	t.Parallel()
	rep := srv.rawPost(t, "/mutate", hugeReview(7<<20), false)
	if rep.status != http.StatusOK {
		t.Fatalf("7 MiB review: expected 200, got %d %q", rep.status, cut(rep.body))
	}
	resp, err := decodeObject(rep.body)
	if err != nil || path(resp, "response", "allowed") != true || path(resp, "response", "patch") == nil {
		t.Errorf("7 MiB review: expected allowed with a patch, got %q (%v)", cut(rep.body), err)
	}
}

// TestConcurrentReviews: parallel clients each get the answer to their own
// request (uid and profile), as the apiserver's many connections do.
func TestConcurrentReviews(t *testing.T) {
	t.Parallel()
	const workers = 8
	perWorker := 25
	if underValgrind() {
		// Still 8 connections at once on the server's threads, each
		// request checked; memcheck needs the concurrent path taken, not
		// taken 25 times over.
		perWorker = 5
	}
	errs := make(chan string, workers*perWorker)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			concurrentWorker(w, perWorker, errs)
		}(w)
	}
	wg.Wait()
	close(errs)
	var all []string
	for e := range errs {
		all = append(all, e)
	}
	if len(all) > 0 {
		t.Errorf("%d of %d concurrent reviews went wrong, e.g.:\n%s", len(all), workers*perWorker,
			strings.Join(all[:minInt(len(all), 5)], "\n"))
	}
}

func concurrentWorker(w, n int, errs chan<- string) {
	client := srv.client(0, 0)
	defer client.CloseIdleConnections()
	gpus := []int{4, 8}[w%2]
	want := map[int]string{4: "roce-4card", 8: "roce-8card"}[gpus]
	for i := 0; i < n; i++ {
		r := podCreate("kubeflow", trainingPod(gpus))
		resp, err := client.Post(srv.url("/mutate"), "application/json", bytes.NewReader(mustMarshal(r.body())))
		if err != nil {
			errs <- fmt.Sprintf("worker %d request %d: %v", w, i, err)
			return
		}
		body := readAll(resp)
		got, _ := decodeObject(body)
		if resp.StatusCode != http.StatusOK || path(got, "response", "uid") != r.uid ||
			path(got, "response", "auditAnnotations", "profile") != want {
			errs <- fmt.Sprintf("worker %d request %d: expected 200 uid %s profile %s, got %d %s",
				w, i, r.uid, want, resp.StatusCode, cut(body))
		}
	}
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
