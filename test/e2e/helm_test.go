package e2e

// The Helm chart (charts/rdma-webhook), with no cluster: `helm lint`, `helm
// template` with the default values and with each option set of its ci/
// folder, every rendered object against the Kubernetes schemas, the drift
// tests (the default chart renders what manifests/ with the component
// self-signed renders, certificates.mode existing what manifests/ alone
// does, each option what its component of manifests/components does, modulo
// Helm's labels and the differences listed in helmAllowedDifferences), the
// schema's refusals, the version and the generated README.
//
// With Helm 4 and Helm 3 (test/cluster/helm and helm3 pin them), built by
// `make helm-bin` into build/helm-bin/helm and helm3 (or $HELM, $HELM3).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	chartDir        = "../../charts/rdma-webhook"
	chartReadme     = "../../charts/rdma-webhook/README.md"
	chartValues     = "../../charts/rdma-webhook/values.yaml"
	helmReleaseName = "rdma-webhook"
	helmKubeVersion = "v1.37.0"
)

// The labels the chart adds to what manifests/ writes; the drift tests
// remove them before comparing.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by",
	"app.kubernetes.io/version", "helm.sh/chart"}

// helmAllowedDifferences: the only ways the default chart may differ from
// manifests/, each with its reason.
var helmAllowedDifferences = map[string]string{
	"Namespace/rdma-webhook": "Helm installs into a namespace that exists (helm install --create-namespace); a chart " +
		"that made its own release namespace could not be installed into it",
	"ConfigMap/rdma-webhook/rdma-webhook-profiles: label app.kubernetes.io/name": "every object of the chart carries " +
		"its labels; kustomize's configMapGenerator adds only the rdma-webhook.io/profiles label",
}

// helmBins: the Helms the chart is tested with, Helm 4 and Helm 3, by name
// ($HELM and $HELM3 override each).
func helmBins(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, env := range map[string]string{"helm": "HELM", "helm3": "HELM3"} {
		h := os.Getenv(env)
		if h == "" {
			var err error
			if h, err = filepath.Abs("../../build/helm-bin/" + name); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(h); err != nil {
			t.Fatalf("no %s at %s: run `make helm-bin` (or set %s): %v", name, h, env, err)
		}
		out[name] = h
	}
	return out
}

// eachHelm runs f once with each Helm, as a subtest named after it.
func eachHelm(t *testing.T, f func(t *testing.T, helm string)) {
	for name, bin := range helmBins(t) {
		t.Run(name, func(t *testing.T) { f(t, bin) })
	}
}

// runHelm runs helm with args (no cluster, no repositories: a fresh HOME
// for its caches) and returns stdout, stderr and the error.
func runHelm(t testing.TB, helm string, args ...string) ([]byte, []byte, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data", "KUBECONFIG="+home+"/none")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), stderr.Bytes(), err
}

// helmTemplate renders the chart into objects as kubectl reads them.
func helmTemplate(t testing.TB, helm string, args ...string) []obj {
	t.Helper()
	// A current Kubernetes: Helm 3's default (1.20) is older than the
	// chart's kubeVersion.
	all := append([]string{"template", helmReleaseName, chartDir, "--namespace", webhookNamespace,
		"--kube-version", helmKubeVersion}, args...)
	out, stderr, err := runHelm(t, helm, all...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(all, " "), err, stderr)
	}
	return yamlObjects(t, out)
}

// chartOptionSets: the default values, then each values file of ci/.
func chartOptionSets(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("expected at least 3 values files in %s/ci: %v %v", chartDir, files, err)
	}
	sets := map[string][]string{"default": nil}
	for _, f := range files {
		sets[filepath.Base(f)] = []string{"--values", f}
	}
	return sets
}

func TestHelmChartVersion(t *testing.T) {
	t.Parallel()
	v, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(v))
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != want || chart.AppVersion != want {
		t.Errorf("Chart.yaml: version %q, appVersion %q; expected both to be VERSION's %q", chart.Version, chart.AppVersion, want)
	}
}

func TestHelmLint(t *testing.T) {
	t.Parallel()
	eachHelm(t, func(t *testing.T, helm string) {
		for name, args := range chartOptionSets(t) {
			all := append([]string{"lint", "--strict", "--kube-version", helmKubeVersion, chartDir}, args...)
			out, stderr, err := runHelm(t, helm, all...)
			if err != nil {
				t.Errorf("%s: helm lint: %v\n%s%s", name, err, out, stderr)
			}
		}
	})
}

