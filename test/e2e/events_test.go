package e2e

// Events (docs/operations.md "Events"): an admission with warnings becomes an
// events.k8s.io/v1 Event on the pod's controlling owner, or on its
// Namespace, sent to the fake apiserver off the request path; never for a
// dry run; aggregated into one Event per job and warning; a forbidden API
// or a full queue changes no admission.

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	eventsPath = "/apis/events.k8s.io/v1/namespaces/" + jobNS + "/events"
	// The shipped profiles have none for 2 GPUs: the pod gets this warning.
	noProfileWarning = "add a profile for 2 GPUs on these nodes, or set rdma-webhook.io/profile; no NCCL settings added"
	// eventWithin: an Event's request reaches the API this soon after the
	// admission; a series' count, within the patch gap (2 s) more.
	eventWithin  = 3 * time.Second
	seriesWithin = 8 * time.Second
)

// jobUID is the made-up uid of PyTorchJob job.
func jobUID(job string) string {
	h := fnv.New64a()
	h.Write([]byte(job))
	return fmt.Sprintf("0b1c7a52-9d1e-4c55-8a0c-%012x", h.Sum64()&0xffffffffffff)
}

// jobPod is replica index of type rt of PyTorchJob job, as the
// training-operator creates it, with gpus GPUs.
func jobPod(job, rt string, index, gpus int) obj {
	pod := trainingPod(gpus)
	meta := pathObj(pod, "metadata")
	meta["name"] = fmt.Sprintf("%s-%s-%d", job, rt, index)
	labels := pathObj(meta, "labels")
	labels["training.kubeflow.org/job-name"] = job
	labels["training.kubeflow.org/job-role"] = rt
	labels["training.kubeflow.org/replica-type"] = rt
	labels["training.kubeflow.org/replica-index"] = strconv.Itoa(index)
	ref := pathArr(meta, "ownerReferences")[0].(obj)
	ref["name"], ref["uid"] = job, jobUID(job)
	return pod
}

// eventBodies is the decoded body of every request of kind since from.
func eventBodies(t *testing.T, a *fakeAPI, from int, kind string) []obj {
	t.Helper()
	var out []obj
	reqs := a.requests()
	for i := from; i < len(reqs); i++ {
		if reqs[i].Kind != kind {
			continue
		}
		o, err := decodeObject(reqs[i].Body)
		if err != nil {
			t.Fatalf("request #%d %s: body is not JSON: %v\n%s", i, reqs[i], err, reqs[i].Body)
		}
		out = append(out, o)
	}
	return out
}

