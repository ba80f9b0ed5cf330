package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
