package e2e

// The chart README's values table, generated from values.yaml (as
// helm-docs does, with no tool to install): each key's `# --` comment is
// its description, its default is the value in values.yaml, compact JSON.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	helmTableBegin = "<!-- values: generated from values.yaml by TestHelmChartReadme (HELM_README_UPDATE=1) -->"
	helmTableEnd   = "<!-- end of values -->"
)

var (
	helmDescLine = regexp.MustCompile(`^\s*# -- (.+)$`)
	helmKeyLine  = regexp.MustCompile(`^(\s*)([A-Za-z0-9_]+):(.*)$`)
)

type helmValueRow struct{ key, typ, def, desc string }

// helmValuesRows lists the described keys of values.yaml in file order. A
// scalar with no description of its own or of a key above it is an error:
// every value the user can set is documented.
func helmValuesRows(values []byte) ([]helmValueRow, error) {
	var tree interface{}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(values), 4096).Decode(&tree); err != nil {
		return nil, err
	}
	type level struct {
		indent    int
		key       string
		described bool
	}
	var stack []level
	var rows []helmValueRow
	pending := ""
	for n, line := range strings.Split(string(values), "\n") {
		if m := helmDescLine.FindStringSubmatch(line); m != nil {
			pending = m[1]
			continue
		}
		m := helmKeyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent := len(m[1])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		keys := []string{}
		above := false
		for _, l := range stack {
			keys = append(keys, l.key)
			above = above || l.described
		}
		keys = append(keys, m[2])
		stack = append(stack, level{indent, m[2], pending != ""})
		scalar := strings.TrimSpace(m[3]) != ""
		if pending == "" {
			if scalar && !above {
				return nil, fmt.Errorf("values.yaml:%d: %s has no `# --` description", n+1, strings.Join(keys, "."))
			}
			continue
		}
		v := tree
		for _, k := range keys {
			o, _ := v.(map[string]interface{})
			v = o[k]
		}
		def, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		rows = append(rows, helmValueRow{strings.Join(keys, "."), helmValueType(v), string(def), pending})
		pending = ""
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("values.yaml: no `# --` descriptions")
	}
	return rows, nil
}

func helmValueType(v interface{}) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case float64, int64, json.Number:
		return "int"
	case []interface{}:
		return "list"
	case map[string]interface{}:
		return "object"
	default:
		return fmt.Sprintf("%T", x)
	}
}

// helmReadmeWithTable returns the README with the text between its two
// markers replaced by the table.
func helmReadmeWithTable(doc string, rows []helmValueRow) (string, error) {
	b := strings.Index(doc, helmTableBegin)
	e := strings.Index(doc, helmTableEnd)
	if b < 0 || e < b {
		return "", fmt.Errorf("%s: expected the markers %q and %q", chartReadme, helmTableBegin, helmTableEnd)
	}
	var t strings.Builder
	t.WriteString(helmTableBegin + "\n\n| Key | Type | Default | Description |\n|-----|------|---------|-------------|\n")
	esc := strings.NewReplacer("|", `\|`)
	for _, r := range rows {
		fmt.Fprintf(&t, "| `%s` | %s | `%s` | %s |\n", r.key, r.typ, esc.Replace(r.def), esc.Replace(r.desc))
	}
	t.WriteString("\n")
	return doc[:b] + t.String() + doc[e:], nil
}
