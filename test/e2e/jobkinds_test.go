package e2e

import (
	"strings"
	"testing"
)

// profilesWithTargetsOff is the shipped profiles file with targets.mpijob
// and .volcanojob switched off.
func profilesWithTargetsOff(t *testing.T) string {
	t.Helper()
	return profilesWithTargets(t, obj{"mpijob": false, "volcanojob": false})
}

// podTemplate is an 8-GPU training container's pod template, as a job
// carries it (no kind, no name).
func podTemplate() obj {
	pod := trainingPod(8)
	return obj{"metadata": obj{"labels": obj{"app": "train"}}, "spec": pod["spec"]}
}

func mpiJob() obj {
	return obj{
		"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
		"metadata": obj{"name": "mpi", "namespace": "kubeflow"},
		"spec": obj{"mpiReplicaSpecs": obj{
			"Launcher": obj{"replicas": 1, "template": podTemplate()},
			"Worker":   obj{"replicas": 2, "template": podTemplate()},
		}},
	}
}

func volcanoJob() obj {
	return obj{
		"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
		"metadata": obj{"name": "vc", "namespace": "kubeflow"},
		"spec": obj{"schedulerName": "volcano", "tasks": []interface{}{
			obj{"name": "master", "replicas": 1, "template": podTemplate()},
			obj{"name": "worker", "replicas": 2, "template": podTemplate()},
		}},
	}
}

// templateAt returns the pod template at path (keys; an int indexes a list).
func templateAt(t *testing.T, doc obj, path ...interface{}) obj {
	t.Helper()
	var cur interface{} = doc
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := cur.(map[string]interface{})
			cur = m[k]
		case int:
			l, _ := cur.([]interface{})
			if k >= len(l) {
				t.Fatalf("no item %d at %v", k, path)
			}
			cur = l[k]
		}
	}
	m, ok := cur.(map[string]interface{})
	if !ok {
		t.Fatalf("no template at %v", path)
	}
	return m
}

