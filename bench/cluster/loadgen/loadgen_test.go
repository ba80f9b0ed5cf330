package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

const sample = `# HELP apiserver_admission_webhook_admission_duration_seconds x
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.b",operation="CREATE",rejected="false",type="admit",le="0.005"} 3
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.b",operation="CREATE",rejected="false",type="admit",le="+Inf"} 4
apiserver_admission_webhook_admission_duration_seconds_sum{name="a.b",operation="CREATE",rejected="false",type="admit"} 0.02
apiserver_admission_webhook_admission_duration_seconds_count{name="a.b",operation="CREATE",rejected="false",type="admit"} 4
apiserver_admission_step_admission_duration_seconds_sum{operation="CREATE",rejected="false",type="admit",note="x,y}"} 1.5
apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="admit",note="x,y}"} 10
apiserver_admission_step_admission_duration_seconds_summary_count{operation="CREATE"} 99
rdma_webhook_admission_duration_seconds_sum 0.5
rdma_webhook_admission_duration_seconds_count 5
`

func TestParseHistograms(t *testing.T) {
	m, err := parseHistograms([]byte(sample), append(admissionFamilies, webhookLatency))
	if err != nil {
		t.Fatal(err)
	}
	hook := m[`apiserver_admission_webhook_admission_duration_seconds{name="a.b",operation="CREATE",rejected="false",type="admit"}`]
	if hook.Count != 4 || hook.Sum != 0.02 || hook.Buckets["0.005"] != 3 || hook.Buckets["+Inf"] != 4 {
		t.Errorf("webhook series: %+v", hook)
	}
	// A comma and a brace inside a quoted label value do not split it, and
	// the _summary family is not mistaken for the histogram.
	step := m[`apiserver_admission_step_admission_duration_seconds{note="x,y}",operation="CREATE",rejected="false",type="admit"}`]
	if step.Count != 10 || step.Sum != 1.5 {
		t.Errorf("step series: %+v (all: %v)", step, m)
	}
	if len(m) != 3 {
		t.Errorf("want 3 series, got %d: %v", len(m), m)
	}
	if own := m[webhookLatency+"{}"]; own.Count != 5 {
		t.Errorf("unlabelled series: %+v", own)
	}
}

func TestParseHistogramsRefusesBrokenLabels(t *testing.T) {
	_, err := parseHistograms([]byte(`apiserver_admission_step_admission_duration_seconds_sum{type="admit" 1`), admissionFamilies)
	if err == nil {
		t.Fatal("an unterminated label set was accepted")
	}
}

func TestDiffSeriesKeepsWhatMoved(t *testing.T) {
	before := map[string]Series{"a": {Count: 2, Sum: 1}, "b": {Count: 5, Sum: 2}}
	after := map[string]Series{"a": {Count: 2, Sum: 1}, "b": {Count: 8, Sum: 2.6}, "c": {Count: 1, Sum: 0.1}}
	d := diffSeries(before, after)
	if _, ok := d["a"]; ok {
		t.Error("a series that did not move was kept")
	}
	if d["b"].Count != 3 || d["b"].Sum < 0.59 || d["b"].Sum > 0.61 || d["c"].Count != 1 {
		t.Errorf("deltas: %+v", d)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var v []float64
	for i := 1; i <= 200; i++ {
		v = append(v, float64(i))
	}
	if p := percentile(v, 0.99); p != 198 {
		t.Errorf("p99 of 1..200 = %v, want 198", p)
	}
	if p := percentile(v, 0.5); p != 100 {
		t.Errorf("p50 of 1..200 = %v, want 100", p)
	}
	if p := percentile([]float64{7}, 0.99); p != 7 {
		t.Errorf("p99 of one value = %v", p)
	}
}

func TestStatMedianAndRange(t *testing.T) {
	s := newStat([]float64{3, 1, 2})
	if s.med != 2 || s.lo != 1 || s.hi != 3 {
		t.Errorf("%+v", s)
	}
	if e := newStat([]float64{4, 1}); e.med != 2.5 {
		t.Errorf("even count median %v", e.med)
	}
	if newStat(nil).fmt(2) != "-" {
		t.Error("an empty stat is not shown as -")
	}
}

func TestHasPort(t *testing.T) {
	if !hasPort("0100007F:4E20", 20000) || hasPort("0100007F:4E21", 20000) {
		t.Error("port 0x4E20 is 20000")
	}
	if !hasPort("00000000000000000000000001000000:01BB", 443) {
		t.Error("an IPv6 address")
	}
}

func TestCPUSecondsOfThisProcess(t *testing.T) {
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i % 7
	}
	m, err := cpuSeconds("me=" + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	if m["me"] <= 0 {
		t.Errorf("cpu seconds %v after a busy loop (%d)", m["me"], x)
	}
	if _, err := cpuSeconds("nopid"); err == nil {
		t.Error("a malformed -pids was accepted")
	}
}

func TestIsMutated(t *testing.T) {
	pod := obj{"spec": obj{"schedulerName": "volcano", "containers": []interface{}{
		obj{"env": []interface{}{obj{"name": "NCCL_IB_HCA", "value": "=mlx5_1"}}}}}}
	if !isMutated(pod) {
		t.Error("a mutated pod not seen")
	}
	pod["spec"].(obj)["schedulerName"] = "default-scheduler"
	if isMutated(pod) {
		t.Error("a pod without the scheduler name seen as mutated")
	}
}

// The report's checks catch a run that is wrong rather than slow.
func TestReportChecks(t *testing.T) {
	rs := results{
		key("floor", "create-8", 1):        {Config: "floor", Phase: "create-8", Round: 1, Count: 10, Mutated: 0, Expect: "unchanged"},
		key("rdma-webhook", "create-8", 1): {Config: "rdma-webhook", Phase: "create-8", Round: 1, Count: 10, Mutated: 9, Expect: "mutated"},
		key("rdma-webhook", "plain-8", 1): {Config: "rdma-webhook", Phase: "plain-8", Round: 1, Count: 10, Expect: "unchanged",
			Admission: map[string]Series{famWebhook + `{name="x",type="admit"}`: {Count: 2, Sum: 0.01}}},
		key("go-webhook", "create-8", 1): {Config: "go-webhook", Phase: "create-8", Round: 1, Count: 10, Failed: 1,
			FirstError: "500 boom", Mutated: 9, Expect: "mutated"},
	}
	p := &report{res: rs, configs: []string{"floor", "rdma-webhook", "go-webhook"}, rounds: []int{1}}
	p.check()
	all := strings.Join(p.failures, "\n")
	for _, want := range []string{"9 of 10 pods mutated, want 10", "webhook calls for pods nothing selects", "1 failed creates (first: 500 boom)"} {
		if !strings.Contains(all, want) {
			t.Errorf("no failure %q in:\n%s", want, all)
		}
	}
	if len(p.failures) != 3 {
		t.Errorf("want 3 failures, got:\n%s", all)
	}
}
