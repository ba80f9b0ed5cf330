package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
)

// schemaResult is one line of validate.mjs output.
type schemaResult struct {
	Index int     `json:"index"`
	OK    bool    `json:"ok"`
	Error *string `json:"error"`
}

// validateSchemas runs the kubernetes-models validator once on all objects.
func validateSchemas(t testing.TB, objects []interface{}) []schemaResult {
	t.Helper()
	cmd := exec.Command("node", validatorScript)
	cmd.Stdin = bytes.NewReader(mustMarshal(objects))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstderr: %s", validatorScript, err, stderr.Bytes())
	}
	results, err := parseSchemaResults(out)
	if err != nil {
		t.Fatalf("validator output: %v\n%s", err, out)
	}
	if len(results) != len(objects) {
		t.Fatalf("validator: expected %d result lines, got %d:\n%s", len(objects), len(results), out)
	}
	return results
}

func parseSchemaResults(out []byte) ([]schemaResult, error) {
	var results []schemaResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r schemaResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("line %q: %v", sc.Text(), err)
		}
		if r.Index != len(results) {
			return nil, fmt.Errorf("expected index %d, got %d", len(results), r.Index)
		}
		results = append(results, r)
	}
	return results, sc.Err()
}

func (r schemaResult) message() string {
	if r.Error == nil {
		return "(no error message)"
	}
	return *r.Error
}

// namedObject is an object to validate with the name used in failures.
type namedObject struct {
	name string
	obj  interface{}
}

// checkSchemas validates every object in one validator run and reports the
// invalid ones by name.
func checkSchemas(t *testing.T, objects []namedObject) {
	t.Helper()
	if len(objects) == 0 {
		t.Fatal("no objects to validate")
	}
	list := make([]interface{}, len(objects))
	for i, o := range objects {
		list[i] = o.obj
	}
	for i, r := range validateSchemas(t, list) {
		if !r.OK {
			t.Errorf("%s: expected to pass the Kubernetes schema, got: %s", objects[i].name, r.message())
		}
	}
}
