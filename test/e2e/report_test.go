package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Report-only mode through the real binary: the namespace label
// rdma-webhook.io/mode read from the (fake) API, serve's --mode, a
// profile's "mode", and the offline mutate.

const (
	reportAnnotation = "rdma-webhook.io/report"
	modeLabel        = "rdma-webhook.io/mode"
	reportedSample   = `rdma_webhook_admissions_total{result="reported",reason=""}`
)

// reportOf is the pod's report annotation decoded; nil when it has none.
func reportOf(t testing.TB, pod obj) obj {
	t.Helper()
	text, ok := pathStr(pod, "metadata", "annotations", reportAnnotation)
	if !ok {
		return nil
	}
	var rep obj
	if err := json.Unmarshal([]byte(text), &rep); err != nil {
		t.Fatalf("%s is not a JSON object: %v: %s", reportAnnotation, err, text)
	}
	return rep
}

// requireOnlyReport: patched is original with one annotation more, the
// report, which says result and by.
func requireOnlyReport(t testing.TB, original, patched obj, result, by string) obj {
	t.Helper()
	rep := reportOf(t, patched)
	if rep == nil {
		t.Fatalf("no %s on the reported pod: %v", reportAnnotation, compact(patched))
	}
	stripped := copyObject(patched)
	ann := pathObj(stripped, "metadata", "annotations")
	delete(ann, reportAnnotation)
	if len(ann) == 0 && pathObj(original, "metadata", "annotations") == nil {
		delete(pathObj(stripped, "metadata"), "annotations")
	}
	if !jsonEqual(stripped, original) {
		t.Fatalf("the reported pod changed beyond %s:\nwant %v\ngot  %v", reportAnnotation, compact(original), compact(stripped))
	}
	if got, _ := pathStr(rep, "result"); got != result {
		t.Errorf("report result: expected %q, got %q (%v)", result, got, compact(rep))
	}
	if got, _ := pathStr(rep, "by"); got != by {
		t.Errorf("report by: expected %q, got %q (%v)", by, got, compact(rep))
	}
	return rep
}

// reportAdds: some addition of the report ends with want.
func reportAdds(rep obj, want string) bool {
	list, _ := rep["additions"].([]interface{})
	for _, a := range list {
		if s, _ := a.(string); strings.HasSuffix(s, want) {
			return true
		}
	}
	return false
}

func isMutated(ad admission) bool {
	_, ok := pathStr(ad.patched, "metadata", "annotations", "rdma-webhook.io/injected")
	return ok && len(ad.envValues("NCCL_IB_HCA")) == 1
}