// TestMutateOfflineOtherJobKinds: with targets.mpijob and .volcanojob on (the
// shipped profiles), `mutate` mutates every pod template of an MPIJob (spec.mpiReplicaSpecs)
// and of a Volcano Job (spec.tasks) as it does a PyTorchJob's: the profile's
// NCCL_IB_HCA, IPC_LOCK and /dev/shm in each; --explain titles each
// template. With both off the jobs are left as they are, with a message saying which switch to turn on; a batch/v1 Job is not
// a Volcano Job.
func TestMutateOfflineOtherJobKinds(t *testing.T) {
	t.Parallel()
	profiles := profilesPath
	off := profilesWithTargetsOff(t)
	hca8 := hcaOf(t, "roce-8card")
	for _, c := range []struct {
		name  string
		job   obj
		paths [][]interface{}
		title string
	}{
		{"MPIJob", mpiJob(), [][]interface{}{
			{"spec", "mpiReplicaSpecs", "Launcher", "template"}, {"spec", "mpiReplicaSpecs", "Worker", "template"}},
			"replica Worker (spec.mpiReplicaSpecs.Worker.template)"},
		{"Volcano Job", volcanoJob(), [][]interface{}{
			{"spec", "tasks", 0, "template"}, {"spec", "tasks", 1, "template"}},
			"task worker (spec.tasks[1].template)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := writeTemp(t, "job.json", c.job)
			out := mustSucceed(t, nil, "mutate", "--profiles", profiles, file)
			for _, p := range c.paths {
				tmpl := templateAt(t, out, p...)
				ad := admission{patched: tmpl}
				if got := ad.envValues("NCCL_IB_HCA"); len(got) != 1 || got[0] != hca8 {
					t.Errorf("%v: NCCL_IB_HCA %q, want [%q]", p, got, hca8)
				}
				if !hasIPCLock(tmpl) || !hasMountAt(containerByName(tmpl, "pytorch"), "/dev/shm") {
					t.Errorf("%v: IPC_LOCK or /dev/shm missing: %s", p, mustMarshal(tmpl))
				}
			}
			res := runBinary(t, nil, "mutate", "--profiles", profiles, "--explain", file)
			explained := string(res.stdout)
			if !strings.Contains(explained, c.title) || !strings.Contains(explained, "pod: a target: a job's replica template") {
				t.Errorf("--explain lacks %q or the target line:\n%s", c.title, explained)
			}

			// Switched off: unchanged, and said why.
			res = runBinary(t, nil, "mutate", "--profiles", off, "--patched", file)
			if res.exitCode != 0 || !strings.Contains(string(res.stderr), "targets only with targets.") {
				t.Errorf("targets off: expected exit 0 and the targets message, got %d: %s", res.exitCode, res.stderr)
			}
			if !jsonEqual(normalize(podOf(t, res.stdout)), normalize(c.job)) {
				t.Errorf("targets off: the job changed:\n%s", res.stdout)
			}
		})
	}
	batch := volcanoJob()
	batch["apiVersion"] = "batch/v1"
	res := runBinary(t, nil, "mutate", "--profiles", profiles, "--patched", writeTemp(t, "batch.json", batch))
	if res.exitCode != 0 || !strings.Contains(string(res.stderr), "left as it is") ||
		!jsonEqual(normalize(podOf(t, res.stdout)), normalize(batch)) {
		t.Errorf("a batch/v1 Job: expected it left as it is, got %d: %s\n%s", res.exitCode, res.stderr, res.stdout)
	}
	// A Launcher template that asks for no GPU: its pod would only start
	// mpirun, so it is left as it is, with no warning; the Worker is mutated.
	idle := mpiJob()
	launcher := templateAt(t, idle, "spec", "mpiReplicaSpecs", "Launcher", "template")
	for _, ct := range pathArr(launcher, "spec", "containers") {
		delete(ct.(obj), "resources")
	}
	idleFile := writeTemp(t, "idle.json", idle)
	res = runBinary(t, nil, "mutate", "--profiles", profiles, "--patched", idleFile)
	out, err := decodeJSON(res.stdout)
	if err != nil || res.exitCode != 0 || len(res.stderr) != 0 {
		t.Fatalf("a GPU-less launcher: expected exit 0, no message, got %d: %s", res.exitCode, res.stderr)
	}
	gotLauncher := templateAt(t, out.(obj), "spec", "mpiReplicaSpecs", "Launcher", "template")
	if !jsonEqual(normalize(gotLauncher), normalize(launcher)) {
		t.Errorf("a GPU-less launcher template changed:\n%s", mustMarshal(gotLauncher))
	}
	if ad := (admission{patched: templateAt(t, out.(obj), "spec", "mpiReplicaSpecs", "Worker", "template")}); len(ad.envValues("NCCL_IB_HCA")) != 1 {
		t.Errorf("the Worker beside a GPU-less launcher was not mutated")
	}
	res = runBinary(t, nil, "mutate", "--profiles", profiles, "--explain", idleFile)
	if !strings.Contains(string(res.stdout), "replica Launcher (spec.mpiReplicaSpecs.Launcher.template):\n") ||
		!strings.Contains(string(res.stdout), "\n  job: MPIJob mpi, role launcher;") ||
		!strings.Contains(string(res.stdout), "\n  pod: not a target: an MPIJob's launcher that asks for no GPU") {
		t.Errorf("--explain of a GPU-less launcher:\n%s", res.stdout)
	}
	// A job without its templates is an error (exit 1), as for a PyTorchJob.
	empty := mpiJob()
	empty["spec"] = obj{}
	res = runBinary(t, nil, "mutate", "--profiles", profiles, writeTemp(t, "empty.json", empty))
	if res.exitCode != 1 || !strings.Contains(string(res.stderr), "MPIJob has no spec.mpiReplicaSpecs") {
		t.Errorf("an MPIJob without replica specs: expected exit 1 naming them, got %d: %s", res.exitCode, res.stderr)
	}
}
