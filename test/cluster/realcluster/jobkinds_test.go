package realcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The pods of issue 24's job kinds, made by the real controllers that up.sh
// starts with CLUSTER_JOBS=1: Kubeflow Trainer v2 (TrainJob -> JobSet ->
// Job -> Pod), JobSet (JobSet -> Job -> Pod) and mpi-operator v0.7 (MPIJob
// -> worker Pods, and a launcher Job -> Pod). Each test first asserts that
// the controllers made the pods (the part that is this suite's own), then
// what the webhook did to them, then that offline `mutate --patched`
// predicts the same.

// jobPodsWithin: a TrainJob's pods go through three controllers (Trainer,
// JobSet, the Job controller), each reacting to the one before it.
const jobPodsWithin = 90 * time.Second

// trainJobYAML: a TrainJob on Trainer's own torch-distributed runtime, nodes
// nodes of 8 GPUs each (resourcesPerNode), as Trainer's docs write one.
func trainJobYAML(name string, nodes int) string {
	return fmt.Sprintf(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: %s
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: %d
    resourcesPerNode:
      limits:
        nvidia.com/gpu: 8
`, name, nodes)
}

// jobSetYAML: a plain JobSet, one replicated job of one Job with two pods
// of 8 GPUs.
func jobSetYAML(name string) string {
	return fmt.Sprintf(`apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: %s
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        parallelism: 2
        completions: 2
        backoffLimit: 0
        template:
          spec:
            containers:
            - name: trainer
              image: nvcr.io/nvidia/pytorch:24.01-py3
              command: ["torchrun", "/workspace/train.py"]
              resources:
                limits:
                  nvidia.com/gpu: 8
`, name)
}

// moduleDir is where module mod (the version test/cluster/SUB/go.mod pins)
// is in the module cache.
func moduleDir(t testing.TB, sub, mod string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod)
	cmd.Dir = filepath.Join(root, "test", "cluster", sub)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s in test/cluster/%s: %v", mod, sub, err)
	}
	return strings.TrimSpace(string(out))
}

// mpiJobYAML: mpi-operator's own tensorflow-benchmarks example (a launcher
// without GPUs, workers with them), its workers given 8 GPUs each.
func mpiJobYAML(t testing.TB) (string, string) {
	t.Helper()
	path := filepath.Join(moduleDir(t, "mpi", "github.com/kubeflow/mpi-operator"),
		"examples", "v2beta1", "tensorflow-benchmarks", "tensorflow-benchmarks.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	specs := m["spec"].(map[string]any)["mpiReplicaSpecs"].(map[string]any)
	worker := specs["Worker"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	c := worker["containers"].([]any)[0].(map[string]any)
	c["resources"] = map[string]any{"limits": map[string]any{"nvidia.com/gpu": 8}}
	m["spec"].(map[string]any)["slotsPerWorker"] = 8
	return m["metadata"].(map[string]any)["name"].(string), toJSON(t, m)
}

// waitJobPods waits for n pods matching selector, like waitPods, with the
// longer time a chain of controllers needs.
func waitJobPods(t testing.TB, ns, selector string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, jobPodsWithin, fmt.Sprintf("%d pods %q in %s", n, selector, ns), func() (bool, string) {
		list, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		pods = list.Items
		return len(pods) == n, fmt.Sprintf("%d pods", len(pods))
	})
	return pods
}

// requireOwnedBy: the pod's controller is a kind (e.g. batch/v1 Job).
func requireOwnedBy(t testing.TB, p *corev1.Pod, apiVersion, kind string) {
	t.Helper()
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			if ref.APIVersion != apiVersion || ref.Kind != kind {
				t.Errorf("%s/%s: controlled by %s %s, want a %s %s", p.Namespace, p.Name, ref.APIVersion, ref.Kind, apiVersion, kind)
			}
			return
		}
	}
	t.Errorf("%s/%s: no controller ownerReference", p.Namespace, p.Name)
}

// requireNoWebhookTrace: no rdma-webhook.io/ annotation at all (no
// warnings, no report), and no log line of the webhook's counting a warning
// for it. Whether the pod reached the webhook at all is the manifests'
// choice (their objectSelectors), so a missing line is no failure; call it
// after the log lines of the job's target pods were seen, which come at the
// same time.
func requireNoWebhookTrace(t testing.TB, p *corev1.Pod) {
	t.Helper()
	for k, v := range p.Annotations {
		if strings.HasPrefix(k, "rdma-webhook.io/") {
			t.Errorf("%s/%s: annotation %s=%q, want none of the webhook's", p.Namespace, p.Name, k, v)
		}
	}
	for _, line := range admissionLines(t, p.Namespace, logName(p)) {
		if w, ok := line["warnings"]; ok && w != float64(0) {
			t.Errorf("%s/%s: the webhook's log line counts %v warnings, want none: %v", p.Namespace, p.Name, w, line)
		}
	}
}

// TestTrainJobPods: a TrainJob of 2 nodes on torch-distributed: Trainer
// makes a JobSet, JobSet a Job, the Job controller 2 pods, all of them
// trainer nodes (replicatedjob-name "node", container "node"), each stored
// with every addition of docs/profiles.md; any other pod of the TrainJob (an
// initializer) is left alone. Offline `mutate --patched` of the TrainJob and
// its ClusterTrainingRuntime predicts what the pods carry.
func TestTrainJobPods(t *testing.T) {
	ns := newNamespace(t, nil)
	const job = "tj-8gpu"
	mustKubectl(t, trainJobYAML(job, 2), "apply", "-n", ns, "-f", "-")
	pods := waitJobPods(t, ns, "jobset.sigs.k8s.io/jobset-name="+job, 2)
	var others []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		requireOwnedBy(t, p, "batch/v1", "Job")
		if rj := p.Labels["jobset.sigs.k8s.io/replicatedjob-name"]; rj != "node" {
			others = append(others, p)
			continue
		}
		requireMutated(t, p, "node", want{profile: "roce-8card", hca: hca8})
		if line := waitAdmissionLine(t, ns, logName(p)); line["result"] != "mutated" {
			t.Errorf("%s: log line %v, want result mutated", p.Name, line)
		}
	}
	for _, p := range others {
		requireUntouched(t, p)
		requireNoWebhookTrace(t, p)
	}
	if t.Failed() {
		return
	}
	runtime, _ := mustKubectl(t, "", "get", "clustertrainingruntime", "torch-distributed", "-o", "json")
	trainJob, _ := mustKubectl(t, "", "get", "trainjob", "-n", ns, job, "-o", "json")
	predicted := offlinePodTemplates(t, ns, `{"apiVersion":"v1","kind":"List","items":[`+trainJob+`,`+runtime+`]}`)
	var rt struct {
		Spec struct {
			Template struct {
				Spec struct {
					ReplicatedJobs []struct {
						Name     string `json:"name"`
						Template struct {
							Spec struct {
								Template corev1.PodTemplateSpec `json:"template"`
							} `json:"spec"`
						} `json:"template"`
					} `json:"replicatedJobs"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(runtime), &rt); err != nil {
		t.Fatal(err)
	}
	for i := range pods {
		rj := pods[i].Labels["jobset.sigs.k8s.io/replicatedjob-name"]
		pt, ok := predicted[job+"-"+rj]
		if !ok {
			t.Errorf("mutate --patched printed no PodTemplate %s-%s (got %v)", job, rj, keys(predicted))
			continue
		}
		for _, r := range rt.Spec.Template.Spec.ReplicatedJobs {
			if r.Name == rj {
				compareOffline(t, &pods[i], &r.Template.Spec.Template, pt)
			}
		}
	}
}

