package realcluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// installedOverlay is the kustomize directory install-webhook.sh applied:
// the committed overlay, or the layer it wrote on top for another port.
func installedOverlay() string {
	if _, err := os.Stat(filepath.Join(clusterDir, "overlay", "kustomization.yaml")); err == nil {
		return filepath.Join(clusterDir, "overlay")
	}
	return filepath.Join(root, "test", "cluster", "overlay")
}

// dryRunInjected is the profile a pod in ns would be given now: a
// server-side dry run goes through admission and stores nothing.
func dryRunInjected(t testing.TB, ns string) string {
	out, _ := mustKubectl(t, toJSON(t, gpuPod("probe", 8)), "create", "-n", ns, "--dry-run=server",
		"-o", "jsonpath={.metadata.annotations.rdma-webhook\\.io/injected}", "-f", "-")
	return out
}

// applyWithOptIn applies the installed webhook configuration with the
// namespace opt-in component, as docs/install.md shows, and puts
// the default back when the test ends (probing in namespace probe).
func applyWithOptIn(t *testing.T, probe string) {
	t.Helper()
	dir := filepath.Join(clusterDir, "opt-in")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rel := func(p string) string {
		r, err := filepath.Rel(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " +
		rel(installedOverlay()) + "\ncomponents:\n- " +
		rel(filepath.Join(root, "manifests", "components", "namespace-opt-in")) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mustKubectl(t, "", "apply", "-k", installedOverlay())
		waitFor(t, 10*time.Second, "every namespace served again", func() (bool, string) {
			got := dryRunInjected(t, probe)
			return got != "", "a pod in an unlabelled namespace is still left alone"
		})
	})
	mustKubectl(t, "", "apply", "-k", dir)
}

// TestNamespaceOptIn: with the component, only pods in namespaces labelled
// rdma-webhook.io/inject=true (the word a pod opts in with), or the older
// =enabled, reach the webhook; one labelled with another word does not; the
// caBundle filled in at install survives the apply; without it, every
// namespace does again.
func TestNamespaceOptIn(t *testing.T) {
	ctx := context.Background()
	enabled := newNamespace(t, map[string]string{"rdma-webhook.io/inject": "enabled"})
	opted := newNamespace(t, map[string]string{"rdma-webhook.io/inject": "true"})
	plain := newNamespace(t, nil)
	applyWithOptIn(t, plain)

	// The apiserver evaluates selectors from its informer's copy of the
	// configuration: wait until a pod in the plain namespace is left alone.
	waitFor(t, 10*time.Second, "the opt-in selector in effect", func() (bool, string) {
		return dryRunInjected(t, plain) == "", "a pod in an unlabelled namespace is still mutated"
	})
	for _, ns := range []string{enabled, opted, plain} {
		if _, err := clientset.CoreV1().Pods(ns).Create(ctx, gpuPod("worker", 8), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s/worker: %v", ns, err)
		}
	}
	requireMutated(t, getPod(t, enabled, "worker"), "pytorch", want{profile: "roce-8card", hca: hca8})
	requireMutated(t, getPod(t, opted, "worker"), "pytorch", want{profile: "roce-8card", hca: hca8})
	if lines := admissionLines(t, plain, "worker"); len(lines) > 0 {
		t.Errorf("a pod in a namespace that did not opt in reached the webhook: %v", lines)
	}
	requireUntouched(t, getPod(t, plain, "worker"))
}
