package realcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The Prometheus Operator's kinds have no schema in the e2e validator
// (test/e2e/helm_test.go's helmUnvalidatedKinds), so the chart's and
// manifests/components' ServiceMonitor and PrometheusRule objects are checked
// here instead: against the operator's own CRDs, at the version
// test/cluster/promop/go.mod pins, by the real apiserver (a server-side dry
// run with strict field validation: a wrong type, a bad duration or an
// unknown field is refused as a Prometheus Operator cluster would refuse it).

const promOpModule = "github.com/prometheus-operator/prometheus-operator"

// monitoringCRDs: the two kinds the chart and the components render.
var monitoringCRDs = []struct{ file, name string }{
	{"monitoring.coreos.com_servicemonitors.yaml", "servicemonitors.monitoring.coreos.com"},
	{"monitoring.coreos.com_prometheusrules.yaml", "prometheusrules.monitoring.coreos.com"},
}

// downloadedModuleDir is moduleDir for a module nothing builds: `go list -m`
// reports no directory for a module missing from the cache, and no build
// step (build.sh) downloads this one, so `go mod download` fetches it on a
// cold cache (a no-op on a warm one).
func downloadedModuleDir(t testing.TB, sub, mod string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = filepath.Join(root, "test", "cluster", sub)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	t0 := time.Now()
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		t.Fatalf("go mod download %s in test/cluster/%s: %v %v %s\n%s", mod, sub, err, jerr, info.Error, errb.String())
	}
	t.Logf("%s: %s (go mod download %.1fs)", mod, info.Dir, time.Since(t0).Seconds())
	return info.Dir
}

// applyMonitoringCRDs creates the two CRDs, waits until they are served,
// and deletes them when the test ends (no other test may see them).
func applyMonitoringCRDs(t *testing.T) {
	t.Helper()
	dir := filepath.Join(downloadedModuleDir(t, "promop", promOpModule), "example", "prometheus-operator-crd")
	for _, c := range monitoringCRDs {
		path := filepath.Join(dir, c.file)
		name := c.name
		t.Cleanup(func() {
			if out, errs, err := kubectl("", "delete", "--ignore-not-found", "--wait=true", "--timeout=60s", "crd", name); err != nil {
				t.Errorf("delete crd %s: %v\n%s%s", name, err, out, errs)
			}
		})
		// Server-side: the CRDs are too large for client-side apply's
		// last-applied annotation in general (not these two yet).
		mustKubectl(t, "", "apply", "--server-side", "--field-manager=rdma-webhook-test", "-f", path)
	}
	for _, c := range monitoringCRDs {
		mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/"+c.name)
	}
}

// monitoringObjects: the ServiceMonitor and PrometheusRule objects of a
// multi-document YAML stream, moved into namespace ns.
func monitoringObjects(t *testing.T, what, stream, ns string) []map[string]any {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	var objs []map[string]any
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if kind, _ := o["kind"].(string); kind != "ServiceMonitor" && kind != "PrometheusRule" {
			continue
		}
		meta, _ := o["metadata"].(map[string]any)
		if meta == nil {
			t.Fatalf("%s: an object without metadata: %v", what, o)
		}
		meta["namespace"] = ns
		objs = append(objs, o)
	}
	return objs
}

// monitoringKinds counts objects by kind.
func monitoringKinds(objs []map[string]any) map[string]int {
	n := map[string]int{}
	for _, o := range objs {
		n[o["kind"].(string)]++
	}
	return n
}

// dryRun is a server-side dry run of o under strict field validation.
func dryRun(t *testing.T, o map[string]any) (string, error) {
	t.Helper()
	ns := o["metadata"].(map[string]any)["namespace"].(string)
	out, errs, err := kubectl(toJSON(t, o), "apply", "--dry-run=server", "--validate=strict", "-n", ns, "-f", "-")
	return out + errs, err
}

