package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// A differential test of the YAML reader against kubectl's: apimachinery's
// YAMLOrJSONDecoder, which cuts the input at its "---" lines and reads each
// piece with sigs.k8s.io/yaml (go-yaml v2), as `kubectl apply -f` does. For
// each generated case, either both refuse it, or both read the same
// documents (compared as decoded values, numbers exactly), or kubectl reads
// it and `mutate` refuses it with one of the refusals it documents
// (docs/reference.md "mutate"), never silently otherwise.

// kubectlRead is what kubectl makes of text: its documents as JSON values
// (null ones left out, as kubectl skips them), or an error.
func kubectlRead(text []byte) (docs []interface{}, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(text), 4096)
	for {
		var raw json.RawMessage
		if err := d.Decode(&raw); err == io.EOF {
			return docs, nil
		} else if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue // an empty or null document
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v interface{}
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if v != nil {
			docs = append(docs, v)
		}
	}
}

// sameValue compares decoded JSON values, numbers by their exact value.
func sameValue(a, b interface{}) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		// Integers exactly; a float is a float64 on both sides, which
		// each may spell in other digits (5e-324, 4.94065645841247e-324).
		if !strings.ContainsAny(string(x)+string(y), ".eE") {
			return sameNumber(string(x), string(y))
		}
		fx, errx := strconv.ParseFloat(string(x), 64)
		fy, erry := strconv.ParseFloat(string(y), 64)
		return errx == nil && erry == nil && fx == fy
	case map[string]interface{}:
		y, ok := b.(map[string]interface{})
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []interface{}:
		y, ok := b.([]interface{})
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(a, b)
	}
}

// yamlGen makes YAML cases from a seeded source: the same cases each run.
type yamlGen struct {
	r       *rand.Rand
	anchors []string // defined so far in the document
	next    int
}

func (g *yamlGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *yamlGen) chance(p float64) bool { return g.r.Float64() < p }

// number is an integer or a float in one of YAML 1.1's spellings.
func (g *yamlGen) number() string {
	bounds := []string{"9007199254740992", "9007199254740993", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "9000000000000001", "0", "-0", "+0"}
	switch g.r.IntN(9) {
	case 0:
		return g.pick(bounds...)
	case 1:
		return strconv.FormatInt(g.r.Int64N(1<<62)-(1<<61), 10)
	case 2:
		return g.pick("", "+", "-") + "0x" + strconv.FormatUint(g.r.Uint64()>>g.r.IntN(64), 16)
	case 3:
		return g.pick("", "-") + g.pick("0", "0o") + strconv.FormatUint(g.r.Uint64()>>g.r.IntN(64), 8)
	case 4:
		return g.pick("", "-") + "0b" + strconv.FormatUint(g.r.Uint64()>>g.r.IntN(64), 2)
	case 5: // underscores anywhere
		s := strconv.FormatInt(g.r.Int64N(1e9), 10)
		i := g.r.IntN(len(s) + 1)
		return s[:i] + "_" + s[i:]
	case 6:
		f := g.r.NormFloat64() * float64(g.r.IntN(1e6)+1)
		return strconv.FormatFloat(f, g.pick("e", "f", "g")[0], g.r.IntN(18)-1, 64)
	case 7:
		if g.chance(0.05) { // JSON has no NaN nor infinities: both refuse
			return g.pick(".inf", "-.Inf", "+.INF", ".NaN")
		}
		return g.pick(".5", "1.", "-.5e-3", "+.5", "1e3", "1E+3", "1.0", "0.", "1e400", "-1e400",
			"1.7976931348623157e308", "4.9e-324", "1e-400", ".nan", ".Nan", "1.5e", "1e",
			"1_000.5", "0x1p3", "0x1F.8", "00", "08", "0o8", "0b2", "09.5", "-0x10")
	default:
		return strconv.Itoa(g.r.IntN(100000))
	}
}