// TestEventsOnTheOwner: the Event of a PyTorchJob pod's warning, field by
// field as the fake apiserver received it, and the Event of a pod without
// an owner, on its Namespace.
func TestEventsOnTheOwner(t *testing.T) {
	// Not parallel: t.Setenv (POD_NAME) is process-wide.
	t.Setenv("POD_NAME", "rdma-webhook-5d8f7c9b4-x2vqk")
	a := startFakeAPI(t)
	in := startLookupInstance(t, a)

	t.Run("owner", func(t *testing.T) {
		mark := a.requestMark()
		ad := in.admit(t, jobPod("bert", "worker", 3, 2))
		if ad.warningWith(noProfileWarning) == "" {
			t.Fatalf("expected the no-profile warning, got %q", ad.rr.warnings)
		}
		r, _ := a.waitRequest(t, mark, eventWithin, "an Event create", isKind("create-event"))
		if r.Status != http.StatusCreated || r.Path != eventsPath || r.ContentType != "application/json" {
			t.Errorf("create: %s, Content-Type %q; expected 201 at %s, application/json", r, r.ContentType, eventsPath)
		}
		ev := eventBodies(t, a, mark, "create-event")[0]
		for key, want := range map[string]string{
			"apiVersion": "events.k8s.io/v1", "kind": "Event", "type": "Warning",
			"reportingController": "rdma-webhook.io/webhook",
			"reportingInstance":   "rdma-webhook-5d8f7c9b4-x2vqk",
			"action":              "Admit", "reason": "NotMutated",
			"note": "pod bert-worker-3 (worker 3): " + noProfileWarning,
		} {
			if got, _ := pathStr(ev, key); got != want {
				t.Errorf("Event %s: %q, expected %q", key, got, want)
			}
		}
		wantRegarding := obj{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "bert",
			"namespace": jobNS, "uid": jobUID("bert")}
		if !jsonEqual(ev["regarding"], wantRegarding) {
			t.Errorf("regarding %s, expected %s", compact(ev["regarding"]), compact(wantRegarding))
		}
		if name, _ := pathStr(ev, "metadata", "name"); !regexp.MustCompile(`^bert\.[0-9a-f]{15,16}$`).MatchString(name) {
			t.Errorf("metadata.name %q: expected bert.<unix nanoseconds in hex>, as client-go names Events", name)
		}
		if ns, _ := pathStr(ev, "metadata", "namespace"); ns != jobNS {
			t.Errorf("metadata.namespace %q, expected %q", ns, jobNS)
		}
		at, _ := pathStr(ev, "eventTime")
		if when, err := time.Parse(microTime, at); err != nil || time.Since(when).Abs() > time.Minute {
			t.Errorf("eventTime %q: expected a MicroTime within a minute of now (%v)", at, err)
		}
		if _, ok := ev["series"]; ok {
			t.Errorf("a first report has no series: %s", compact(ev))
		}
		waitFor(t, eventWithin, "rdma_webhook_event_requests_total{result=\"created\"} 1", func() bool {
			return in.metric(t, `rdma_webhook_event_requests_total{result="created"}`) == "1"
		})
		if got := in.metric(t, "rdma_webhook_event_reports_total"); got != "1" {
			t.Errorf("rdma_webhook_event_reports_total: expected 1, got %q", got)
		}
	})
	t.Run("no owner", func(t *testing.T) {
		mark := a.requestMark()
		pod := jobPod("solo", "worker", 0, 2)
		delete(pathObj(pod, "metadata"), "ownerReferences")
		for _, l := range []string{"replica-type", "replica-index"} {
			delete(pathObj(pod, "metadata", "labels"), "training.kubeflow.org/"+l)
		}
		in.admit(t, pod)
		a.waitRequest(t, mark, eventWithin, "an Event create", isKind("create-event"))
		ev := eventBodies(t, a, mark, "create-event")[0]
		// regarding.namespace is set: the API keeps an Event about an object
		// without one only in default or kube-system.
		want := obj{"apiVersion": "v1", "kind": "Namespace", "name": jobNS, "namespace": jobNS}
		if !jsonEqual(ev["regarding"], want) {
			t.Errorf("regarding %s, expected %s", compact(ev["regarding"]), compact(want))
		}
		if note, _ := pathStr(ev, "note"); note != "pod solo-worker-0: "+noProfileWarning {
			t.Errorf("note %q", note)
		}
	})
	// A warning longer than kubectl's 120 bytes: cut in the response (its
	// name shortened, with "..."), whole in the Event's note and in the
	// pod's rdma-webhook.io/warnings (issue 22, item 5).
	t.Run("long warning whole", func(t *testing.T) {
		mark := a.requestMark()
		long := strings.Repeat("c", 50) + "-trainer-main"
		pod := withEnv(jobPod("gpt", "worker", 0, 8), "NCCL_IB_TIMEOUT", "20")
		pathArr(pod, "spec", "containers")[0].(obj)["name"] = long
		ad := in.admit(t, pod)
		whole := `drop NCCL_IB_TIMEOUT in container "` + long + `" to get the profile's 22`
		short := ad.warningWith("drop NCCL_IB_TIMEOUT")
		if len(short) >= 120 || strings.Contains(short, long) || !strings.Contains(short, "...") {
			t.Errorf("the response's warning: expected under 120 bytes with the name cut (...), got %q", short)
		}
		if len(whole) <= 120 {
			t.Fatalf("the test's warning is %d bytes: not past 120", len(whole))
		}
		if pw := podWarnings(t, ad.patched); len(pw) != 1 || pw[0] != whole {
			t.Errorf("the pod's %s: expected [%q], got %q", warningsAnnotation, whole, pw)
		}
		a.waitRequest(t, mark, eventWithin, "an Event create", isKind("create-event"))
		ev := eventBodies(t, a, mark, "create-event")[0]
		if note, _ := pathStr(ev, "note"); note != "pod gpt-worker-0 (worker 0): "+whole {
			t.Errorf("note %q: expected the whole warning %q", note, whole)
		}
	})
	if n := len(a.storedEvents()); n != 3 {
		t.Errorf("the fake apiserver stored %d Events, expected 3", n)
	}
}

// TestEventsNotForDryRun: a dry run's warnings reach its response and make
// no Event; the next real admission's Event is the only one (the queue is
// in order, so a dry run's would have come first).
func TestEventsNotForDryRun(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := startLookupInstance(t, a)
	dry := podCreate(jobNS, jobPod("dry", "master", 0, 2))
	dry.dryRun = true
	if rr := in.review(t, dry); len(rr.warnings) == 0 {
		t.Fatalf("the dry run got no warning; the test needs one")
	}
	in.admit(t, jobPod("wet", "master", 0, 2))
	a.waitRequest(t, 0, eventWithin, "the Event of the real admission", isKind("create-event"))
	bodies := eventBodies(t, a, 0, "create-event")
	if len(bodies) != 1 {
		t.Fatalf("expected 1 Event create, got %d:\n%s", len(bodies), a.logSince(0))
	}
	if name, _ := pathStr(bodies[0], "regarding", "name"); name != "wet" {
		t.Errorf("the Event is about %q, expected the real admission's job wet", name)
	}
	if got := in.metric(t, "rdma_webhook_event_reports_total"); got != "1" {
		t.Errorf("rdma_webhook_event_reports_total: expected 1 (the dry run reports nothing), got %q", got)
	}
}

