package e2e

// Every example of program output in README.md and docs/*.md is produced by
// the program, here, so that none can go stale.
//
// The rule, for whoever writes docs:
//   - A fenced block that shows what a program prints is tagged `text` (or
//     `console`), and the line before its fence is a marker
//     `<!-- output: NAME -->`; NAME is a generator in docExamples below, which
//     runs the real binary and returns that text (normalising only what
//     varies from run to run: times, ports, uids, temporary paths).
//   - A block of another tag (sh, yaml, json: commands, manifests, profiles)
//     is an input and needs no marker; one that shows output (the README's
//     AdmissionReview response) carries a marker too, and is checked.
//   - Every fenced block has a tag. A `text` block that is not program output
//     (a directory map) says so: `<!-- not-output: WHY -->`.
// TestDocsExamplesAreProgramOutput fails on a block that differs from its
// generator's text, a marker without a generator, a generator no marker
// uses, an untagged block, and a text block with neither marker.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// docExampleFiles are the documents whose examples are checked.
func docExampleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, files...)
}

var (
	docOutputMarker    = regexp.MustCompile(`^\s*<!-- output: ([a-z0-9-]+) -->\s*$`)
	docNotOutputMarker = regexp.MustCompile(`^\s*<!-- not-output: \S.* -->\s*$`)
	docFence           = regexp.MustCompile("^(\\s*)```(.*)$")
)

// docBlock is one fenced block of a document.
type docBlock struct {
	where     string // file:line of the opening fence
	lang      string
	marker    string // the generator the marker names, "" without one
	notOutput bool
	text      string // the lines between the fences, the fence's indentation removed
	indent    string // the fence's indentation
	first     int    // index of the block's first line in the file's lines
	end       int    // index of its closing fence
}

// docBlocks parses the fenced blocks of a Markdown file, with the marker on
// the line before each.
func docBlocks(t *testing.T, file string) []docBlock {
	t.Helper()
	lines := strings.Split(string(readFile(t, file)), "\n")
	name := strings.TrimPrefix(file, repoRoot+"/")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		m := docFence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		b := docBlock{where: fmt.Sprintf("%s:%d", name, i+1), lang: strings.TrimSpace(m[2])}
		if i > 0 {
			if mm := docOutputMarker.FindStringSubmatch(lines[i-1]); mm != nil {
				b.marker = mm[1]
			}
			b.notOutput = docNotOutputMarker.MatchString(lines[i-1])
		}
		indent := m[1]
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if i == len(lines) {
			t.Errorf("%s: a fenced block that is never closed", b.where)
		}
		b.text = strings.Join(body, "\n")
		b.indent, b.first, b.end = indent, i-len(body), i
		out = append(out, b)
	}
	return out
}

// docOutputLangs are the tags of blocks that show program output.
var docOutputLangs = map[string]bool{"text": true, "console": true}

// docExamples are the generators: each returns the text of the blocks its
// marker names, from the real binary.
var docExamples = map[string]func(t *testing.T) string{
	"review-response":         docReviewResponse,
	"review-patch":            docReviewPatch,
	"profiles-edit-refused":   docProfilesEditRefused,
	"nccl-detect-seed-file":   docNcclDetectSeedFile,
	"nccl-detect-seed-log":    docNcclDetectSeedLog,
	"explain-mixed-shared":    docExplainMixedShared,
	"explain-trainjob":        docExplainTrainJob,
	"events-describe-pytorch": docEventsDescribe,
	"lookup-forbidden-log":    docLookupForbidden,
	"report-describe-pod":     docReportDescribePod,
	"report-describe-job":     docReportDescribeJob,
}

// docExamplesUpdate, when set, has TestDocsExamplesAreProgramOutput write
// each marked block's generated text into the document instead of failing:
//
//	DOCS_EXAMPLES_UPDATE=1 go test -run TestDocsExamplesAreProgramOutput .
//
// then read the diff: it is what the docs said wrong.
var docExamplesUpdate = os.Getenv("DOCS_EXAMPLES_UPDATE") != ""

