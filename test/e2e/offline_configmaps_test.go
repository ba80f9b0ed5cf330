package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMutateOfflineConfigMapsOfTheInput: the ConfigMaps in mutate's input
// answer the pods' envFrom as the API answers serve, so that the offline
// patch is the one serve gives with those ConfigMaps in the cluster (the
// user's NCCL_IB_HCA kept, NCCL_IB_DISABLE=1 respected, a ConfigMap without
// NCCL keys declaring nothing); a ConfigMap the input lacks stays unknown,
// with the warning serve gives without the API. The ConfigMap may come after
// the pod.
func TestMutateOfflineConfigMapsOfTheInput(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	cms := map[string]map[string]string{
		"user-hca": {"NCCL_IB_HCA": "=mlx5_0"},
		"tcp":      {"NCCL_IB_DISABLE": "1"},
		"other":    {"LOG_LEVEL": "debug"},
	}
	for name, data := range cms {
		a.putConfigMap(jobNS, name, data)
	}
	in := startLookupInstance(t, a)
	for name, data := range cms {
		t.Run(name, func(t *testing.T) {
			r := podCreate(jobNS, envFromPod(configMapRef(name, "")))
			served := in.review(t, r)
			cm := obj{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": obj{"name": name, "namespace": jobNS}, "data": toAnyMap(data)}
			file := filepath.Join(t.TempDir(), "in.yaml")
			// YAML (a JSON value first would be read as one JSON document).
			text := "# the review, then the ConfigMap it names\n" + string(mustMarshal(r.body())) + "\n---\n" + string(mustMarshal(cm)) + "\n"
			if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			res := runBinary(t, nil, "mutate", "--profiles", profilesPath, file)
			if res.exitCode != 0 {
				t.Fatalf("exit %d: %s", res.exitCode, res.stderr)
			}
			offline := parseReview(t, res.stdout, r)
			if !samePatch(offline.patch, served.patch) {
				t.Errorf("offline patch differs from serve's with the ConfigMap in the API\nserve   %s\noffline %s",
					served.patch, offline.patch)
			}
			if !strings.Contains(string(res.stderr), "left as it is: its data answers the envFrom") {
				t.Errorf("stderr does not say the ConfigMap was read:\n%s", res.stderr)
			}
		})
	}
	// Not in the input: unknown, as serve without the API.
	res := runBinary(t, nil, "mutate", "--profiles", profilesPath, "--patched", writeTemp(t, "pod.json", envFromPod(configMapRef("elsewhere", ""))))
	if res.exitCode != 0 || !strings.Contains(string(res.stderr), `move NCCL_* of ConfigMap "elsewhere"`) {
		t.Errorf("a ConfigMap not in the input: expected exit 0 and the unknown-ConfigMap warning, got %d: %s", res.exitCode, res.stderr)
	}
}

func toAnyMap(m map[string]string) obj {
	out := obj{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestMutateOfflineManyConfigMapsIsLinear: mutate finds each envFrom
// ConfigMap of its input through an index by namespace/name, not a scan of
// every ConfigMap for each variable × source × container (issue 28, item
// 9: 30,000 one-key ConfigMaps and a pod of 50 containers × 64 envFrom
// sources took about 30 s). Here 90,000 ConfigMaps and 64 × 64 references
// to the last ones: a scan compares about 10^10 names (minutes), the index
// answers in about a second; the bound is only a guard against that scan.
// The ConfigMaps are read (every container keeps its own NCCL_IB_HCA from
// the one that sets it) and the pod is mutated.
func TestMutateOfflineManyConfigMapsIsLinear(t *testing.T) {
	t.Parallel()
	const configMaps, containers, refs = 90000, 64, 64
	items := make([]interface{}, 0, configMaps+1)
	for i := 0; i < configMaps; i++ {
		data := obj{"LOG_LEVEL": "debug"}
		if i == configMaps-1 {
			data = obj{"NCCL_IB_HCA": "=mlx5_0"}
		}
		items = append(items, obj{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": obj{"name": fmt.Sprintf("cm-%d", i), "namespace": jobNS}, "data": data})
	}
	names := make([]string, refs)
	for j := range names {
		names[j] = fmt.Sprintf("cm-%d", configMaps-1-j)
	}
	pod := envFromPodOf(containers, refs, names)
	pathObj(pod, "metadata")["namespace"] = jobNS
	items = append(items, pod)
	file := writeTemp(t, "many.json", obj{"apiVersion": "v1", "kind": "List", "items": items})

	start := time.Now()
	res, exited := runBinaryWithin(t, nil, 60*time.Second, "mutate", "--profiles", profilesPath, "--patched", file)
	took := time.Since(start)
	if !exited {
		t.Fatalf("mutate of %d ConfigMaps and %d × %d envFrom sources still running after %v: a scan per lookup?", configMaps, containers, refs, took)
	}
	t.Logf("mutate took %v", took)
	if res.exitCode != 0 {
		t.Fatalf("exit %d: %.2000s", res.exitCode, res.stderr)
	}
	var out obj
	if err := json.Unmarshal(res.stdout, &out); err != nil {
		t.Fatalf("output is not one JSON value: %v", err)
	}
	var patched obj
	for _, it := range pathArr(out, "items") {
		if o, _ := it.(obj); o["kind"] == "Pod" {
			patched = o
		}
	}
	if patched == nil {
		t.Fatal("no Pod in the output")
	}
	for _, c := range pathArr(patched, "spec", "containers") {
		env := map[string]bool{}
		for _, e := range pathArr(c, "env") {
			env[e.(obj)["name"].(string)] = true
		}
		name := c.(obj)["name"]
		if env["NCCL_IB_HCA"] {
			t.Errorf("container %v: NCCL_IB_HCA added although its envFrom ConfigMap sets it", name)
		}
		if !env["NCCL_IB_TIMEOUT"] {
			t.Errorf("container %v: NCCL_IB_TIMEOUT not added: the pod was not mutated", name)
		}
	}
}
