package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// mpiWorkerPod is an 8-GPU MPIJob worker (mpi-operator v0.7: the MPIJob
// is its controlling owner) whose container sets NCCL_DEBUG itself and
// NCCL_ALGO through valueFrom.
func mpiWorkerPod() obj {
	pod := trainingPod(8)
	meta := pod["metadata"].(obj)
	meta["name"] = "mpi-worker-0"
	meta["labels"] = obj{"training.kubeflow.org/job-role": "worker",
		"training.kubeflow.org/operator-name": "mpi-operator"}
	meta["ownerReferences"] = []interface{}{obj{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
		"name": "mpi", "uid": "5f0c2a1e-7b3d-4e9a-8c61-2d4f6b8a0c13", "controller": true}}
	c := containerByName(pod, "pytorch")
	c["env"] = append(c["env"].([]interface{}),
		obj{"name": "NCCL_DEBUG", "value": "INFO"},
		obj{"name": "NCCL_ALGO", "valueFrom": obj{"configMapKeyRef": obj{"name": "nccl", "key": "algo"}}})
	return pod
}

// literalNcclEnv is what NCCL would read from the container's env, as
// NAME=VALUE lines in env order: the NCCL_* entries with a literal value.
func literalNcclEnv(c obj) string {
	var b strings.Builder
	for _, e := range pathArr(c, "env") {
		name, _ := pathStr(e, "name")
		value, has := pathStr(e, "value")
		if strings.HasPrefix(name, "NCCL_") && has {
			b.WriteString(name + "=" + value + "\n")
		}
	}
	return b.String()
}

// TestNcclConfServedMPIJobWorker: through serve, an MPIJob worker (its
// ranks started by mpirun over ssh, which passes no env on) gets
// /etc/nccl.conf holding exactly its final literal NCCL_* env (the user's
// NCCL_DEBUG included, the valueFrom NCCL_ALGO left out), through the
// annotation and a downwardAPI volume; the apiserver's reinvocation adds
// nothing; a PyTorchJob pod (ncclConf "auto": torchrun passes env on) gets
// no file; and report mode lists the annotation instead.
func TestNcclConfServedMPIJobWorker(t *testing.T) {
	t.Parallel()
	profiles := profilesPath // targets.mpijob is on in the shipped file
	in := startInstance(t, profiles)
	pod := mpiWorkerPod()
	rr := in.review(t, podCreate("kubeflow", copyObject(pod)))
	mutated := applyPatch(t, pod, rr.patch)
	c := containerByName(mutated, "pytorch")
	got, ok, err := ncclConfOf(mutated, c)
	if err != nil || !ok {
		t.Fatalf("MPIJob worker: no /etc/nccl.conf (%v): %s", err, rr.patch)
	}
	if want := literalNcclEnv(c); got != want || !strings.HasPrefix(got, "NCCL_DEBUG=INFO\n") ||
		strings.Contains(got, "NCCL_ALGO") || !strings.Contains(got, "NCCL_IB_HCA=") {
		t.Errorf("/etc/nccl.conf is %q, want the container's literal NCCL env %q", got, want)
	}
	if again := in.review(t, podCreate("kubeflow", copyObject(mutated))); again.patch != nil {
		t.Errorf("reinvocation: expected no patch, got %s", again.patch)
	}

	pt := trainingPod(8)
	ptMutated := applyPatch(t, pt, in.review(t, podCreate("kubeflow", copyObject(pt))).patch)
	if _, ok, _ := ncclConfOf(ptMutated, containerByName(ptMutated, "pytorch")); ok {
		t.Errorf("PyTorchJob pod: expected no /etc/nccl.conf with ncclConf auto")
	}
	if _, has := pathStr(ptMutated, "metadata", "annotations", "rdma-webhook.io/nccl-conf"); has {
		t.Errorf("PyTorchJob pod: expected no nccl-conf annotation")
	}

	report := startInstance(t, profiles, "--mode", "report")
	reported := applyPatch(t, pod, report.review(t, podCreate("kubeflow", copyObject(pod))).patch)
	text, _ := pathStr(reported, "metadata", "annotations", "rdma-webhook.io/report")
	if !strings.Contains(text, "annotation rdma-webhook.io/nccl-conf (") ||
		!strings.Contains(text, "volume rdma-webhook-nccl-conf") {
		t.Errorf("report mode: the report does not list the nccl-conf annotation and volume:\n%s", text)
	}
	if _, ok, _ := ncclConfOf(reported, containerByName(reported, "pytorch")); ok {
		t.Errorf("report mode: the pod got /etc/nccl.conf")
	}
}

