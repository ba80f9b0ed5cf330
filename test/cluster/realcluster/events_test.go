package realcluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// eventsWithin: the webhook's Events are in the apiserver this soon after
// the admissions; a series' count is patched every 2 s at most.
const eventsWithin = 20 * time.Second

// octalJobYAML is a PyTorchJob of one master and workers workers whose
// pytorch container sets NCCL_IB_TIMEOUT=022, which NCCL reads as octal:
// every pod gets the same warning.
func octalJobYAML(name string, workers int) string {
	return jobYAMLOf(name, 8, workers, `            env:
            - name: NCCL_IB_TIMEOUT
              value: "022"
`)
}

// eventsAbout lists, through events.k8s.io/v1, the webhook's Events in ns
// regarding the object of this kind and name (the training-operator has its
// own about the job: SuccessfulCreatePod, ...).
func eventsAbout(t testing.TB, ns, kind, name string) []eventsv1.Event {
	t.Helper()
	list, err := clientset.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "regarding.kind=" + kind + ",regarding.name=" + name +
			",reportingController=rdma-webhook.io/webhook"})
	if err != nil {
		t.Fatalf("list the Events of %s %s/%s: %v", kind, ns, name, err)
	}
	return list.Items
}

func seriesCount(e eventsv1.Event) int32 {
	if e.Series != nil {
		return e.Series.Count
	}
	return 1
}

// TestEventsOnPyTorchJob: a job of one master and four workers whose pods
// all get the same warning: one Event on the PyTorchJob (its uid in
// regarding) counting the five pods, which `kubectl describe pytorchjob`
// and `kubectl get events --field-selector involvedObject.name=J` show.
func TestEventsOnPyTorchJob(t *testing.T) {
	ns := newNamespace(t, nil)
	const job = "octal-events"
	mustKubectl(t, octalJobYAML(job, 4), "apply", "-n", ns, "-f", "-")
	var j pytorchJob
	j.Metadata.Name = job
	j.Spec.Replicas = map[string]replicaSpec{"Master": {Replicas: 1}, "Worker": {Replicas: 4}}
	pods := jobPods(t, ns, j)
	var uid string
	for _, p := range pods["worker"][:1] {
		for _, ref := range p.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				uid = string(ref.UID)
			}
		}
	}
	if uid == "" {
		t.Fatalf("the worker pods have no controller ownerReference")
	}

	e := requireOneEvent(t, ns, "kubeflow.org/v1", "PyTorchJob", job, uid, 5)
	if e.Type != corev1.EventTypeWarning || e.ReportingController != "rdma-webhook.io/webhook" ||
		e.ReportingInstance == "" || e.Action != "Admit" || e.Reason != "MutatedWithWarnings" {
		t.Errorf("Event %s: type %q controller %q instance %q action %q reason %q", e.Name, e.Type,
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason)
	}
	if !strings.Contains(e.Note, "NCCL_IB_TIMEOUT") || !strings.HasPrefix(e.Note, "pod "+job+"-") {
		t.Errorf("note %q: expected the pod and the NCCL_IB_TIMEOUT warning", e.Note)
	}

	// Where the engineer looks.
	out, _ := mustKubectl(t, "", "describe", "pytorchjob", "-n", ns, job)
	events := out[strings.Index(out, "Events:"):]
	t.Logf("kubectl describe pytorchjob %s:\n%s", job, events)
	for _, want := range []string{"Warning", "MutatedWithWarnings", "rdma-webhook.io/webhook", "(x5 over", "NCCL_IB_TIMEOUT"} {
		if !strings.Contains(events, want) {
			t.Errorf("kubectl describe pytorchjob %s: the Events lack %q:\n%s", job, want, events)
		}
	}
	out, _ = mustKubectl(t, "", "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+job)
	if !strings.Contains(out, "MutatedWithWarnings") || !strings.Contains(out, "pytorchjob/"+job) {
		t.Errorf("kubectl get events --field-selector involvedObject.name=%s:\n%s", job, out)
	}
	// The same Event through core/v1, as describe reads it: by the uid.
	core, err := clientset.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.uid=" + uid + ",reportingComponent=rdma-webhook.io/webhook"})
	if err != nil || len(core.Items) != 1 || core.Items[0].InvolvedObject.Kind != "PyTorchJob" {
		t.Errorf("core/v1 Events with involvedObject.uid=%s: %v, %+v", uid, err, core)
	}
}

