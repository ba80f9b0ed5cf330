package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One vocabulary for rdma-webhook.io/inject (issue 22 item 9): "true" and
// "false" on pods and namespaces alike ("enabled" the older spelling on a
// namespace); any other value does nothing, and the webhook says so.

// TestInjectValueThatDoesNothingWarns: a PyTorchJob pod annotated
// inject=yes is mutated as ever (it is a target by its owner) and warned
// about the value, naming it and what to write instead.
func TestInjectValueThatDoesNothingWarns(t *testing.T) {
	t.Parallel()
	pod := trainingPod(8)
	pod["metadata"].(obj)["annotations"] = obj{injectKey: "yes"}
	rr := srv.review(t, podCreate("kubeflow", pod))
	if len(rr.patch) == 0 {
		t.Fatalf("not mutated")
	}
	want := `rdma-webhook: set pod annotation rdma-webhook.io/inject=true|false ("yes" does nothing)`
	found := false
	for _, w := range rr.warnings {
		found = found || w == want
	}
	if !found {
		t.Errorf("expected the warning %q, got %q", want, rr.warnings)
	}
	// The same pod with "true" or "false" gets no such warning.
	for _, v := range []string{"true", "false"} {
		pod["metadata"].(obj)["annotations"] = obj{injectKey: v}
		for _, w := range srv.review(t, podCreate("kubeflow", copyObject(pod))).warnings {
			if strings.Contains(w, "does nothing") {
				t.Errorf("inject=%s: unexpected warning %q", v, w)
			}
		}
	}
}

// TestInjectValueThatDoesNothingExplain: at check time, `mutate --explain`
// with the namespace's labels says that a namespace value does nothing, in
// the trace and in the warning the pods would get.
func TestInjectValueThatDoesNothingExplain(t *testing.T) {
	t.Parallel()
	pod := mustMarshal(trainingPod(8))
	res := explainRun(t, pod, "--namespace-labels", injectKey+"=disabled")
	if res.exitCode != 0 {
		t.Fatalf("exit %d: %s", res.exitCode, res.stderr)
	}
	for _, want := range []string{
		`namespace: label rdma-webhook.io/inject="disabled" does nothing`,
		`warning: rdma-webhook: label namespace "kubeflow" rdma-webhook.io/inject=true|false ("disabled" does nothing)`,
	} {
		if !strings.Contains(string(res.stdout), want) {
			t.Errorf("expected %q in the explanation:\n%s", want, res.stdout)
		}
	}
	for _, v := range []string{"true", "false", "enabled"} {
		ok := explainRun(t, pod, "--namespace-labels", injectKey+"="+v)
		if strings.Contains(string(ok.stdout), "does nothing") {
			t.Errorf("namespace inject=%s: unexpected \"does nothing\":\n%s", v, ok.stdout)
		}
	}
}

// TestNamespaceInjectLabelRouting: which namespaces the apiserver sends a
// PyTorchJob's pod from, by their inject label, with the shipped webhook
// configuration and with the namespace opt-in component. Under opt-in,
// "true" (the pods' word) is served as well as the older "enabled".
func TestNamespaceInjectLabelRouting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	abs, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	// kustomize takes relative paths only, as a user's own kustomization has them.
	rel := func(p string) string {
		r, err := filepath.Rel(dir, filepath.Join(abs, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " +
		rel("manifests") + "\ncomponents:\n- " + rel("manifests/components/namespace-opt-in") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := trainingPod(8)
	podLabels := stringMap(path(pod, "metadata", "labels"))
	optInPod := map[string]string{injectKey: "true"}
	for _, c := range []struct {
		value             string // "": no label
		served, servedOpt bool
	}{
		{"", true, false},
		{"true", true, true},
		{"enabled", true, true},
		{"false", false, false},
		{"yes", true, false},
		{"True", true, false},
	} {
		ns := map[string]string{"kubernetes.io/metadata.name": "team-a"}
		if c.value != "" {
			ns[injectKey] = c.value
		}
		for _, cfg := range []struct {
			name string
			dir  string
			want bool
		}{{"manifests", manifestsDir, c.served}, {"opt-in", dir, c.servedOpt}} {
			entries := webhookEntries(t, findObject(t, kustomize(t, cfg.dir), "MutatingWebhookConfiguration", webhookName))
			for _, labels := range []map[string]string{podLabels, optInPod} {
				got := len(calledFor(entries, ns, labels)) > 0
				if got != cfg.want {
					t.Errorf("%s: namespace inject=%q, pod labels %v: served %v, expected %v",
						cfg.name, c.value, labels, got, cfg.want)
				}
			}
		}
	}
}
