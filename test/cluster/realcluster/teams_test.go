package realcluster

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// dryRunEnv is the value of name an 8-GPU pod in ns would get now ("" none).
func dryRunEnv(t testing.TB, ns, name string) string {
	t.Helper()
	out, _ := mustKubectl(t, toJSON(t, gpuPod("probe", 8)), "create", "-n", ns, "--dry-run=server", "-o", "json", "-f", "-")
	var p corev1.Pod
	fromJSON(t, out, &p)
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestProfilesPerTeam (issue 16): with manifests/examples/profiles-teams.json,
// the same 8-GPU pod is stored with NCCL_IB_GID_INDEX=3 in a namespace
// labelled rdma-webhook.io/nccl=2.18 (the team's copy of roce-8card, read
// through the Namespace's labels) and with the cluster-wide roce-8card in
// another; an edit with two team profiles that would tie in one namespace
// is refused at apply time with check-profiles' message.
func TestProfilesPerTeam(t *testing.T) {
	legacy := newNamespace(t, map[string]string{"rdma-webhook.io/nccl": "2.18"})
	plain := newNamespace(t, nil)
	text, err := os.ReadFile("../../../manifests/examples/profiles-teams.json")
	if err != nil {
		t.Fatal(err)
	}
	serveProfiles(t, plain, string(text), func() (bool, string) {
		got := dryRunEnv(t, legacy, "NCCL_IB_GID_INDEX")
		return got == "3", got
	}, shippedServing(t, plain))

	team, _ := createPod(t, legacy, gpuPod("same-pod", 8))
	requireSelected(t, team, "nccl218-8card", "gpus", hca8)
	if got := envOf(container(t, team, "pytorch"))["NCCL_IB_GID_INDEX"]; len(got) != 1 || got[0] != "3" {
		t.Errorf("%s/%s: NCCL_IB_GID_INDEX %q, want [3] (the team's value)", legacy, team.Name, got)
	}
	other, _ := createPod(t, plain, gpuPod("same-pod", 8))
	requireSelected(t, other, "roce-8card", "gpus", hca8)
	if got := envOf(container(t, other, "pytorch"))["NCCL_IB_GID_INDEX"]; len(got) != 0 {
		t.Errorf("%s/%s: NCCL_IB_GID_INDEX %q, want none (the cluster-wide profile)", plain, other.Name, got)
	}

	// A list profile for the labelled namespace with the same rules as the
	// team's selector copy: both would apply there, so neither could win.
	var doc map[string]any
	if err := json.Unmarshal(text, &doc); err != nil {
		t.Fatal(err)
	}
	doc["profiles"] = append(doc["profiles"].([]any), map[string]any{
		"name": "clash", "hca": []string{"mlx5_1"},
		"match": map[string]any{"gpus": 8, "nodeLabels": map[string]string{"nvidia.com/gpu.count": "8"},
			"namespaces": []string{legacy}},
	})
	cm := profilesConfigMap(t)
	_, stderr, err := kubectl(profilesDoc(t, cm, toJSON(t, doc)), "apply", "-f", "-")
	if err == nil {
		t.Fatal("kubectl apply of two team profiles that tie succeeded")
	}
	want := `profiles "nccl218-8card" and "clash" have the same match rules, so neither can ever be chosen by them; change or remove one; both apply in namespace "` + legacy + `" if its labels match`
	for _, part := range []string{`admission webhook "profiles.rdma-webhook.io" denied the request`, want} {
		if !strings.Contains(stderr, part) {
			t.Errorf("kubectl apply's error lacks %q:\n%s", part, stderr)
		}
	}
	if got := dryRunEnv(t, legacy, "NCCL_IB_GID_INDEX"); got != "3" {
		t.Errorf("after the refused edit: NCCL_IB_GID_INDEX %q in %s, want the served version's 3", got, legacy)
	}
}