// rewriteDocBlocks replaces the bodies of blocks (of one file) with texts.
func rewriteDocBlocks(t *testing.T, file string, blocks []docBlock, texts []string) {
	t.Helper()
	lines := strings.Split(string(readFile(t, file)), "\n")
	for k := len(blocks) - 1; k >= 0; k-- {
		b := blocks[k]
		var body []string
		for _, l := range strings.Split(texts[k], "\n") {
			if l != "" {
				l = b.indent + l
			}
			body = append(body, l)
		}
		lines = append(lines[:b.first], append(body, lines[b.end:]...)...)
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDocsExamplesAreProgramOutput: see the file's header.
func TestDocsExamplesAreProgramOutput(t *testing.T) {
	t.Parallel()
	used := map[string]bool{}
	checked := 0
	for _, file := range docExampleFiles(t) {
		var stale []docBlock
		var texts []string
		defer func(file string) {
			if len(stale) > 0 {
				rewriteDocBlocks(t, file, stale, texts)
			}
		}(file)
		for _, b := range docBlocks(t, file) {
			switch {
			case b.lang == "":
				t.Errorf("%s: a fenced block without a tag: tag it (sh, yaml, json for inputs; text for output, with a marker)", b.where)
			case b.marker != "":
				gen, ok := docExamples[b.marker]
				if !ok {
					t.Errorf("%s: <!-- output: %s --> names no generator in test/e2e/docs_examples_test.go", b.where, b.marker)
					continue
				}
				used[b.marker] = true
				checked++
				want := strings.TrimRight(gen(t), "\n")
				if b.text != want && docExamplesUpdate {
					stale, texts = append(stale, b), append(texts, want)
					t.Logf("%s: %s rewritten", b.where, b.marker)
				} else if b.text != want {
					t.Errorf("%s: the example %s is not what the program prints now (DOCS_EXAMPLES_UPDATE=1 writes it in).\n--- the document:\n%s\n--- the program:\n%s",
						b.where, b.marker, b.text, want)
				}
			case docOutputLangs[b.lang] && !b.notOutput:
				t.Errorf("%s: a %s block, program output, without <!-- output: NAME --> on the line before "+
					"(or <!-- not-output: WHY --> when it is not output)", b.where, b.lang)
			}
		}
	}
	var unused []string
	for name := range docExamples {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	for _, name := range unused {
		t.Errorf("the generator %s marks no block in README.md or docs/*.md", name)
	}
	if checked < len(docExamples) {
		t.Errorf("%d examples checked, fewer than the %d generators", checked, len(docExamples))
	}
}

// TestDocsExamplesRule: the checker itself, on a document of each kind of
// block, so that a rule that stopped failing would show here.
func TestDocsExamplesRule(t *testing.T) {
	t.Parallel()
	doc := strings.Join([]string{
		"<!-- output: one -->", "```text", "a", "  b", "```",
		"```sh", "make", "```",
		"  <!-- not-output: a map -->", "  ```text", "  x/", "  ```",
		"```text", "unmarked", "```",
		"```", "untagged", "```",
	}, "\n")
	file := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks := docBlocks(t, file)
	if len(blocks) != 5 {
		t.Fatalf("parsed %d blocks, want 5: %+v", len(blocks), blocks)
	}
	want := []docBlock{
		{lang: "text", marker: "one", text: "a\n  b"},
		{lang: "sh", text: "make"},
		{lang: "text", notOutput: true, text: "x/"},
		{lang: "text", text: "unmarked"},
		{lang: "", text: "untagged"},
	}
	for i, w := range want {
		g := blocks[i]
		if g.lang != w.lang || g.marker != w.marker || g.notOutput != w.notOutput || g.text != w.text {
			t.Errorf("block %d: got %+v, want %+v", i, g, w)
		}
	}
}

// exampleReviewResponse is `mutate` of the README's example review: the
// AdmissionReview response, as /mutate sends it.
func exampleReviewResponse(t *testing.T) []byte {
	t.Helper()
	res := runBinary(t, nil, "mutate", "--profiles", filepath.Join(repoRoot, "manifests/profiles.json"),
		filepath.Join(repoRoot, "test/example-review.json"))
	if res.exitCode != 0 {
		t.Fatalf("mutate test/example-review.json: exit %d: %s", res.exitCode, res.stderr)
	}
	return bytes.TrimSpace(res.stdout)
}

// docReviewResponse: the response, its patch cut to 72 characters and the
// fields on lines of their own (README.md, Quick start).
func docReviewResponse(t *testing.T) string {
	raw := string(exampleReviewResponse(t))
	const head = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{`
	if !strings.HasPrefix(raw, head) {
		t.Fatalf("the response does not start with %s: %s", head, raw)
	}
	re := regexp.MustCompile(`"patch":"([A-Za-z0-9+/=]{72})[A-Za-z0-9+/=]*"`)
	raw = re.ReplaceAllString(raw, `"patch":"$1..."`)
	for _, field := range []string{`"uid":`, `"patch":`, `"auditAnnotations":`, `"warnings":`} {
		raw = strings.Replace(raw, field, "\n "+field, 1)
	}
	return raw
}

// docReviewPatch: the same response's patch, decoded, one operation a line.
func docReviewPatch(t *testing.T) string {
	var review struct {
		Response struct {
			Patch string `json:"patch"`
		} `json:"response"`
	}
	if err := json.Unmarshal(exampleReviewResponse(t), &review); err != nil {
		t.Fatal(err)
	}
	patch, err := base64.StdEncoding.DecodeString(review.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	lines := make([]string, len(ops))
	for i, op := range ops {
		lines[i] = string(op)
	}
	return "[" + strings.Join(lines, ",\n ") + "]"
}

// docProfilesEditRefused: what `kubectl apply --server-side` prints when
// /validate-profiles refuses an edit setting NCCL_IB_TIMEOUT 40
// (docs/install.md). kubectl writes "The request is invalid: ", the
// apiserver `admission webhook "NAME" denied the request: `, then comes the
// webhook's message, checked here; the real-cluster suite
// (TestApplyProfilesScript) checks the whole block against kubectl.
func docProfilesEditRefused(t *testing.T) string {
	shipped := string(readFile(t, filepath.Join(repoRoot, "manifests/profiles.json")))
	bad := strings.Replace(shipped, `"NCCL_IB_TIMEOUT": "22"`, `"NCCL_IB_TIMEOUT": "40"`, 1)
	if bad == shipped {
		t.Fatal(`manifests/profiles.json has no "NCCL_IB_TIMEOUT": "22" to change`)
	}
	r := srv.post(t, "/validate-profiles", "application/json", profilesReview(t, "UPDATE", bad))
	if r.status != 200 {
		t.Fatalf("/validate-profiles: HTTP %d: %s", r.status, r.body)
	}
	var review struct {
		Response struct {
			Allowed bool `json:"allowed"`
			Status  struct {
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(r.body, &review); err != nil {
		t.Fatal(err)
	}
	if review.Response.Allowed {
		t.Fatalf("/validate-profiles allowed NCCL_IB_TIMEOUT 40: %s", r.body)
	}
	return `The request is invalid: admission webhook "profiles.rdma-webhook.io" denied the request: ` + review.Response.Status.Message
}

// docNcclDetectSeed runs nccl-detect as the init container does, on the
// cloud provider guide's 8-card node (roce-8card's hca), writing a file
// whose temporary path is shown as the pod's.
func docNcclDetectSeed(t *testing.T) (file, log string) {
	d := newDetectTree(t)
	d.seedNode()
	out := filepath.Join(t.TempDir(), "nccl.conf")
	res := d.detect("--out", out, "--hca", "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8")
	expectExit0(t, res)
	conf, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(conf), strings.ReplaceAll(string(res.stderr), out, "/run/rdma-webhook/nccl.conf")
}

func docNcclDetectSeedFile(t *testing.T) string {
	file, _ := docNcclDetectSeed(t)
	return file
}

func docNcclDetectSeedLog(t *testing.T) string {
	_, log := docNcclDetectSeed(t)
	return log
}

// docExplainMixedShared: mutate --explain of the mixed cluster's example
// pod (testdata/docs/explain-train-0.yaml), as docs/reference.md shows it.
func docExplainMixedShared(t *testing.T) string {
	res := runBinary(t, nil, "mutate", "--explain", "--profiles", mixedProfilesPath,
		filepath.Join("testdata", "docs", "explain-train-0.yaml"))
	if res.exitCode != 0 {
		t.Fatalf("mutate --explain: exit %d: %s", res.exitCode, res.stderr)
	}
	return string(res.stdout)
}

// docExplainTrainJob: mutate --explain of docs/examples/trainjob-torch.yaml
// (a TrainJob with its runtime) and the shipped profiles.
func docExplainTrainJob(t *testing.T) string {
	res := runBinary(t, nil, "mutate", "--explain", "--profiles", profilesPath,
		filepath.Join(repoRoot, "docs", "examples", "trainjob-torch.yaml"))
	if res.exitCode != 0 {
		t.Fatalf("mutate --explain: exit %d: %s", res.exitCode, res.stderr)
	}
	return string(res.stdout)
}

// docEventsDescribe: the Events section of `kubectl describe pytorchjob J`
// after a master and four workers with NCCL_IB_TIMEOUT "022": the Event the
// webhook posted (to the fake apiserver), in kubectl's columns, with its
// age normalised to 2s; the training-operator's own row after it, as the
// operator writes it.
func docEventsDescribe(t *testing.T) string {
	a := startFakeAPI(t)
	in := startLookupInstance(t, a)
	pods := []obj{jobPod("J", "master", 0, 8)}
	for i := 0; i < 4; i++ {
		pods = append(pods, jobPod("J", "worker", i, 8))
	}
	for _, pod := range pods {
		c := pathArr(pod, "spec", "containers")[0].(obj)
		c["env"] = append(c["env"].([]interface{}), obj{"name": "NCCL_IB_TIMEOUT", "value": "022"})
		in.admit(t, pod)
	}
	var ev obj
	deadline := time.Now().Add(seriesWithin)
	for {
		if evs := a.eventsAbout("PyTorchJob", "J"); len(evs) == 1 && seriesCount(evs[0]) == int64(len(pods)) {
			ev = evs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v no one Event counting %d pods on PyTorchJob J; requests:\n%s", seriesWithin, len(pods), a.logSince(0))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return describeEvents(ev, fmt.Sprintf("2s (x%d over 2s)", seriesCount(ev)),
		"Normal\tSuccessfulCreatePod\t2s\tpytorchjob-controller\tCreated pod: J-master-0")
}

// docLookupForbidden: the log line of a Node GET the API refuses (403, the
// ClusterRole not applied), with its time left out and the API's message,
// which names the fake apiserver's user, cut after its status.
func docLookupForbidden(t *testing.T) string {
	const node = "gpu-node-7"
	a := startFakeAPI(t)
	a.putNode(node, map[string]string{"nvidia.com/gpu.count": "8"})
	a.setFailure("/api/v1/nodes/"+node, http.StatusForbidden)
	in := startLookupInstance(t, a)
	mark := in.logMark()
	in.admit(t, nodePod(8, node))
	_, at := in.waitLog(t, mark, 5*time.Second, "about the forbidden Node GET",
		msgIs(lookupFailedMsg, "kind", "Node", "name", node, "status", "403"))
	line := in.logText()[at]
	line = regexp.MustCompile(`"(ts|time)":"[^"]*",`).ReplaceAllString(line, "")
	return regexp.MustCompile(`"error":"403 Forbidden: [^"]*"`).ReplaceAllString(line, `"error":"403 Forbidden: ..."`)
}

// docReportDescribePod: the example review's pod in a namespace labelled
// report, its report annotation as `kubectl describe pod` prints one of
// several lines (the key, then each line indented under it).
func docReportDescribePod(t *testing.T) string {
	out := mustSucceed(t, nil, "mutate", "--profiles", profilesPath, "--namespace-labels", modeLabel+"=report",
		"--patched", exampleReview)
	pod := out
	if req := pathObj(out, "request", "object"); req != nil {
		pod = req
	}
	rep := reportOf(t, pod)
	if rep == nil {
		t.Fatalf("no report on the example pod: %v", compact(pod))
	}
	text := "Annotations:      " + reportAnnotation + ":"
	for _, l := range rep.lines {
		text += "\n                    " + l
	}
	return text
}

// docReportDescribeJob: the RDMAReport Event that serve sends for a job's
// worker in a namespace labelled report, as `kubectl describe pytorchjob`
// lists it above the controller's own Events (those two lines are the
// training-operator's, as the real-cluster suite's TestReportMode saw them).
func docReportDescribeJob(t *testing.T) string {
	a := startFakeAPI(t)
	a.putNamespace(jobNS, map[string]string{modeLabel: "report"})
	in := startLookupInstance(t, a)
	in.admit(t, jobPod("report-job", "worker", 0, 8))
	var ev obj
	for deadline := time.Now().Add(seriesWithin); ev == nil; time.Sleep(20 * time.Millisecond) {
		for _, e := range a.eventsAbout("PyTorchJob", "report-job") {
			if e["reason"] == "RDMAReport" {
				ev = e
			}
		}
		if ev == nil && time.Now().After(deadline) {
			t.Fatalf("after %v no RDMAReport Event on PyTorchJob report-job; requests:\n%s", seriesWithin, a.logSince(0))
		}
	}
	return describeEvents(ev, "0s",
		"Normal\tSuccessfulCreatePod\t1s\tpytorchjob-controller\tCreated pod: report-job-worker-0",
		"Normal\tSuccessfulCreateService\t1s\tpytorchjob-controller\tCreated service: report-job-worker-0")
}

// describeEvents is the Events table of `kubectl describe`: ev (with age
// in its Age column), then the other rows, tab-separated, as a controller
// wrote them.
func describeEvents(ev obj, age string, rows ...string) string {
	typ, _ := pathStr(ev, "type")
	reason, _ := pathStr(ev, "reason")
	from, _ := pathStr(ev, "reportingController")
	note, _ := pathStr(ev, "note")
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "  Type\tReason\tAge\tFrom\tMessage")
	fmt.Fprintln(w, "  ----\t------\t----\t----\t-------")
	fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", typ, reason, age, from, note)
	for _, r := range rows {
		fmt.Fprintln(w, "  "+r)
	}
	w.Flush()
	var out []string
	for _, l := range strings.Split("Events:\n"+b.String(), "\n") {
		out = append(out, strings.TrimRight(l, " "))
	}
	return strings.Join(out, "\n")
}
