package e2e

// The monitoring components (manifests/components/servicemonitor, alerts,
// dashboard; monitoring turns on all three), rendered on top of manifests/
// as an admin would: every query of the alerts and of the dashboard parses
// as PromQL and reads only metrics that exist (the running binary's /metrics
// for rdma_webhook_*, a short list for the apiserver's and
// kube-state-metrics'); every alert has a runbook in docs/operations.md;
// promtool runs test/monitoring/'s tests on the rules as rendered, which
// hold, for every alert, series that fire it and series that do not; the
// ServiceMonitor scrapes the Service's metrics port as the job the rules
// read; and the dashboard has what Grafana needs to load it anywhere.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	monitoringComponent = "../../manifests/components/monitoring"
	monitoringTestsDir  = "../monitoring"
	operationsDoc       = "docs/operations.md"
	dashboardConfigMap  = "rdma-webhook-dashboard"
	dashboardFile       = "rdma-webhook-dashboard.json"
)

// foreignMetrics are the series the queries may read that the webhook does
// not export: the apiserver's view of its webhooks, kube-state-metrics'
// Deployment, and Prometheus's own scrape result.
var foreignMetrics = map[string]bool{
	"apiserver_admission_webhook_fail_open_count":                   true,
	"apiserver_admission_webhook_admission_duration_seconds_bucket": true,
	"apiserver_admission_webhook_request_total":                     true,
	"kube_deployment_status_replicas_available":                     true,
	"up": true,
}

// targetLabels are added by the scrape (the ServiceMonitor's target), not
// by the binary: a matcher on them is not checked against /metrics.
var targetLabels = map[string]bool{
	"job": true, "namespace": true, "pod": true, "instance": true, "service": true,
	"endpoint": true, "container": true,
}

// monitoringObjects renders manifests/ with every monitoring component.
func monitoringObjects(t *testing.T) []obj {
	t.Helper()
	return krustyWithComponent(t, monitoringComponent)
}

// alertRule is one rule of a rendered PrometheusRule.
type alertRule struct {
	group, alert, expr string
	labels, annots     map[string]string
}

// ruleGroups returns every PrometheusRule's spec.groups, in order, and
// their rules.
func ruleGroups(t *testing.T, objs []obj) ([]interface{}, []alertRule) {
	t.Helper()
	var groups []interface{}
	var rules []alertRule
	for _, pr := range findObjects(objs, "PrometheusRule") {
		for _, g := range pathArr(pr, "spec", "groups") {
			groups = append(groups, g)
			gn, _ := pathStr(g, "name")
			for _, r := range pathArr(g, "rules") {
				a, _ := pathStr(r, "alert")
				e, _ := pathStr(r, "expr")
				rules = append(rules, alertRule{gn, a, e, stringMap(path(r, "labels")), stringMap(path(r, "annotations"))})
			}
		}
	}
	if len(rules) == 0 {
		t.Fatalf("%s renders no PrometheusRule with rules", monitoringComponent)
	}
	return groups, rules
}

// dashboardQueries returns the dashboard (from the rendered ConfigMap, the
// object Grafana loads) and every panel target's expr, rows' panels too.
func dashboardQueries(t *testing.T, objs []obj) (map[string]interface{}, map[string]string) {
	t.Helper()
	cm := findObject(t, objs, "ConfigMap", dashboardConfigMap)
	if l, _ := pathStr(cm, "metadata", "labels", "grafana_dashboard"); l != "1" {
		t.Errorf("ConfigMap %s: label grafana_dashboard %q, want \"1\" (the sidecar's default)", dashboardConfigMap, l)
	}
	text, ok := pathStr(cm, "data", dashboardFile)
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s", dashboardConfigMap, dashboardFile)
	}
	var dash map[string]interface{}
	if err := json.Unmarshal([]byte(text), &dash); err != nil {
		t.Fatalf("%s is not JSON: %v", dashboardFile, err)
	}
	queries := map[string]string{}
	var walk func(panels []interface{})
	walk = func(panels []interface{}) {
		for _, p := range panels {
			title, _ := pathStr(p, "title")
			for i, tg := range pathArr(p, "targets") {
				if e, ok := pathStr(tg, "expr"); ok {
					queries[fmt.Sprintf("panel %q target %d", title, i)] = e
				}
			}
			walk(pathArr(p, "panels"))
		}
	}
	walk(pathArr(dash, "panels"))
	if len(queries) < 10 {
		t.Fatalf("the dashboard has %d queries: expected its panels' (at least 10)", len(queries))
	}
	return dash, queries
}

