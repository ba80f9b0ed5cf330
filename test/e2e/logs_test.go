package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestMutationLogLine: one JSON log line per mutation on stderr, with uid,
// namespace, pod, profile and the rule that chose it (SPEC 3, CONTRACT
// "Logs: JSON lines").
func TestMutationLogLine(t *testing.T) {
	r := podCreate("kubeflow", trainingPod(8))
	if rr := srv.review(t, r); rr.patch == nil {
		t.Fatalf("expected the 8-GPU pod to be mutated (control), got %s", compact(rr.response))
	}
	line := waitForLogLine(t, r.uid)
	want := map[string]string{"uid": r.uid, "namespace": "kubeflow", "pod": "e2e-job-master-0", "profile": "roce-8card",
		"selected_by": "gpus"}
	for k, v := range want {
		if got, _ := pathStr(line, k); got != v {
			t.Errorf("log line %q: expected %q, got %v (line %s)", k, v, line[k], compact(line))
		}
	}
}

// waitForLogLine polls the server's stderr for the JSON line naming uid,
// and checks that every line so far is a JSON object.
func waitForLogLine(t *testing.T, uid string) obj {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	found, bad := scanLogs(uid)
	for found == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		found, bad = scanLogs(uid)
	}
	for _, b := range bad {
		t.Errorf("stderr line is not a JSON object: %q", b)
	}
	if found == nil {
		t.Fatalf("no JSON log line with uid %s within 5s; stderr tail:\n%s", uid, srv.stderrTail())
	}
	return found
}

func scanLogs(uid string) (found obj, bad []string) {
	for _, line := range strings.Split(string(srv.stderrBytes()), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		o, err := decodeObject([]byte(line))
		if err != nil {
			bad = append(bad, cut([]byte(line)))
			continue
		}
		if o["uid"] == uid {
			found = o
		}
	}
	return found, bad
}
