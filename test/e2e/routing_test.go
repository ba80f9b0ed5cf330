package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Pods of each job kind by the labels their controllers write (issue 24):
// Trainer v2's JobSet pods, mpi-operator v0.7's, Volcano's.
var (
	trainerNodeLabels = map[string]string{"jobset.sigs.k8s.io/jobset-name": "llama",
		"jobset.sigs.k8s.io/replicatedjob-name": "node"}
	trainerLauncherLabels = map[string]string{"jobset.sigs.k8s.io/jobset-name": "llama",
		"jobset.sigs.k8s.io/replicatedjob-name": "launcher"}
	initializerLabels = map[string]string{"jobset.sigs.k8s.io/jobset-name": "llama",
		"jobset.sigs.k8s.io/replicatedjob-name": "dataset-initializer"}
	plainJobSetLabels = map[string]string{"jobset.sigs.k8s.io/jobset-name": "js",
		"jobset.sigs.k8s.io/replicatedjob-name": "workers"}
	mpiWorkerLabels = map[string]string{operatorLabel: "mpi-operator",
		"training.kubeflow.org/job-name": "nccl", "training.kubeflow.org/job-role": "worker"}
	mpiLauncherLabels = map[string]string{operatorLabel: "mpi-operator",
		"training.kubeflow.org/job-name": "nccl", "training.kubeflow.org/job-role": "launcher"}
	volcanoLabels  = map[string]string{"volcano.sh/job-name": "vc", "volcano.sh/task-spec": "worker"}
	pytorchLabels  = map[string]string{operatorLabel: "pytorchjob-controller"}
	unrelatedLabel = map[string]string{"app": "web", "job-name": "pi"}
)

// TestWebhookEntriesPerJobKind: which entry of the shipped configuration the
// apiserver calls for a pod of each kind, exactly: one entry each, none for
// a TrainJob's initializers, a plain JobSet's pods or anything else; with
// components/jobset every JobSet pod goes to the trainjob entry.
func TestWebhookEntriesPerJobKind(t *testing.T) {
	t.Parallel()
	ns := map[string]string{"kubernetes.io/metadata.name": "team-a"}
	base := webhookEntries(t, findObject(t, kustomize(t, manifestsDir), "MutatingWebhookConfiguration", webhookName))
	withJobSet := webhookEntries(t, findObject(t, krustyWithComponent(t, filepath.Join(manifestsDir, "components", "jobset")),
		"MutatingWebhookConfiguration", webhookName))
	for _, c := range []struct {
		name         string
		labels       map[string]string
		want, wantJS string // "": no call
	}{
		{"PyTorchJob pod", pytorchLabels, "pytorchjob", "pytorchjob"},
		{"TrainJob node", trainerNodeLabels, "trainjob", "trainjob"},
		{"TrainJob launcher", trainerLauncherLabels, "trainjob", "trainjob"},
		{"TrainJob initializer", initializerLabels, "", "trainjob"},
		{"plain JobSet pod", plainJobSetLabels, "", "trainjob"},
		{"MPIJob worker", mpiWorkerLabels, "mpijob", "mpijob"},
		{"MPIJob launcher", mpiLauncherLabels, "mpijob", "mpijob"},
		{"Volcano Job pod", volcanoLabels, "volcanojob", "volcanojob"},
		{"a batch Job's pod", unrelatedLabel, "", ""},
	} {
		for _, cfg := range []struct {
			what    string
			entries []webhookEntry
			want    string
		}{{"manifests", base, c.want}, {"components/jobset", withJobSet, c.wantJS}} {
			got := calledFor(cfg.entries, ns, c.labels)
			var want []string
			if cfg.want != "" {
				want = []string{cfg.want + ".rdma-webhook.io"}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s: %s (labels %v) sent to %v, expected %v", cfg.what, c.name, c.labels, got, want)
			}
		}
	}
}