// grafanaVars are the dashboard's Grafana variables a query may hold, and
// what stands for each when it is parsed as PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m")

// exportedSeries is the running binary's /metrics: name -> label sets.
func exportedSeries(t *testing.T) map[string][]labels.Labels {
	t.Helper()
	out := map[string][]labels.Labels{}
	for sample := range scrape(t) {
		ls, err := parser.NewParser(parser.Options{}).ParseMetric(sample)
		if err != nil {
			t.Fatalf("/metrics sample %q: %v", sample, err)
		}
		name := ls.Get(labels.MetricName)
		out[name] = append(out[name], ls)
	}
	return out
}

// checkSelectors parses a query and checks each metric it reads.
func checkSelectors(t *testing.T, where, expr string, exported map[string][]labels.Labels) (names []string) {
	t.Helper()
	q := grafanaVars.Replace(expr)
	if strings.Contains(q, "$") {
		t.Errorf("%s: a Grafana variable other than $__rate_interval: %s", where, expr)
		return nil
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		t.Errorf("%s: not PromQL: %v\n%s", where, err, expr)
		return nil
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		names = append(names, vs.Name)
		if !strings.HasPrefix(vs.Name, "rdma_webhook_") {
			if !foreignMetrics[vs.Name] {
				t.Errorf("%s: reads %s, neither the webhook's nor a known apiserver or kube-state-metrics series", where, vs.Name)
			}
			return nil
		}
		series, ok := exported[vs.Name]
		if !ok {
			t.Errorf("%s: reads %s, which the binary's /metrics does not export", where, vs.Name)
			return nil
		}
		// Some exported series must match every matcher the binary's
		// labels decide (a typo in a label or a value selects nothing).
		for _, s := range series {
			all := true
			for _, m := range vs.LabelMatchers {
				if m.Name != labels.MetricName && !targetLabels[m.Name] && !m.Matches(s.Get(m.Name)) {
					all = false
				}
			}
			if all {
				return nil
			}
		}
		t.Errorf("%s: %s selects none of the exported series %v", where, vs, series)
		return nil
	})
	if len(names) == 0 {
		t.Errorf("%s: reads no metric: %s", where, expr)
	}
	return names
}

// TestMonitoringQueriesUseExportedMetrics: every alert's and every
// dashboard panel's query parses with Prometheus's parser, and reads only
// metrics the running binary exports (with label values it exports) or
// the apiserver's and kube-state-metrics' few; the metrics the issue's
// panels name are all there.
func TestMonitoringQueriesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	objs := monitoringObjects(t)
	exported := exportedSeries(t)
	_, rules := ruleGroups(t, objs)
	read := map[string]bool{}
	for _, r := range rules {
		for _, n := range checkSelectors(t, "alert "+r.alert, r.expr, exported) {
			read["alert "+n] = true
		}
	}
	_, queries := dashboardQueries(t, objs)
	for where, q := range queries {
		for _, n := range checkSelectors(t, "dashboard "+where, q, exported) {
			read["dashboard "+n] = true
		}
	}
	for _, want := range []string{
		"dashboard rdma_webhook_admissions_total", "dashboard rdma_webhook_profile_admissions_total",
		"dashboard rdma_webhook_admission_duration_seconds_bucket", "dashboard rdma_webhook_warnings_total",
		"dashboard rdma_webhook_profile_reloads_total", "dashboard rdma_webhook_certificate_expiry_timestamp_seconds",
		"dashboard apiserver_admission_webhook_admission_duration_seconds_bucket",
		"dashboard apiserver_admission_webhook_fail_open_count",
		"alert up", "alert kube_deployment_status_replicas_available", "alert apiserver_admission_webhook_fail_open_count",
		"alert apiserver_admission_webhook_admission_duration_seconds_bucket",
		"alert rdma_webhook_admissions_total", "alert rdma_webhook_profile_reloads_total",
		"alert rdma_webhook_profiles_stale", "alert rdma_webhook_certificate_expiry_timestamp_seconds",
		"alert rdma_webhook_event_reports_dropped_total", "alert rdma_webhook_log_lines_dropped_total",
	} {
		if !read[want] {
			t.Errorf("no %s query reads %s", strings.Fields(want)[0], strings.Fields(want)[1])
		}
	}
	// The file the component ships is the dashboard the ConfigMap holds.
	file := readFile(t, filepath.Join(repoRoot, "manifests/components/dashboard", dashboardFile))
	cm := findObject(t, objs, "ConfigMap", dashboardConfigMap)
	if s, _ := pathStr(cm, "data", dashboardFile); s != string(file) {
		t.Errorf("the ConfigMap's %s differs from the file", dashboardFile)
	}
}