// word is a plain scalar that may be read as a string, a bool, a null, a
// timestamp or another type, or none.
func (g *yamlGen) word() string {
	switch g.r.IntN(6) {
	case 0:
		return g.pick("y", "Y", "yes", "Yes", "YES", "yES", "n", "N", "no", "No", "NO", "on", "On",
			"ON", "off", "Off", "OFF", "oFF", "true", "True", "TRUE", "tRUE", "false", "False",
			"FALSE", "fALSE")
	case 1:
		return g.pick("~", "null", "Null", "NULL", "nULL", "nil", "None")
	case 2:
		return g.pick("2001-12-14", "2001-1-2", "2001-12-14t21:59:43.10-05:00",
			"2001-12-14T21:59:43Z", "2001-12-14 21:59:43.10", "2001-2-29", "2001-13-1",
			"2001-12-14 21:59:43.10 -5", "1:20", "190:20:30", "12:30:45.5")
	case 3:
		if g.chance(0.05) { // no plain scalar
			return g.pick("*", "?x", ":x", "@x", "%x", "`x", "-x", "&")
		}
		return g.pick("0x", "+", "-", ".", "_1", "1_", "=", "a:b", "a #b", "x-y", "é", "a b", "<<")
	default:
		return g.pick("alpha", "bravo", "charlie", "eth0", "mlx5_1", "=mlx5_1,mlx5_2", "value")
	}
}

func (g *yamlGen) quoted() string {
	if g.chance(0.5) {
		return "'" + g.pick("a", "it''s", "", "1", "yes", "~", "a\\nb", "x: y") + "'"
	}
	if g.chance(0.02) {
		return `"a\0b"` // NUL, which mutate refuses
	}
	return `"` + g.pick("a", "", `\t`, `\x41`, `\u00e9`, `a\nb`, `\"`, "1", "null", `\e`,
		`\U0001F600`, `\_`, `\N`, `\L`, `\P`) + `"`
}

// tag is a tag for a scalar, or "".
func (g *yamlGen) tag() string {
	// Rare: one tag that does not fit refuses the whole case.
	if !g.chance(0.012) {
		return ""
	}
	return g.pick("!!str", "!!int", "!!float", "!!bool", "!!null", "!!timestamp", "!foo", "!",
		"!<tag:yaml.org,2002:str>", "!<tag:yaml.org,2002:int>", "!!map", "!!seq") + " "
}

func (g *yamlGen) scalar(flow bool) string {
	var s string
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		s = g.number()
	case 4, 5, 6:
		s = g.word()
	case 7:
		s = g.quoted()
	case 8:
		// A tag on an empty scalar, right before what follows: a ',' in a
		// flow collection.
		if flow && g.chance(0.1) {
			return g.pick("!!str", "!foo", "!!null", "!<tag:x>", "!!int")
		}
		s = g.word()
	default:
		s = g.pick("", "a", "1")
	}
	if flow && strings.ContainsAny(s, ",[]{}#") {
		s = "x"
	}
	return g.tag() + s
}

// key is a mapping key: mostly names, sometimes a number, a bool, a null,
// a quoted text, a merge key or an alias.
func (g *yamlGen) key() string {
	switch g.r.IntN(24) {
	case 0:
		if g.chance(0.3) {
			return g.number() // a float or a big one is refused by mutate
		}
		return g.pick("1", "-1", "0x10", "010", "0b11", "1_0")
	case 1:
		return g.pick("yes", "off", "true", "~", "null", "1.5", "-1", "0x10", "010")
	case 2:
		return g.quoted()
	case 3:
		if len(g.anchors) > 0 && g.chance(0.3) {
			return "<<"
		}
		return g.pick("k", "key", "a")
	default:
		if g.chance(0.02) {
			return "a" // most likely twice in a mapping
		}
		return fmt.Sprintf("%s%d", g.pick("a", "name", "x-y", "k8s.io/x", "é"), g.r.IntN(1000000))
	}
}

// anchor may put a new anchor before a value; its name is known to aliases
// once the value is complete (done).
func (g *yamlGen) anchor() (prefix string, done func()) {
	if !g.chance(0.12) {
		return "", func() {}
	}
	name := fmt.Sprintf("a%d", g.next)
	g.next++
	return "&" + name + " ", func() { g.anchors = append(g.anchors, name) }
}