// renderKustomize builds manifests/ with one component, as docs/install.md
// has an admin list it.
func renderKustomize(t *testing.T, component string) string {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		r, err := filepath.Rel(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " +
		rel(filepath.Join(root, "manifests")) + "\ncomponents:\n- " +
		rel(filepath.Join(root, "manifests", "components", component)) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := mustKubectl(t, "", "kustomize", dir)
	return out
}

// TestMonitoringObjectsMatchCRDs: every ServiceMonitor and PrometheusRule
// the chart renders with monitoring on (ci/all-options-values.yaml; the
// fail-open alert alone) and manifests/components/monitoring and
// fail-open-alert build is accepted by the apiserver under the Prometheus
// Operator's CRDs; a PrometheusRule with a number for `for` or a string
// for spec.groups is refused (the check can fail).
func TestMonitoringObjectsMatchCRDs(t *testing.T) {
	t0 := time.Now()
	applyMonitoringCRDs(t)
	chart := filepath.Join(root, "charts", "rdma-webhook")
	helm := helmRun{bin: "helm"}
	cases := []struct {
		what   string
		render func() string
		want   map[string]int
	}{
		{"helm template -f ci/all-options-values.yaml", func() string {
			return helm.helmCmd(t, "template", "rdma-webhook", chart, "-f", filepath.Join(chart, "ci", "all-options-values.yaml"))
		}, map[string]int{"ServiceMonitor": 1, "PrometheusRule": 2}},
		{"helm template --set monitoring.failOpenAlert=true", func() string {
			return helm.helmCmd(t, "template", "rdma-webhook", chart, "--set", "monitoring.failOpenAlert=true")
		}, map[string]int{"PrometheusRule": 1}},
		{"kustomize manifests/ + components/monitoring", func() string { return renderKustomize(t, "monitoring") },
			map[string]int{"ServiceMonitor": 1, "PrometheusRule": 2}},
		{"kustomize manifests/ + components/fail-open-alert", func() string { return renderKustomize(t, "fail-open-alert") },
			map[string]int{"PrometheusRule": 1}},
	}
	// Alerts on: two PrometheusRules, the webhook's alerts and the fail-open
	// alert's own (templates/monitoring.yaml; components/alerts lists fail-open-alert).
	var rule map[string]any
	for _, c := range cases {
		ns := newNamespace(t, nil)
		objs := monitoringObjects(t, c.what, c.render(), ns)
		if got := monitoringKinds(objs); len(got) != len(c.want) || got["ServiceMonitor"] != c.want["ServiceMonitor"] ||
			got["PrometheusRule"] != c.want["PrometheusRule"] {
			t.Errorf("%s: rendered %v, want %v", c.what, got, c.want)
		}
		for _, o := range objs {
			if out, err := dryRun(t, o); err != nil {
				t.Errorf("%s: %s %v refused: %v\n%s", c.what, o["kind"], o["metadata"].(map[string]any)["name"], err, out)
			}
			if o["kind"] == "PrometheusRule" && rule == nil {
				rule = o
			}
		}
	}
	if rule == nil {
		t.Fatal("no PrometheusRule rendered for the negative cases")
	}
	for _, bad := range []struct {
		what, field string
		spoil       func(spec map[string]any)
	}{
		{"for: 5 (a number)", "for", func(spec map[string]any) {
			spec["groups"].([]any)[0].(map[string]any)["rules"].([]any)[0].(map[string]any)["for"] = 5
		}},
		{"spec.groups a string", "spec.groups", func(spec map[string]any) { spec["groups"] = "rdma-webhook" }},
	} {
		var o map[string]any
		fromJSON(t, toJSON(t, rule), &o)
		bad.spoil(o["spec"].(map[string]any))
		out, err := dryRun(t, o)
		if err == nil || !strings.Contains(out, bad.field) {
			t.Errorf("a PrometheusRule with %s: want refused naming %q, got err %v\n%s", bad.what, bad.field, err, out)
		} else {
			t.Logf("a PrometheusRule with %s: refused: %s", bad.what, strings.TrimSpace(out))
		}
	}
	t.Logf("monitoring objects checked against the CRDs in %.1fs", time.Since(t0).Seconds())
}
