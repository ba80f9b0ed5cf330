package realcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jobYAMLShape is what jobPods needs to know of a job made by jobYAML: its
// name and one Master and one Worker.
func jobYAMLShape(name string) pytorchJob {
	var j pytorchJob
	j.Metadata.Name = name
	j.Spec.Replicas = map[string]replicaSpec{"Master": {Replicas: 1}, "Worker": {Replicas: 1}}
	return j
}

// jobYAML is a two-replica PyTorchJob whose pytorch container asks for gpus
// GPUs and carries the given extra container fields (YAML, indented for
// the container).
func jobYAML(name string, gpus int, extra string) string {
	return jobYAMLOf(name, gpus, 1, extra)
}

// jobYAMLOf is jobYAML with workers workers.
func jobYAMLOf(name string, gpus, workers int, extra string) string {
	replica := func(kind string, n int) string {
		return fmt.Sprintf(`    %s:
      replicas: %d
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: nvcr.io/nvidia/pytorch:24.01-py3
            command: ["torchrun", "/workspace/train.py"]
            resources:
              limits:
                nvidia.com/gpu: %d
%s`, kind, n, gpus, extra)
	}
	return fmt.Sprintf(`apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: %s
spec:
  pytorchReplicaSpecs:
%s%s`, name, replica("Master", 1), replica("Worker", workers))
}

// TestUserValuesWin: a job's own NCCL_IB_HCA is kept, once; a key the job
// takes from an envFrom ConfigMap is read by the webhook through the API,
// with the RBAC of manifests/ and nothing more, and not added again (env
// beats envFrom, so adding it would silently override the user's value).
func TestUserValuesWin(t *testing.T) {
	ns := newNamespace(t, nil)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "nccl-tuning"},
		Data:       map[string]string{"NCCL_IB_TIMEOUT": "18", "NCCL_IB_QPS_PER_CONNECTION": "4"},
	}
	if _, err := clientset.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	extra := `            env:
            - name: NCCL_IB_HCA
              value: "=mlx5_3"
            envFrom:
            - configMapRef:
                name: nccl-tuning
`
	doc := jobYAML("user-values", 8, extra)
	mustKubectl(t, doc, "apply", "-n", ns, "-f", "-")
	for _, pods := range jobPods(t, ns, jobYAMLShape("user-values")) {
		for i := range pods {
			requireMutated(t, &pods[i], "pytorch", want{profile: "roce-8card", hca: "=mlx5_3",
				fromEnvFrom: []string{"NCCL_IB_TIMEOUT", "NCCL_IB_QPS_PER_CONNECTION"}})
			line := waitAdmissionLine(t, ns, pods[i].Name)
			if fmt.Sprint(line["warnings"]) == "0" {
				t.Errorf("%s: the user's NCCL_IB_HCA overrode the profile without a warning: %v", pods[i].Name, line)
			}
		}
	}
}

// gpuPod is a plain pod opted in with the label rdma-webhook.io/inject=true.
func gpuPod(name string, gpus int64, env ...corev1.EnvVar) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rdma-webhook.io/inject": "true"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:    "pytorch",
			Image:   "nvcr.io/nvidia/pytorch:24.01-py3",
			Command: []string{"sleep", "infinity"},
			Env:     env,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}},
		}}},
	}
}

// TestWarningsReachKubectl: a pod created with kubectl whose NCCL_IB_TIMEOUT
// NCCL would read as octal gets the webhook's warning on kubectl's stderr.
func TestWarningsReachKubectl(t *testing.T) {
	ns := newNamespace(t, nil)
	p := gpuPod("octal-timeout", 8, corev1.EnvVar{Name: "NCCL_IB_TIMEOUT", Value: "022"})
	_, stderr := mustKubectl(t, toJSON(t, p), "create", "-n", ns, "-f", "-")
	if !strings.Contains(stderr, "Warning: rdma-webhook:") || !strings.Contains(stderr, "NCCL_IB_TIMEOUT") {
		t.Errorf("kubectl's stderr lacks the webhook's NCCL_IB_TIMEOUT warning:\n%s", stderr)
	}
	stored := getPod(t, ns, "octal-timeout")
	requireMutated(t, stored, "pytorch", want{profile: "roce-8card", hca: hca8,
		userEnv: map[string]string{"NCCL_IB_TIMEOUT": "022"}})
	// After the fact, on the pod (kubectl describe pod): the same texts,
	// as a JSON array, without the "rdma-webhook: " lead.
	var warnings []string
	ann := stored.Annotations["rdma-webhook.io/warnings"]
	if err := json.Unmarshal([]byte(ann), &warnings); err != nil || len(warnings) == 0 ||
		!strings.Contains(ann, "NCCL_IB_TIMEOUT=022: drop the leading 0") {
		t.Errorf("rdma-webhook.io/warnings: expected the octal warning in a JSON array, got %q (%v)", ann, err)
	}
}

// TestServerSideDryRun: `kubectl create --dry-run=server` is answered with
// the mutated pod and stores nothing.
func TestServerSideDryRun(t *testing.T) {
	ns := newNamespace(t, nil)
	out, _ := mustKubectl(t, toJSON(t, gpuPod("dry", 8)), "create", "-n", ns, "--dry-run=server", "-o", "json", "-f", "-")
	var p corev1.Pod
	fromJSON(t, out, &p)
	requireMutated(t, &p, "pytorch", want{profile: "roce-8card", hca: hca8})
	if _, err := clientset.CoreV1().Pods(ns).Get(context.Background(), "dry", metav1.GetOptions{}); err == nil {
		t.Errorf("a server-side dry run stored pod %s/dry", ns)
	}
	line := waitAdmissionLine(t, ns, "dry")
	if line["result"] != "mutated" {
		t.Errorf("dry-run log line %v, want result mutated", line)
	}
}
