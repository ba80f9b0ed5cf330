package realcluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// profilesConfigMap is the ConfigMap the webhook watches: the one the
// Deployment names in --profiles-configmap (NS/NAME, as the webhook reads it).
func profilesConfigMap(t testing.TB) *corev1.ConfigMap {
	t.Helper()
	ctx := context.Background()
	d, err := clientset.AppsV1().Deployments("rdma-webhook").Get(ctx, "rdma-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	for i, a := range args {
		if a != "--profiles-configmap" || i+1 >= len(args) {
			continue
		}
		ns, name, ok := strings.Cut(args[i+1], "/")
		if !ok {
			t.Fatalf("--profiles-configmap %q is not NS/NAME", args[i+1])
		}
		cm, err := clientset.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	t.Fatalf("the Deployment passes no --profiles-configmap: %q", args)
	return nil
}

// profilesDoc is the profiles ConfigMap with text, as an admin keeps it in
// a file: with the label that has its edits checked (docs/install.md).
func profilesDoc(t testing.TB, cm *corev1.ConfigMap, text string) string {
	return toJSON(t, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": cm.Name, "namespace": cm.Namespace,
			"labels": map[string]string{"rdma-webhook.io/profiles": "true"}},
		"data": map[string]string{"profiles.json": text},
	})
}

// applyProfiles applies the ConfigMap with new profiles text, with kubectl
// apply as an admin does.
func applyProfiles(t testing.TB, cm *corev1.ConfigMap, text string) {
	t.Helper()
	mustKubectl(t, profilesDoc(t, cm, text), "apply", "-f", "-")
}

// serveProfiles applies text as the profiles for the rest of the test, and
// the version serving before it afterwards: each waits until ready(),
// probing in namespace ns, says the wanted version serves.
func serveProfiles(t *testing.T, ns, text string, ready, restored func() (bool, string)) {
	t.Helper()
	cm := profilesConfigMap(t)
	original := cm.Data["profiles.json"]
	t.Cleanup(func() {
		applyProfiles(t, cm, original)
		waitFor(t, 10*time.Second, "the shipped profiles to serve again", restored)
	})
	applyProfiles(t, cm, text)
	waitFor(t, 10*time.Second, "the new profiles to serve", ready)
}

// shippedServing is serveProfiles' restored for the shipped profiles.
func shippedServing(t testing.TB, ns string) func() (bool, string) {
	return func() (bool, string) {
		got := dryRunHCA(t, ns)
		return got == hca8, got
	}
}

// withHCA returns the profiles text with roce-8card's hca list replaced.
func withHCA(t testing.TB, text string, hca []string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range doc["profiles"].([]any) {
		if p.(map[string]any)["name"] == "roce-8card" {
			p.(map[string]any)["hca"] = hca
		}
	}
	return toJSON(t, doc)
}

// dryRunHCA is the NCCL_IB_HCA an 8-GPU pod would get now: a server-side
// dry run goes through the same admission and stores nothing.
func dryRunHCA(t testing.TB, ns string) string {
	t.Helper()
	p := dryRunPod(t, ns)
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == "NCCL_IB_HCA" {
			return e.Value
		}
	}
	return ""
}

// dryRunProfile is the profile an 8-GPU pod would get now
// (rdma-webhook.io/injected; "" for none).
func dryRunProfile(t testing.TB, ns string) string {
	t.Helper()
	return dryRunPod(t, ns).Annotations["rdma-webhook.io/injected"]
}

func dryRunPod(t testing.TB, ns string) *corev1.Pod {
	t.Helper()
	out, _ := mustKubectl(t, toJSON(t, gpuPod("probe", 8)), "create", "-n", ns, "--dry-run=server", "-o", "json", "-f", "-")
	var p corev1.Pod
	fromJSON(t, out, &p)
	return &p
}

// TestProfilesEditedWithKubectl: a `kubectl apply` of the profiles
// ConfigMap reaches the next pod within 2 s (the webhook watches it through
// the API); an invalid edit is refused by the apiserver with check-profiles'
// messages (the ValidatingWebhookConfiguration), and the last good version
// keeps serving.
func TestProfilesEditedWithKubectl(t *testing.T) {
	ns := newNamespace(t, nil)
	cm := profilesConfigMap(t)
	original := cm.Data["profiles.json"]
	t.Cleanup(func() {
		applyProfiles(t, cm, original)
		waitFor(t, 10*time.Second, "the shipped profiles to serve again", shippedServing(t, ns))
	})

	applyProfiles(t, cm, withHCA(t, original, []string{"mlx5_21", "mlx5_22"}))
	applied := time.Now()
	waitFor(t, 2*time.Second, "the edited profiles in the next pod", func() (bool, string) {
		got := dryRunHCA(t, ns)
		return got == "=mlx5_21,mlx5_22", got
	})
	t.Logf("the edit reached a pod %v after kubectl apply returned", time.Since(applied).Round(time.Millisecond))
	if _, err := clientset.CoreV1().Pods(ns).Create(context.Background(), gpuPod("after-edit", 8), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	requireMutated(t, getPod(t, ns, "after-edit"), "pytorch", want{profile: "roce-8card", hca: "=mlx5_21,mlx5_22"})

	// NCCL_IB_TIMEOUT 40 is out of NCCL's range: the apiserver refuses the
	// apply itself (the ValidatingWebhookConfiguration on the ConfigMap),
	// with the lines check-profiles prints, and nothing changes.
	bad := strings.Replace(original, `"NCCL_IB_TIMEOUT": "22"`, `"NCCL_IB_TIMEOUT": "40"`, 1)
	_, stderr, err := kubectl(profilesDoc(t, cm, bad), "apply", "-f", "-")
	if err == nil {
		t.Fatal("kubectl apply of an invalid profiles version succeeded")
	}
	for _, part := range []string{`admission webhook "profiles.rdma-webhook.io" denied the request`,
		"profiles.json is not valid:", "NCCL_IB_TIMEOUT"} {
		if !strings.Contains(stderr, part) {
			t.Errorf("kubectl apply's error lacks %q:\n%s", part, stderr)
		}
	}
	stored := profilesConfigMap(t).Data["profiles.json"]
	if strings.Contains(stored, `"NCCL_IB_TIMEOUT": "40"`) {
		t.Error("the refused version was stored")
	}
	if got := dryRunHCA(t, ns); got != "=mlx5_21,mlx5_22" {
		t.Errorf("after a refused edit, NCCL_IB_HCA %q; want the last good version's =mlx5_21,mlx5_22", got)
	}

	// A file without the label would drop it, and with it the checks of
	// every later edit: refused too, saying so.
	unlabelled := toJSON(t, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": cm.Name, "namespace": cm.Namespace},
		"data":     map[string]string{"profiles.json": withHCA(t, original, []string{"mlx5_21", "mlx5_22"})},
	})
	if _, stderr, err := kubectl(unlabelled, "apply", "-f", "-"); err == nil ||
		!strings.Contains(stderr, "keep the label rdma-webhook.io/profiles") {
		t.Errorf("an apply that drops the label: err %v, stderr:\n%s", err, stderr)
	}
}