// The kinds the schema validator (test/validate) knows; the monitoring
// kinds are checked by TestHelmChartMatchesComponents against the
// components' own objects instead.
var helmUnvalidatedKinds = map[string]bool{"PrometheusRule": true, "ServiceMonitor": true}

func TestHelmChartOptions(t *testing.T) {
	t.Parallel()
	eachHelm(t, checkChartOptions)
}

func checkChartOptions(t *testing.T, helm string) {
	clusterScoped := map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true,
		"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true}
	var objects []namedObject
	for name, args := range chartOptionSets(t) {
		objs := helmTemplate(t, helm, args...)
		replicas := int64(0)
		for _, o := range objs {
			kind, _ := pathStr(o, "kind")
			ns, hasNS := pathStr(o, "metadata", "namespace")
			if clusterScoped[kind] == hasNS || (hasNS && ns != webhookNamespace) {
				t.Errorf("%s: %s: expected the release namespace on namespaced objects only", name, objKey(o))
			}
			if l, _ := pathStr(o, "metadata", "labels", "app.kubernetes.io/managed-by"); l != "Helm" {
				t.Errorf("%s: %s: expected Helm's labels", name, objKey(o))
			}
			if kind == "Deployment" {
				replicas, _ = jsonInt(path(o, "spec", "replicas"))
			}
			if !helmUnvalidatedKinds[kind] {
				objects = append(objects, namedObject{name: name + ": " + objKey(o), obj: o})
			}
		}
		// A PodDisruptionBudget exactly when there is more than one replica.
		if pdbs := len(findObjects(objs, "PodDisruptionBudget")); (replicas > 1) != (pdbs == 1) || pdbs > 1 {
			t.Errorf("%s: %d replicas and %d PodDisruptionBudgets", name, replicas, pdbs)
		}
	}
	checkSchemas(t, objects)
}

// jsonInt reads a whole number from kubectl's JSON (json.Number).
func jsonInt(v interface{}) (int64, bool) {
	s, ok := scalarString(v)
	if !ok {
		return 0, false
	}
	var n int64
	_, err := fmt.Sscan(s, &n)
	return n, err == nil
}

// stripHelmLabels removes the chart's own labels (helmLabels) from an object.
func stripHelmLabels(o obj) obj {
	o = copyObject(o)
	if l := pathObj(o, "metadata", "labels"); l != nil {
		for _, k := range helmLabels {
			delete(l, k)
		}
	}
	return o
}

// compareRendered compares the chart's objects of the given kinds (all when
// kinds is nil) with kustomize's, after stripHelmLabels, and returns each
// difference: an object only one side has, or a JSON Pointer that differs.
func compareRendered(chart, kust []obj, kinds map[string]bool) []string {
	index := func(objs []obj) map[string]obj {
		m := map[string]obj{}
		for _, o := range objs {
			if k, _ := pathStr(o, "kind"); kinds == nil || kinds[k] {
				m[objKey(o)] = stripHelmLabels(o)
			}
		}
		return m
	}
	c, k := index(chart), index(kust)
	var diffs []string
	for key, ko := range k {
		co, ok := c[key]
		if !ok {
			diffs = append(diffs, key+": only in kustomize's")
			continue
		}
		var d []string
		diffObjects("", ko, co, &d)
		for _, line := range d {
			diffs = append(diffs, key+": "+line)
		}
	}
	for key := range c {
		if _, ok := k[key]; !ok {
			diffs = append(diffs, key+": only in the chart's")
		}
	}
	sort.Strings(diffs)
	return diffs
}

// TestHelmChartMatchesManifests: the default chart (certificates.mode
// self-signed) is manifests/ with manifests/components/self-signed, and
// certificates.mode existing is manifests/ alone, less what
// helmAllowedDifferences names. A change to either side that the other
// lacks fails here.
func TestHelmChartMatchesManifests(t *testing.T) {
	t.Parallel()
	eachHelm(t, checkChartMatchesManifests)
}

