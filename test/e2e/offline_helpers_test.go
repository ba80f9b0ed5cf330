package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	err := cmd.Run()
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