// webhookMetric is the value of an unlabelled sample of the webhook's
// /metrics, read over HTTPS with a token of the reader role
// (metricsauth_test.go), as a Prometheus reads it.
func webhookMetric(t testing.TB, name string) string {
	t.Helper()
	reader, _ := metricsTokens(t)
	code, body := metricsGet(t, "/metrics", reader)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics with the reader's token: %d %q", code, body)
	}
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			return f[1]
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return ""
}

// TestEventsNotForServerSideDryRun: `kubectl create --dry-run=server` of a
// pod with a warning reports nothing; the same pod created for real makes
// one Event, on the Namespace, naming it (the queue is in order: a dry
// run's report would have come first and be the one named).
func TestEventsNotForServerSideDryRun(t *testing.T) {
	ns := newNamespace(t, nil)
	timeout := corev1.EnvVar{Name: "NCCL_IB_TIMEOUT", Value: "022"}
	before := webhookMetric(t, "rdma_webhook_event_reports_total")
	_, stderr := mustKubectl(t, toJSON(t, gpuPod("dry-octal", 8, timeout)), "create", "-n", ns, "--dry-run=server", "-f", "-")
	if !strings.Contains(stderr, "NCCL_IB_TIMEOUT") {
		t.Fatalf("the dry run got no warning; the test needs one:\n%s", stderr)
	}
	if after := webhookMetric(t, "rdma_webhook_event_reports_total"); after != before {
		t.Errorf("rdma_webhook_event_reports_total went from %s to %s with a dry run", before, after)
	}
	mustKubectl(t, toJSON(t, gpuPod("real-octal", 8, timeout)), "create", "-n", ns, "-f", "-")
	var evs []eventsv1.Event
	waitFor(t, eventsWithin, "the Event of pod real-octal", func() (bool, string) {
		evs = eventsAbout(t, ns, "Namespace", ns)
		return len(evs) > 0, "none"
	})
	if len(evs) != 1 || seriesCount(evs[0]) != 1 || !strings.HasPrefix(evs[0].Note, "pod real-octal: ") {
		for _, e := range evs {
			t.Logf("Event %s: count %d, note %q", e.Name, seriesCount(e), e.Note)
		}
		t.Fatalf("expected one Event, for real-octal alone, got %d", len(evs))
	}
	if evs[0].Regarding.APIVersion != "v1" || evs[0].Regarding.Namespace != ns {
		t.Errorf("regarding %+v, expected v1 Namespace %s", evs[0].Regarding, ns)
	}
}

// requireOneEvent waits until the webhook's Events regarding kind/name
// count n pods, requires that one Event does (the same warning on every
// pod is one Event with a series) and that it regards exactly the object
// (apiVersion, namespace, uid), and returns it.
func requireOneEvent(t testing.TB, ns, apiVersion, kind, name, uid string, n int32) eventsv1.Event {
	t.Helper()
	var evs []eventsv1.Event
	waitFor(t, eventsWithin, fmt.Sprintf("Events counting the %d pods of %s %s", n, kind, name), func() (bool, string) {
		evs = eventsAbout(t, ns, kind, name)
		var total int32
		for _, e := range evs {
			total += seriesCount(e)
		}
		return total == n, fmt.Sprintf("%d Events counting %d pods", len(evs), total)
	})
	if len(evs) != 1 {
		t.Fatalf("%d pods with the same warning: expected 1 Event, got %d", n, len(evs))
	}
	e := evs[0]
	if string(e.Regarding.UID) != uid || e.Regarding.APIVersion != apiVersion || e.Regarding.Namespace != ns {
		t.Errorf("regarding %+v, expected %s %s %s/%s uid %s", e.Regarding, apiVersion, kind, ns, name, uid)
	}
	return e
}
