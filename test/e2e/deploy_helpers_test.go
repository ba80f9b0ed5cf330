package e2e

// Helpers for the deployment tests (manifests_test.go, certs_test.go,
// dockerfile_test.go): rendering kustomizations, turning YAML into objects
// with kubectl, Kubernetes label-selector semantics, and reading the
// Dockerfile.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Paths are relative to test/e2e, where `go test` runs.
const (
	repoRoot          = "../.."
	manifestsDir      = "../../manifests"
	certManagerDir    = "../../certs/cert-manager"
	installDevCerts   = "../../certs/install-dev-certs.sh"
	dockerfilePath    = "../../Dockerfile"
	dockerignorePath  = "../../.dockerignore"
	examplePyTorchJob = "../../manifests/examples/pytorchjob-8gpu.yaml"
	releaseBinary     = "../../build/rdma-webhook" // what the Dockerfile's `make build` ships

	webhookNamespace = "rdma-webhook"
	webhookName      = "rdma-webhook" // Deployment, Service, ServiceAccount, MutatingWebhookConfiguration
	tlsSecretName    = "rdma-webhook-tls"
	profilesCMName   = "rdma-webhook-profiles"           // generated, no hash suffix
	lastGoodCMName   = "rdma-webhook-profiles-last-good" // the copy the Role grants (--profiles-last-good)
	operatorLabel    = "training.kubeflow.org/operator-name"
	injectKey        = "rdma-webhook.io/inject"
)

// kubectl returns the kubectl to use: $KUBECTL, else kubectl on PATH.
// Reading objects needs no cluster: `kubectl patch --local` works offline,
// with Debian's kubectl 1.20 as with current ones.
func kubectl(t testing.TB) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	k, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl not found: install Debian's kubernetes-client (or set KUBECTL): %v", err)
	}
	return k
}