func init() { docExamples["ncclconf-stored-pod"] = docNcclConfStoredPod }

// docNcclConfStoredPod: what `mutate --patched` stores for fixture 139 (an
// MPIJob worker) that makes /etc/nccl.conf, as docs/profiles.md shows it:
// the annotation, the volume and the container's mount, nothing else.
func docNcclConfStoredPod(t *testing.T) string {
	t.Helper()
	doc, err := readJSONFile(filepath.Join(repoRoot, "test", "pods", "145-mpijob-worker-nccl-conf.json"))
	if err != nil {
		t.Fatal(err)
	}
	pod := mustSucceed(t, nil, "mutate", "--profiles", profilesPath, "--patched",
		writeTemp(t, "pod.json", pathObj(doc, "object")))
	conf, _ := pathStr(pod, "metadata", "annotations", "rdma-webhook.io/nccl-conf")
	var b strings.Builder
	b.WriteString("metadata:\n  annotations:\n    rdma-webhook.io/nccl-conf: |\n")
	for _, l := range strings.SplitAfter(strings.TrimSuffix(conf, "\n"), "\n") {
		b.WriteString("      " + l)
	}
	b.WriteString("\nspec:\n  volumes:\n")
	for _, v := range pathArr(pod, "spec", "volumes") {
		if n, _ := pathStr(v, "name"); n != "rdma-webhook-nccl-conf" {
			continue
		}
		b.WriteString("  - name: rdma-webhook-nccl-conf\n    downwardAPI:\n      items:\n")
		for _, it := range pathArr(v, "downwardAPI", "items") {
			p, _ := pathStr(it, "path")
			fp, _ := pathStr(it, "fieldRef", "fieldPath")
			fmt.Fprintf(&b, "      - path: %s\n        fieldRef:\n          fieldPath: %s\n", p, fp)
		}
	}
	b.WriteString("  containers:\n")
	for _, c := range pathArr(pod, "spec", "containers") {
		name, _ := pathStr(c, "name")
		fmt.Fprintf(&b, "  - name: %s\n    volumeMounts:\n", name)
		for _, m := range pathArr(c, "volumeMounts") {
			if p, _ := pathStr(m, "mountPath"); p == "/etc/nccl.conf" {
				sub, _ := pathStr(m, "subPath")
				ro, _ := path(m, "readOnly").(bool)
				fmt.Fprintf(&b, "    - name: rdma-webhook-nccl-conf\n      mountPath: %s\n      subPath: %s\n      readOnly: %v\n", p, sub, ro)
			}
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// TestNcclConfSetting: check-profiles --show prints each profile's
// ncclConf, inherited from defaults unless the profile has its own, and
// refuses a value other than "auto", true or false.
func TestNcclConfSetting(t *testing.T) {
	t.Parallel()
	file := writeTemp(t, "profiles.json", obj{"defaults": obj{"ncclConf": false}, "profiles": []interface{}{
		obj{"name": "a", "match": obj{"gpus": 8}},
		obj{"name": "b", "match": obj{"gpus": 4}, "ncclConf": true},
		obj{"name": "c", "match": obj{"gpus": 2}, "ncclConf": "auto"},
	}})
	res := runBinary(t, nil, "check-profiles", "--show", file)
	shown, err := decodeObject(res.stdout)
	if res.exitCode != 0 || err != nil {
		t.Fatalf("--show: exit %d, %v: %s", res.exitCode, err, res.stderr)
	}
	want := map[string]interface{}{"a": false, "b": true, "c": "auto"}
	for _, p := range pathArr(shown, "profiles") {
		name, _ := pathStr(p, "name")
		if got := path(p, "ncclConf"); got != want[name] {
			t.Errorf("profile %s: ncclConf %v, want %v", name, got, want[name])
		}
	}
	bad := writeTemp(t, "bad.json", obj{"profiles": []interface{}{obj{"name": "a", "default": true, "ncclConf": "yes"}}})
	if res := runBinary(t, nil, "check-profiles", bad); res.exitCode != 1 ||
		!strings.Contains(string(res.stderr)+string(res.stdout), `ncclConf: must be "auto", true or false`) {
		t.Errorf("ncclConf \"yes\": expected exit 1 and the problem, got %d: %s%s", res.exitCode, res.stdout, res.stderr)
	}
}
