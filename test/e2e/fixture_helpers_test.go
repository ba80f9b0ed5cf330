package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fixture is one pod as the apiserver sends it, with what the webhook must
// do to it.
type fixture struct {
	file      string
	name      string
	namespace string
	object    obj
	expect    expectation
}

// expectation is a fixture's "expect" block. A field left out of the block
// is not checked; a JSON null is checked as "absent".
type expectation struct {
	Mutated          *bool                         `json:"mutated"`
	Profile          json.RawMessage               `json:"profile"`
	TargetContainers *[]string                     `json:"targetContainers"`
	Env              map[string]map[string]*string `json:"env"`
	SchedulerName    json.RawMessage               `json:"schedulerName"`
	ShmVolume        json.RawMessage               `json:"shmVolume"`
	RdmaResource     json.RawMessage               `json:"rdmaResource"`
	IPCLock          *bool                         `json:"ipcLock"` // false: no target container has IPC_LOCK
	Warnings         *[]string                     `json:"warnings"`
	// container -> the /etc/nccl.conf it reads (through its mount, the
	// downwardAPI volume and the annotation); null: no such mount.
	NcclConf map[string]*string `json:"ncclConf"`
}

// rdmaResource is the expect block's {"container", "name", "value"}.
type rdmaResource struct {
	Container string `json:"container"`
	Name      string `json:"name"`
	Value     string `json:"value"`
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	local := globFixtures(t, localPodsGlob)
	if len(local) == 0 {
		t.Fatalf("no fixtures at %s", localPodsGlob)
	}
	var out []fixture
	for _, f := range local {
		out = append(out, loadFixture(t, f, "local/"))
	}
	return out
}

// valgrindSample is fixtures, or under valgrind every n-th of them. For
// tests that run the binary once per fixture to compare outputs: under
// memcheck each run costs seconds, and the per-fixture paths are memchecked
// anyway, every fixture, by TestFixtures (serve) and by
// TestMutateOfflineYAMLStream (all of them through one mutate); the sample
// keeps the test's own path (its flags, its input form) memchecked.
func valgrindSample(fixtures []fixture, n int) []fixture {
	if !underValgrind() {
		return fixtures
	}
	var out []fixture
	for i, f := range fixtures {
		if i%n == 0 {
			out = append(out, f)
		}
	}
	return out
}

func globFixtures(t testing.TB, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

func loadFixture(t testing.TB, file, prefix string) fixture {
	t.Helper()
	doc, err := readJSONFile(file)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	base := strings.TrimSuffix(filepath.Base(file), ".json")
	f := fixture{file: file, name: prefix + base}
	f.object = pathObj(doc, "object")
	if f.object == nil {
		t.Fatalf("fixture %s: no \"object\"", file)
	}
	f.namespace, _ = pathStr(doc, "namespace")
	if f.namespace == "" {
		f.namespace, _ = pathStr(f.object, "metadata", "namespace")
	}
	f.expect = fixtureExpectation(t, file, doc)
	return f
}

func fixtureExpectation(t testing.TB, file string, doc obj) expectation {
	t.Helper()
	raw, has := doc["expect"]
	if !has {
		t.Fatalf("fixture %s: no \"expect\" block", file)
	}
	return parseExpectation(t, file, mustMarshal(raw))
}

func parseExpectation(t testing.TB, file string, src []byte) expectation {
	t.Helper()
	var e expectation
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("fixture %s: bad expect block: %v", file, err)
	}
	return e
}

// optionalString reads a field that is absent (set=false), null, or a string.
func optionalString(raw json.RawMessage) (value *string, set bool, err error) {
	if len(raw) == 0 {
		return nil, false, nil
	}
	if string(raw) == "null" {
		return nil, true, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, true, fmt.Errorf("expected a string or null, got %s", raw)
	}
	return &s, true, nil
}

func optionalRdma(raw json.RawMessage) (value *rdmaResource, set bool, err error) {
	if len(raw) == 0 {
		return nil, false, nil
	}
	if string(raw) == "null" {
		return nil, true, nil
	}
	var r rdmaResource
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, true, fmt.Errorf("expected {container,name,value} or null, got %s", raw)
	}
	return &r, true, nil
}