// headingAnchor is GitHub's anchor for a Markdown heading's text.
func headingAnchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

// runbookAnchors returns the anchors of the ### headings under docs/
// operations.md's "## Runbook", and its whole text.
func runbookAnchors(t *testing.T) (map[string]bool, string) {
	t.Helper()
	doc := string(readFile(t, filepath.Join(repoRoot, operationsDoc)))
	out := map[string]bool{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.TrimSpace(line[3:]) == "Runbook"
		case in && strings.HasPrefix(line, "### "):
			out[headingAnchor(line[4:])] = true
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no \"## Runbook\" section with ### subsections", operationsDoc)
	}
	return out, doc
}

// TestMonitoringAlertsHaveRunbooks: every alert has a severity, a summary,
// a description and a runbook_url naming its own subsection of the
// runbook; the runbook has no subsection for an alert that does not exist;
// docs/install.md says how to turn each component on.
func TestMonitoringAlertsHaveRunbooks(t *testing.T) {
	t.Parallel()
	_, rules := ruleGroups(t, monitoringObjects(t))
	anchors, _ := runbookAnchors(t)
	seen := map[string]bool{}
	for _, r := range rules {
		if r.alert == "" {
			t.Errorf("group %s: a rule that is not an alert (%s): the components ship alerts only", r.group, r.expr)
			continue
		}
		if seen[r.alert] {
			t.Errorf("alert %s is defined twice", r.alert)
		}
		seen[r.alert] = true
		if s := r.labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("alert %s: severity %q, want warning or critical", r.alert, s)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.annots[a]) == "" {
				t.Errorf("alert %s has no %s", r.alert, a)
			}
		}
		want := operationsDoc + "#" + strings.ToLower(r.alert)
		if got := r.annots["runbook_url"]; got != want {
			t.Errorf("alert %s: runbook_url %q, want %q", r.alert, got, want)
		}
		if !anchors[strings.ToLower(r.alert)] {
			t.Errorf("alert %s: %s has no runbook subsection \"### %s\"", r.alert, operationsDoc, r.alert)
		}
	}
	for a := range anchors {
		found := false
		for s := range seen {
			found = found || strings.ToLower(s) == a
		}
		if !found {
			t.Errorf("%s's runbook has a subsection #%s for no alert", operationsDoc, a)
		}
	}
	install := string(readFile(t, filepath.Join(repoRoot, installDoc)))
	for _, c := range []string{"servicemonitor", "alerts", "dashboard", "monitoring", "fail-open-alert"} {
		if !strings.Contains(install, "manifests/components/"+c) {
			t.Errorf("%s does not say how to turn on manifests/components/%s", installDoc, c)
		}
	}
}

// promtool is $PROMTOOL, else promtool on PATH (Debian's prometheus package,
// which .ci/deps test installs).
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: install Debian's prometheus package (.ci/deps test), or set PROMTOOL: %v", err)
	}
	return p
}

