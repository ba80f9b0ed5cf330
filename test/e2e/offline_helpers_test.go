package e2e

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
)

// cmdResult is a finished run of the binary.
type cmdResult struct {
	stdout   []byte
	stderr   []byte
	exitCode int
}

// runBinary runs the webhook binary with args and optional stdin.
func runBinary(t testing.TB, stdin []byte, args ...string) cmdResult {
	t.Helper()
	cmd := exec.Command(binaryPath(), args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return finishedRun(t, cmd.Run(), &stdout, &stderr, args)
}

// runBinaryWithin runs the binary with args and env (nil: this process's),
// for a command expected to exit: one still running after limit is killed,
// and exited is false.
func runBinaryWithin(t testing.TB, env []string, limit time.Duration, args ...string) (res cmdResult, exited bool) {
	t.Helper()
	cmd := exec.Command(binaryPath(), args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return finishedRun(t, err, &stdout, &stderr, args), true
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		return finishedRun(t, <-done, &stdout, &stderr, args), false
	}
}

// finishedRun turns a finished command into a cmdResult; a killed one has
// exit code -1.
func finishedRun(t testing.TB, err error, stdout, stderr *bytes.Buffer, args []string) cmdResult {
	t.Helper()
	res := cmdResult{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.exitCode = exit.ExitCode()
	case err != nil:
		t.Fatalf("running %s %s: %v", binaryPath(), strings.Join(args, " "), err)
	}
	checkNoSanitizerReport(t, args, res.stderr)
	return res
}

func checkNoSanitizerReport(t testing.TB, args []string, stderr []byte) {
	t.Helper()
	for _, m := range sanitizerMarkers {
		if bytes.Contains(stderr, []byte(m)) {
			t.Errorf("%s: sanitizer/runtime error report on stderr:\n%s", strings.Join(args, " "), stderr)
			return
		}
	}
}

// mustSucceed runs the binary and decodes its stdout as a JSON object.
func mustSucceed(t testing.TB, stdin []byte, args ...string) obj {
	t.Helper()
	res := runBinary(t, stdin, args...)
	if res.exitCode != 0 {
		t.Fatalf("%s: expected exit 0, got %d\nstderr: %s", strings.Join(args, " "), res.exitCode, res.stderr)
	}
	out, err := decodeObject(res.stdout)
	if err != nil {
		t.Fatalf("%s: stdout is not one JSON object: %v\n%s", strings.Join(args, " "), err, cut(res.stdout))
	}
	return out
}

func writeTemp(t testing.TB, name string, v interface{}) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, mustMarshal(v), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// replicaTemplates returns the PyTorchJob's pod templates by replica type.
func replicaTemplates(job obj) map[string]obj {
	out := map[string]obj{}
	for name, spec := range pathObj(job, "spec", "pytorchReplicaSpecs") {
		if tmpl := pathObj(spec, "template"); tmpl != nil {
			out[name] = tmpl
		}
	}
	return out
}

// templateAsPod wraps a pod template so the Pod schema can check it.
func templateAsPod(tmpl obj) obj {
	meta := pathObj(tmpl, "metadata")
	if meta == nil {
		meta = obj{}
	}
	return obj{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tmpl["spec"]}
}

// kubectlYAML is kubectl's YAML for one object: a writer independent of
// the binary under test.
func kubectlYAML(t testing.TB, o obj) []byte {
	t.Helper()
	return runKubectl(t, mustMarshal(o), "patch", "--local", "-f", "-", "--type", "merge", "-p", "{}", "-o", "yaml")
}

// yamlListItem indents one object's block YAML as an item of "items:".
func yamlListItem(doc []byte) string {
	lines := strings.Split(strings.TrimRight(string(doc), "\n"), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = "- " + lines[i]
		} else {
			lines[i] = "  " + lines[i]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// jsonValues decodes a stream of JSON values printed one after another.
func jsonValues(t testing.TB, data []byte) []interface{} {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []interface{}
	for {
		var v interface{}
		err := dec.Decode(&v)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not a stream of JSON values: %v\n%s", err, cut(data))
		}
		out = append(out, v)
	}
}

// mutateRun runs `mutate --profiles <shipped>` with args on the input.
func mutateRun(t testing.TB, input []byte, args ...string) cmdResult {
	t.Helper()
	file := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(file, input, 0o644); err != nil {
		t.Fatal(err)
	}
	return runBinary(t, nil, append(append([]string{"mutate", "--profiles", profilesPath}, args...), file)...)
}

// offlinePatch is the decoded patch of one offline response (nil: none).
func offlinePatch(t testing.TB, response interface{}) []byte {
	t.Helper()
	o, ok := response.(obj)
	if !ok || o["kind"] != "AdmissionReview" {
		t.Fatalf("expected an AdmissionReview response, got %s", compact(response))
	}
	return decodePatchField(t, pathObj(o, "response"))
}

// servedPod is what the served patch makes of a fixture's pod.
func servedPod(t testing.TB, f fixture) obj {
	t.Helper()
	return applyPatch(t, f.object, srv.review(t, podCreate(f.namespace, copyObject(f.object))).patch)
}
