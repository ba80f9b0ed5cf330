package e2e

// Every kustomization in the repository, rendered in-process with
// sigs.k8s.io/kustomize/api (no kubectl: a cold CI machine may have none):
// it must use no field kustomize deprecates (kubectl prints a warning for
// each on every apply), every webhook it installs answers within
// timeoutSeconds 3 (docs/install.md, "Why timeoutSeconds: 3"), and the
// fail-open alert's PromQL parses, with Prometheus's own parser, and selects
// exactly the webhook's entries.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const (
	// The timeout every webhook entry of manifests/ has.
	webhookTimeoutSeconds = 3
	failOpenComponent     = "../../manifests/components/fail-open-alert"
	failOpenMetric        = "apiserver_admission_webhook_fail_open_count"
	failOpenAlert         = "RdmaWebhookFailedOpen"
	installDoc            = "docs/install.md"
)

// kustomizationDirs lists every directory of the repository with a
// kustomization file, relative to test/e2e ("../../manifests"), skipping
// build outputs, dependencies and version control.
func kustomizationDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "build", "build-asan", "build-fuzz":
				return filepath.SkipDir
			}
			return nil
		}
		switch d.Name() {
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(dirs)
	if len(dirs) < 4 {
		t.Fatalf("found %d kustomizations (%v): expected manifests/, its components, certs/cert-manager and the cluster overlay", len(dirs), dirs)
	}
	return dirs
}

// readKustomization decodes a directory's kustomization file as kustomize
// does, unknown fields refused.
func readKustomization(t *testing.T, dir string) *types.Kustomization {
	t.Helper()
	var data []byte
	var err error
	for _, f := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if data, err = os.ReadFile(filepath.Join(dir, f)); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return &k
}

// krustyBuild runs kustomize build on a directory in-process, as
// `kubectl kustomize` does (same loader restrictions).
func krustyBuild(t testing.TB, dir string) resmap.ResMap {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return m
}

// krustyYAML is what `kubectl kustomize DIR` prints.
func krustyYAML(t testing.TB, dir string) []byte {
	t.Helper()
	y, err := krustyBuild(t, dir).AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return y
}

// krustyRender renders a kustomization directory into objects, without
// kubectl.
func krustyRender(t testing.TB, dir string) []obj {
	t.Helper()
	var objs []obj
	for _, r := range krustyBuild(t, dir).Resources() {
		o, err := r.Map()
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		t.Fatalf("kustomize build %s rendered nothing", dir)
	}
	return objs
}

// krustyWithComponent renders manifests/ with a component on top, the way
// the component's header says to use it: a kustomization of the admin's own.
func krustyWithComponent(t *testing.T, component string) []obj {
	t.Helper()
	tmp := t.TempDir()
	absBase, _ := filepath.Abs(manifestsDir)
	absComp, _ := filepath.Abs(component)
	relBase, err1 := filepath.Rel(tmp, absBase)
	relComp, err2 := filepath.Rel(tmp, absComp)
	if err1 != nil || err2 != nil {
		t.Fatalf("relative paths: %v %v", err1, err2)
	}
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"+
		"resources:\n- %s\ncomponents:\n- %s\n", relBase, relComp)
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return krustyRender(t, tmp)
}

// TestKustomizationsUseNoDeprecatedFields: no kustomization uses a field
// kustomize deprecates (bases, patchesStrategicMerge, patchesJson6902,
// commonLabels, imageTags, vars), each decodes with unknown fields refused,
// and each renders.
func TestKustomizationsUseNoDeprecatedFields(t *testing.T) {
	t.Parallel()
	for _, dir := range kustomizationDirs(t) {
		name := strings.TrimPrefix(dir, "../../")
		k := readKustomization(t, dir)
		if w := k.CheckDeprecatedFields(); w != nil && len(*w) > 0 {
			t.Errorf("%s/kustomization.yaml uses deprecated fields:\n  %s", name, strings.Join(*w, "\n  "))
		}
		renderAsUsed(t, dir)
	}
}

// renderAsUsed renders a kustomization the way it is meant to be applied: a
// Kustomization alone, a Component (which may only patch, and render nothing
// alone) on top of manifests/.
func renderAsUsed(t *testing.T, dir string) []obj {
	t.Helper()
	if readKustomization(t, dir).Kind == types.ComponentKind {
		return krustyWithComponent(t, dir)
	}
	return krustyRender(t, dir)
}

