package realcluster

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The mixed cluster of manifests/examples/profiles-mixed.json: 8-GPU H100
// nodes on mlx5_1..8 and 4-GPU A100 nodes on mlx5_1..4 (mlx5_0 is the
// management NIC, eth0 with the default route, on both), both pinned.
const (
	mixedH100    = "NVIDIA-H100-80GB-HBM3"
	mixedA100    = "NVIDIA-A100-SXM4-80GB"
	mixedHCAH100 = "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8"
	productKey   = "nvidia.com/gpu.product"
)

// useMixedProfiles serves the mixed-cluster example for the rest of the
// test, and the shipped profiles again after it.
func useMixedProfiles(t *testing.T, ns string) {
	t.Helper()
	text, err := os.ReadFile("../../../manifests/examples/profiles-mixed.json")
	if err != nil {
		t.Fatal(err)
	}
	// By the profile's name: the H100 profile has the shipped roce-8card's
	// HCA list, so the list cannot tell which profiles serve.
	serving := func(want string) func() (bool, string) {
		return func() (bool, string) {
			got := dryRunProfile(t, ns)
			return got == want, got
		}
	}
	serveProfiles(t, ns, string(text), serving("h100-8card"), serving("roce-8card"))
}

// withNodeAffinity requires the node's GPU product to be one of products.
func withNodeAffinity(p *corev1.Pod, products ...string) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: productKey, Operator: corev1.NodeSelectorOpIn, Values: products,
			}}}},
		},
	}}
	return p
}

// createPod creates p with kubectl, as a user would, and returns the pod
// the apiserver stored and kubectl's stderr (where the warnings are).
func createPod(t *testing.T, ns string, p *corev1.Pod) (*corev1.Pod, string) {
	t.Helper()
	_, stderr := mustKubectl(t, toJSON(t, p), "create", "-n", ns, "-f", "-")
	return getPod(t, ns, p.Name), stderr
}

func requireSelected(t *testing.T, p *corev1.Pod, profile, rule, hca string) {
	t.Helper()
	if got := p.Annotations["rdma-webhook.io/injected"]; got != profile {
		t.Errorf("%s: profile %q, want %q", p.Name, got, profile)
	}
	if got := p.Annotations["rdma-webhook.io/selected-by"]; got != rule {
		t.Errorf("%s: rdma-webhook.io/selected-by %q, want %q", p.Name, got, rule)
	}
	if got := envOf(container(t, p, "pytorch"))["NCCL_IB_HCA"]; len(got) != 1 || got[0] != hca {
		t.Errorf("%s: NCCL_IB_HCA %q, want [%s]", p.Name, got, hca)
	}
}