func (g *yamlGen) alias() (string, bool) {
	if len(g.anchors) == 0 || !g.chance(0.1) {
		return "", false
	}
	return "*" + g.anchors[g.r.IntN(len(g.anchors))], true
}

// flowValue is a value on one line: a scalar, a flow sequence or mapping.
func (g *yamlGen) flowValue(depth int) string {
	if a, ok := g.alias(); ok {
		return a
	}
	pre, done := g.anchor()
	defer done()
	if depth <= 0 || g.chance(0.6) {
		return pre + g.scalar(true)
	}
	n := g.r.IntN(4)
	items := make([]string, n)
	mapping := g.chance(0.5)
	for i := range items {
		if mapping {
			k := g.key()
			if k == "<<" {
				if a, ok := g.alias(); ok {
					items[i] = "<<: " + a
					continue
				}
				k = "k"
			}
			items[i] = k + ": " + g.flowValue(depth-1)
		} else {
			items[i] = g.flowValue(depth - 1)
		}
	}
	sep := g.pick(", ", ",", " , ")
	if mapping {
		return pre + "{" + strings.Join(items, sep) + "}"
	}
	return pre + "[" + strings.Join(items, sep) + "]"
}

// blockValue is what follows "key:" or "-": " value" on the line, or a
// block collection on the next lines at indent.
func (g *yamlGen) blockValue(depth int, indent string) string {
	if depth <= 0 || g.chance(0.5) {
		return " " + g.flowValue(depth)
	}
	pre, done := g.anchor()
	defer done()
	var b strings.Builder
	if pre != "" {
		b.WriteString(" " + strings.TrimSpace(pre))
	}
	n := 1 + g.r.IntN(3)
	if g.chance(0.5) {
		for i := 0; i < n; i++ {
			b.WriteString("\n" + indent + "-" + g.blockValue(depth-1, indent+"  "))
		}
		return b.String()
	}
	for i := 0; i < n; i++ {
		k := g.key()
		if k == "<<" {
			if a, ok := g.alias(); ok {
				b.WriteString("\n" + indent + "<<: " + a)
				continue
			}
			k = "k"
		}
		b.WriteString("\n" + indent + k + ":" + g.blockValue(depth-1, indent+"  "))
	}
	return b.String()
}

// valueCase is one document: kind Case, its id and a generated value.
func (g *yamlGen) valueCase(id int) string {
	g.anchors = g.anchors[:0]
	return fmt.Sprintf("kind: Case\nid: \"%d\"\nv:%s\n", id, g.blockValue(3, "  "))
}

// streamCase is several documents, with directives, separators of every
// kind, empty and null documents among them.
func (g *yamlGen) streamCase(id int) string {
	var b strings.Builder
	if g.chance(0.05) {
		b.WriteString(g.pick("%YAML 1.1\n", "%YAML 1.2\n", "%TAG !e! tag:e.com,2000:\n") + "---\n")
	}
	n := 1 + g.r.IntN(3)
	for i := 0; i < n; i++ {
		if i > 0 {
			if g.chance(0.2) {
				b.WriteString("...\n")
			}
			sep := g.pick("---\n", "--- # c\n", "---  \n", "---\t\n")
			if g.chance(0.1) {
				sep = g.pick("--- x: 1\n", "----\n", "---#c\n", "--- |\n  x\n")
			}
			b.WriteString(sep)
		}
		switch g.r.IntN(6) {
		case 0:
			b.WriteString(g.pick("", "# only a comment\n", "~\n", "null\n"))
		default:
			b.WriteString(g.valueCase(id*10 + i))
		}
	}
	return b.String()
}

// The refusals mutate documents for YAML kubectl reads.
var yamlDiffOwnRefusals = []string{"merge keys", "twice in the mapping", "a null key",
	"a number key", "!!binary", "NUL", "as a key", "an anchor on a key", "NaN or an infinity",
	"a tag right before ','", `starts with "---" and goes on`, "a key beyond int64", `right after "---"`}

