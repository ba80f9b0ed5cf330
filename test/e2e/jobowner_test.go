package e2e

// The jobset_owner lookup in serve (issue 24): a pod with the JobSet labels
// is a TrainJob's when a TrainJob controls its JobSet, read from the fake
// apiserver (GET the JobSet, then the TrainJob for its runtime), cached for
// --job-cache-seconds. Its Event is on the TrainJob, where the engineer who
// submitted it looks; a forbidden JobSet GET is one warn line with the RBAC
// to grant and a count, and the pod is admitted all the same.
//
// The pods opt in (rdma-webhook.io/inject) and ask for 2 GPUs, for which the
// shipped profiles have none: each gets the no-profile warning, so each has
// an Event, whether or not TrainJob pods are targets by themselves (the
// shipped profiles leave targets.trainjob at its default, on).

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	jobSetsPath   = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/" + jobNS + "/jobsets/"
	trainJobsPath = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/" + jobNS + "/trainjobs/"
)

func trainJobUID(name string) string {
	return "7a1e0f3c-4b2d-4e8f-9c0a-" + fmt.Sprintf("%012x", len(name))
}

// putTrainJob serves TrainJob name of runtime and the JobSet Kubeflow
// Trainer makes for it (same name, controlled by it), as raw GETs.
func putTrainJob(a *fakeAPI, name, runtime string) {
	js := obj{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": obj{"name": name, "namespace": jobNS, "uid": "5c0d9e2a-0000-4000-8000-00000000js01",
			"ownerReferences": []interface{}{obj{
				"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": name,
				"uid": trainJobUID(name), "controller": true, "blockOwnerDeletion": true,
			}}},
		"spec": obj{"replicatedJobs": []interface{}{
			obj{"name": "dataset-initializer", "replicas": 1},
			obj{"name": "node", "replicas": 1},
		}},
	}
	tj := obj{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": obj{"name": name, "namespace": jobNS, "uid": trainJobUID(name)},
		"spec":     obj{"runtimeRef": obj{"name": runtime}},
	}
	a.setRawGet(jobSetsPath+name, mustMarshal(js))
	a.setRawGet(trainJobsPath+name, mustMarshal(tj))
}

// trainJobPod is node pod index of TrainJob (JobSet) name, as the Job
// controller creates it, opted in, with gpus GPUs.
func trainJobPod(name string, index, gpus int) obj {
	pod := trainingPod(gpus)
	meta := pathObj(pod, "metadata")
	job := name + "-node-0"
	meta["name"] = fmt.Sprintf("%s-%d-x%d", job, index, index)
	meta["labels"] = obj{
		"jobset.sigs.k8s.io/jobset-name":           name,
		"jobset.sigs.k8s.io/replicatedjob-name":    "node",
		"jobset.sigs.k8s.io/job-index":             "0",
		"batch.kubernetes.io/job-completion-index": fmt.Sprint(index),
	}
	meta["annotations"] = obj{injectKey: "true"}
	meta["ownerReferences"] = []interface{}{obj{
		"apiVersion": "batch/v1", "kind": "Job", "name": job,
		"uid": "9d8c7b6a-0000-4000-8000-0000000job01", "controller": true, "blockOwnerDeletion": true,
	}}
	pathArr(pod, "spec", "containers")[0].(obj)["name"] = "node"
	return pod
}

// gets counts the GETs of path since mark.
func gets(a *fakeAPI, mark int, path string) int {
	return a.count(mark, func(r apiRequest) bool { return r.Method == http.MethodGet && r.Path == path })
}

// TestTrainJobPodEventOnTheTrainJob: the Event of a TrainJob's pod regards
// the TrainJob (apiVersion, name, uid from the JobSet's controlling owner),
// not the Job that owns the pod; a plain JobSet's pod keeps its Job.
func TestTrainJobPodEventOnTheTrainJob(t *testing.T) {
	a := startFakeAPI(t)
	putTrainJob(a, "llama-ft", "torch-distributed")
	in := startLookupInstance(t, a)

	mark := a.requestMark()
	ad := in.admit(t, trainJobPod("llama-ft", 0, 2))
	if ad.warningWith(noProfileWarning) == "" {
		t.Fatalf("expected the no-profile warning, got %q", ad.rr.warnings)
	}
	a.waitRequest(t, mark, eventWithin, "an Event create", isKind("create-event"))
	ev := eventBodies(t, a, mark, "create-event")[0]
	want := obj{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llama-ft",
		"namespace": jobNS, "uid": trainJobUID("llama-ft")}
	if !jsonEqual(ev["regarding"], want) {
		t.Errorf("regarding %s, expected %s", compact(ev["regarding"]), compact(want))
	}
	if n := gets(a, mark, jobSetsPath+"llama-ft"); n != 1 {
		t.Errorf("GETs of the JobSet: %d, expected 1", n)
	}
	if n := gets(a, mark, trainJobsPath+"llama-ft"); n != 1 {
		t.Errorf("GETs of the TrainJob: %d, expected 1", n)
	}

	// A JobSet no TrainJob controls (here: none the API has, a 404): the
	// Event stays on the pod's controlling owner, the Job.
	mark = a.requestMark()
	in.admit(t, trainJobPod("plain", 0, 2))
	a.waitRequest(t, mark, eventWithin, "an Event create", isKind("create-event"))
	ev = eventBodies(t, a, mark, "create-event")[0]
	if k, _ := pathStr(ev, "regarding", "kind"); k != "Job" {
		t.Errorf("a plain JobSet's pod: regarding %s, expected its Job", compact(ev["regarding"]))
	}
	if n := in.metricInt(t, `rdma_webhook_lookup_failures_total{kind="jobset",reason="not_found"}`); n != 0 {
		t.Errorf("a JobSet's 404 is an answer, not a failure: counted %d", n)
	}
}

