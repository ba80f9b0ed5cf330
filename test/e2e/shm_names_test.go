package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestShmVolumeNamesNeverDuplicated: a pod that already holds every name
// the /dev/shm volume may take (rdma-webhook-shm, -1 .. -999) got a second
// volume of one of them, a pod the apiserver refuses; it now gets no volume
// and a warning. With one name free, that one. Every patched pod has
// distinct volume names.
func TestShmVolumeNamesNeverDuplicated(t *testing.T) {
	t.Parallel()
	for _, free := range []int{-1, 500} {
		free := free
		t.Run(fmt.Sprintf("free %d", free), func(t *testing.T) {
			t.Parallel()
			pod := trainingPod(8)
			var vols []interface{}
			for i := 0; i < 1000; i++ {
				name := "rdma-webhook-shm"
				if i > 0 {
					name = fmt.Sprintf("rdma-webhook-shm-%d", i)
				}
				if i != free {
					vols = append(vols, obj{"name": name, "emptyDir": obj{}})
				}
			}
			pod["spec"].(obj)["volumes"] = vols
			rr := srv.review(t, podCreate("kubeflow", pod))
			patched := applyPatch(t, pod, rr.patch)
			seen := map[string]bool{}
			var shm string
			for _, v := range patched["spec"].(obj)["volumes"].([]interface{}) {
				name, _ := v.(obj)["name"].(string)
				if seen[name] {
					t.Errorf("volume name %q appears twice", name)
				}
				seen[name] = true
			}
			mounts, _ := containerByName(patched, "pytorch")["volumeMounts"].([]interface{})
			for _, m := range mounts {
				if m.(obj)["mountPath"] == "/dev/shm" {
					shm, _ = m.(obj)["name"].(string)
				}
			}
			warned := strings.Contains(strings.Join(rr.warnings, "\n"), "free a name for /dev/shm")
			if free < 0 && (shm != "" || !warned || len(seen) != 1000) {
				t.Errorf("every name taken: want no volume, no mount and a warning; got mount of %q, %d volumes, warnings %q", shm, len(seen), rr.warnings)
			}
			if want := fmt.Sprintf("rdma-webhook-shm-%d", free); free >= 0 && (shm != want || warned || len(seen) != 1000) {
				t.Errorf("one name free: want a mount of %q; got %q, %d volumes, warnings %q", want, shm, len(seen), rr.warnings)
			}
		})
	}
}