// TestEventsOncePerPod: the apiserver calls the webhook again for a pod it
// mutated (reinvocation, or the second webhook entry); that call's warnings
// are the first call's, and the pod counts once.
func TestEventsOncePerPod(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := startLookupInstance(t, a)
	octal := jobPod("again", "master", 0, 8)
	c := pathArr(octal, "spec", "containers")[0].(obj)
	c["env"] = append(c["env"].([]interface{}), obj{"name": "NCCL_IB_TIMEOUT", "value": "022"})
	first := in.admit(t, octal)
	second := in.admit(t, first.patched)
	if first.rr.patch == nil || second.rr.patch != nil || len(second.rr.warnings) == 0 {
		t.Fatalf("the test needs a mutation, then a call again with no patch and warnings: %s / %s %q",
			first.rr.patch, second.rr.patch, second.rr.warnings)
	}
	if got := in.metric(t, "rdma_webhook_event_reports_total"); got != "1" {
		t.Errorf("rdma_webhook_event_reports_total after a pod and its call again: expected 1, got %q", got)
	}
	a.waitRequest(t, 0, eventWithin, "the Event", isKind("create-event"))
	if ev := eventBodies(t, a, 0, "create-event")[0]; ev["reason"] != "MutatedWithWarnings" {
		t.Errorf("the Event's reason %v, expected the first call's MutatedWithWarnings", ev["reason"])
	}
}

