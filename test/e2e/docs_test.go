package e2e

// docs/reference.md against the binary: the flag tables against each
// command's --help, and the metric table against what /metrics lists, both
// ways, so neither can drift from the other.

import (
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const referenceDoc = "docs/reference.md"

// A flag definition line of a --help text: two spaces, then the flag
// ("  --listen ADDR:PORT", "  -o, --output json|yaml"). Continuation lines
// are indented further, and flags named inside a description are not at
// the start of a line.
var helpFlagLine = regexp.MustCompile(`^  (?:-[a-zA-Z], )?(--[a-z][a-z0-9-]*)`)

// A flag in the first cell of a reference table row: "| `--listen ADDR:PORT` |".
var docFlag = regexp.MustCompile("`(?:-[a-zA-Z]`, `)?(--[a-z][a-z0-9-]*)")

// A row of the metric table: "| `rdma_webhook_admissions_total{result,reason}` |".
var docMetricRow = regexp.MustCompile("^\\| `(rdma_webhook_[a-z0-9_]+)")

// firstCell is the first cell of a Markdown table row, with "\|" kept as
// part of the cell; "" when line is not a row.
func firstCell(line string) string {
	if !strings.HasPrefix(line, "|") {
		return ""
	}
	rest := line[1:]
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '\\':
			i++
		case '|':
			return rest[:i]
		}
	}
	return ""
}

// helpFlags is the set of flags a --help text defines.
func helpFlags(help string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(help, "\n") {
		if m := helpFlagLine.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// docSections splits the reference into its "## " and "### " sections,
// keyed by the heading's text ("### `serve`" -> "`serve`").
func docSections(doc string) map[string][]string {
	out := map[string][]string{}
	key := ""
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			key = strings.TrimSpace(strings.TrimLeft(line, "#"))
			out[key] = nil
			continue
		}
		if key != "" {
			out[key] = append(out[key], line)
		}
	}
	return out
}

// docTableFlags is the set of flags in the first cells of a section's table rows.
func docTableFlags(lines []string) map[string]bool {
	out := map[string]bool{}
	for _, line := range lines {
		for _, m := range docFlag.FindAllStringSubmatch(firstCell(line), -1) {
			out[m[1]] = true
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestReferenceFlagsMatchHelp: for each command, every flag its --help
// defines has a row in the command's table in docs/reference.md, and every
// flag there is one the command defines.
func TestReferenceFlagsMatchHelp(t *testing.T) {
	sections := docSections(string(readFile(t, filepath.Join(repoRoot, referenceDoc))))
	commands := []struct {
		heading string
		args    []string
	}{
		{"`rdma-webhook`", []string{"--help"}},
		{"`serve`", []string{"serve", "--help"}},
		{"`mutate`", []string{"mutate", "--help"}},
		{"`check-profiles`", []string{"check-profiles", "--help"}},
		{"`gen-certs`", []string{"gen-certs", "--help"}},
		{"`nccl-detect`", []string{"nccl-detect", "--help"}},
		{"`unregister`", []string{"unregister", "--help"}},
	}
	for _, c := range commands {
		lines, ok := sections[c.heading]
		if !ok {
			t.Errorf("%s has no section \"### %s\"", referenceDoc, c.heading)
			continue
		}
		res := runBinary(t, nil, c.args...)
		if res.exitCode != 0 {
			t.Errorf("rdma-webhook %s: exit %d", strings.Join(c.args, " "), res.exitCode)
			continue
		}
		help := helpFlags(string(res.stdout))
		if len(help) == 0 {
			t.Errorf("rdma-webhook %s defines no flags the test can read:\n%s", strings.Join(c.args, " "), res.stdout)
			continue
		}
		doc := docTableFlags(lines)
		for _, f := range sortedKeys(help) {
			if !doc[f] {
				t.Errorf("rdma-webhook %s lists %s, which the flags table under \"### %s\" in %s lacks",
					strings.Join(c.args, " "), f, c.heading, referenceDoc)
			}
		}
		for _, f := range sortedKeys(doc) {
			if !help[f] {
				t.Errorf("%s documents %s under \"### %s\", which rdma-webhook %s does not list",
					referenceDoc, f, c.heading, strings.Join(c.args, " "))
			}
		}
	}
}

// TestReferenceMetricsMatchServer: every metric family the shared server's
// /metrics declares (# TYPE) has a row in the table under "## Metrics" in
// docs/reference.md, and every row there is a family the server declares.
func TestReferenceMetricsMatchServer(t *testing.T) {
	sections := docSections(string(readFile(t, filepath.Join(repoRoot, referenceDoc))))
	lines, ok := sections["Metrics"]
	if !ok {
		t.Fatalf("%s has no section \"## Metrics\"", referenceDoc)
	}
	doc := map[string]bool{}
	for _, line := range lines {
		if m := docMetricRow.FindStringSubmatch(line); m != nil {
			doc[m[1]] = true
		}
	}
	rep := srv.get(t, srv.metricsURL("/metrics"))
	if rep.status != http.StatusOK {
		t.Fatalf("/metrics: %d", rep.status)
	}
	served := map[string]bool{}
	for _, line := range strings.Split(string(rep.body), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			served[f[2]] = true
		}
	}
	if len(served) == 0 {
		t.Fatalf("/metrics declares no metric family (# TYPE lines):\n%s", rep.body)
	}
	for _, m := range sortedKeys(served) {
		if !doc[m] {
			t.Errorf("/metrics lists %s, which the metric table of %s lacks", m, referenceDoc)
		}
	}
	for _, m := range sortedKeys(doc) {
		if !served[m] {
			t.Errorf("%s lists metric %s, which /metrics does not", referenceDoc, m)
		}
	}
}
