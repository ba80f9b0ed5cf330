package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// labelBomb is a profiles document of 64 profiles that share labels
// nodeLabels and differ only in one more, so that every pair's labels are
// compared to the end: about 1 MiB for 1,584 labels, a ConfigMap the
// apiserver stores.
func labelBomb(t *testing.T, labels int) string {
	t.Helper()
	type profile struct {
		Name  string         `json:"name"`
		Match map[string]any `json:"match"`
		HCA   []string       `json:"hca"`
	}
	var ps []profile
	for i := 0; i < 64; i++ {
		l := map[string]string{"z": fmt.Sprintf("p%d", i)}
		for k := 0; k < labels; k++ {
			l[fmt.Sprintf("l%d", k)] = ""
		}
		ps = append(ps, profile{fmt.Sprintf("p%d", i), map[string]any{"nodeLabels": l}, []string{"mlx5_1"}})
	}
	text, err := json.Marshal(map[string]any{"profiles": ps})
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// TestValidateProfilesLabelBomb: a 1 MiB document of 64 profiles × 1,584
// shared nodeLabels, which took about 20 s of CPU to check (every pair of
// profiles, every label against every label), is answered at once, refused
// for the bound on nodeLabels; so is a 1 MiB env of 85,000 variables.
func TestValidateProfilesLabelBomb(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath)
	text := labelBomb(t, 1584)
	if len(text) > 1<<20 {
		t.Fatalf("the document is %d bytes, over a ConfigMap's 1 MiB", len(text))
	}
	in.client.Timeout = 60 * time.Second
	start := time.Now()
	resp := validateProfiles(t, in, profilesReview(t, "UPDATE", text))
	took := time.Since(start)
	t.Logf("/validate-profiles answered the label bomb in %v", took)
	if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "more than 64") {
		t.Errorf("want a refusal naming the bound on nodeLabels, got %+v", resp)
	}
	// Generous: a guard against the quadratic check, not a timing.
	if limit := slowerUnderValgrind(5 * time.Second); took > limit {
		t.Errorf("/validate-profiles took %v for the label bomb, over %v", took, limit)
	}
	// 85,000 env variables in defaults: each merged by comparing it with
	// every earlier one (30 s for one profile, 60 s with the defaults').
	env := map[string]string{}
	for k := 0; k < 85000; k++ {
		env[fmt.Sprintf("A%d", k)] = ""
	}
	envBomb, err := json.Marshal(map[string]any{"defaults": map[string]any{"env": env},
		"profiles": []any{map[string]any{"name": "p", "match": map[string]any{"gpus": 8}, "hca": []string{"mlx5_1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	resp = validateProfiles(t, in, profilesReview(t, "UPDATE", string(envBomb)))
	took = time.Since(start)
	t.Logf("/validate-profiles answered the env bomb (%d bytes) in %v", len(envBomb), took)
	if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "at most 127 variables") {
		t.Errorf("want a refusal naming the bound on env, got %+v", resp)
	}
	if limit := slowerUnderValgrind(5 * time.Second); took > limit {
		t.Errorf("/validate-profiles took %v for the env bomb, over %v", took, limit)
	}
}

// TestValidateProfilesBodyCap: /validate-profiles takes at most 4 MiB, the
// most a review of a ConfigMap holds, though /mutate takes --max-body-bytes
// (8 MiB here).
func TestValidateProfilesBodyCap(t *testing.T) {
	t.Parallel()
	big := []byte(`{"pad":"` + strings.Repeat("x", 5<<20) + `"}`)
	for _, chunked := range []bool{false, true} {
		r := srv.rawPost(t, "/validate-profiles", big, chunked)
		if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.body), "4 MiB") {
			t.Errorf("a 5 MiB /validate-profiles body (chunked %v): HTTP %d %q, want 413 naming 4 MiB", chunked, r.status, cut(r.body))
		}
	}
	if r := srv.rawPost(t, "/mutate", big, false); r.status != http.StatusBadRequest {
		t.Errorf("the same body to /mutate: HTTP %d %q, want 400 (read, not an AdmissionReview)", r.status, cut(r.body))
	}
}

// TestValidateProfilesCannotStarveMutate: two clients posting the label bomb
// to /validate-profiles over and over, one on each of the two worker
// threads' connections, must leave /mutate answered promptly: before, each
// such POST held a thread for about 20 s and admissions waited behind it.
func TestValidateProfilesCannotStarveMutate(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath, "--threads", "2")
	body := profilesReview(t, "UPDATE", labelBomb(t, 1584))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := in.newClient(120 * time.Second)
			defer c.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Post(in.url("/validate-profiles"), "application/json", strings.NewReader(string(body)))
				if err != nil {
					continue
				}
				readAll(resp)
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // both attackers under way
	mutate := in.newClient(30 * time.Second)
	var lat []time.Duration
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		req := newRequest(t, "POST", in.url("/mutate"), "application/json",
			strings.NewReader(string(mustMarshal(podCreate("kubeflow", trainingPod(8)).body()))))
		start := time.Now()
		resp, err := mutate.Do(req)
		if err != nil {
			t.Fatalf("/mutate during the attack: %v%s", err, in.state())
		}
		readAll(resp)
		lat = append(lat, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/mutate during the attack: HTTP %d", resp.StatusCode)
		}
		// New connections too: the kernel spreads them over both threads.
		mutate.CloseIdleConnections()
	}
	close(stop)
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p99 := lat[len(lat)*99/100]
	t.Logf("/mutate during the attack: %d answered in 3 s (%.1f/s), p50 %v, p99 %v, max %v; /validate-profiles statuses %v",
		len(lat), float64(len(lat))/3, lat[len(lat)/2], p99, lat[len(lat)-1], statuses)
	// Generous: the thread was held for seconds before; a bound against that.
	if limit := slowerUnderValgrind(2 * time.Second); lat[len(lat)-1] > limit {
		t.Errorf("a /mutate waited %v during the attack, over %v", lat[len(lat)-1], limit)
	}
}