// ruleTests reads test/monitoring/*.yaml: per file, the alerts with a test
// that expects them to fire and those with one that expects none.
func ruleTests(t *testing.T) (files []string, fires, quiet map[string]bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(monitoringTestsDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool tests in %s (%v)", monitoringTestsDir, err)
	}
	sort.Strings(files)
	fires, quiet = map[string]bool{}, map[string]bool{}
	for _, f := range files {
		var doc struct {
			RuleFiles []string `yaml:"rule_files"`
			Tests     []struct {
				AlertRuleTest []struct {
					Alertname string        `yaml:"alertname"`
					ExpAlerts []interface{} `yaml:"exp_alerts"`
				} `yaml:"alert_rule_test"`
			} `yaml:"tests"`
		}
		if err := yaml.Unmarshal(readFile(t, f), &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(doc.RuleFiles) != 1 || doc.RuleFiles[0] != "rules.json" {
			t.Errorf("%s: rule_files %v, want [rules.json] (the rules as rendered, written by this test)", f, doc.RuleFiles)
		}
		for _, tc := range doc.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
		}
	}
	return files, fires, quiet
}

// TestMonitoringRulesPromtool: `promtool check rules` and `promtool test
// rules` on the PrometheusRules' groups as the components render them
// (written to rules.json beside copies of test/monitoring/'s tests, which
// name it), and every alert has a test where it fires and one where it
// does not.
func TestMonitoringRulesPromtool(t *testing.T) {
	t.Parallel()
	tool := promtool(t)
	groups, rules := ruleGroups(t, monitoringObjects(t))
	dir := t.TempDir()
	rulesJSON, err := json.Marshal(map[string]interface{}{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.json"), rulesJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	files, fires, quiet := ruleTests(t)
	var copies []string
	for _, f := range files {
		c := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(c, readFile(t, f), 0o644); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, c)
	}
	for _, r := range rules {
		if !fires[r.alert] {
			t.Errorf("alert %s: no test in %s expects it to fire", r.alert, monitoringTestsDir)
		}
		if !quiet[r.alert] {
			t.Errorf("alert %s: no test in %s expects it not to fire", r.alert, monitoringTestsDir)
		}
	}
	start := time.Now()
	for _, args := range [][]string{
		{"check", "rules", filepath.Join(dir, "rules.json")},
		append([]string{"test", "rules"}, copies...),
	} {
		cmd := exec.Command(tool, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args[:2], " "), err, out.Bytes())
		}
	}
	t.Logf("promtool on %d alerts, %d test files: %v", len(rules), len(files), time.Since(start).Round(time.Millisecond))
}

// TestMonitoringDashboardLoads: what Grafana needs of the dashboard to load
// it the same on every install: a fixed uid and title, a data source
// variable of type prometheus that every panel and target uses (no
// data source uid of the author's Grafana), panel ids unique, and every
// panel placed on the grid.
func TestMonitoringDashboardLoads(t *testing.T) {
	t.Parallel()
	dash, _ := dashboardQueries(t, monitoringObjects(t))
	if uid, _ := pathStr(dash, "uid"); uid != "rdma-webhook" {
		t.Errorf("dashboard uid %q, want rdma-webhook (a fixed uid: links and re-imports find it)", uid)
	}
	if title, _ := pathStr(dash, "title"); title == "" {
		t.Error("the dashboard has no title")
	}
	hasVar := false
	for _, v := range pathArr(dash, "templating", "list") {
		n, _ := pathStr(v, "name")
		ty, _ := pathStr(v, "type")
		q, _ := pathStr(v, "query")
		hasVar = hasVar || (n == "datasource" && ty == "datasource" && q == "prometheus")
	}
	if !hasVar {
		t.Error("the dashboard has no variable datasource of type datasource, query prometheus")
	}
	ids := map[float64]string{}
	var walk func(panels []interface{})
	walk = func(panels []interface{}) {
		for _, p := range panels {
			title, _ := pathStr(p, "title")
			id, _ := path(p, "id").(float64)
			if id == 0 || ids[id] != "" {
				t.Errorf("panel %q: id %v missing or also %q's", title, path(p, "id"), ids[id])
			}
			ids[id] = title
			for _, k := range []string{"h", "w", "x", "y"} {
				if _, ok := path(p, "gridPos", k).(float64); !ok {
					t.Errorf("panel %q: no gridPos.%s", title, k)
				}
			}
			if ty, _ := pathStr(p, "type"); ty != "row" {
				if uid, _ := pathStr(p, "datasource", "uid"); uid != "${datasource}" {
					t.Errorf("panel %q: data source uid %q, want ${datasource}", title, uid)
				}
				for _, tg := range pathArr(p, "targets") {
					if uid, _ := pathStr(tg, "datasource", "uid"); uid != "${datasource}" {
						t.Errorf("panel %q: a target's data source uid %q, want ${datasource}", title, uid)
					}
				}
			}
			walk(pathArr(p, "panels"))
		}
	}
	walk(pathArr(dash, "panels"))
}