// TestEventsAggregated: 40 workers of one job with the same warning make one
// Event counting 40, and 3 of another job one counting 3; a few requests in
// all, every patch a merge patch of the series alone.
func TestEventsAggregated(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := startLookupInstance(t, a)
	for i := 0; i < 40; i++ {
		in.admit(t, jobPod("big", "worker", i, 2))
	}
	for i := 0; i < 3; i++ {
		in.admit(t, jobPod("small", "worker", i, 2))
	}
	counts := func() string {
		var out []string
		for _, ev := range a.storedEvents() {
			n, _ := pathStr(ev, "regarding", "name")
			out = append(out, fmt.Sprintf("%s:%d", n, seriesCount(ev)))
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	deadline := time.Now().Add(seriesWithin)
	for counts() != "big:40 small:3" {
		if time.Now().After(deadline) {
			t.Fatalf("after %v the fake holds Events %q, expected big:40 small:3; requests:\n%s",
				seriesWithin, counts(), a.logSince(0))
		}
		time.Sleep(20 * time.Millisecond)
	}
	big := a.eventsAbout("PyTorchJob", "big")[0]
	if note, _ := pathStr(big, "note"); note != "pod big-worker-0 (worker 0): "+noProfileWarning {
		t.Errorf("the Event's note %q: expected the first pod's", note)
	}
	if _, err := time.Parse(microTime, fmt.Sprint(path(big, "series", "lastObservedTime"))); err != nil {
		t.Errorf("series.lastObservedTime: %v", err)
	}
	creates, patches := a.count(0, isKind("create-event")), a.count(0, isKind("patch-event"))
	t.Logf("43 pods: %d creates, %d patches", creates, patches)
	if creates != 2 || patches > 6 {
		t.Errorf("43 pods of 2 jobs: expected 2 creates and a few patches, got %d and %d:\n%s", creates, patches, a.logSince(0))
	}
	for i, r := range a.requests() {
		if r.Kind != "patch-event" {
			continue
		}
		p, err := decodeObject(r.Body)
		if r.ContentType != "application/merge-patch+json" || err != nil || len(p) != 1 || p["series"] == nil || r.Status != http.StatusOK {
			t.Errorf("patch #%d %s (%s): expected a merge patch of the series alone, answered 200: %s", i, r, r.ContentType, r.Body)
		}
	}
	if got := in.metric(t, "rdma_webhook_event_reports_aggregated_total"); got != "41" {
		t.Errorf("rdma_webhook_event_reports_aggregated_total: expected 41, got %q", got)
	}
}

// TestEventsForbiddenChangesNoAdmission: without the RBAC (403) the
// admission is the same, as fast; the failure is counted and logged once
// at warn with what to grant.
func TestEventsForbiddenChangesNoAdmission(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.setFailure("/apis/events.k8s.io/", http.StatusForbidden)
	in := startLookupInstance(t, a)
	mark := in.logMark()
	// A pod the webhook mutates, with a warning: NCCL reads 022 as octal.
	octal := jobPod("deny", "master", 0, 8)
	c := pathArr(octal, "spec", "containers")[0].(obj)
	c["env"] = append(c["env"].([]interface{}), obj{"name": "NCCL_IB_TIMEOUT", "value": "022"})
	denied := in.admit(t, octal)
	if denied.rr.patch == nil || len(denied.rr.warnings) == 0 {
		t.Fatalf("the test needs a patch and a warning, got %s and %q", denied.rr.patch, denied.rr.warnings)
	}
	for i := 1; i < 5; i++ {
		in.admit(t, jobPod(fmt.Sprintf("deny%d", i), "master", 0, 2))
	}
	a.waitRequest(t, 0, eventWithin, "a denied Event create", func(r apiRequest) bool {
		return r.Kind == "create-event" && r.Status == http.StatusForbidden
	})
	waitFor(t, eventWithin, "5 failed Event requests counted", func() bool {
		return in.metric(t, `rdma_webhook_event_requests_total{result="failed"}`) == "5"
	})
	a.setFailure("/apis/events.k8s.io/", 0)
	allowed := in.admit(t, octal)
	if !samePatch(denied.rr.patch, allowed.rr.patch) || strings.Join(denied.rr.warnings, "\n") != strings.Join(allowed.rr.warnings, "\n") {
		t.Errorf("the admission with the Events API denied differs from the one allowed:\npatch %s\nvs    %s\nwarnings %q vs %q",
			denied.rr.patch, allowed.rr.patch, denied.rr.warnings, allowed.rr.warnings)
	}
	if denied.took > time.Second {
		t.Errorf("the admission took %v with the Events API denied", denied.took)
	}
	warns := in.linesSince(mark, func(o obj) bool {
		return msgIs("Event not sent; admissions are not affected")(o) && levelIs("warn")(o)
	})
	if len(warns) != 1 {
		t.Fatalf("expected one warn line for 5 denied Events, got %d", len(warns))
	}
	if h, _ := pathStr(warns[0], "hint"); !strings.Contains(h, "manifests/rbac.yaml") || warns[0]["status"] == nil {
		t.Errorf("the warn line should give the status and what to grant: %s", compact(warns[0]))
	}
	if st := in.readyz(t, true); st != http.StatusOK {
		t.Errorf("/readyz with the Events API denied: %d", st)
	}
}

// TestEventsQueueFullDropsAndCounts: with an API that takes 3 s per Event,
// 300 admissions of distinct jobs fill the queue of 256: the rest are
// dropped and counted, and no admission waits.
func TestEventsQueueFullDropsAndCounts(t *testing.T) {
	// Not parallel: the queue fills only while 300 admissions outpace a
	// sender stalled by the 3 s Events API (its requests time out after
	// 5 s); with other tests taking the CPU they took longer, the sender
	// drained the queue between two stalls, and nothing was dropped.
	a := startFakeAPI(t)
	a.setDelay("/apis/events.k8s.io/", 3*time.Second)
	in := startLookupInstance(t, a)
	var mu sync.Mutex
	var slowest time.Duration
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < 300; i += 4 {
				r := podCreate(jobNS, jobPod(fmt.Sprintf("job-%d", i), "master", 0, 2))
				start := time.Now()
				if _, err := in.postReview(in.client, r); err != nil {
					t.Errorf("admission %d: %v", i, err)
					return
				}
				mu.Lock()
				if d := time.Since(start); d > slowest {
					slowest = d
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	queued, _ := strconv.Atoi(in.metric(t, "rdma_webhook_event_reports_total"))
	dropped, _ := strconv.Atoi(in.metric(t, "rdma_webhook_event_reports_dropped_total"))
	t.Logf("300 admissions: %d queued, %d dropped; the slowest took %v", queued, dropped, slowest)
	if dropped == 0 || queued+dropped != 300 || queued < 256 {
		t.Errorf("expected at least 256 queued and the rest of 300 dropped, got %d and %d", queued, dropped)
	}
	if slowest > time.Second {
		t.Errorf("an admission took %v while the Events API was slow", slowest)
	}
}

// TestEventsOffWithoutAnAPI: without an API the webhook says once that
// there are no Events, and reports none.
func TestEventsOffWithoutAnAPI(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath)
	in.waitLog(t, 0, pickUpWithin, "the no-Events line", msgStarts("no Kubernetes API: no Events"))
	in.admit(t, jobPod("offline", "master", 0, 2))
	in.admit(t, jobPod("offline", "worker", 0, 2))
	if n := len(in.linesSince(0, msgStarts("no Kubernetes API"))); n != 1 {
		t.Errorf("expected the no-Events line once, got %d", n)
	}
	if got := in.metric(t, "rdma_webhook_event_reports_total"); got != "0" {
		t.Errorf("rdma_webhook_event_reports_total without an API: expected 0, got %q", got)
	}
}