func checkChartMatchesManifests(t *testing.T, helm string) {
	cases := []struct {
		what  string
		chart []obj
		kust  []obj
	}{
		{"the default rendering vs manifests/ with components/self-signed", helmTemplate(t, helm),
			krustyWithComponent(t, filepath.Join(manifestsDir, "components", "self-signed"))},
		{"certificates.mode=existing vs manifests/", helmTemplate(t, helm, "--set", "certificates.mode=existing"),
			kustomize(t, manifestsDir)},
	}
	for _, c := range cases {
		for _, d := range compareRendered(withoutHelmHooks(c.chart), withHelmAllowances(t, c.kust), nil) {
			t.Errorf("%s differs (keep them equal, or list the difference in helmAllowedDifferences with its "+
				"reason): %s", c.what, d)
		}
	}
	for what, why := range helmAllowedDifferences {
		if why == "" {
			t.Errorf("%s: an allowed difference needs its reason", what)
		}
	}
}

// withHelmAllowances applies helmAllowedDifferences to kustomize's side,
// so that each one is checked to exist (an allowance that no longer
// applies fails too).
func withHelmAllowances(t *testing.T, kust []obj) []obj {
	t.Helper()
	var kept []obj
	removedNS := false
	for _, o := range kust {
		if objKey(o) == "Namespace/"+webhookNamespace {
			removedNS = true
			continue
		}
		if objKey(o) == "ConfigMap/"+webhookNamespace+"/"+profilesCMName {
			o = copyObject(o)
			labels := pathObj(o, "metadata", "labels")
			if _, ok := labels["app.kubernetes.io/name"]; ok {
				t.Errorf("the allowance for %s's label is stale: kustomize's has it now", profilesCMName)
			}
			labels["app.kubernetes.io/name"] = webhookName
		}
		kept = append(kept, o)
	}
	if !removedNS {
		t.Errorf("manifests/ no longer has the Namespace: drop its allowance")
	}
	return kept
}

// TestHelmChartMatchesComponents: each option that stands for a component
// of manifests/components (or certs/cert-manager) renders that component's
// objects.
func TestHelmChartMatchesComponents(t *testing.T) {
	t.Parallel()
	eachHelm(t, checkChartMatchesComponents)
}

func checkChartMatchesComponents(t *testing.T, helm string) {
	cases := []struct {
		values    []string
		component string
		kinds     map[string]bool
	}{
		{[]string{"webhook.namespaces=opt-in"}, "../../manifests/components/namespace-opt-in",
			map[string]bool{"MutatingWebhookConfiguration": true}},
		{[]string{"profiles.jobset=true"}, "../../manifests/components/jobset",
			map[string]bool{"MutatingWebhookConfiguration": true}},
		{[]string{"monitoring.serviceMonitor=true", "monitoring.alerts=true", "monitoring.dashboard=true"},
			"../../manifests/components/monitoring",
			map[string]bool{"PrometheusRule": true, "ServiceMonitor": true}},
		{[]string{"monitoring.failOpenAlert=true"}, "../../manifests/components/fail-open-alert",
			map[string]bool{"PrometheusRule": true}},
		{[]string{"certificates.mode=self-signed"}, "../../manifests/components/self-signed",
			map[string]bool{"Deployment": true, "Role": true, "RoleBinding": true, "ClusterRole": true,
				"ClusterRoleBinding": true, "MutatingWebhookConfiguration": true,
				"ValidatingWebhookConfiguration": true}},
		{[]string{"certificates.mode=cert-manager"}, "",
			map[string]bool{"Issuer": true, "Certificate": true, "MutatingWebhookConfiguration": true,
				"ValidatingWebhookConfiguration": true}},
	}
	for _, c := range cases {
		chart := helmTemplate(t, helm, "--set", strings.Join(c.values, ","))
		var kust []obj
		if c.component == "" {
			kust = kustomize(t, certManagerDir)
		} else {
			kust = yamlObjects(t, mustMarshalList(krustyWithComponent(t, c.component)))
		}
		for _, d := range compareRendered(withoutHelmHooks(chart), kust, c.kinds) {
			t.Errorf("--set %s vs %s: %s", strings.Join(c.values, ","), c.component, d)
		}
		if c.component == "../../manifests/components/monitoring" {
			checkDashboard(t, chart, kust)
		}
		if c.component == "../../manifests/components/jobset" {
			checkJobSetProfiles(t, chart, kust)
		}
	}
}

