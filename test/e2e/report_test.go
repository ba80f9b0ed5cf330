package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Report-only mode through the real binary: the namespace label
// rdma-webhook.io/mode read from the (fake) API, serve's --mode, a
// profile's "mode", and the offline mutate.

const (
	reportAnnotation = "rdma-webhook.io/report"
	modeLabel        = "rdma-webhook.io/mode"
	reportedSample   = `rdma_webhook_admissions_total{result="reported",reason=""}`
)

// report is the pod's report annotation: plain text, one line each.
type report struct {
	text  string
	lines []string
}

// has: some line of the report ends with want.
func (r *report) has(want string) bool {
	for _, l := range r.lines {
		if strings.HasSuffix(l, want) {
			return true
		}
	}
	return false
}

// warnings: the report's warning lines.
func (r *report) warnings() []string {
	var out []string
	for _, l := range r.lines {
		if strings.HasPrefix(l, "warning: ") {
			out = append(out, l)
		}
	}
	return out
}

// reportOf is the pod's report annotation read, and checked to be what a
// person reads (`kubectl describe pod` prints one line per line): lines of
// text within 512 bytes, the whole within 8 KiB, no JSON Pointer escapes,
// no JSON; nil when it has none.
func reportOf(t testing.TB, pod obj) *report {
	t.Helper()
	text, ok := pathStr(pod, "metadata", "annotations", reportAnnotation)
	if !ok {
		return nil
	}
	if len(text) > 8192 || strings.Contains(text, "~1") || strings.HasPrefix(text, "{") ||
		strings.Contains(text, "\n\n") || strings.HasSuffix(text, "\n") {
		t.Fatalf("%s is not lines of plain text within 8 KiB: %q", reportAnnotation, text)
	}
	r := &report{text: text, lines: strings.Split(text, "\n")}
	for _, l := range r.lines {
		if len(l) > 512 || !utf8.ValidString(l) {
			t.Errorf("%s: a line that is not UTF-8 within 512 bytes: %q", reportAnnotation, l)
		}
	}
	return r
}

// byWords is how the report's first line names the level that chose report.
var byWords = map[string]string{
	"flag":            "report mode (--mode)",
	"profile":         "report mode (the profile's mode)",
	"namespace-label": "report mode (namespace label rdma-webhook.io/mode)",
}

// requireOnlyReport: patched is original with one annotation more, the
// report, whose first line says result (reported: a profile would be
// applied; skipped: nothing would) and by.
func requireOnlyReport(t testing.TB, original, patched obj, result, by string) *report {
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
	head := rep.lines[0]
	want := map[string]string{"reported": "; enforce mode would apply profile ", "skipped": "; enforce mode would change nothing either"}[result]
	if !strings.HasPrefix(head, byWords[by]+": nothing changed") || !strings.Contains(head, want) {
		t.Errorf("report: expected the first line to say %s by %s, got %q", result, by, head)
	}
	return rep
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
		if !strings.HasSuffix(rep.lines[0], `apply profile "roce-8card" (chosen by gpus)`) {
			t.Errorf("report: expected profile roce-8card chosen by gpus, got %q", rep.lines[0])
		}
		if !rep.has(`container "pytorch": env NCCL_IB_HCA=`+hca8) || !rep.has("schedulerName volcano (in place of default-scheduler)") ||
			!rep.has(`container "pytorch": requests rdma/hca: 1`) {
			t.Errorf("report lacks NCCL_IB_HCA=%s, the scheduler or rdma/hca in words:\n%s", hca8, rep.text)
		}
		if len(ad.rr.warnings) != 0 {
			t.Fatalf("expected a pod without warnings, got %q", ad.rr.warnings)
		}
		// Its author sees the report in `kubectl describe pytorchjob`,
		// warnings or not: a Normal Event whose note is the lines.
		ev := requireEvent(t, a, "RDMAReport", strings.Join(rep.lines[:3], " | "))
		if ev["type"] != "Normal" {
			t.Errorf("RDMAReport Event: expected type Normal, got %v", ev["type"])
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
				if ws := rep.warnings(); len(ws) == 0 || !strings.Contains(ws[0], "NCCL_IB_TIMEOUT") || ad.warningWith("NCCL_IB_TIMEOUT") == "" {
					t.Errorf("the octal NCCL_IB_TIMEOUT warning: in the report %q, to the user %q", ws, ad.rr.warnings)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not reported 5 s after the label went back to report%s", in.state())
			}
			time.Sleep(100 * time.Millisecond)
		}
		requireEvent(t, a, "ReportedWithWarnings", "NCCL_IB_TIMEOUT")
		requireEvent(t, a, "RDMAReport", " | warning: NCCL_IB_TIMEOUT=022: drop the leading 0")
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
			if !rep.has(": env NCCL_IB_HCA=" + hcaOf(t, "roce-8card")) {
				t.Errorf("%v, template %s: the report lacks NCCL_IB_HCA:\n%s", c.args, name, rep.text)
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
// phrase; it returns the Event.
func requireEvent(t testing.TB, a *fakeAPI, reason, phrase string) obj {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, ev := range a.eventsAbout("PyTorchJob", "e2e-job") {
			if note, _ := ev["note"].(string); ev["reason"] == reason && strings.Contains(note, phrase) {
				return ev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event saying %q on the PyTorchJob within 5 s: %v", reason, phrase, a.eventsAbout("PyTorchJob", "e2e-job"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
