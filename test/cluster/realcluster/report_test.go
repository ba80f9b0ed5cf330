package realcluster

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

const (
	reportAnnotation = "rdma-webhook.io/report"
	modeLabel        = "rdma-webhook.io/mode"
	reportedSample   = `rdma_webhook_admissions_total{result="reported",reason=""}`
)

func webhookCount(t testing.TB, sample string) int64 {
	t.Helper()
	v, err := strconv.ParseFloat(webhookMetric(t, sample), 64)
	if err != nil {
		t.Fatalf("%s: %v", sample, err)
	}
	return int64(v)
}

// podShape is the pod as a function of what was asked for and what the
// webhook did: the per-pod parts the apiserver makes up (the service
// account token volume's random suffix, ids, times, the namespace) left out.
func podShape(t testing.TB, p *corev1.Pod) string {
	t.Helper()
	spec := p.Spec.DeepCopy()
	const token = "kube-api-access-"
	for i := range spec.Volumes {
		if strings.HasPrefix(spec.Volumes[i].Name, token) {
			spec.Volumes[i].Name = token
		}
	}
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for j := range list[i].VolumeMounts {
				if strings.HasPrefix(list[i].VolumeMounts[j].Name, token) {
					list[i].VolumeMounts[j].Name = token
				}
			}
		}
	}
	ann := map[string]string{}
	for k, v := range p.Annotations {
		if k != reportAnnotation {
			ann[k] = v
		}
	}
	return toJSON(t, map[string]any{"labels": p.Labels, "annotations": ann, "spec": spec})
}

// podReport is the report annotation: lines of plain text.
type podReport struct {
	Text  string
	Lines []string
}

func reportOn(t testing.TB, p *corev1.Pod) *podReport {
	t.Helper()
	text, ok := p.Annotations[reportAnnotation]
	if !ok {
		return nil
	}
	if strings.HasPrefix(text, "{") || strings.Contains(text, "~1") {
		t.Errorf("%s/%s: %s is not plain text: %q", p.Namespace, p.Name, reportAnnotation, text)
	}
	return &podReport{Text: text, Lines: strings.Split(text, "\n")}
}

func (r *podReport) has(line string) bool {
	for _, l := range r.Lines {
		if l == line {
			return true
		}
	}
	return false
}

// TestReportMode: a PyTorchJob in a namespace labelled
// rdma-webhook.io/mode=report gets pods stored as the apiserver stores them
// without the webhook (the same job in a namespace the webhook never sees),
// but for the report annotation, which lists what the same job got in an
// enforce namespace; they count as reported. Relabelled enforce, the next
// pod is mutated, with no restart of the webhook.
func TestReportMode(t *testing.T) {
	report := newNamespace(t, map[string]string{modeLabel: "report"})
	enforce := newNamespace(t, nil)
	unseen := newNamespace(t, map[string]string{"rdma-webhook.io/inject": "false"})
	before := webhookCount(t, reportedSample)

	doc := jobYAML("report-job", 8, "")
	pods := map[string]map[string][]corev1.Pod{}
	for _, ns := range []string{report, enforce, unseen} {
		mustKubectl(t, doc, "apply", "-n", ns, "-f", "-")
	}
	for _, ns := range []string{report, enforce, unseen} {
		pods[ns] = jobPods(t, ns, jobYAMLShape("report-job"))
	}

	reported := 0
	for rt, list := range pods[report] {
		for i := range list {
			p := &list[i]
			base, mutated := &pods[unseen][rt][i], &pods[enforce][rt][i]
			requireMutated(t, mutated, "pytorch", want{profile: "roce-8card", hca: hca8})
			requireUntouched(t, p)
			if got, want := podShape(t, p), podShape(t, base); got != want {
				t.Errorf("%s/%s: stored with changes beyond %s:\n got %s\nwant %s", p.Namespace, p.Name, reportAnnotation, got, want)
			}
			r := reportOn(t, p)
			if r == nil {
				t.Fatalf("%s/%s: no %s: %v", p.Namespace, p.Name, reportAnnotation, p.Annotations)
			}
			if head := "report mode (namespace label rdma-webhook.io/mode): nothing changed; " +
				`enforce mode would apply profile "roce-8card" (chosen by gpus)`; r.Lines[0] != head {
				t.Errorf("%s/%s: report begins %q, want %q", p.Namespace, p.Name, r.Lines[0], head)
			}
			// Every variable the enforce namespace's pod got from the
			// webhook (the ones the reported pod lacks) is in the report.
			own := envOf(container(t, p, "pytorch"))
			added := 0
			for _, e := range container(t, mutated, "pytorch").Env {
				if _, ok := own[e.Name]; ok {
					continue
				}
				added++
				entry := fmt.Sprintf(`container "pytorch": env %s=%s`, e.Name, e.Value)
				if !r.has(entry) {
					t.Errorf("%s/%s: the report lacks %q, which the enforced pod got:\n%s", p.Namespace, p.Name, entry, r.Text)
				}
			}
			if added != len(shippedEnv)+1 {
				t.Errorf("%s/%s: the enforced pod got %d variables, want the profile's %d", p.Namespace, p.Name, added, len(shippedEnv)+1)
			}
			line := waitAdmissionLine(t, report, p.Name)
			if line["result"] != "reported" || line["report_by"] != "namespace-label" {
				t.Errorf("%s/%s: log line %v, want result reported, report_by namespace-label", p.Namespace, p.Name, line)
			}
			reported++
		}
	}
	if reported != 2 {
		t.Fatalf("expected the job's 2 pods in %s, got %d", report, reported)
	}
	requireReportSeen(t, report, "report-job", pods[report])
	if after := webhookCount(t, reportedSample); after-before != 2 {
		t.Errorf("%s went from %d to %d, want 2 more (master and worker)", reportedSample, before, after)
	}

	// Switched to enforce: within the namespace cache's 10 s, a new pod is
	// mutated; the webhook was not restarted (its counters go on).
	mustKubectl(t, "", "label", "namespace", report, modeLabel+"=enforce", "--overwrite")
	counted := webhookCount(t, reportedSample)
	n := 0
	var last *corev1.Pod
	waitFor(t, 30*time.Second, "a pod mutated in "+report+" once labelled enforce", func() (bool, string) {
		n++
		p, _ := createPod(t, report, gpuPod(fmt.Sprintf("after-switch-%d", n), 8))
		last = p
		if _, ok := p.Annotations["rdma-webhook.io/injected"]; ok {
			return true, ""
		}
		if reportOn(t, p) == nil {
			t.Fatalf("%s: neither mutated nor reported: %v", p.Name, p.Annotations)
		}
		time.Sleep(time.Second)
		return false, p.Name + " still reported"
	})
	requireMutated(t, last, "pytorch", want{profile: "roce-8card", hca: hca8})
	if reportOn(t, last) != nil {
		t.Errorf("%s: mutated, yet with a report annotation", last.Name)
	}
	if got := webhookCount(t, reportedSample); got < counted {
		t.Errorf("%s went back from %d to %d: the webhook restarted", reportedSample, counted, got)
	}
}

