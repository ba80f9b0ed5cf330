package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const (
	gpu8Fixture = "../pods/100-gpu8-master.json"
	// pickUpWithin is how soon a new profiles version must be serving.
	pickUpWithin = 2 * time.Second
	// bigInterval keeps the re-check timer out of a test, so that only
	// inotify (or a signal) can explain a reload.
	bigInterval = "60000"
)

// profilesWithHCA is manifests/profiles.json with roce-8card's hca list
// replaced, and its NCCL_IB_HCA value.
func profilesWithHCA(t testing.TB, hca ...string) ([]byte, string) {
	t.Helper()
	doc := copyObject(loadProfiles(t).doc)
	list := make([]interface{}, len(hca))
	for i, h := range hca {
		list[i] = h
	}
	p := profileIn(t, doc, "roce-8card")
	p["hca"] = list
	return mustMarshal(doc), hcaValue(list)
}

// profilesBadTimeout is a valid JSON document that fails validation:
// roce-8card's env sets NCCL_IB_TIMEOUT "40" (NCCL takes 1..31).
func profilesBadTimeout(t testing.TB) []byte {
	t.Helper()
	doc := copyObject(loadProfiles(t).doc)
	profileIn(t, doc, "roce-8card")["env"] = obj{"NCCL_IB_TIMEOUT": "40"}
	return mustMarshal(doc)
}

func profileIn(t testing.TB, doc obj, name string) obj {
	t.Helper()
	for _, p := range pathArr(doc, "profiles") {
		if n, _ := pathStr(p, "name"); n == name {
			return p.(obj)
		}
	}
	t.Fatalf("profile %q is not in %s", name, profilesPath)
	return nil
}

// shippedHCA is roce-8card's NCCL_IB_HCA in manifests/profiles.json.
func shippedHCA(t testing.TB) string {
	t.Helper()
	return loadProfiles(t).envFor(t, "roce-8card", false)["NCCL_IB_HCA"]
}

func shippedProfiles(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeByRename writes a temporary file next to path and renames it over
// path (what editors, `kubectl cp` and config tools do).
func writeByRename(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// writeInPlace truncates and rewrites path, keeping its inode.
func writeInPlace(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// configMapVolume lays out a directory as the kubelet does for a
// ConfigMap volume (atomic_writer.go): the data in a timestamped directory,
// "..data" a symlink to it, and each key a symlink "KEY -> ..data/KEY".
type configMapVolume struct {
	dir     string
	key     string
	version int
	current string // the timestamped directory ..data points to
}

func newConfigMapVolume(t testing.TB, key string, data []byte) *configMapVolume {
	t.Helper()
	v := &configMapVolume{dir: t.TempDir(), key: key}
	v.update(t, data)
	if err := os.Symlink(filepath.Join("..data", key), v.path()); err != nil {
		t.Fatal(err)
	}
	return v
}

// path is what the pod sees: DIR/KEY.
func (v *configMapVolume) path() string { return filepath.Join(v.dir, v.key) }

// update swaps in a new version as the kubelet does: write a new
// timestamped directory, point "..data_tmp" at it, rename it over
// "..data", then remove the old directory.
func (v *configMapVolume) update(t testing.TB, data []byte) {
	t.Helper()
	v.version++
	ts := fmt.Sprintf("..2026_01_02_15_04_05.%09d", v.version)
	if err := os.Mkdir(filepath.Join(v.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.dir, ts, v.key), data, 0o644); err != nil {
		t.Fatal(err)
	}
	tmpLink := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(ts, tmpLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmpLink, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if v.current != "" {
		if err := os.RemoveAll(filepath.Join(v.dir, v.current)); err != nil {
			t.Fatal(err)
		}
	}
	v.current = ts
}

// gpu8Review is the review of test/pods/100-gpu8-master.json (an 8-GPU
// PyTorchJob master, profile roce-8card).
func gpu8Review(t testing.TB) reviewRequest {
	t.Helper()
	f := loadFixture(t, gpu8Fixture, "local/")
	return podCreate(f.namespace, f.object)
}

// hca posts the 8-GPU review and returns the NCCL_IB_HCA its patch gives
// the pytorch container ("" when the pod is not patched or has none).
func (in *instance) hca(t testing.TB) string {
	t.Helper()
	r := gpu8Review(t)
	rr := in.review(t, r)
	patched := applyPatch(t, r.object.(obj), rr.patch)
	for _, e := range envEntries(containerByName(patched, "pytorch"), "NCCL_IB_HCA") {
		v, _ := pathStr(e, "value")
		return v
	}
	return ""
}

// requireHCA fails unless the 8-GPU review gets want right now.
func (in *instance) requireHCA(t testing.TB, want, when string) {
	t.Helper()
	if got := in.hca(t); got != want {
		t.Fatalf("%s: expected NCCL_IB_HCA %q, got %q", when, want, got)
	}
}

// waitHCA polls with reviews until the 8-GPU pod gets want, and fails
// unless that happens within pickUpWithin of since (when the file was
// changed). It returns how long the change took to show.
func (in *instance) waitHCA(t testing.TB, want string, since time.Time, what string) time.Duration {
	t.Helper()
	return in.waitHCAAfter(t, want, since, pickUpWithin, what)
}

// holdHCA requires every review for d to keep getting want (the old
// version keeps serving while a bad one is on disk).
func (in *instance) holdHCA(t testing.TB, want string, d time.Duration, what string) {
	t.Helper()
	end := time.Now().Add(d)
	n := 0
	for time.Now().Before(end) {
		if got := in.hca(t); got != want {
			t.Fatalf("%s: review %d: expected the previous NCCL_IB_HCA %q to keep serving, got %q",
				what, n, want, got)
		}
		n++
		time.Sleep(50 * time.Millisecond)
	}
	if n == 0 {
		t.Fatalf("%s: no review was made", what)
	}
}

// waitStatus polls fn until it returns want, within d.
func waitStatus(t testing.TB, d time.Duration, what string, want int, fn func() int) time.Duration {
	t.Helper()
	start := time.Now()
	last := 0
	for {
		if last = fn(); last == want {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("%s: expected %d within %v, still %d", what, want, d, last)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// linkedProfiles writes the shipped profiles to target and returns it with
// link, a symlink to it in another directory: rewriting target in place
// makes no inotify event where serve watches link.
func linkedProfiles(t *testing.T) (target, link string) {
	t.Helper()
	target = filepath.Join(t.TempDir(), "real-profiles.json")
	writeInPlace(t, target, shippedProfiles(t))
	link = filepath.Join(t.TempDir(), "profiles.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return target, link
}

// startOnShippedCopy starts an instance on a copy of the shipped profiles
// (file, which the test then rewrites), rereading it every intervalMS, and
// waits until it serves them.
func startOnShippedCopy(t *testing.T, intervalMS string) (*instance, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "profiles.json")
	writeInPlace(t, file, shippedProfiles(t))
	in := startInstance(t, file, "--reload-interval-ms", intervalMS)
	in.requireHCA(t, shippedHCA(t), "at start")
	return in, file
}
