package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestMutationLogLine: one JSON log line per mutation on stderr, with uid,
// namespace, pod, profile and the rule that chose it (docs/operations.md "Logs", CONTRACT
// "Logs: JSON lines").
func TestMutationLogLine(t *testing.T) {
	t.Parallel()
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

// TestWarningsReachLogAndPod: a warning the user sees is short (the
// container name cut to fit the fix), the log line has it whole in
// "warning_text", and the pod carries it whole in rdma-webhook.io/warnings,
// so `kubectl describe pod` shows it after the fact (issue 15), with the
// value kubectl's 120 bytes cut (issue 22, item 5).
func TestWarningsReachLogAndPod(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("c", 63)
	pod := withEnv(trainingPod(8), "NCCL_IB_TIMEOUT", "20")
	pathArr(pod, "spec", "containers")[0].(obj)["name"] = long
	r := podCreate("kubeflow", pod)
	rr := srv.review(t, r)
	if len(rr.warnings) != 1 {
		t.Fatalf("expected one warning, got %q", rr.warnings)
	}
	short := rr.warnings[0]
	if len(short) >= 120 || strings.Contains(short, long) || !strings.Contains(short, "to get the profile's 22") {
		t.Errorf("the user's warning: expected under 120 bytes, the name cut, the fix kept; got %q (%d bytes)", short, len(short))
	}
	line := waitForLogLine(t, r.uid)
	texts, _ := line["warning_text"].([]interface{})
	if len(texts) != 1 {
		t.Fatalf("log line: expected warning_text with one entry, got %s", compact(line))
	}
	full, _ := texts[0].(string)
	if !strings.Contains(full, `container "`+long+`"`) || len(full) <= 120 {
		t.Errorf("log line's warning_text: expected the whole container name, over 120 bytes, got %q", full)
	}
	patched := applyPatch(t, pod, rr.patch)
	ann, _ := pathStr(patched, "metadata", "annotations", warningsAnnotation)
	var list []string
	if err := json.Unmarshal([]byte(ann), &list); err != nil || len(list) != 1 ||
		"rdma-webhook: "+list[0] != full {
		t.Errorf("%s: expected [%q without its lead], whole, got %q (%v)", warningsAnnotation, full, ann, err)
	}
}
