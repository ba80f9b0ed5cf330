package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

const lookupFailedMsg = "API lookup failed; admissions go on without its answer"

// TestKubeAPILookupForbidden: a Node GET the API answers 403 (the
// ClusterRole's rule missing) is a warn line that names the Node, the status
// and the RBAC to fix, and a count under
// rdma_webhook_lookup_failures_total{kind="node",reason="forbidden"}; the
// admission goes on by GPU count. A second failure within the minute is
// counted, not logged again. (Issue 21: the status used to be thrown away,
// so a 403 looked like nothing at all.)
func TestKubeAPILookupForbidden(t *testing.T) {
	const node = "gpu-node-rbac"
	const sample = `rdma_webhook_lookup_failures_total{kind="node",reason="forbidden"}`
	a := startFakeAPI(t)
	a.putNode(node, map[string]string{"nvidia.com/gpu.count": "4"})
	a.setFailure("/api/v1/nodes/"+node, http.StatusForbidden)
	in := startLookupInstance(t, a)
	if n := in.metricInt(t, sample); n != 0 {
		t.Fatalf("before any lookup: %s is %d", sample, n)
	}
	for _, other := range []string{
		`rdma_webhook_lookup_failures_total{kind="namespace",reason="forbidden"}`,
		`rdma_webhook_lookup_failures_total{kind="configmap",reason="timeout"}`,
	} {
		if v := in.metric(t, other); v != "0" {
			t.Errorf("/metrics: %s is %q, expected 0", other, v)
		}
	}

	mark := in.logMark()
	ad := in.admit(t, nodePod(8, node))
	if ad.rr.auditProf != "roce-8card" {
		t.Errorf("8 GPUs on %s (Node unreadable): expected roce-8card by GPU count, got %q", node, ad.rr.auditProf)
	}
	if w := ad.warningWith("check the webhook can read nodes"); w == "" {
		t.Errorf("expected the unreadable-node warning, got %q", ad.rr.warnings)
	}
	line, at := in.waitLog(t, mark, 5*time.Second, "about the forbidden Node GET",
		msgIs(lookupFailedMsg, "kind", "Node", "name", node, "status", "403", "reason", "forbidden"))
	t.Logf("the line: %s", in.logText()[at])
	if l, _ := pathStr(line, "level"); l != "warn" {
		t.Errorf("level %q, expected warn: %v", l, line)
	}
	if e, _ := pathStr(line, "error"); !strings.HasPrefix(e, "403 Forbidden: ") {
		t.Errorf("error %q, expected the status and the API's message", e)
	}
	if h, _ := pathStr(line, "hint"); !strings.Contains(h, "get on nodes") || !strings.Contains(h, "manifests/rbac.yaml") {
		t.Errorf("hint %q, expected the RBAC rule to grant", h)
	}
	in.waitMetric(t, sample, 2*time.Second, "the forbidden Node GET", func(v int64) bool { return v == 1 })

	// The failure is cached for a second; after it the next pod asks again.
	time.Sleep(1100 * time.Millisecond)
	in.admit(t, nodePod(8, node))
	in.waitMetric(t, sample, 2*time.Second, "the second forbidden Node GET", func(v int64) bool { return v == 2 })
	if n := len(in.linesSince(mark, msgIs(lookupFailedMsg, "name", node))); n != 1 {
		t.Errorf("two forbidden GETs within the minute: expected 1 log line, got %d:\n%s", n, tail(in.stderrPath))
	}
}