// TestJobLookupsCached: the pods of one TrainJob cost one GET of its JobSet
// and one of the TrainJob; after --job-cache-seconds the next pod asks again.
func TestJobLookupsCached(t *testing.T) {
	a := startFakeAPI(t)
	putTrainJob(a, "bert-pt", "torch-distributed")
	in := startLookupInstance(t, a, "--job-cache-seconds", "1")

	mark := a.requestMark()
	for i := 0; i < 4; i++ {
		in.admit(t, trainJobPod("bert-pt", i, 2))
	}
	if js, tj := gets(a, mark, jobSetsPath+"bert-pt"), gets(a, mark, trainJobsPath+"bert-pt"); js != 1 || tj != 1 {
		t.Errorf("4 pods of one TrainJob: %d GETs of the JobSet and %d of the TrainJob, expected 1 and 1", js, tj)
	}
	time.Sleep(1100 * time.Millisecond)
	in.admit(t, trainJobPod("bert-pt", 4, 2))
	if js, tj := gets(a, mark, jobSetsPath+"bert-pt"), gets(a, mark, trainJobsPath+"bert-pt"); js != 2 || tj != 2 {
		t.Errorf("after --job-cache-seconds 1: %d GETs of the JobSet and %d of the TrainJob, expected 2 and 2", js, tj)
	}
}

// TestJobSetLookupForbidden: the JobSet GET answered 403 (the ClusterRole's
// jobsets rule missing) is a warn line naming the JobSet, the status and
// the rule to grant, and a count under kind="jobset"; the pod is admitted,
// its Event on its Job (whose the JobSet is is not known).
func TestJobSetLookupForbidden(t *testing.T) {
	const sample = `rdma_webhook_lookup_failures_total{kind="jobset",reason="forbidden"}`
	a := startFakeAPI(t)
	a.setFailure(jobSetsPath, http.StatusForbidden)
	in := startLookupInstance(t, a)
	if v := in.metric(t, sample); v != "0" {
		t.Fatalf("before any lookup: %s is %q, expected 0", sample, v)
	}

	mark, amark := in.logMark(), a.requestMark()
	ad := in.admit(t, trainJobPod("secret-ft", 0, 2))
	if ad.warningWith(noProfileWarning) == "" {
		t.Errorf("the pod is admitted as before, with its warning; got %q", ad.rr.warnings)
	}
	line, _ := in.waitLog(t, mark, 5*time.Second, "about the forbidden JobSet GET",
		msgIs(lookupFailedMsg, "kind", "JobSet", "namespace", jobNS, "name", "secret-ft", "status", "403",
			"reason", "forbidden"))
	if h, _ := pathStr(line, "hint"); !strings.Contains(h, "get on jobsets.jobset.x-k8s.io") ||
		!strings.Contains(h, "manifests/rbac.yaml") {
		t.Errorf("hint %q, expected the RBAC rule to grant", h)
	}
	in.waitMetric(t, sample, 2*time.Second, "the forbidden JobSet GET", func(v int64) bool { return v == 1 })
	if n := gets(a, amark, trainJobsPath+"secret-ft"); n != 0 {
		t.Errorf("the TrainJob was asked for %d times with its JobSet unread", n)
	}
	a.waitRequest(t, amark, eventWithin, "an Event create", isKind("create-event"))
	ev := eventBodies(t, a, amark, "create-event")[0]
	if k, _ := pathStr(ev, "regarding", "kind"); k != "Job" {
		t.Errorf("the JobSet unread: regarding %s, expected the pod's Job", compact(ev["regarding"]))
	}
}