// renderedAll: every kustomization of the repository rendered as it is
// used (a component may patch the base's webhooks), by directory.
func renderedAll(t *testing.T) map[string][]obj {
	t.Helper()
	out := map[string][]obj{}
	for _, dir := range kustomizationDirs(t) {
		out[strings.TrimPrefix(dir, "../../")] = renderAsUsed(t, dir)
	}
	return out
}

// TestWebhookTimeouts: every webhook entry that any kustomization of the
// repository installs waits at most 3 s, the figure docs/install.md
// explains; a missing timeoutSeconds (the apiserver's 10 s) fails too.
func TestWebhookTimeouts(t *testing.T) {
	t.Parallel()
	seen := 0
	for name, objs := range renderedAll(t) {
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			for _, cfg := range findObjects(objs, kind) {
				for _, w := range pathArr(cfg, "webhooks") {
					seen++
					wn, _ := pathStr(w, "name")
					got := fmt.Sprint(path(w, "timeoutSeconds"))
					if got != fmt.Sprint(webhookTimeoutSeconds) {
						t.Errorf("%s: %s webhook %s has timeoutSeconds %s, want %d (docs/install.md, \"Why timeoutSeconds: 3\")",
							name, objKey(cfg), wn, got, webhookTimeoutSeconds)
					}
				}
			}
		}
	}
	if seen < 3 {
		t.Fatalf("found %d webhook entries in the rendered kustomizations: expected at least the 3 of manifests/", seen)
	}
}

// webhookNames is every webhook entry's name in the rendered objects.
func webhookNames(objs []obj) []string {
	var names []string
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, cfg := range findObjects(objs, kind) {
			for _, w := range pathArr(cfg, "webhooks") {
				if n, ok := pathStr(w, "name"); ok {
					names = append(names, n)
				}
			}
		}
	}
	return names
}

// failOpenSelectors parses an alert's expression and returns the label
// matchers of each selector of the fail-open counter in it.
func failOpenSelectors(t *testing.T, expr string) [][]*labels.Matcher {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("the alert's expr does not parse: %v\n%s", err, expr)
	}
	var sels [][]*labels.Matcher
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name == failOpenMetric {
			sels = append(sels, vs.LabelMatchers)
		}
		return nil
	})
	return sels
}

// selects reports whether every matcher on the label "name" accepts name.
func selects(ms []*labels.Matcher, name string) bool {
	for _, m := range ms {
		if m.Name == "name" && !m.Matches(name) {
			return false
		}
	}
	return true
}

// TestDocsFailOpenAlert: the component's PrometheusRule, rendered on top of
// manifests/, has the alert docs/install.md names; its PromQL parses with
// Prometheus's parser; it reads the apiserver's fail-open counter; its
// selector takes every webhook entry of manifests/ and no other webhook's.
func TestDocsFailOpenAlert(t *testing.T) {
	t.Parallel()
	objs := krustyWithComponent(t, failOpenComponent)
	rule := findObject(t, objs, "PrometheusRule", "")
	if ns, _ := pathStr(rule, "metadata", "namespace"); ns != webhookNamespace {
		t.Errorf("the PrometheusRule is in namespace %q, want %q", ns, webhookNamespace)
	}
	var expr string
	for _, g := range pathArr(rule, "spec", "groups") {
		for _, r := range pathArr(g, "rules") {
			if a, _ := pathStr(r, "alert"); a == failOpenAlert {
				expr, _ = pathStr(r, "expr")
			}
		}
	}
	if expr == "" {
		t.Fatalf("the PrometheusRule has no alert %s with an expr", failOpenAlert)
	}
	sels := failOpenSelectors(t, expr)
	if len(sels) == 0 {
		t.Fatalf("the alert's expr reads no %s:\n%s", failOpenMetric, expr)
	}
	names := webhookNames(objs)
	if len(names) < 3 {
		t.Fatalf("rendered webhook entries %v: expected the 3 of manifests/", names)
	}
	for _, ms := range sels {
		for _, n := range names {
			if !selects(ms, n) {
				t.Errorf("the alert's selector %v leaves out the webhook entry %s", ms, n)
			}
		}
		for _, other := range []string{"validation.gatekeeper.sh", "rdma-webhook.io", "x.rdma-webhook.io.example.com", "pytorchjobxrdma-webhook.io"} {
			if selects(ms, other) {
				t.Errorf("the alert's selector %v also takes another webhook, %s", ms, other)
			}
		}
	}
	doc := string(readFile(t, filepath.Join(repoRoot, installDoc)))
	for _, want := range []string{"manifests/components/fail-open-alert", failOpenMetric, failOpenAlert} {
		if !strings.Contains(doc, want) {
			t.Errorf("%s does not name %s", installDoc, want)
		}
	}
}