// TestYAMLAsKubectlReadsIt: 3,000 generated cases through kubectl's reader
// and `mutate --patched -o json`, batched many to an input.
func TestYAMLAsKubectlReadsIt(t *testing.T) {
	t.Parallel()
	g := &yamlGen{r: rand.New(rand.NewPCG(28, 11))}
	var accepted, refused []string
	for i := 0; i < 3000; i++ {
		text := g.valueCase(i)
		if i%6 == 0 {
			text = g.streamCase(i)
		}
		if _, err := kubectlRead([]byte(text)); err != nil {
			refused = append(refused, text)
		} else {
			accepted = append(accepted, text)
		}
	}
	dir := t.TempDir()
	runs := 0
	ours := func(text string) cmdResult {
		runs++
		file := filepath.Join(dir, fmt.Sprintf("in%d.yaml", runs))
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return runBinary(t, nil, "mutate", "--profiles", profilesPath, "--patched", "-o", "json", file)
	}
	ownRefusals := map[string]int{}
	// One case alone: the verdicts must agree.
	var single func(text string)
	single = func(text string) {
		want, kerr := kubectlRead([]byte(text))
		res := ours(text)
		switch {
		case kerr != nil && res.exitCode != 1:
			t.Errorf("kubectl refuses (%v), mutate exits %d:\n%s", kerr, res.exitCode, text)
		case kerr != nil:
			if !strings.Contains(string(res.stderr), "rdma-webhook: ") {
				t.Errorf("mutate refuses without a message: %q\n%s", res.stderr, text)
			}
		case res.exitCode != 0 && len(want) == 0 && strings.Contains(string(res.stderr), "no object in the input"):
			// Both read no document; mutate says so.
		case res.exitCode != 0:
			for _, r := range yamlDiffOwnRefusals {
				if strings.Contains(string(res.stderr), r) {
					ownRefusals[r]++
					return
				}
			}
			t.Errorf("kubectl reads %s\nmutate exits %d: %s\n%s", mustMarshal(want), res.exitCode, res.stderr, text)
		default:
			if got := jsonValues(t, res.stdout); !sameValue(interface{}(got), interface{}(want)) {
				t.Errorf("kubectl reads %s\nmutate reads %s\n%s", mustMarshal(want), mustMarshal(got), text)
			}
		}
	}
	// A batch: one input of many cases. A refusal that names its line is
	// that case's, checked alone, and the batch goes on without it; any
	// other difference is looked for in its halves.
	lineOf := regexp.MustCompile(`line (\d+)`)
	var batch func(cases []string)
	batch = func(cases []string) {
		if len(cases) == 1 {
			single(cases[0])
			return
		}
		text := strings.Join(cases, "---\n")
		want, kerr := kubectlRead([]byte(text))
		if kerr == nil {
			res := ours(text)
			if res.exitCode == 0 && sameValue(interface{}(jsonValues(t, res.stdout)), interface{}(want)) {
				return
			}
			if m := lineOf.FindSubmatch(res.stderr); res.exitCode == 1 && m != nil {
				line, _ := strconv.Atoi(string(m[1]))
				for i, at := 0, 1; i < len(cases); i++ {
					at += strings.Count(cases[i], "\n") + 1
					if line < at {
						single(cases[i])
						batch(append(append([]string{}, cases[:i]...), cases[i+1:]...))
						return
					}
				}
			}
		}
		batch(cases[:len(cases)/2])
		batch(cases[len(cases)/2:])
	}
	for i := 0; i < len(accepted); i += 300 {
		batch(accepted[i:min(i+300, len(accepted))])
	}
	for _, text := range refused {
		single(text)
	}
	t.Logf("%d cases: kubectl read %d and refused %d; mutate refused of those it read, by reason: %v; %d runs",
		len(accepted)+len(refused), len(accepted), len(refused), ownRefusals, runs)
}