// mustMarshalList writes objects as one JSON List, for yamlObjects.
func mustMarshalList(objs []obj) []byte {
	items := make([]interface{}, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	return mustMarshal(obj{"apiVersion": "v1", "kind": "List", "items": items})
}

func checkDashboard(t *testing.T, chart, kust []obj) {
	t.Helper()
	name := webhookName + "-dashboard"
	c := stripHelmLabels(findObject(t, chart, "ConfigMap", name))
	k := findObject(t, kust, "ConfigMap", name)
	if d := jsonDiff(k, c); d != "" {
		t.Errorf("the dashboard ConfigMap differs from manifests/components/dashboard's: %s", d)
	}
}

// The jobset option turns targets.jobset on in the default profiles: the
// same JSON as the component's profiles.json (the text is re-indented).
func checkJobSetProfiles(t *testing.T, chart, kust []obj) {
	t.Helper()
	read := func(objs []obj) interface{} {
		text, _ := pathStr(findObject(t, objs, "ConfigMap", profilesCMName), "data", "profiles.json")
		v, err := decodeJSON([]byte(text))
		if err != nil {
			t.Fatalf("profiles.json: %v", err)
		}
		return v
	}
	if d := jsonDiff(read(kust), read(chart)); d != "" {
		t.Errorf("profiles.jobset=true: the profiles differ from manifests/components/jobset's: %s", d)
	}
}

// The chart's files/ are copies of manifests/' (a chart cannot read files
// outside its folder): byte for byte.
func TestHelmChartFilesMatchManifests(t *testing.T) {
	t.Parallel()
	copies := map[string]string{
		"files/profiles.json":                 "manifests/profiles.json",
		"files/alerts-prometheusrule.yaml":    "manifests/components/alerts/prometheusrule.yaml",
		"files/fail-open-prometheusrule.yaml": "manifests/components/fail-open-alert/prometheusrule.yaml",
		"files/rdma-webhook-dashboard.json":   "manifests/components/dashboard/rdma-webhook-dashboard.json",
	}
	entries, err := os.ReadDir(filepath.Join(chartDir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(copies) {
		t.Errorf("%s/files holds %d files, expected the %d copies listed here", chartDir, len(entries), len(copies))
	}
	for copyPath, src := range copies {
		a, err1 := os.ReadFile(filepath.Join(chartDir, copyPath))
		b, err2 := os.ReadFile(filepath.Join(repoRoot, src))
		if err1 != nil || err2 != nil {
			t.Errorf("%s, %s: %v %v", copyPath, src, err1, err2)
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("charts/rdma-webhook/%s differs from %s: cp %s charts/rdma-webhook/%s", copyPath, src, src, copyPath)
		}
	}
}

// A typo in a key or a value of the wrong type fails the install with a
// message naming the value (values.schema.json).
func TestHelmChartSchemaRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct{ set, want string }{
		{"replica=2", "'replica' not allowed"},
		{"replicas=two", "'/replicas': got string, want integer"},
		{"webhook.failurPolicy=Fail", "'failurPolicy' not allowed"},
		{"webhook.failurePolicy=Never", "'/webhook/failurePolicy'"},
		{"webhook.timeoutSeconds=31", "'/webhook/timeoutSeconds'"},
		{"certificates.mode=selfsigned", "'/certificates/mode'"},
		{"monitoring.alerts=yes", "'/monitoring/alerts': got string, want boolean"},
		{"webhook.url=http://127.0.0.1:8443/mutate", "'/webhook/url'"},
		{"name=Rdma_Webhook", "'/name'"},
		// Not the schema's: the templates' own check.
		{"profiles.inline=x,profiles.existingConfigMap=mine", "profiles.inline and profiles.existingConfigMap are both set"},
	}
	eachHelm(t, func(t *testing.T, helm string) {
		for _, c := range cases {
			out, stderr, err := runHelm(t, helm, "template", helmReleaseName, chartDir, "--kube-version", helmKubeVersion, "--set", c.set)
			if err == nil {
				t.Errorf("--set %s: helm template succeeded, expected the schema to refuse it:\n%s", c.set, cut(out))
				continue
			}
			if !strings.Contains(string(stderr), c.want) {
				t.Errorf("--set %s: expected a message with %q, got:\n%s", c.set, c.want, stderr)
			}
		}
	})
}

// TestHelmChartReadme: charts/rdma-webhook/README.md's values table is
// generated from values.yaml's `# --` comments:
//
//	HELM_README_UPDATE=1 go test -run TestHelmChartReadme .
func TestHelmChartReadme(t *testing.T) {
	t.Parallel()
	values, err := os.ReadFile(chartValues)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := helmValuesRows(values)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(chartReadme)
	if err != nil {
		t.Fatal(err)
	}
	want, err := helmReadmeWithTable(string(doc), rows)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("HELM_README_UPDATE") != "" {
		if err := os.WriteFile(chartReadme, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != string(doc) {
		t.Errorf("%s is not current with values.yaml: HELM_README_UPDATE=1 go test -run TestHelmChartReadme .", chartReadme)
	}
}

// certificates.mode self-signed (the default; the drift tests compare it
// with manifests/components/self-signed): the flags, the emptyDir the
// webhook writes the pair into, the RBAC by name in the NAME-certs roles,
// and no caBundle; no Secret access at all in the other modes. Under
// another name (ci/self-signed-values.yaml) every name follows it,
// --cert-service included.
func TestHelmChartSelfSigned(t *testing.T) {
	t.Parallel()
	eachHelm(t, func(t *testing.T, helm string) {
		cases := []struct {
			mode, name string
			args       []string
		}{
			{"self-signed", webhookName, nil},
			{"self-signed", "rdma-webhook-own", []string{"--values", filepath.Join(chartDir, "ci", "self-signed-values.yaml")}},
			{"existing", webhookName, []string{"--set", "certificates.mode=existing"}},
			{"cert-manager", webhookName, []string{"--set", "certificates.mode=cert-manager"}},
		}
		for _, c := range cases {
			checkChartCertMode(t, helmTemplate(t, helm, c.args...), c.mode, c.name)
		}
	})
}

func checkChartCertMode(t *testing.T, objs []obj, mode, name string) {
	t.Helper()
	what := mode + " as " + name
	dep := findObject(t, objs, "Deployment", name)
	spec := pathObj(dep, "spec", "template", "spec")
	var args []string
	ctr, _ := pathArr(spec, "containers")[0].(obj)
	for _, a := range pathArr(ctr, "args") {
		s, _ := a.(string)
		args = append(args, s)
	}
	on := mode == "self-signed"
	if got := argAfter(args, "--cert-secret"); (got == webhookNamespace+"/"+tlsSecretName) != on {
		t.Errorf("%s: --cert-secret %q", what, got)
	}
	if got := argAfter(args, "--webhook-configs"); (got == name+","+name) != on {
		t.Errorf("%s: --webhook-configs %q", what, got)
	}
	// The flag's default is rdma-webhook: given only for another name.
	if got, want := argAfter(args, "--cert-service"), map[bool]string{true: name}[on && name != webhookName]; got != want {
		t.Errorf("%s: --cert-service %q, expected %q", what, got, want)
	}
	vol, _ := pathArr(spec, "volumes")[0].(obj)
	if _, empty := vol["emptyDir"]; empty != on {
		t.Errorf("%s: the tls volume %s", what, compact(vol))
	}
	secrets, hooks := false, false
	// The uninstall hook's own RBAC (delete) is TestHelmChartUninstallHook's.
	for _, o := range withoutHelmHooks(objs) {
		kind, _ := pathStr(o, "kind")
		if kind != "Role" && kind != "ClusterRole" {
			continue
		}
		for _, r := range pathArr(o, "rules") {
			text := compact(r)
			s := strings.Contains(text, `"secrets"`)
			h := strings.Contains(text, `webhookconfigurations`)
			n, _ := pathStr(o, "metadata", "name")
			if (s || h) && n != name+"-certs" {
				t.Errorf("%s: %s grants %s; expected only %s-certs to", what, objKey(o), text, name)
			}
			if h && !strings.Contains(text, `"resourceNames":["`+name+`"]`) {
				t.Errorf("%s: %s: the webhook configurations not by name: %s", what, objKey(o), text)
			}
			secrets, hooks = secrets || s, hooks || h
		}
	}
	if secrets != on || hooks != on {
		t.Errorf("%s: RBAC on secrets %v, on webhook configurations %v; expected %v", what, secrets, hooks, on)
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, w := range pathArr(findObject(t, objs, kind, name), "webhooks") {
			if _, ok := pathObj(w.(obj), "clientConfig")["caBundle"]; ok && on {
				t.Errorf("%s: %s has a caBundle: the webhook writes it", what, kind)
			}
		}
	}
}

// What the chart hands the binary loads: the profiles of every option set
// (the default file, the jobset option's re-indented copy, inline ones)
// pass check-profiles, and the podSecurity.config one is read by
// --pod-security-config as serve reads it at start.
func TestHelmChartRenderedInputsLoad(t *testing.T) {
	t.Parallel()
	helm := helmBins(t)["helm"]
	checked := 0
	for name, args := range chartOptionSets(t) {
		objs := helmTemplate(t, helm, args...)
		dir := t.TempDir()
		for _, cm := range findObjects(objs, "ConfigMap") {
			cmName, _ := pathStr(cm, "metadata", "name")
			if text, ok := pathStr(cm, "data", "profiles.json"); ok {
				f := filepath.Join(dir, "profiles.json")
				if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				if r := runBinary(t, nil, "check-profiles", f); r.exitCode != 0 {
					t.Errorf("%s: ConfigMap %s: check-profiles exit %d: %s", name, cmName, r.exitCode, r.stderr)
				}
				checked++
			}
			if text, ok := pathStr(cm, "data", "config.yaml"); ok {
				f := filepath.Join(dir, "pod-security.yaml")
				if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				r := runBinary(t, nil, "mutate", "--profiles", filepath.Join(chartDir, "files", "profiles.json"),
					"--pod-security-config", f, filepath.Join(repoRoot, "test", "example-review.json"))
				if r.exitCode != 0 {
					t.Errorf("%s: ConfigMap %s: mutate --pod-security-config exit %d: %s", name, cmName, r.exitCode, r.stderr)
				}
				checked++
			}
		}
	}
	// The default, all-options (jobset, pod security) and self-signed
	// (inline) sets; existing-values names a ConfigMap of its own.
	if checked < 4 {
		t.Errorf("checked %d rendered inputs, expected at least 4", checked)
	}
}

// withoutHelmHooks drops the chart's hooks (objects with a helm.sh/hook
// annotation: the uninstall hook's), which are chart-only: kubectl has no
// uninstall to hook into. TestHelmChartUninstallHook checks them.
func withoutHelmHooks(objs []obj) []obj {
	var kept []obj
	for _, o := range objs {
		if _, hook := pathObj(o, "metadata", "annotations")["helm.sh/hook"]; !hook {
			kept = append(kept, o)
		}
	}
	return kept
}

// TestHelmChartUninstallHook: uninstallHook.enabled (the default) renders a
// pre-delete Job running the chart's image with `unregister` on the
// release's own two webhook configurations, its ServiceAccount, and RBAC
// that allows only get and delete on those two by name; each a pre-delete
// hook deleted once it succeeds, the RBAC weighted before the Job; the Job
// bounded in time and retries, its pod not labelled as a webhook replica.
// uninstallHook.enabled=false renders none of it.
func TestHelmChartUninstallHook(t *testing.T) {
	t.Parallel()
	eachHelm(t, func(t *testing.T, helm string) {
		for _, name := range []string{webhookName, "rdma-webhook-own"} {
			checkUninstallHook(t, helmTemplate(t, helm, "--set", "name="+name), name)
		}
		if n := len(helmTemplate(t, helm)) - len(withoutHelmHooks(helmTemplate(t, helm, "--set",
			"uninstallHook.enabled=false"))); n != 4 {
			t.Errorf("uninstallHook.enabled=false removes %d objects, want the hook's 4", n)
		}
		for _, o := range helmTemplate(t, helm, "--set", "uninstallHook.enabled=false") {
			if _, hook := pathObj(o, "metadata", "annotations")["helm.sh/hook"]; hook {
				t.Errorf("uninstallHook.enabled=false still renders hook %s", objKey(o))
			}
		}
	})
}

func checkUninstallHook(t *testing.T, objs []obj, name string) {
	t.Helper()
	hook := name + "-uninstall"
	want := map[string]int{"ServiceAccount/" + webhookNamespace + "/" + hook: -10, "ClusterRole/" + hook: -10,
		"ClusterRoleBinding/" + hook: -5, "Job/" + webhookNamespace + "/" + hook: 0}
	byKey := map[string]obj{}
	for _, o := range objs {
		ann := pathObj(o, "metadata", "annotations")
		if _, isHook := ann["helm.sh/hook"]; !isHook {
			continue
		}
		key := objKey(o)
		byKey[key] = o
		weight, ok := want[key]
		if !ok {
			t.Errorf("name=%s: unexpected hook %s", name, key)
			continue
		}
		if ann["helm.sh/hook"] != "pre-delete" ||
			ann["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" ||
			ann["helm.sh/hook-weight"] != fmt.Sprint(weight) {
			t.Errorf("name=%s: %s annotations %v, want pre-delete, weight %d, "+
				"before-hook-creation,hook-succeeded", name, key, ann, weight)
		}
	}
	for key := range want {
		if _, ok := byKey[key]; !ok {
			t.Errorf("name=%s: no hook %s", name, key)
		}
	}
	if cr, ok := byKey["ClusterRole/"+hook]; ok {
		got, _ := json.Marshal(cr["rules"])
		wantRules := `[{"apiGroups":["admissionregistration.k8s.io"],"resourceNames":["` + name + `"],` +
			`"resources":["mutatingwebhookconfigurations","validatingwebhookconfigurations"],"verbs":["get","delete"]}]`
		if string(got) != wantRules {
			t.Errorf("name=%s: hook ClusterRole rules %s, want %s", name, got, wantRules)
		}
	}
	if crb, ok := byKey["ClusterRoleBinding/"+hook]; ok {
		got, _ := json.Marshal([]interface{}{crb["roleRef"], crb["subjects"]})
		wantBind := `[{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + hook + `"},` +
			`[{"kind":"ServiceAccount","name":"` + hook + `","namespace":"` + webhookNamespace + `"}]]`
		if string(got) != wantBind {
			t.Errorf("name=%s: hook ClusterRoleBinding %s, want %s", name, got, wantBind)
		}
	}
	job, ok := byKey["Job/"+webhookNamespace+"/"+hook]
	if !ok {
		return
	}
	spec := pathObj(job, "spec")
	if d, _ := jsonInt(spec["activeDeadlineSeconds"]); d < 1 || d > 300 {
		t.Errorf("name=%s: hook Job activeDeadlineSeconds %v: want a small bound", name, spec["activeDeadlineSeconds"])
	}
	if b, ok := jsonInt(spec["backoffLimit"]); !ok || b > 3 {
		t.Errorf("name=%s: hook Job backoffLimit %v: want a small one", name, spec["backoffLimit"])
	}
	pod := pathObj(job, "spec", "template", "spec")
	if pod["serviceAccountName"] != hook || pod["restartPolicy"] != "Never" {
		t.Errorf("name=%s: hook pod serviceAccountName %v restartPolicy %v", name, pod["serviceAccountName"],
			pod["restartPolicy"])
	}
	if l := pathObj(job, "spec", "template", "metadata", "labels"); l["app.kubernetes.io/name"] == name {
		t.Errorf("name=%s: the hook pod carries the webhook's selector label %v", name, l)
	}
	cs, _ := pod["containers"].([]interface{})
	if len(cs) != 1 {
		t.Fatalf("name=%s: hook pod containers %v", name, pod["containers"])
	}
	c, _ := cs[0].(map[string]interface{})
	args, _ := json.Marshal(c["args"])
	if c["image"] != deploymentImage(t, objs) ||
		string(args) != `["unregister","--webhook-configs","`+name+`,`+name+`"]` {
		t.Errorf("name=%s: hook container image %v args %s", name, c["image"], args)
	}
}

// deploymentImage is the image of the webhook's container in objs.
func deploymentImage(t *testing.T, objs []obj) interface{} {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == "Deployment" {
			cs, _ := pathObj(o, "spec", "template", "spec")["containers"].([]interface{})
			if len(cs) > 0 {
				if c, ok := cs[0].(map[string]interface{}); ok && c["image"] != nil {
					return c["image"]
				}
			}
		}
	}
	t.Fatal("no Deployment with an image in the rendering")
	return nil
}