// requireReportSeen: where the job's author looks. `kubectl describe pod`
// shows the report one line per line; the PyTorchJob has a Normal
// RDMAReport Event (no warning needed) whose note is the report's lines,
// which `kubectl describe pytorchjob` lists.
func requireReportSeen(t *testing.T, ns, job string, pods map[string][]corev1.Pod) {
	t.Helper()
	var first *corev1.Pod
	for _, list := range pods {
		first = &list[0]
		break
	}
	r := reportOn(t, first)
	out, _ := mustKubectl(t, "", "describe", "pod", "-n", ns, first.Name)
	t.Logf("kubectl describe pod %s (the annotations):\n%s", first.Name, out[:strings.Index(out, "Status:")])
	for _, l := range r.Lines[:4] {
		if !strings.Contains(out, l) {
			t.Errorf("kubectl describe pod %s: the report's line %q is not shown:\n%s", first.Name, l, out)
		}
	}
	var evs []eventsv1.Event
	waitFor(t, eventsWithin, "an RDMAReport Event on "+job, func() (bool, string) {
		evs = nil
		for _, e := range eventsAbout(t, ns, "PyTorchJob", job) {
			if e.Reason == "RDMAReport" {
				evs = append(evs, e)
			}
		}
		return len(evs) > 0, "none yet"
	})
	e := evs[0]
	if e.Type != corev1.EventTypeNormal || e.ReportingController != "rdma-webhook.io/webhook" ||
		!strings.Contains(e.Note, strings.Join(r.Lines[:3], " | ")) || len(e.Note) > 1024 {
		t.Errorf("RDMAReport Event: type %q controller %q note %q; want Normal, the report's lines joined",
			e.Type, e.ReportingController, e.Note)
	}
	out, _ = mustKubectl(t, "", "describe", "pytorchjob", "-n", ns, job)
	events := out[strings.Index(out, "Events:"):]
	t.Logf("kubectl describe pytorchjob %s:\n%s", job, events)
	for _, want := range []string{"Normal", "RDMAReport", "rdma-webhook.io/webhook", "report mode (namespace label rdma-webhook.io/mode): nothing changed"} {
		if !strings.Contains(events, want) {
			t.Errorf("kubectl describe pytorchjob %s: the Events lack %q:\n%s", job, want, events)
		}
	}
}