// TestJobSetPods: a plain JobSet's pods are targets only with the profiles'
// targets.jobset on (off in the shipped ones): with it, both pods of its Job
// are stored mutated, and offline `mutate --patched` of the JobSet predicts
// them.
func TestJobSetPods(t *testing.T) {
	ns := newNamespace(t, nil)
	cm := profilesConfigMap(t)
	var doc map[string]any
	if err := json.Unmarshal([]byte(cm.Data["profiles.json"]), &doc); err != nil {
		t.Fatal(err)
	}
	targets, _ := doc["targets"].(map[string]any)
	if targets == nil {
		targets = map[string]any{}
	}
	targets["jobset"] = true
	doc["targets"] = targets
	withJobSet := toJSON(t, doc)
	// rdma_webhook_profiles_generation tells when a version serves.
	gen0 := webhookMetric(t, "rdma_webhook_profiles_generation")
	var gen1 string
	serveProfiles(t, ns, withJobSet, func() (bool, string) {
		gen1 = webhookMetric(t, "rdma_webhook_profiles_generation")
		return gen1 != gen0, "generation " + gen1
	}, func() (bool, string) {
		g := webhookMetric(t, "rdma_webhook_profiles_generation")
		return g != gen1, "generation " + g
	})
	enableJobSetRouting(t, ns)

	const job = "js-8gpu"
	mustKubectl(t, jobSetYAML(job), "apply", "-n", ns, "-f", "-")
	pods := waitJobPods(t, ns, "jobset.sigs.k8s.io/jobset-name="+job, 2)
	for i := range pods {
		requireOwnedBy(t, &pods[i], "batch/v1", "Job")
		requireMutated(t, &pods[i], "trainer", want{profile: "roce-8card", hca: hca8})
	}
	if t.Failed() {
		return
	}
	stored, _ := mustKubectl(t, "", "get", "jobset", "-n", ns, job, "-o", "json")
	profiles := writeTemp(t, "profiles.json", withJobSet)
	out := offlineMutate(t, profiles, ns, stored)
	var before, after struct {
		Spec struct {
			ReplicatedJobs []struct {
				Template struct {
					Spec struct {
						Template corev1.PodTemplateSpec `json:"template"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"replicatedJobs"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(stored), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &after); err != nil {
		t.Fatalf("mutate --patched of a JobSet: %v\n%s", err, out)
	}
	if len(after.Spec.ReplicatedJobs) != 1 || len(before.Spec.ReplicatedJobs) != 1 {
		t.Fatalf("mutate --patched of a JobSet of 1 replicated job printed %d\n%s", len(after.Spec.ReplicatedJobs), out)
	}
	for i := range pods {
		compareOffline(t, &pods[i], &before.Spec.ReplicatedJobs[0].Template.Spec.Template,
			&after.Spec.ReplicatedJobs[0].Template.Spec.Template)
	}
}

// TestMPIJobPods: mpi-operator's tensorflow-benchmarks MPIJob (workers of
// 8 GPUs, a launcher with none): both workers are stored mutated; the
// launcher, which asks for no GPU, is left alone and gets no warning.
// Offline `mutate --patched` of the MPIJob predicts the workers.
func TestMPIJobPods(t *testing.T) {
	ns := newNamespace(t, nil)
	job, doc := mpiJobYAML(t)
	mustKubectl(t, doc, "apply", "-n", ns, "-f", "-")
	pods := waitJobPods(t, ns, "training.kubeflow.org/job-name="+job, 3)
	var workers []*corev1.Pod
	var launcher *corev1.Pod
	for i := range pods {
		switch p := &pods[i]; p.Labels["training.kubeflow.org/job-role"] {
		case "worker":
			requireOwnedBy(t, p, "kubeflow.org/v2beta1", "MPIJob")
			workers = append(workers, p)
		case "launcher":
			requireOwnedBy(t, p, "batch/v1", "Job")
			launcher = p
		}
	}
	if len(workers) != 2 || launcher == nil {
		t.Fatalf("want 2 workers and a launcher, got %d workers, launcher %v", len(workers), launcher != nil)
	}
	for _, p := range workers {
		requireMutated(t, p, "tensorflow-benchmarks", want{profile: "roce-8card", hca: hca8})
		requireNcclConf(t, p, "tensorflow-benchmarks")
		if line := waitAdmissionLine(t, ns, logName(p)); line["result"] != "mutated" {
			t.Errorf("%s: log line %v, want result mutated", p.Name, line)
		}
	}
	requireUntouched(t, launcher)
	requireNoWebhookTrace(t, launcher)
	for _, rr := range []string{"limits", "requests"} {
		rl := launcher.Spec.Containers[0].Resources.Limits
		if rr == "requests" {
			rl = launcher.Spec.Containers[0].Resources.Requests
		}
		for name := range rl {
			if strings.HasPrefix(string(name), "rdma/") {
				t.Errorf("the GPU-less launcher got %s %s", rr, name)
			}
		}
	}
	if t.Failed() {
		return
	}
	stored, _ := mustKubectl(t, "", "get", "mpijob", "-n", ns, job, "-o", "json")
	out := offlineMutate(t, filepath.Join(root, "manifests", "profiles.json"), ns, stored)
	type mpi struct {
		Spec struct {
			Replicas map[string]struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"mpiReplicaSpecs"`
		} `json:"spec"`
	}
	var before, after mpi
	if err := json.Unmarshal([]byte(stored), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &after); err != nil {
		t.Fatalf("mutate --patched of an MPIJob: %v\n%s", err, out)
	}
	bw, aw := before.Spec.Replicas["Worker"].Template, after.Spec.Replicas["Worker"].Template
	for _, p := range workers {
		compareOffline(t, p, &bw, &aw)
	}
	bl, al := before.Spec.Replicas["Launcher"].Template, after.Spec.Replicas["Launcher"].Template
	if !reflect.DeepEqual(bl, al) {
		t.Errorf("mutate --patched changed the GPU-less launcher's template:\nbefore %s\nafter  %s", toJSON(t, bl), toJSON(t, al))
	}
}

// logName is the name the webhook's log line gives pod p: a pod the Job
// controller makes has only its generateName at admission, and the
// apiserver picks the rest after the webhooks.
func logName(p *corev1.Pod) string {
	if p.GenerateName != "" && strings.HasPrefix(p.Name, p.GenerateName) {
		return p.GenerateName
	}
	return p.Name
}

// enableJobSetRouting applies manifests/components/jobset's patches of the
// MutatingWebhookConfiguration to the installed one, as an admin who adds
// that component does (plain JobSets' pods are sent to the webhook only
// then), and puts the webhooks back as they were when the test ends.
func enableJobSetRouting(t *testing.T, ns string) {
	t.Helper()
	path := filepath.Join(root, "manifests", "components", "jobset", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the jobset component: %v", err)
	}
	var k struct {
		Patches []struct {
			Target struct{ Kind, Name string }
			Patch  string
		}
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	n := 0
	for _, p := range k.Patches {
		if p.Target.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		var ops []any
		if err := yaml.Unmarshal([]byte(p.Patch), &ops); err != nil || len(ops) == 0 {
			t.Fatalf("%s: the patch of %s: %v", path, p.Target.Name, err)
		}
		before, _ := mustKubectl(t, "", "get", "mutatingwebhookconfiguration", p.Target.Name, "-o", "json")
		var cfg struct {
			Webhooks []any `json:"webhooks"`
		}
		if err := json.Unmarshal([]byte(before), &cfg); err != nil {
			t.Fatal(err)
		}
		name := p.Target.Name
		t.Cleanup(func() {
			mustKubectl(t, "", "patch", "mutatingwebhookconfiguration", name, "--type=json",
				"-p", toJSON(t, []any{map[string]any{"op": "replace", "path": "/webhooks", "value": cfg.Webhooks}}))
		})
		mustKubectl(t, "", "patch", "mutatingwebhookconfiguration", name, "--type=json", "-p", toJSON(t, ops))
		n++
	}
	if n == 0 {
		t.Fatalf("%s patches no MutatingWebhookConfiguration", path)
	}
	// The apiserver sees the change within a moment: until a dry-run pod of
	// a JobSet reaches the webhook.
	i := 0
	waitFor(t, 10*time.Second, "a JobSet's pod to reach the webhook", func() (bool, string) {
		i++
		p := gpuPod(fmt.Sprintf("jsprobe-%d", i), 8)
		delete(p.Labels, "rdma-webhook.io/inject")
		p.Labels["jobset.sigs.k8s.io/jobset-name"] = "probe"
		p.Labels["jobset.sigs.k8s.io/replicatedjob-name"] = "workers"
		mustKubectl(t, toJSON(t, p), "create", "-n", ns, "--dry-run=server", "-f", "-")
		time.Sleep(200 * time.Millisecond) // the log queue writes within 100 ms
		return len(admissionLines(t, ns, p.Name)) > 0, "no log line"
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func writeTemp(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// offlineMutate is `rdma-webhook mutate --patched -o json -n NS` of input
// with the profiles file.
func offlineMutate(t testing.TB, profiles, ns, input string) string {
	t.Helper()
	bin := os.Getenv("RDMA_WEBHOOK_BIN")
	if bin == "" {
		bin = filepath.Join(root, "build", "rdma-webhook")
	}
	in := writeTemp(t, "input.json", input)
	out, _ := mustRun(t, 30*time.Second, nil, bin, "mutate", "--profiles", profiles, "--patched", "-o", "json", "-n", ns, in)
	return out
}

// offlinePodTemplates: `mutate --patched` of a List of a TrainJob and its
// runtime prints, in the TrainJob's place, a List of v1 PodTemplates, one
// per replicated job, named TRAINJOB-RJOB (the runtime comes out as it
// went in).
func offlinePodTemplates(t testing.TB, ns, input string) map[string]*corev1.PodTemplateSpec {
	t.Helper()
	out := offlineMutate(t, filepath.Join(root, "manifests", "profiles.json"), ns, input)
	type item struct {
		Kind     string                 `json:"kind"`
		Metadata struct{ Name string }  `json:"metadata"`
		Template corev1.PodTemplateSpec `json:"template"`
		Items    []json.RawMessage      `json:"items"`
	}
	m := map[string]*corev1.PodTemplateSpec{}
	var walk func(raw []byte, depth int)
	walk = func(raw []byte, depth int) {
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatalf("mutate --patched of a TrainJob and its runtime: %v\n%s", err, out)
		}
		switch {
		case it.Kind == "PodTemplate":
			m[it.Metadata.Name] = &it.Template
		case strings.HasSuffix(it.Kind, "List") && depth < 2:
			for _, r := range it.Items {
				walk(r, depth+1)
			}
		}
	}
	walk([]byte(out), 0)
	if len(m) == 0 {
		t.Fatalf("mutate --patched of a TrainJob and its runtime printed no PodTemplate:\n%s", out)
	}
	return m
}

// compareOffline: what the webhook owns in a stored pod is what offline
// `mutate --patched` predicted for its template. declared is the template
// before mutation, predicted after: the webhook's additions are their
// difference, and the stored pod must carry each of them, with the same
// value, and no NCCL variable, capability, schedulerName or
// rdma-webhook.io/ annotation the prediction lacks. (The controllers add
// things of their own: env such as PET_* or JOB_COMPLETION_INDEX, ssh
// mounts; those are not compared.)
func compareOffline(t testing.TB, p *corev1.Pod, declared, predicted *corev1.PodTemplateSpec) {
	t.Helper()
	what := p.Namespace + "/" + p.Name
	ann := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if strings.HasPrefix(k, "rdma-webhook.io/") {
				out[k] = v
			}
		}
		return out
	}
	if got, want := ann(p.Annotations), ann(predicted.Annotations); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: rdma-webhook.io/ annotations %v, mutate --patched predicts %v", what, got, want)
	}
	if p.Spec.SchedulerName != predicted.Spec.SchedulerName && predicted.Spec.SchedulerName != "" {
		t.Errorf("%s: schedulerName %q, mutate --patched predicts %q", what, p.Spec.SchedulerName, predicted.Spec.SchedulerName)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range declared.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, v := range predicted.Spec.Volumes {
		if _, ok := vols[v.Name]; ok {
			continue
		}
		found := false
		for _, g := range p.Spec.Volumes {
			if g.Name == v.Name {
				found = true
				if want := withDefaults(v.VolumeSource); !reflect.DeepEqual(g.VolumeSource, want) {
					t.Errorf("%s: volume %s is %s, mutate --patched predicts %s", what, v.Name, toJSON(t, g.VolumeSource), toJSON(t, want))
				}
			}
		}
		if !found {
			t.Errorf("%s: lacks volume %s that mutate --patched adds", what, v.Name)
		}
	}
	for _, pc := range predicted.Spec.Containers {
		var dc *corev1.Container
		for i := range declared.Spec.Containers {
			if declared.Spec.Containers[i].Name == pc.Name {
				dc = &declared.Spec.Containers[i]
			}
		}
		compareContainer(t, what, container(t, p, pc.Name), dc, &pc)
	}
}

func compareContainer(t testing.TB, what string, got, declared, predicted *corev1.Container) {
	t.Helper()
	what += " container " + predicted.Name
	declEnv := map[string]bool{}
	declMounts := map[string]bool{}
	if declared != nil {
		for _, e := range declared.Env {
			declEnv[e.Name] = true
		}
		for _, m := range declared.VolumeMounts {
			declMounts[m.Name+"@"+m.MountPath] = true
		}
	}
	predEnv := map[string]corev1.EnvVar{}
	for _, e := range predicted.Env {
		predEnv[e.Name] = e
	}
	gotEnv := map[string]corev1.EnvVar{}
	for _, e := range got.Env {
		gotEnv[e.Name] = e
	}
	for name, e := range predEnv {
		if declEnv[name] {
			continue
		}
		e = envWithDefaults(e)
		if g, ok := gotEnv[name]; !ok || !reflect.DeepEqual(g, e) {
			t.Errorf("%s: env %s = %s, mutate --patched predicts %s", what, name, toJSON(t, g), toJSON(t, e))
		}
	}
	for name, g := range gotEnv {
		if _, ok := predEnv[name]; !ok && strings.HasPrefix(name, "NCCL_") {
			t.Errorf("%s: env %s=%q, which mutate --patched does not predict", what, name, g.Value)
		}
	}
	for _, m := range predicted.VolumeMounts {
		if declMounts[m.Name+"@"+m.MountPath] {
			continue
		}
		found := false
		for _, g := range got.VolumeMounts {
			found = found || reflect.DeepEqual(g, m)
		}
		if !found {
			t.Errorf("%s: lacks mount %s, which mutate --patched adds", what, toJSON(t, m))
		}
	}
	caps := func(c *corev1.Container) []corev1.Capability {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			return nil
		}
		return c.SecurityContext.Capabilities.Add
	}
	if g, w := caps(got), caps(predicted); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: capabilities.add %v, mutate --patched predicts %v", what, g, w)
	}
	for _, kind := range []string{"limits", "requests"} {
		g, w := got.Resources.Limits, predicted.Resources.Limits
		if kind == "requests" {
			g, w = got.Resources.Requests, predicted.Resources.Requests
		}
		for name, q := range w {
			if !strings.HasPrefix(string(name), "rdma/") {
				continue
			}
			if gq, ok := g[name]; !ok || gq.Cmp(q) != 0 {
				t.Errorf("%s: %s %s = %v, mutate --patched predicts %v", what, kind, name, gq.String(), q.String())
			}
		}
	}
}

// initRuntimeYAML: a TrainingRuntime of the namespace with a
// dataset-initializer beside the trainer nodes (and, unlike upstream's
// runtimes, no dependsOn: without a kubelet the initializer never
// completes, and the nodes would never be made). The initializer asks for
// 8 GPUs, so only the rule that an initializer is never a target keeps it
// from being mutated.
const initRuntimeYAML = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: torch-with-init
spec:
  mlPolicy:
    numNodes: 1
    torch: {}
  template:
    spec:
      replicatedJobs:
      - name: dataset-initializer
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer
          spec:
            template:
              spec:
                containers:
                - name: dataset-initializer
                  image: ghcr.io/kubeflow/trainer/dataset-initializer
                  resources:
                    limits:
                      nvidia.com/gpu: 8
      - name: node
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime
`

// TestTrainJobInitializerUntouched: a TrainJob on a runtime with a
// dataset-initializer: its 2 trainer nodes are mutated, the initializer's
// pod, though it asks for 8 GPUs, is left alone without a warning.
func TestTrainJobInitializerUntouched(t *testing.T) {
	ns := newNamespace(t, nil)
	mustKubectl(t, initRuntimeYAML, "apply", "-n", ns, "-f", "-")
	const job = "tj-init"
	doc := strings.Replace(trainJobYAML(job, 2), "    name: torch-distributed\n",
		"    name: torch-with-init\n    kind: TrainingRuntime\n", 1)
	mustKubectl(t, doc, "apply", "-n", ns, "-f", "-")
	pods := waitJobPods(t, ns, "jobset.sigs.k8s.io/jobset-name="+job, 3)
	var init []*corev1.Pod
	nodes := 0
	for i := range pods {
		p := &pods[i]
		requireOwnedBy(t, p, "batch/v1", "Job")
		switch p.Labels["jobset.sigs.k8s.io/replicatedjob-name"] {
		case "node":
			nodes++
			requireMutated(t, p, "node", want{profile: "roce-8card", hca: hca8})
			waitAdmissionLine(t, ns, logName(p))
		case "dataset-initializer":
			init = append(init, p)
		default:
			t.Errorf("%s: replicated job %q, want node or dataset-initializer", p.Name, p.Labels["jobset.sigs.k8s.io/replicatedjob-name"])
		}
	}
	if nodes != 2 || len(init) != 1 {
		t.Fatalf("want 2 node pods and 1 initializer pod, got %d and %d", nodes, len(init))
	}
	requireUntouched(t, init[0])
	requireNoWebhookTrace(t, init[0])
	if q := init[0].Spec.Containers[0].Resources.Limits["rdma/hca"]; !q.IsZero() {
		t.Errorf("%s: the initializer got rdma/hca %v", init[0].Name, q.String())
	}
}

// TestEventsOnTrainJob: a TrainJob whose 2 trainer nodes get the same
// warning (NCCL_IB_TIMEOUT=022 in spec.trainer.env, read by NCCL as octal):
// one Event of the webhook's regarding the TrainJob (not the JobSet or the
// Job between it and the pods) counts both, where `kubectl describe
// trainjob` shows it.
func TestEventsOnTrainJob(t *testing.T) {
	ns := newNamespace(t, nil)
	const job = "tj-octal"
	doc := trainJobYAML(job, 2) + `    env:
    - name: NCCL_IB_TIMEOUT
      value: "022"
`
	mustKubectl(t, doc, "apply", "-n", ns, "-f", "-")
	waitJobPods(t, ns, "jobset.sigs.k8s.io/jobset-name="+job, 2)
	uid, _ := mustKubectl(t, "", "get", "trainjob", "-n", ns, job, "-o", "jsonpath={.metadata.uid}")
	e := requireOneEvent(t, ns, "trainer.kubeflow.org/v1alpha1", "TrainJob", job, uid, 2)
	if e.Type != corev1.EventTypeWarning || e.Reason != "MutatedWithWarnings" || !strings.Contains(e.Note, "NCCL_IB_TIMEOUT") {
		t.Errorf("Event %s: type %q reason %q note %q", e.Name, e.Type, e.Reason, e.Note)
	}
	out, _ := mustKubectl(t, "", "describe", "trainjob", "-n", ns, job)
	if i := strings.Index(out, "Events:"); i < 0 || !strings.Contains(out[i:], "MutatedWithWarnings") {
		t.Errorf("kubectl describe trainjob %s shows no MutatedWithWarnings Event:\n%s", job, out)
	}
}

// withDefaults: a volume source as the apiserver stores it (its defaults,
// for the kinds the webhook writes), so that a template printed by `mutate
// --patched` compares to a stored pod's.
func withDefaults(v corev1.VolumeSource) corev1.VolumeSource {
	v = *v.DeepCopy()
	mode := int32(0o644)
	fieldRefs := func(items []corev1.DownwardAPIVolumeFile) {
		for i := range items {
			if items[i].FieldRef != nil && items[i].FieldRef.APIVersion == "" {
				items[i].FieldRef.APIVersion = "v1"
			}
		}
	}
	switch {
	case v.DownwardAPI != nil:
		if v.DownwardAPI.DefaultMode == nil {
			v.DownwardAPI.DefaultMode = &mode
		}
		fieldRefs(v.DownwardAPI.Items)
	case v.ConfigMap != nil && v.ConfigMap.DefaultMode == nil:
		v.ConfigMap.DefaultMode = &mode
	case v.Secret != nil && v.Secret.DefaultMode == nil:
		v.Secret.DefaultMode = &mode
	case v.Projected != nil:
		if v.Projected.DefaultMode == nil {
			v.Projected.DefaultMode = &mode
		}
		for _, src := range v.Projected.Sources {
			if src.DownwardAPI != nil {
				fieldRefs(src.DownwardAPI.Items)
			}
		}
	case v.HostPath != nil && v.HostPath.Type == nil:
		unset := corev1.HostPathUnset
		v.HostPath.Type = &unset
	}
	return v
}

// envWithDefaults: an env entry as the apiserver stores it.
func envWithDefaults(e corev1.EnvVar) corev1.EnvVar {
	if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.APIVersion == "" {
		e = *e.DeepCopy()
		e.ValueFrom.FieldRef.APIVersion = "v1"
	}
	return e
}

// TestJobControllersWebhooks: the JobSet and Trainer webhooks that up.sh
// installs (URL clientConfig, gen-certs' certificates) are called: a
// JobSet's Job is Indexed by JobSet's defaulting and its pods pass JobSet's
// pod webhooks beside ours; JobSet's and Trainer's validation refuse what
// they refuse upstream.
func TestJobControllersWebhooks(t *testing.T) {
	ns := newNamespace(t, nil)
	const job = "js-defaulted"
	doc := strings.Replace(jobSetYAML(job), "                  nvidia.com/gpu: 8\n", "                  cpu: 1\n", 1)
	mustKubectl(t, doc, "apply", "-n", ns, "-f", "-")
	pods := waitJobPods(t, ns, "jobset.sigs.k8s.io/jobset-name="+job, 2)
	j, err := clientset.BatchV1().Jobs(ns).Get(context.Background(), job+"-workers-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != "Indexed" {
		t.Errorf("Job %s: completionMode %v, want JobSet's webhook's default Indexed", j.Name, j.Spec.CompletionMode)
	}
	for i := range pods {
		if pods[i].Annotations["batch.kubernetes.io/job-completion-index"] == "" {
			t.Errorf("%s: no completion index: not a pod of an Indexed Job", pods[i].Name)
		}
	}

	bad := strings.Replace(jobSetYAML("js-bad"), "spec:\n  replicatedJobs:",
		"spec:\n  successPolicy:\n    operator: All\n    targetReplicatedJobs: [nope]\n  replicatedJobs:", 1)
	if _, errs, err := kubectl(bad, "apply", "-n", ns, "-f", "-"); err == nil || !strings.Contains(errs, "'nope' does not appear") {
		t.Errorf("a JobSet whose successPolicy names no replicated job of it: err %v, stderr %s; want JobSet's webhook's refusal", err, errs)
	}
	tj := strings.Replace(trainJobYAML("tj-bad", 1), "name: torch-distributed", "name: no-such-runtime", 1)
	if _, errs, err := kubectl(tj, "apply", "-n", ns, "-f", "-"); err == nil || !strings.Contains(errs, "validator.trainjob.trainer.kubeflow.org") {
		t.Errorf("a TrainJob on a runtime that does not exist: err %v, stderr %s; want Trainer's webhook's refusal", err, errs)
	}
}

// requireNcclConf: the stored pod's container c reads /etc/nccl.conf (a
// read-only subPath mount of the downwardAPI volume that projects an
// rdma-webhook.io/nccl-conf annotation), and the file holds exactly the
// container's NCCL_* environment: the ranks mpirun starts over ssh, which
// inherit none of it, see the same settings.
func requireNcclConf(t testing.TB, p *corev1.Pod, c string) {
	t.Helper()
	ct := container(t, p, c)
	var mount *corev1.VolumeMount
	for i := range ct.VolumeMounts {
		if ct.VolumeMounts[i].MountPath == "/etc/nccl.conf" {
			mount = &ct.VolumeMounts[i]
		}
	}
	if mount == nil || !mount.ReadOnly || mount.SubPath == "" {
		t.Errorf("%s/%s: no read-only subPath mount at /etc/nccl.conf: %s", p.Name, c, toJSON(t, ct.VolumeMounts))
		return
	}
	var annotation string
	for _, v := range p.Spec.Volumes {
		if v.Name != mount.Name || v.DownwardAPI == nil {
			continue
		}
		for _, it := range v.DownwardAPI.Items {
			if it.Path == mount.SubPath && it.FieldRef != nil {
				annotation = it.FieldRef.FieldPath
			}
		}
	}
	key := strings.TrimSuffix(strings.TrimPrefix(annotation, "metadata.annotations['"), "']")
	if key == annotation || !strings.HasPrefix(key, "rdma-webhook.io/nccl-conf") {
		t.Errorf("%s: volume %s does not project an rdma-webhook.io/nccl-conf annotation to %s (field %q)", p.Name, mount.Name, mount.SubPath, annotation)
		return
	}
	file := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(p.Annotations[key]), "\n") {
		if name, value, ok := strings.Cut(line, "="); ok {
			file[name] = value
		}
	}
	env := map[string]string{}
	for _, e := range ct.Env {
		if strings.HasPrefix(e.Name, "NCCL_") && e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	if len(env) == 0 || !reflect.DeepEqual(file, env) {
		t.Errorf("%s/%s: annotation %s holds %v; the container's NCCL environment is %v", p.Name, c, key, file, env)
	}
}

// TestEventsOnMPIJob: an MPIJob whose 2 workers get the same warning
// (NCCL_IB_TIMEOUT=022 in the worker's env, octal to NCCL): one Event
// regarding the MPIJob, the workers' controlling owner, counts both, where
// `kubectl describe mpijob` shows it; the GPU-less launcher adds none.
func TestEventsOnMPIJob(t *testing.T) {
	ns := newNamespace(t, nil)
	job, doc := mpiJobYAML(t)
	var m map[string]any
	fromJSON(t, doc, &m)
	worker := m["spec"].(map[string]any)["mpiReplicaSpecs"].(map[string]any)["Worker"].(map[string]any)
	c := worker["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	c["env"] = []any{map[string]any{"name": "NCCL_IB_TIMEOUT", "value": "022"}}
	mustKubectl(t, toJSON(t, m), "apply", "-n", ns, "-f", "-")
	waitJobPods(t, ns, "training.kubeflow.org/job-name="+job, 3)
	uid, _ := mustKubectl(t, "", "get", "mpijob", "-n", ns, job, "-o", "jsonpath={.metadata.uid}")
	e := requireOneEvent(t, ns, "kubeflow.org/v2beta1", "MPIJob", job, uid, 2)
	if e.Type != corev1.EventTypeWarning || e.Reason != "MutatedWithWarnings" || !strings.Contains(e.Note, "NCCL_IB_TIMEOUT") {
		t.Errorf("Event %s: type %q reason %q note %q", e.Name, e.Type, e.Reason, e.Note)
	}
	if others := eventsAbout(t, ns, "Job", job+"-launcher"); len(others) != 0 {
		t.Errorf("the GPU-less launcher's Job got Events: %+v", others)
	}
	out, _ := mustKubectl(t, "", "describe", "mpijob", "-n", ns, job)
	if i := strings.Index(out, "Events:"); i < 0 || !strings.Contains(out[i:], "MutatedWithWarnings") {
		t.Errorf("kubectl describe mpijob %s shows no MutatedWithWarnings Event:\n%s", job, out)
	}
}