// TestMonitoringServiceMonitorScrapesTheMetricsPort: the ServiceMonitor
// selects the webhook's Service (labels and namespace), scrapes its port
// named metrics (the container's metrics port, where /metrics is) over
// plain HTTP, and leaves the job label at the Service's name, the job
// `rdma-webhook` the alerts and the dashboard read. Every monitoring
// object lives in the webhook's namespace with its name label.
func TestMonitoringServiceMonitorScrapesTheMetricsPort(t *testing.T) {
	t.Parallel()
	objs := monitoringObjects(t)
	sm := findObject(t, objs, "ServiceMonitor", webhookName)
	svc := findObject(t, objs, "Service", webhookName)
	svcLabels := stringMap(path(svc, "metadata", "labels"))
	sel := stringMap(path(sm, "spec", "selector", "matchLabels"))
	if len(sel) == 0 || path(sm, "spec", "selector", "matchExpressions") != nil {
		t.Errorf("ServiceMonitor selector %v: expected matchLabels only", path(sm, "spec", "selector"))
	}
	for k, v := range sel {
		if svcLabels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, which the Service's labels %v lack", k, v, svcLabels)
		}
	}
	if got := stringsOf(path(sm, "spec", "namespaceSelector", "matchNames")); len(got) != 1 || got[0] != webhookNamespace {
		t.Errorf("ServiceMonitor namespaceSelector.matchNames %v, want [%s]", got, webhookNamespace)
	}
	if jl, ok := pathStr(sm, "spec", "jobLabel"); ok {
		t.Errorf("ServiceMonitor jobLabel %q: the rules read job=%q, the Service's name", jl, webhookName)
	}
	eps := pathArr(sm, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor: %d endpoints, want 1 (the metrics port)", len(eps))
	}
	port, _ := pathStr(eps[0], "port")
	p, _ := pathStr(eps[0], "path")
	scheme, _ := pathStr(eps[0], "scheme")
	if port != "metrics" || p != "/metrics" || scheme != "http" {
		t.Errorf("ServiceMonitor endpoint port %q path %q scheme %q, want metrics, /metrics, http", port, p, scheme)
	}
	found := false
	for _, sp := range pathArr(svc, "spec", "ports") {
		n, _ := pathStr(sp, "name")
		tp, _ := pathStr(sp, "targetPort")
		found = found || (n == port && tp == "metrics")
	}
	if !found {
		t.Errorf("the Service has no port %q with targetPort metrics", port)
	}
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap"} {
		for _, o := range findObjects(objs, kind) {
			if n, _ := pathStr(o, "metadata", "name"); kind == "ConfigMap" && n != dashboardConfigMap {
				continue
			}
			if ns, _ := pathStr(o, "metadata", "namespace"); ns != webhookNamespace {
				t.Errorf("%s: namespace %q, want %s", objKey(o), ns, webhookNamespace)
			}
			if l, _ := pathStr(o, "metadata", "labels", "app.kubernetes.io/name"); l != "rdma-webhook" {
				t.Errorf("%s: no label app.kubernetes.io/name=rdma-webhook", objKey(o))
			}
		}
	}
}