// TestReportModeNamespaceLabel: a namespace labelled report gets pods with
// only the report annotation, counted as reported; a second call changes
// nothing; relabelled enforce, the next pod is mutated without a restart;
// unread labels report with a warning; an invalid value is ignored.
func TestReportModeNamespaceLabel(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNamespace(jobNS, map[string]string{modeLabel: "report"})
	in := startLookupInstance(t, a, "--namespace-cache-seconds", "1")
	hca8 := hcaOf(t, "roce-8card")
	pod := trainingPod(8)

	t.Run("reported", func(t *testing.T) {
		mark := in.logMark()
		ad := in.admit(t, pod)
		rep := requireOnlyReport(t, pod, ad.patched, "reported", "namespace-label")
		if got, _ := pathStr(rep, "profile"); got != "roce-8card" {
			t.Errorf("report profile: expected roce-8card, got %q", got)
		}
		if !reportAdds(rep, "/spec/containers/0/env/- NCCL_IB_HCA="+hca8) || !reportAdds(rep, " /spec/schedulerName volcano") {
			t.Errorf("report additions lack NCCL_IB_HCA=%s or the scheduler: %v", hca8, rep["additions"])
		}
		if m, _ := pathStr(ad.rr.response, "auditAnnotations", "mode"); m != "report" || ad.rr.auditProf != "roce-8card" {
			t.Errorf("auditAnnotations: expected mode report and profile roce-8card, got %v", ad.rr.response["auditAnnotations"])
		}
		in.waitLog(t, mark, 2*time.Second, "for the reported pod",
			msgIs("admission", "result", "reported", "reason", "reported", "report_by", "namespace-label", "profile", "roce-8card"))
		if n := in.metricInt(t, reportedSample); n != 1 {
			t.Errorf("%s: expected 1, got %d", reportedSample, n)
		}

		// The apiserver's reinvocation: the reported pod gets no operation.
		again := in.admit(t, ad.patched)
		if len(again.rr.patch) != 0 {
			t.Errorf("second call on the reported pod: expected no patch, got %s", again.rr.patch)
		}
		if n := in.metricInt(t, reportedSample); n != 1 {
			t.Errorf("%s after the second call: expected 1, got %d", reportedSample, n)
		}
	})

	t.Run("switched to enforce without a restart", func(t *testing.T) {
		a.putNamespace(jobNS, map[string]string{modeLabel: "enforce"})
		deadline := time.Now().Add(5 * time.Second)
		for {
			ad := in.admit(t, pod)
			if isMutated(ad) {
				if reportOf(t, ad.patched) != nil {
					t.Errorf("the mutated pod has a report annotation")
				}
				break
			}
			requireOnlyReport(t, pod, ad.patched, "reported", "namespace-label")
			if time.Now().After(deadline) {
				t.Fatalf("still reported 5 s after the label became enforce (cache 1 s)%s", in.state())
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("unread labels", func(t *testing.T) {
		// The label said enforce; the flag's default decides while the
		// labels cannot be read: mutated, with a warning.
		a.setFailure("/api/v1/namespaces/"+jobNS, 500)
		defer a.setFailure("/api/v1/namespaces/"+jobNS, 0)
		deadline := time.Now().Add(5 * time.Second)
		for {
			ad := in.admit(t, pod)
			if ad.warningWith("check the webhook can read namespaces") != "" {
				if !isMutated(ad) {
					t.Errorf("unread labels, no --mode: expected the pod mutated, got %s", ad.rr.patch)
				}
				requireEvent(t, a, "MutatedWithWarnings", "check the webhook can read namespaces")
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no unread-namespace warning 5 s after the Namespace GET began to fail: %q%s", ad.rr.warnings, in.state())
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("invalid label ignored", func(t *testing.T) {
		a.putNamespace(jobNS, map[string]string{modeLabel: "audit"})
		deadline := time.Now().Add(5 * time.Second)
		for {
			ad := in.admit(t, pod)
			if w := ad.warningWith(`("audit" ignored)`); w != "" {
				if !isMutated(ad) {
					t.Errorf("an invalid label is ignored: expected the pod mutated (enforce by default)")
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no warning about the label \"audit\" within 5 s: %q%s", ad.rr.warnings, in.state())
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("reported with warnings: the Event says so", func(t *testing.T) {
		a.putNamespace(jobNS, map[string]string{modeLabel: "report"})
		octal := trainingPod(8)
		pathArr(octal, "spec", "containers")[0].(obj)["env"] = []interface{}{obj{"name": "NCCL_IB_TIMEOUT", "value": "022"}}
		deadline := time.Now().Add(5 * time.Second)
		for {
			ad := in.admit(t, octal)
			if reportOf(t, ad.patched) != nil {
				rep := requireOnlyReport(t, octal, ad.patched, "reported", "namespace-label")
				if ws, _ := rep["warnings"].([]interface{}); len(ws) == 0 || ad.warningWith("NCCL_IB_TIMEOUT") == "" {
					t.Errorf("the octal NCCL_IB_TIMEOUT warning: in the report %v, to the user %q", rep["warnings"], ad.rr.warnings)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not reported 5 s after the label went back to report%s", in.state())
			}
			time.Sleep(100 * time.Millisecond)
		}
		requireEvent(t, a, "ReportedWithWarnings", "NCCL_IB_TIMEOUT")
	})
}

// TestReportModeFlagAndProfile: serve --mode report reports every pod; a
// profile's "mode": "enforce" wins over it; a bad --mode is a usage error,
// a bad profile "mode" is refused by check-profiles.
func TestReportModeFlagAndProfile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc, err := os.ReadFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	var profiles obj
	if err := json.Unmarshal(doc, &profiles); err != nil {
		t.Fatal(err)
	}
	list := profiles["profiles"].([]interface{})
	list[1].(obj)["mode"] = "enforce" // roce-4card
	path := filepath.Join(dir, "profiles.json")
	if err := os.WriteFile(path, mustMarshal(profiles), 0o644); err != nil {
		t.Fatal(err)
	}
	in := startInstance(t, path, "--mode", "report")

	pod8 := trainingPod(8)
	ad := in.admit(t, pod8)
	requireOnlyReport(t, pod8, ad.patched, "reported", "flag")
	pod4 := trainingPod(4)
	if ad := in.admit(t, pod4); !isMutated(ad) {
		t.Errorf("roce-4card has mode enforce: expected the 4-GPU pod mutated under --mode report, got %s", ad.rr.patch)
	}

	if r := runBinary(t, nil, "serve", "--mode", "audit"); r.exitCode != 2 || !strings.Contains(string(r.stderr), "--mode takes enforce or report") {
		t.Errorf("serve --mode audit: expected exit 2 and the usage message, got %d: %s", r.exitCode, r.stderr)
	}
	// --show spells the field out where it is set, and only there.
	shown := runBinary(t, nil, "check-profiles", "--show", path)
	var eff obj
	if err := json.Unmarshal(shown.stdout, &eff); shown.exitCode != 0 || err != nil {
		t.Fatalf("check-profiles --show: exit %d, %v: %s", shown.exitCode, err, shown.stderr)
	}
	effList := eff["profiles"].([]interface{})
	if m, ok := effList[1].(obj)["mode"]; !ok || m != "enforce" {
		t.Errorf("check-profiles --show: roce-4card mode %v, want enforce", m)
	}
	if m, ok := effList[0].(obj)["mode"]; ok {
		t.Errorf("check-profiles --show: roce-8card has no mode, shown %v", m)
	}
	list[1].(obj)["mode"] = "audit"
	if err := os.WriteFile(path, mustMarshal(profiles), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, nil, "check-profiles", path)
	if r.exitCode != 1 || !strings.Contains(string(r.stderr), `profile "roce-4card": mode: must be "report" or "enforce", not "audit"`) {
		t.Errorf("check-profiles with mode audit: expected exit 1 and the message, got %d: %s", r.exitCode, r.stderr)
	}
}

// TestReportModeOffline: mutate --mode report gives each template of a
// PyTorchJob only the report; the namespace label of --namespace-labels
// wins over --mode, both ways; a bad --mode is a usage error.
func TestReportModeOffline(t *testing.T) {
	t.Parallel()
	const job = "testdata/pytorchjob-swin.json"
	data, err := os.ReadFile(job)
	if err != nil {
		t.Fatal(err)
	}
	source, err := decodeObject(data)
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(args ...string) obj {
		return mustSucceed(t, nil, append([]string{"mutate", "--profiles", profilesPath, "--patched", "-o", "json"}, append(args, job)...)...)
	}
	for _, c := range []struct {
		args []string
		by   string
	}{
		{[]string{"--mode", "report"}, "flag"},
		{[]string{"--mode", "enforce", "--namespace-labels", modeLabel + "=report"}, "namespace-label"},
	} {
		got := replicaTemplates(mutate(c.args...))
		if len(got) < 2 {
			t.Fatalf("%v: expected the job's templates, got %d", c.args, len(got))
		}
		for name, tmpl := range got {
			rep := requireOnlyReport(t, replicaTemplates(source)[name], tmpl, "reported", c.by)
			if !reportAdds(rep, "add /spec/containers/0/env/- NCCL_IB_HCA="+hcaOf(t, "roce-8card")) {
				t.Errorf("%v, template %s: the report lacks NCCL_IB_HCA: %v", c.args, name, rep["additions"])
			}
		}
	}
	for name, tmpl := range replicaTemplates(mutate("--mode", "report", "--namespace-labels", modeLabel+"=enforce")) {
		if _, ok := pathStr(tmpl, "metadata", "annotations", "rdma-webhook.io/injected"); !ok || reportOf(t, tmpl) != nil {
			t.Errorf("template %s under the label enforce: expected mutated without a report, got %v", name, compact(pathObj(tmpl, "metadata")))
		}
	}
	if r := runBinary(t, nil, "mutate", "--mode", "off", job); r.exitCode != 2 || !strings.Contains(string(r.stderr), "--mode takes enforce or report") {
		t.Errorf("mutate --mode off: expected exit 2 and the message, got %d: %s", r.exitCode, r.stderr)
	}
}

// requireEvent: the job has an Event with this reason whose note says
// phrase.
func requireEvent(t testing.TB, a *fakeAPI, reason, phrase string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, ev := range a.eventsAbout("PyTorchJob", "e2e-job") {
			if note, _ := ev["note"].(string); ev["reason"] == reason && strings.Contains(note, phrase) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event saying %q on the PyTorchJob within 5 s: %v", reason, phrase, a.eventsAbout("PyTorchJob", "e2e-job"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