// TestJobSetComponentProfiles: components/jobset serves manifests/profiles.json
// with targets.jobset on and nothing else changed, under the ConfigMap name
// and label the base gives it, and patches nothing but the trainjob entry's
// objectSelector.
func TestJobSetComponentProfiles(t *testing.T) {
	t.Parallel()
	objs := krustyWithComponent(t, filepath.Join(manifestsDir, "components", "jobset"))
	cm := findObject(t, objs, "ConfigMap", "rdma-webhook-profiles")
	if v, _ := pathStr(cm, "metadata", "labels", "rdma-webhook.io/profiles"); v != "true" {
		t.Errorf("the component's profiles ConfigMap lost its label: %s", compact(path(cm, "metadata")))
	}
	served, _ := pathStr(cm, "data", "profiles.json")
	shipped, err := os.ReadFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	on := strings.Replace(string(shipped), `"jobset": false`, `"jobset": true`, 1)
	if on == string(shipped) || served != on {
		t.Errorf("components/jobset/profiles.json must be manifests/profiles.json with targets.jobset true, and nothing else")
	}
	path := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(path, []byte(served), 0o600); err != nil {
		t.Fatal(err)
	}
	shown, err := decodeJSON([]byte(mustRun(t, "check-profiles", "--show", path)))
	if err != nil {
		t.Fatal(err)
	}
	if got := compact(pathObj(shown, "targets")); got != `{"jobset":true,"mpijob":true,"trainjob":true,"volcanojob":true}` {
		t.Errorf("check-profiles --show of the component's profiles: targets %s", got)
	}
	base := webhookEntries(t, findObject(t, kustomize(t, manifestsDir), "MutatingWebhookConfiguration", webhookName))
	comp := webhookEntries(t, findObject(t, objs, "MutatingWebhookConfiguration", webhookName))
	if len(base) != len(comp) {
		t.Fatalf("the component changed the number of entries: %d, expected %d", len(comp), len(base))
	}
	var changed []string
	for i := range base {
		if !jsonEqual(normalize(base[i].raw), normalize(comp[i].raw)) {
			changed = append(changed, comp[i].name)
		}
	}
	sort.Strings(changed)
	if strings.Join(changed, ",") != "trainjob.rdma-webhook.io" {
		t.Errorf("entries the component changed: %v, expected only trainjob.rdma-webhook.io", changed)
	}
}