// TestMixedClusterSelection: on an H100/A100 cluster the stored pods get the
// NICs of the node type they can land on, never a silent guess: the GPU
// count only chooses among profiles the pod does not exclude and pins the
// pod to that node type; node labels choose only when one profile fits;
// a pod that allows both types itself gets neither, is not pinned, and is
// told so.
func TestMixedClusterSelection(t *testing.T) {
	ns := newNamespace(t, nil)
	useMixedProfiles(t, ns)

	// 4 GPUs, no constraint: the A100 profile by GPU count, pinned there.
	p, stderr := createPod(t, ns, gpuPod("four-free", 4))
	requireSelected(t, p, "a100-4card", "gpus", hca4)
	if p.Spec.NodeSelector[productKey] != mixedA100 || p.Spec.NodeSelector["node-pool"] != "train" {
		t.Errorf("four-free: nodeSelector %v, want the a100-4card labels (pinned)", p.Spec.NodeSelector)
	}
	if !strings.Contains(stderr, "pinned") {
		t.Errorf("four-free: no pin warning on kubectl's stderr:\n%s", stderr)
	}

	// In [H100, A100]: the pod chose both types itself. No profile, nothing
	// pinned over its choice, and one warning naming both (not "none
	// chosen" beside "pinned to profile ... nodes").
	p, stderr = createPod(t, ns, withNodeAffinity(gpuPod("four-either", 4), mixedH100, mixedA100))
	if got := p.Annotations["rdma-webhook.io/injected"]; got != "" {
		t.Errorf("four-either: profile %q, want none", got)
	}
	if !strings.Contains(stderr, "ambiguous node constraints fit h100-8card, a100-4card; none chosen") {
		t.Errorf("four-either: no ambiguity warning naming both profiles:\n%s", stderr)
	}
	if n := strings.Count(stderr, "Warning: rdma-webhook:"); n != 1 || strings.Contains(stderr, "pinned") {
		t.Errorf("four-either: want the one ambiguity warning, got %d:\n%s", n, stderr)
	}
	if len(p.Spec.NodeSelector) != 0 {
		t.Errorf("four-either: nodeSelector %v, want none (not pinned)", p.Spec.NodeSelector)
	}

	// A pod that demands A100 nodes gets the A100 profile from its
	// constraints, whatever its GPU count, and is not pinned further.
	demand := gpuPod("eight-on-a100", 8)
	demand.Spec.NodeSelector = map[string]string{productKey: mixedA100}
	p, _ = createPod(t, ns, demand)
	requireSelected(t, p, "a100-4card", "node-labels", hca4)
	if _, pinned := p.Spec.NodeSelector["node-pool"]; pinned {
		t.Errorf("eight-on-a100: pinned although chosen by node labels: %v", p.Spec.NodeSelector)
	}

	// Only the shared label: both fit, none by node labels; 8 GPUs is H100's.
	shared := gpuPod("eight-in-pool", 8)
	shared.Spec.NodeSelector = map[string]string{"node-pool": "train"}
	p, stderr = createPod(t, ns, shared)
	requireSelected(t, p, "h100-8card", "gpus", mixedHCAH100)
	if p.Spec.NodeSelector[productKey] != mixedH100 {
		t.Errorf("eight-in-pool: nodeSelector %v, want pinned to %s", p.Spec.NodeSelector, mixedH100)
	}
	if strings.Contains(stderr, "ambiguous") || !strings.Contains(stderr, "pinned") {
		t.Errorf("eight-in-pool: want the pin's warning and no ambiguity warning (the GPU count chose):\n%s", stderr)
	}
}

// TestIBDisabledByTheUser: a job that chose TCP (NCCL_IB_DISABLE=1) gets no
// HCA list, RDMA device or IPC_LOCK, one warning, and still the shared
// memory and the scheduler.
func TestIBDisabledByTheUser(t *testing.T) {
	ns := newNamespace(t, nil)
	p, stderr := createPod(t, ns, gpuPod("tcp-only", 8, corev1.EnvVar{Name: "NCCL_IB_DISABLE", Value: "1"}))
	c := container(t, p, "pytorch")
	env := envOf(c)
	if v := env["NCCL_IB_DISABLE"]; len(v) != 1 || v[0] != "1" {
		t.Errorf("NCCL_IB_DISABLE %q, want the user's [1] alone", v)
	}
	if _, ok := env["NCCL_IB_HCA"]; ok {
		t.Errorf("NCCL_IB_HCA %q added to a container with InfiniBand disabled", env["NCCL_IB_HCA"])
	}
	for name := range c.Resources.Limits {
		if strings.HasPrefix(string(name), "rdma/") {
			t.Errorf("RDMA resource %s added to a container with InfiniBand disabled", name)
		}
	}
	if sc := c.SecurityContext; sc != nil && sc.Capabilities != nil {
		for _, cap := range sc.Capabilities.Add {
			if cap == "IPC_LOCK" {
				t.Error("IPC_LOCK added to a container with InfiniBand disabled")
			}
		}
	}
	requireShm(t, p, c)
	if p.Spec.SchedulerName != "volcano" {
		t.Errorf("schedulerName %q, want volcano", p.Spec.SchedulerName)
	}
	if n := strings.Count(stderr, "NCCL_IB_DISABLE"); n != 1 {
		t.Errorf("%d warnings about NCCL_IB_DISABLE on kubectl's stderr, want 1:\n%s", n, stderr)
	}
}
