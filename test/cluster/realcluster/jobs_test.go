package realcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// pytorchJob is the part of a kubeflow.org/v1 PyTorchJob the suite reads:
// its name and each replica type's count and pod template.
type pytorchJob struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Replicas map[string]replicaSpec `json:"pytorchReplicaSpecs"`
	} `json:"spec"`
}

type replicaSpec struct {
	Replicas int                    `json:"replicas"`
	Template corev1.PodTemplateSpec `json:"template"`
}

// operatorModule is where the training-operator's module (its examples and
// CRDs) is in the module cache.
func operatorModule(t testing.TB) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kubeflow/training-operator")
	cmd.Dir = filepath.Join(root, "test", "cluster", "operator")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list the training-operator module: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// readJob reads a PyTorchJob manifest (YAML or JSON; the first document
// that is a PyTorchJob) and returns its text and what the suite needs of it.
func readJob(t testing.TB, path string) (string, pytorchJob) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		var kind struct{ Kind string }
		if yaml.Unmarshal([]byte(doc), &kind) != nil || kind.Kind != "PyTorchJob" {
			continue
		}
		var j pytorchJob
		if err := yaml.Unmarshal([]byte(doc), &j); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return doc, j
	}
	t.Fatalf("%s holds no PyTorchJob", path)
	return "", pytorchJob{}
}

// submitJob applies a PyTorchJob in ns with kubectl, as a user does, and
// returns the pods the training-operator made for it, by replica type.
func submitJob(t *testing.T, ns, doc string, j pytorchJob) map[string][]corev1.Pod {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	// The examples name their own namespace (kubeflow, default): each test
	// runs in its own.
	delete(m["metadata"].(map[string]any), "namespace")
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, string(out), "apply", "-n", ns, "-f", "-")
	return jobPods(t, ns, j)
}

func jobPods(t testing.TB, ns string, j pytorchJob) map[string][]corev1.Pod {
	t.Helper()
	total := 0
	for _, r := range j.Spec.Replicas {
		total += r.Replicas
	}
	pods := waitPods(t, ns, "training.kubeflow.org/job-name="+j.Metadata.Name, total)
	byType := map[string][]corev1.Pod{}
	for _, p := range pods {
		rt := p.Labels["training.kubeflow.org/replica-type"]
		byType[rt] = append(byType[rt], p)
	}
	return byType
}

// template returns the declared pod spec of a replica type ("master").
func template(t testing.TB, j pytorchJob, replicaType string) *corev1.PodSpec {
	t.Helper()
	for rt, r := range j.Spec.Replicas {
		if strings.EqualFold(rt, replicaType) {
			spec := r.Template.Spec
			return &spec
		}
	}
	t.Fatalf("job %s has no %s replicas", j.Metadata.Name, replicaType)
	return nil
}

// TestPyTorchJobsMutated: the cloud guide's Swin-Transformer job (which already
// declares IPC_LOCK, /dev/shm, rdma/hca and volcano), submitted with
// kubectl; every pod the
// training-operator creates is stored with every addition of docs/profiles.md (step 4) and
// keeps everything the job declared.
func TestPyTorchJobsMutated(t *testing.T) {
	cases := []struct {
		name, file string
		w          want
	}{
		{"seed-swin", filepath.Join(root, "test", "e2e", "testdata", "pytorchjob-swin.json"),
			want{profile: "roce-8card", hca: hca8, userEnv: map[string]string{"NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": "0"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, nil)
			doc, j := readJob(t, tc.file)
			byType := submitJob(t, ns, doc, j)
			for rt, pods := range byType {
				for i := range pods {
					p := &pods[i]
					requireMutated(t, p, "pytorch", tc.w)
					requireKept(t, p, template(t, j, rt), "pytorch")
					line := waitAdmissionLine(t, ns, p.Name)
					if line["result"] != "mutated" || line["profile"] != tc.w.profile {
						t.Errorf("%s: log line %v, want result mutated, profile %s", p.Name, line, tc.w.profile)
					}
				}
			}
			if len(byType["master"]) != 1 || len(byType["worker"]) != 1 {
				t.Errorf("want one master and one worker pod, got %d and %d", len(byType["master"]), len(byType["worker"]))
			}
		})
	}
}

// TestPyTorchJobsLeftAlone: the training-operator's own examples that ask
// for no RDMA profile (a CPU job, a 1-GPU NCCL job) reach the webhook, which
// admits their pods unchanged and says why in its log.
func TestPyTorchJobsLeftAlone(t *testing.T) {
	mod := operatorModule(t)
	for _, tc := range []struct{ name, file, reason string }{
		{"simple-cpu", filepath.Join(mod, "examples", "pytorch", "simple.yaml"), ""},
		{"mnist-nccl-1gpu", filepath.Join(mod, "examples", "pytorch", "mnist", "v1", "pytorch_job_mnist_nccl.yaml"), "no-profile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, nil)
			doc, j := readJob(t, tc.file)
			for rt, pods := range submitJob(t, ns, doc, j) {
				for i := range pods {
					p := &pods[i]
					requireUntouched(t, p)
					requireKept(t, p, template(t, j, rt), "pytorch")
					line := waitAdmissionLine(t, ns, p.Name)
					if line["result"] != "skipped" || (tc.reason != "" && line["reason"] != tc.reason) {
						t.Errorf("%s: log line %v, want result skipped %s", p.Name, line, tc.reason)
					}
				}
			}
		})
	}
}

// TestExampleAsTheREADMEShowsIt: `kubectl apply -f
// manifests/examples/pytorchjob-8gpu.yaml` as the README's "Try it on the
// local control plane" says, into the namespace the file names.
func TestExampleAsTheREADMEShowsIt(t *testing.T) {
	file := filepath.Join(root, "manifests", "examples", "pytorchjob-8gpu.yaml")
	_, j := readJob(t, file)
	mustKubectl(t, "", "apply", "-f", file)
	t.Cleanup(func() {
		mustKubectl(t, "", "delete", "-f", file, "--wait=true")
		waitFor(t, deletedWithin, "the example's pods to go away", func() (bool, string) {
			l, err := clientset.CoreV1().Pods("default").List(context.Background(),
				metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=" + j.Metadata.Name})
			return err == nil && len(l.Items) == 0, "pods still there"
		})
	})
	for rt, pods := range jobPods(t, "default", j) {
		for i := range pods {
			requireMutated(t, &pods[i], "pytorch", want{profile: "roce-8card", hca: hca8,
				userEnv: map[string]string{"NCCL_DEBUG": "INFO"}})
			requireKept(t, &pods[i], template(t, j, rt), "pytorch")
		}
	}
}
