package e2e

import (
	"strings"
	"testing"
)

// Issue 22 item 1: a kubernetes.io/hostname constraint names Nodes, whose
// labels choose the profile as spec.nodeName's do; the pin is never added
// over what they say, nor when they cannot be read.

// withHostnameIn gives the pod one required term: kubernetes.io/hostname In
// names.
func withHostnameIn(pod obj, names ...string) obj {
	values := make([]interface{}, len(names))
	for i, n := range names {
		values[i] = n
	}
	pod["spec"].(obj)["affinity"] = obj{"nodeAffinity": obj{
		"requiredDuringSchedulingIgnoredDuringExecution": obj{"nodeSelectorTerms": []interface{}{
			obj{"matchExpressions": []interface{}{
				obj{"key": hostnameKey, "operator": "In", "values": values},
			}},
		}},
	}}
	return pod
}

const hostnameKey = "kubernetes.io/hostname"

// putHostNode stores a Node as the kubelet labels it: its hostname label
// is its name.
func (a *fakeAPI) putHostNode(name, product string) {
	a.putNode(name, map[string]string{hostnameKey: name, productKey: product, "node-pool": "train"})
}

// TestKubeAPIHostnameNodes: with the mixed cluster's pinned profiles, an
// 8-GPU pod whose hostname names an A100 Node gets the A100 profile and no
// H100 pin (before, the GPU count chose H100 and pinned it: no node could
// match); naming an H100 and an A100 node chooses nothing and pins nothing;
// a Node that cannot be read, or whose hostname label is another, leaves
// the profile to the pod and the pod unpinned, with a warning.
func TestKubeAPIHostnameNodes(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putHostNode("a100-node-1", a100Product)
	a.putHostNode("h100-node-1", h100Product)
	a.putHostNode("h100-node-2", h100Product)
	// A Node whose name is not its hostname (some clouds): not the host.
	a.putNode("renamed-node", map[string]string{hostnameKey: "renamed-host", productKey: a100Product, "node-pool": "train"})
	flags := a.kubeFlags()
	if underValgrind() {
		flags = append(flags, "--api-budget-ms", "30000")
	}
	in := startInstance(t, mixedProfilesPath, flags...)
	host := func(name string) map[string]string { return map[string]string{hostnameKey: name} }
	for _, c := range []selectionCase{
		{name: "nodeSelector hostname of an A100 node, 8 GPUs: A100, not pinned",
			pod:     withNodeSelector(trainingPod(8), host("a100-node-1")),
			profile: "a100-4card", selectedBy: "node", selector: host("a100-node-1"),
			warnings: []string{}, hca: a100HCA},
		{name: "hostname In [h100-node-1, h100-node-2]: H100 by the nodes, not pinned",
			pod:     withHostnameIn(trainingPod(8), "h100-node-1", "h100-node-2"),
			profile: "h100-8card", selectedBy: "node", selector: nil, warnings: []string{}, hca: h100HCA},
		{name: "hostname In [h100-node-1, a100-node-1]: both types, no profile, not pinned",
			pod:      withHostnameIn(trainingPod(8), "h100-node-1", "a100-node-1"),
			profile:  "",
			warnings: []string{"ambiguous node constraints fit h100-8card, a100-4card; none chosen"}},
		{name: "hostname of no Node (404): chosen from the pod, not pinned",
			pod:     withNodeSelector(trainingPod(8), host("no-such-node")),
			profile: "h100-8card", selectedBy: "gpus", selector: host("no-such-node"),
			warnings: []string{`check the webhook can read nodes: hostname "no-such-node" unread, profile chosen from the pod, not pinned`},
			hca:      h100HCA},
		{name: "Node of that name has another hostname label: chosen from the pod, not pinned",
			pod:     withHostnameIn(trainingPod(8), "renamed-node"),
			profile: "h100-8card", selectedBy: "gpus", selector: nil,
			warnings: []string{`node "renamed-node" has another hostname label: profile chosen from the pod, not pinned`},
			hca:      h100HCA},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) { checkSelectionCase(t, in, c) })
	}
	t.Run("one GET per named Node, cached", func(t *testing.T) {
		mark := a.requestMark()
		for i := 0; i < 3; i++ {
			in.review(t, podCreate(jobNS, withHostnameIn(trainingPod(8), "h100-node-1", "a100-node-1")))
		}
		if n := a.count(mark, isKind("get-node")); n != 0 {
			t.Errorf("3 pods naming 2 Nodes already read: expected no Node GET (cached), got %d:\n%s", n, a.logSince(mark))
		}
	})
	if got := in.metric(t, "rdma_webhook_pinned_pods_total"); got != "0" {
		t.Errorf("rdma_webhook_pinned_pods_total: expected 0 (no hostname pod is pinned), got %q", got)
	}
}

// TestMutateExplainHostname: offline there is no API, so the Nodes a
// hostname names are unknown: --explain says so, and nothing is pinned.
func TestMutateExplainHostname(t *testing.T) {
	t.Parallel()
	pod := withNodeSelector(trainingPod(8), map[string]string{hostnameKey: "a100-node-1"})
	res := explainRun(t, mustMarshal(pod))
	_, s := explainSections(t, res.stdout)
	text := s["Pod kubeflow/e2e-job-master-0"]
	for _, l := range []string{
		`kubernetes.io/hostname names "a100-node-1": no Node is read here (offline there is no API; --node-labels takes the pod to a node with the labels given); the profile is chosen from the pod alone, and never pinned`,
		`pin: not pinned: its kubernetes.io/hostname names nodes whose labels are unknown, which the pin could contradict`,
		`warning: rdma-webhook: nodes of the pod's hostnames unknown offline: profile chosen from the pod, not pinned`,
	} {
		if res.exitCode != 0 || !strings.Contains(text, l+"\n") {
			t.Errorf("exit %d, expected %q in\n%s%s", res.exitCode, l, res.stdout, res.stderr)
		}
	}
	// Without --explain: the same, no nodeSelector added, and the flag to
	// pass named.
	out := runBinary(t, mustMarshal(pod), "mutate", "--patched", "--profiles", mixedProfilesPath, "-o", "json")
	if out.exitCode != 0 || strings.Contains(string(out.stdout), productKey) ||
		!strings.Contains(string(out.stderr), "--node-labels") {
		t.Errorf("mutate --patched: expected exit 0, no %s in the pod and a hint naming --node-labels, got %d:\n%s%s",
			productKey, out.exitCode, out.stdout, out.stderr)
	}
}