// runKubectl runs kubectl with args and optional stdin and returns stdout.
func runKubectl(t testing.TB, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(kubectl(t), args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// kustomize renders a kustomization directory into objects: in-process with
// sigs.k8s.io/kustomize/api (kustomize_test.go), since Debian's kubectl 1.20
// (kustomize v2) cannot render certs/cert-manager's `resources:`/`patches:`,
// then read the way kubectl reads objects (yamlObjects).
func kustomize(t testing.TB, dir string) []obj {
	t.Helper()
	objs := yamlObjects(t, krustyYAML(t, dir))
	if len(objs) == 0 {
		t.Fatalf("kustomize build %s rendered nothing", dir)
	}
	return objs
}

// yamlObjects turns a YAML stream into JSON objects the way kubectl reads
// them before sending them to the apiserver (a no-op local patch, printed as
// JSON). A List is flattened.
func yamlObjects(t testing.TB, yaml []byte) []obj {
	t.Helper()
	out := runKubectl(t, yaml, "patch", "--local", "-f", "-", "--type", "merge", "-p", "{}", "-o", "json")
	var objs []obj
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for {
		var o obj
		err := dec.Decode(&o)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("kubectl's JSON: %v\n%s", err, cut(out))
		}
		if o["kind"] == "List" {
			for _, item := range pathArr(o, "items") {
				if it, ok := item.(obj); ok {
					objs = append(objs, it)
				}
			}
			continue
		}
		objs = append(objs, o)
	}
	return objs
}

func readYAMLObjects(t testing.TB, file string) []obj {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return yamlObjects(t, data)
}

// objKey names an object in messages: Kind/namespace/name.
func objKey(o obj) string {
	kind, _ := pathStr(o, "kind")
	name, _ := pathStr(o, "metadata", "name")
	if ns, ok := pathStr(o, "metadata", "namespace"); ok {
		return kind + "/" + ns + "/" + name
	}
	return kind + "/" + name
}

// findObjects returns the objects of a kind.
func findObjects(objs []obj, kind string) []obj {
	var out []obj
	for _, o := range objs {
		if k, _ := pathStr(o, "kind"); k == kind {
			out = append(out, o)
		}
	}
	return out
}

// findObject returns the one object of a kind and name ("" = the only one).
func findObject(t testing.TB, objs []obj, kind, name string) obj {
	t.Helper()
	var found []obj
	for _, o := range findObjects(objs, kind) {
		if n, _ := pathStr(o, "metadata", "name"); name == "" || n == name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("expected one %s %q in the rendered manifests, found %d", kind, name, len(found))
	}
	return found[0]
}

// namedObjects labels objects for checkSchemas.
func namedObjects(prefix string, objs []obj) []namedObject {
	out := make([]namedObject, len(objs))
	for i, o := range objs {
		out[i] = namedObject{name: prefix + objKey(o), obj: o}
	}
	return out
}

// stringMap converts a JSON object of strings (labels, annotations).
func stringMap(v interface{}) map[string]string {
	out := map[string]string{}
	o, _ := v.(obj)
	for k, val := range o {
		if s, ok := val.(string); ok {
			out[k] = s
		}
	}
	return out
}

// stringsOf converts a JSON array of strings.
func stringsOf(v interface{}) []string {
	a, _ := v.([]interface{})
	out := make([]string, 0, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sortedCopy(a []string) []string {
	out := append([]string(nil), a...)
	sort.Strings(out)
	return out
}

// intOf reads a JSON integer.
func intOf(v interface{}) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// ---- Label selectors (metav1.LabelSelector) ----

// labelSelector is a metav1.LabelSelector.
type labelSelector struct {
	MatchLabels      map[string]string     `json:"matchLabels"`
	MatchExpressions []selectorRequirement `json:"matchExpressions"`
}

type selectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

// parseSelector reads a selector from decoded JSON; an absent selector (nil)
// is returned as nil, which matches everything (what the apiserver defaults a
// webhook's selectors to).
func parseSelector(v interface{}) (*labelSelector, error) {
	if v == nil {
		return nil, nil
	}
	var s labelSelector
	dec := json.NewDecoder(bytes.NewReader(mustMarshal(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("label selector %s: %v", compact(v), err)
	}
	for _, r := range s.MatchExpressions {
		if err := r.validate(); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// validate applies the apiserver's rules for a requirement.
func (r selectorRequirement) validate() error {
	switch r.Operator {
	case "In", "NotIn":
		if len(r.Values) == 0 {
			return fmt.Errorf("selector key %q: operator %s needs values", r.Key, r.Operator)
		}
	case "Exists", "DoesNotExist":
		if len(r.Values) != 0 {
			return fmt.Errorf("selector key %q: operator %s takes no values", r.Key, r.Operator)
		}
	default:
		return fmt.Errorf("selector key %q: unknown operator %q", r.Key, r.Operator)
	}
	if r.Key == "" {
		return fmt.Errorf("selector requirement without a key")
	}
	return nil
}

// matches: every matchLabels pair and every requirement holds (ANDed); an
// empty or nil selector matches everything.
func (s *labelSelector) matches(labels map[string]string) bool {
	if s == nil {
		return true
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range s.MatchExpressions {
		if !r.matches(labels) {
			return false
		}
	}
	return true
}

func (r selectorRequirement) matches(labels map[string]string) bool {
	v, has := labels[r.Key]
	switch r.Operator {
	case "In":
		return has && contains(r.Values, v)
	case "NotIn":
		return !has || !contains(r.Values, v)
	case "Exists":
		return has
	case "DoesNotExist":
		return !has
	}
	return false
}

// ---- Dockerfile ----

// dockerInstr is one Dockerfile instruction, continuation lines joined.
type dockerInstr struct {
	line int    // where it starts
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// dockerStage is a FROM and the instructions up to the next FROM.
type dockerStage struct {
	from   string // the image
	name   string // AS name, if any
	instrs []dockerInstr
}

// parseDockerfile splits a Dockerfile into stages. Comment lines are dropped
// (also inside a continued instruction, as Docker does).
func parseDockerfile(t testing.TB, file string) []dockerStage {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var instrs []dockerInstr
	var cur *dockerInstr
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		more := strings.HasSuffix(line, "\\")
		line = strings.TrimSpace(strings.TrimSuffix(line, "\\"))
		if cur == nil {
			fields := strings.SplitN(line, " ", 2)
			cur = &dockerInstr{line: n, cmd: strings.ToUpper(fields[0])}
			if len(fields) == 2 {
				cur.args = strings.TrimSpace(fields[1])
			}
		} else {
			cur.args += " " + line
		}
		if !more {
			instrs = append(instrs, *cur)
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s: the last instruction ends in a line continuation", file)
	}
	var stages []dockerStage
	for _, in := range instrs {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := dockerStage{}
			for _, x := range f {
				if !strings.HasPrefix(x, "--") {
					st.from = x
					break
				}
			}
			if len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") {
				st.name = f[len(f)-1]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd == "ARG" {
				continue
			}
			t.Fatalf("%s:%d: %s before the first FROM", file, in.line, in.cmd)
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	return stages
}

// instrs returns the stage's instructions of one kind.
func (s dockerStage) instrsOf(cmd string) []dockerInstr {
	var out []dockerInstr
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

var shellSeparators = regexp.MustCompile(`&&|\|\||;|\|`)

// aptInstalled returns the packages that the stage's RUN lines pass to
// `apt-get install` (version pins stripped).
func (s dockerStage) aptInstalled() []string {
	var pkgs []string
	for _, in := range s.instrsOf("RUN") {
		for _, segment := range shellSeparators.Split(in.args, -1) {
			f := strings.Fields(segment)
			for i := 0; i+1 < len(f); i++ {
				if (f[i] == "apt-get" || f[i] == "apt") && f[i+1] == "install" {
					for _, a := range f[i+2:] {
						if strings.HasPrefix(a, "-") {
							continue
						}
						pkgs = append(pkgs, strings.SplitN(a, "=", 2)[0])
					}
					break
				}
			}
		}
	}
	return pkgs
}

// execForm parses an exec-form (JSON array) ENTRYPOINT/CMD.
func execForm(t testing.TB, in dockerInstr) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(in.args), &out); err != nil {
		t.Fatalf("Dockerfile:%d: %s is not in exec form (a JSON array): %v", in.line, in.cmd, err)
	}
	return out
}

// ---- .dockerignore (Docker's rules: last matching pattern wins, "!"
// re-includes, a pattern also matches everything under a matched directory) ----

type ignorePattern struct {
	negate  bool
	pattern string
}

func readDockerignore(t testing.TB, file string) []ignorePattern {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []ignorePattern
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := ignorePattern{}
		if strings.HasPrefix(line, "!") {
			p.negate = true
			line = strings.TrimSpace(line[1:])
		}
		if strings.Contains(line, "**") {
			t.Fatalf(".dockerignore: %q: ** is not supported by this check", line)
		}
		p.pattern = filepath.Clean(strings.TrimPrefix(line, "/"))
		out = append(out, p)
	}
	return out
}

// ignored reports whether Docker leaves rel (a path relative to the context,
// slash-separated) out of the build context.
func ignored(patterns []ignorePattern, rel string) bool {
	excluded := false
	for _, p := range patterns {
		if p.matches(rel) {
			excluded = !p.negate
		}
	}
	return excluded
}

func (p ignorePattern) matches(rel string) bool {
	for q := rel; q != "." && q != "/" && q != ""; q = filepath.Dir(q) {
		if ok, _ := filepath.Match(p.pattern, q); ok {
			return true
		}
	}
	return false
}

// ---- Debian packages ----

// packageOfFile maps a file to the Debian package that ships it (dpkg -S),
// trying the merged-/usr twins of the path too.
func packageOfFile(t testing.TB, file string) string {
	t.Helper()
	cands := []string{file}
	if real, err := filepath.EvalSymlinks(file); err == nil && real != file {
		cands = append(cands, real)
	}
	for _, c := range append([]string(nil), cands...) {
		if strings.HasPrefix(c, "/usr/") {
			cands = append(cands, strings.TrimPrefix(c, "/usr"))
		} else {
			cands = append(cands, "/usr"+c)
		}
	}
	for _, c := range cands {
		out, err := exec.Command("dpkg", "-S", c).Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "diversion ") {
				continue
			}
			i := strings.Index(line, ": ")
			if i < 0 {
				continue
			}
			pkg := strings.TrimSpace(strings.Split(line[:i], ",")[0])
			return strings.SplitN(pkg, ":", 2)[0]
		}
	}
	t.Fatalf("dpkg -S: no Debian package ships %s (tried %s)", file, strings.Join(cands, ", "))
	return ""
}

// packageDepends lists a package's hard dependencies (Pre-Depends and
// Depends) that name one package; a group of alternatives guarantees none of
// its members in particular and is left out. Installed packages are read
// with dpkg-query, others with apt-cache.
func packageDepends(pkg string) ([]string, error) {
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${Status}\n${Pre-Depends}, ${Depends}", pkg).Output(); err == nil {
		lines := strings.SplitN(string(out), "\n", 2)
		if strings.HasSuffix(lines[0], " installed") && len(lines) == 2 {
			return parseDependsField(lines[1]), nil
		}
	}
	out, err := exec.Command("apt-cache", "depends", "--no-recommends", "--no-suggests",
		"--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", pkg).Output()
	if err != nil {
		return nil, fmt.Errorf("neither dpkg nor apt-cache knows package %s", pkg)
	}
	var deps []string
	inAlternatives := false
	for _, line := range strings.Split(string(out), "\n")[1:] {
		alt := strings.HasPrefix(line, " |")
		line = strings.TrimSpace(strings.TrimPrefix(line, " |"))
		if !strings.HasPrefix(line, "Depends:") && !strings.HasPrefix(line, "PreDepends:") {
			continue
		}
		name := strings.TrimSpace(line[strings.Index(line, ":")+1:])
		if !alt && !inAlternatives && !strings.HasPrefix(name, "<") {
			deps = append(deps, strings.SplitN(name, ":", 2)[0])
		}
		inAlternatives = alt
	}
	if len(deps) == 0 && !bytes.Contains(out, []byte(pkg)) {
		return nil, fmt.Errorf("apt-cache does not know package %s", pkg)
	}
	return deps, nil
}

// parseDependsField parses a Depends line such as
// "libc6 (>= 2.34), libgnutls30 (>= 3.7.3), libx | liby".
func parseDependsField(field string) []string {
	var deps []string
	for _, part := range strings.Split(field, ",") {
		part = strings.TrimSpace(part)
		if part == "" || strings.Contains(part, "|") {
			continue
		}
		name := strings.Fields(part)[0]
		deps = append(deps, strings.SplitN(name, ":", 2)[0])
	}
	return deps
}

// dependencyClosure: the packages and everything they depend on, recursively.
func dependencyClosure(t testing.TB, roots []string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	queue := append([]string(nil), roots...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		deps, err := packageDepends(p)
		if err != nil {
			t.Fatalf("%v", err)
		}
		queue = append(queue, deps...)
	}
	return seen
}

// lddLibraries lists the shared libraries a binary loads (resolved paths).
func lddLibraries(t testing.TB, bin string) []string {
	t.Helper()
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("ldd %s: %v\n%s", bin, err, out)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.Contains(line, "not found"):
			t.Fatalf("ldd %s: %s", bin, line)
		case strings.Contains(line, "=> "):
			f := strings.Fields(line[strings.Index(line, "=> ")+3:])
			if len(f) > 0 && strings.HasPrefix(f[0], "/") {
				libs = append(libs, f[0])
			}
		case strings.HasPrefix(line, "/"):
			libs = append(libs, strings.Fields(line)[0]) // the dynamic loader
		}
	}
	if len(libs) == 0 {
		t.Fatalf("ldd %s listed no libraries:\n%s", bin, out)
	}
	return libs
}