// TestShippedTargetsAreTheDefaults: the shipped profiles' targets say what
// the parser does without them, as check-profiles --show prints both.
func TestShippedTargetsAreTheDefaults(t *testing.T) {
	t.Parallel()
	bare := filepath.Join(t.TempDir(), "bare.json")
	if err := os.WriteFile(bare, []byte(`{"profiles": [{"name": "p", "default": true}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	targets := func(file string) string {
		v, err := decodeJSON([]byte(mustRun(t, "check-profiles", "--show", file)))
		if err != nil {
			t.Fatal(err)
		}
		return compact(path(v, "targets"))
	}
	want := `{"jobset":false,"mpijob":true,"trainjob":true,"volcanojob":true}`
	for _, f := range []string{bare, profilesPath} {
		if got := targets(f); got != want {
			t.Errorf("%s: targets %s, expected %s", f, got, want)
		}
	}
}

// TestEveryOverlayPatchesEveryEntry: the namespace opt-in component narrows
// every entry to namespaces labelled inject=true|enabled, and the
// development overlay points every entry at the host.
func TestEveryOverlayPatchesEveryEntry(t *testing.T) {
	t.Parallel()
	optIn := webhookEntries(t, findObject(t, krustyWithComponent(t, filepath.Join(manifestsDir, "components", "namespace-opt-in")),
		"MutatingWebhookConfiguration", webhookName))
	if len(optIn) != 5 {
		t.Fatalf("%d entries, expected 5", len(optIn))
	}
	for _, e := range optIn {
		for _, v := range []string{"true", "enabled"} {
			if !e.namespaceSel.matches(map[string]string{"kubernetes.io/metadata.name": "a", injectKey: v}) {
				t.Errorf("opt-in: %s does not serve a namespace labelled %s=%s", e.name, injectKey, v)
			}
		}
		if e.namespaceSel.matches(map[string]string{"kubernetes.io/metadata.name": "a"}) {
			t.Errorf("opt-in: %s serves an unlabelled namespace", e.name)
		}
	}
	dev := webhookEntries(t, findObject(t, kustomize(t, filepath.Join(repoRoot, "test", "cluster", "overlay")),
		"MutatingWebhookConfiguration", webhookName))
	for _, e := range dev {
		if u, _ := pathStr(e.raw, "clientConfig", "url"); u != "https://127.0.0.1:18443/mutate" {
			t.Errorf("test/cluster/overlay: %s calls %q", e.name, u)
		}
	}
	script, err := os.ReadFile(filepath.Join(repoRoot, "test", "cluster", "install-webhook.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(script), `/clientConfig/url, value: "https://127.0.0.1:$port/mutate"`); n != len(dev) {
		t.Errorf("install-webhook.sh moves %d entries' URLs, the configuration has %d", n, len(dev))
	}
}

// mustRun runs the binary and returns its stdout, failing unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	res := runBinary(t, nil, args...)
	if res.exitCode != 0 {
		t.Fatalf("%v: exit %d: %s", args, res.exitCode, res.stderr)
	}
	return string(res.stdout)
}

// fixtureObject is the pod of the fixture file name (test/pods).
func fixtureObject(t *testing.T, name string) obj {
	t.Helper()
	for _, f := range loadFixtures(t) {
		if strings.HasSuffix(f.file, name) {
			return f.object
		}
	}
	t.Fatalf("no fixture %s", name)
	return nil
}

// TestExplainJobKinds: `mutate --explain` says why each kind's pod is a
// target or not, a GPU-less MPIJob launcher included (no warning); offline a
// TrainJob's node pod is left unchanged with job_lookup and the hint that
// decides it; a profile limited to other jobs says so.
func TestExplainJobKinds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		fixture, line string
		warned        bool
	}{
		{"142-mpijob-launcher-no-gpu.json", "pod: not a target: an MPIJob's launcher that asks for no GPU or RDMA device", false},
		{"143-mpijob-launcher-gpu.json", "pod: a target: an MPIJob's launcher that asks for a GPU or RDMA device", false},
		{"132-mpijob-worker-nccl-tests.json", "pod: a target: an MPIJob's pod, and targets.mpijob is on", false},
		{"144-volcano-job-worker.json", "pod: a target: a Volcano Job's pod, and targets.volcanojob is on", false},
		{"140-trainjob-dataset-initializer.json", "pod: not a target: a JobSet's pod, a target neither as a TrainJob's nor as a plain JobSet's", false},
		{"139-trainjob-node-owner-unknown.json", "pod: left unchanged: a JobSet's pod, and whether a TrainJob owns the JobSet could not be read", true},
	} {
		file := writeTemp(t, "pod.json", fixtureObject(t, c.fixture))
		res := runBinary(t, nil, "mutate", "--profiles", profilesPath, "--explain", file)
		out := string(res.stdout)
		if res.exitCode != 0 || !strings.Contains(out, c.line) {
			t.Errorf("%s: exit %d, expected the line %q:\n%s", c.fixture, res.exitCode, c.line, out)
		}
		if got := strings.Contains(out, "warning: "); got != c.warned {
			t.Errorf("%s: warned %v, expected %v:\n%s", c.fixture, got, c.warned, out)
		}
	}
	node := writeTemp(t, "node.json", fixtureObject(t, "139-trainjob-node-owner-unknown.json"))
	res := runBinary(t, nil, "mutate", "--profiles", profilesPath, node)
	if !strings.Contains(string(res.stderr), "check the webhook may get jobsets and trainjobs") ||
		!strings.Contains(string(res.stderr), "offline no JobSet is read: label the pod rdma-webhook.io/inject=true") {
		t.Errorf("offline TrainJob node pod: expected job_lookup and the offline hint, got %s", res.stderr)
	}
	// A profile for other job kinds: no candidate, said so.
	data, err := os.ReadFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	limited := strings.Replace(string(data), `"match": {"gpus": 8,`, `"match": {"gpus": 8, "jobKinds": ["TrainJob"],`, 1)
	if limited == string(data) {
		t.Fatal("the shipped roce-8card no longer starts its match with gpus")
	}
	pf := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(pf, []byte(limited), 0o600); err != nil {
		t.Fatal(err)
	}
	worker := writeTemp(t, "worker.json", fixtureObject(t, "132-mpijob-worker-nccl-tests.json"))
	res = runBinary(t, nil, "mutate", "--profiles", pf, "--explain", worker)
	if want := `profile "roce-8card": limited by match.jobKinds to other job kinds than the pod's (MPIJob)`; !strings.Contains(string(res.stdout), want) {
		t.Errorf("expected %q:\n%s", want, res.stdout)
	}
}
