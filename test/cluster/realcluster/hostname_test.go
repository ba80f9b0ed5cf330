package realcluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hostJobYAML is jobYAML's PyTorchJob, 8-GPU pods with podExtra (YAML
// fields of the pod spec, indented for it) in each replica's template.
func hostJobYAML(name string, podExtra string) string {
	return strings.ReplaceAll(jobYAML(name, 8, ""), "          containers:\n", podExtra+"          containers:\n")
}

// createHostNode creates a Node as the kubelet labels one of the mixed
// cluster's (its hostname label is its name), removed when the test ends.
func createHostNode(t *testing.T, name, product string) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, productKey: product, "node-pool": "train"}}}
	if _, err := clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clientset.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}) })
}

// TestHostnamePinnedJobs (issue 22, item 1): with the mixed cluster's
// pinned profiles, a PyTorchJob whose pods name an A100 Node by
// kubernetes.io/hostname and ask for 8 GPUs is stored with the A100
// profile's HCAs and no H100 pin (before: h100-8card by the GPU count, and
// the pin gpu.product=H100 beside hostname=<the A100 node>, which no node
// meets). One whose pods name an H100 and an A100 node gets no profile and
// no pin, and the ambiguity warning.
func TestHostnamePinnedJobs(t *testing.T) {
	const a100Node, h100Node = "rc-a100-node-1", "rc-h100-node-1"
	createHostNode(t, a100Node, mixedA100)
	createHostNode(t, h100Node, mixedH100)
	ns := newNamespace(t, nil)
	useMixedProfiles(t, ns)

	t.Run("hostname of an A100 node, 8 GPUs", func(t *testing.T) {
		extra := "          nodeSelector:\n            kubernetes.io/hostname: " + a100Node + "\n"
		mustKubectl(t, hostJobYAML("host-a100", extra), "apply", "-n", ns, "-f", "-")
		for _, pods := range jobPods(t, ns, jobYAMLShape("host-a100")) {
			for i := range pods {
				p := &pods[i]
				requireSelected(t, p, "a100-4card", "node", hca4)
				if len(p.Spec.NodeSelector) != 1 || p.Spec.NodeSelector["kubernetes.io/hostname"] != a100Node {
					t.Errorf("%s: nodeSelector %v, want the job's own hostname alone (no pin)", p.Name, p.Spec.NodeSelector)
				}
			}
		}
	})
	t.Run("hostnames of an H100 and an A100 node", func(t *testing.T) {
		extra := `          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - key: kubernetes.io/hostname
                    operator: In
                    values: [` + h100Node + `, ` + a100Node + `]
`
		mustKubectl(t, hostJobYAML("host-both", extra), "apply", "-n", ns, "-f", "-")
		for _, pods := range jobPods(t, ns, jobYAMLShape("host-both")) {
			for i := range pods {
				p := &pods[i]
				if got := p.Annotations["rdma-webhook.io/injected"]; got != "" {
					t.Errorf("%s: profile %q, want none", p.Name, got)
				}
				if len(p.Spec.NodeSelector) != 0 {
					t.Errorf("%s: nodeSelector %v, want none (not pinned)", p.Name, p.Spec.NodeSelector)
				}
				w := p.Annotations["rdma-webhook.io/warnings"]
				if !strings.Contains(w, "ambiguous node constraints fit h100-8card, a100-4card; none chosen") ||
					strings.Contains(w, "pinned") {
					t.Errorf("%s: rdma-webhook.io/warnings %q, want the ambiguity warning alone", p.Name, w)
				}
			}
		}
	})
}
