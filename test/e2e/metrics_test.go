package e2e

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// scrape reads the plain port's /metrics into sample -> value, keyed by the
// sample exactly as exposed (name plus labels).
func scrape(t *testing.T) map[string]float64 {
	t.Helper()
	rep := srv.get(t, srv.metricsURL("/metrics"))
	if rep.status != http.StatusOK || !strings.HasPrefix(rep.contentType, "text/plain") {
		t.Fatalf("/metrics: %d %q", rep.status, rep.contentType)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(rep.body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("/metrics line not in the text format: %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

func wantDelta(t *testing.T, before, after map[string]float64, sample string, want float64) {
	t.Helper()
	a, ok := after[sample]
	if !ok {
		t.Errorf("/metrics has no sample %s", sample)
		return
	}
	if got := a - before[sample]; math.Abs(got-want) > 1e-9 {
		t.Errorf("%s grew by %v, want %v", sample, got, want)
	}
}

// TestMetricsCountWhatHappened drives known admissions and errors through
// the shared server and checks that each counter moved by exactly that much
// (it is not parallel: the serial tests run before any parallel one
// resumes, so nothing else moves them).
func TestMetricsCountWhatHappened(t *testing.T) {
	before := scrape(t)
	gpu8 := loadFixture(t, "../pods/100-gpu8-master.json", "")
	gpu2 := loadFixture(t, "../pods/103-gpu2-no-profile.json", "")
	other := loadFixture(t, "../pods/126-job-pod-pi.json", "")

	mutated := srv.review(t, podCreate(gpu8.namespace, gpu8.object))
	warned := srv.review(t, podCreate(gpu2.namespace, gpu2.object))
	srv.review(t, podCreate(other.namespace, other.object))
	srv.post(t, "/nope", "application/json", []byte("{}"))
	srv.post(t, "/mutate", "text/plain", []byte("{}"))

	var ops []interface{}
	if err := json.Unmarshal(mutated.patch, &ops); err != nil {
		t.Fatalf("patch: %v", err)
	}
	// The pod left alone but warned gets one op: the warnings annotation.
	var warnedOps []interface{}
	if err := json.Unmarshal(warned.patch, &warnedOps); err != nil || len(warnedOps) != 1 {
		t.Fatalf("the no-profile pod's patch: expected the warnings annotation alone, got %s (%v)", warned.patch, err)
	}
	after := scrape(t)
	wantDelta(t, before, after, `rdma_webhook_profile_admissions_total{profile="roce-8card"}`, 1)
	wantDelta(t, before, after, `rdma_webhook_admissions_total{result="mutated",reason=""}`, 1)
	wantDelta(t, before, after, `rdma_webhook_admissions_total{result="skipped",reason="no-profile"}`, 1)
	wantDelta(t, before, after, `rdma_webhook_admissions_total{result="skipped",reason="not-target"}`, 1)
	wantDelta(t, before, after, `rdma_webhook_warnings_total{kind="no_profile"}`, 1)
	wantDelta(t, before, after, `rdma_webhook_patch_operations_total`, float64(len(ops)+len(warnedOps)))
	wantDelta(t, before, after, `rdma_webhook_http_errors_total{code="404"}`, 1)
	wantDelta(t, before, after, `rdma_webhook_http_errors_total{code="415"}`, 1)
	wantDelta(t, before, after, `rdma_webhook_admission_duration_seconds_count`, 3)
	// The shared server's stderr is read continuously: nothing is dropped.
	wantDelta(t, before, after, `rdma_webhook_log_lines_dropped_total`, 0)
	if got := after[`rdma_webhook_admission_duration_seconds_bucket{le="+Inf"}`]; got != after[`rdma_webhook_admission_duration_seconds_count`] {
		t.Errorf("histogram +Inf bucket %v != count %v", got, after[`rdma_webhook_admission_duration_seconds_count`])
	}
	if after[`rdma_webhook_certificate_expiry_timestamp_seconds`] < 1e9 {
		t.Errorf("certificate expiry gauge missing or zero")
	}
	if after[`rdma_webhook_profiles_generation`] < 1 || after[`rdma_webhook_in_flight_requests`] != 0 {
		t.Errorf("generation %v, in flight %v", after[`rdma_webhook_profiles_generation`], after[`rdma_webhook_in_flight_requests`])
	}
}
