package realcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestApplyProfilesScript: test/cluster/apply-profiles.sh, as the README's
// "Try it" has a user run it, serves a new profiles file to the next pod
// and keeps the label that has later edits checked; a file check-profiles
// refuses is not applied. The refusal of a bad version applied server-side,
// as docs/install.md recommends, is the webhook's lines and no patch.
// `webhook.sh restart` brings the webhook back with the same profiles.
func TestApplyProfilesScript(t *testing.T) {
	ns := newNamespace(t, nil)
	cm := profilesConfigMap(t)
	original := cm.Data["profiles.json"]
	file := filepath.Join(t.TempDir(), "profiles.json")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		write(original)
		if err := script("apply-profiles.sh", nil, file, clusterDir); err != nil {
			t.Errorf("restoring the shipped profiles: %v", err)
		}
		waitFor(t, 10*time.Second, "the shipped profiles to serve again", shippedServing(t, ns))
	})

	write(withHCA(t, original, []string{"mlx5_31", "mlx5_32"}))
	if err := script("apply-profiles.sh", nil, file, clusterDir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the applied file in the next pod", func() (bool, string) {
		got := dryRunHCA(t, ns)
		return got == "=mlx5_31,mlx5_32", got
	})
	if l := profilesConfigMap(t).Labels["rdma-webhook.io/profiles"]; l != "true" {
		t.Errorf("after apply-profiles.sh the ConfigMap's label rdma-webhook.io/profiles is %q, want true", l)
	}

	bad := strings.Replace(original, `"NCCL_IB_TIMEOUT": "22"`, `"NCCL_IB_TIMEOUT": "40"`, 1)
	write(bad)
	if err := script("apply-profiles.sh", nil, file, clusterDir); err == nil {
		t.Error("apply-profiles.sh of a file check-profiles refuses succeeded")
	}
	if got := dryRunHCA(t, ns); got != "=mlx5_31,mlx5_32" {
		t.Errorf("after a refused file, NCCL_IB_HCA %q; want the applied =mlx5_31,mlx5_32", got)
	}

	_, stderr, err := kubectl(profilesDoc(t, cm, bad), "apply", "--server-side", "-f", "-")
	if err == nil {
		t.Fatal("a server-side apply of an invalid profiles version succeeded")
	}
	t.Logf("server-side apply of a refused version (%d bytes):\n%s", len(stderr), stderr)
	// docs/install.md shows exactly this (test/e2e checks the webhook's
	// part of it against the binary; this, kubectl's and the apiserver's).
	if want := docsOutputBlock(t, "docs/install.md", "profiles-edit-refused"); strings.TrimSpace(stderr) != want {
		t.Errorf("a refused server-side apply printed:\n%s\nwhich is not what docs/install.md shows:\n%s", stderr, want)
	}

	if err := script("webhook.sh", webhookEnv, "restart", clusterDir); err != nil {
		t.Fatal(err)
	}
	if got := dryRunHCA(t, ns); got != "=mlx5_31,mlx5_32" {
		t.Errorf("after webhook.sh restart, NCCL_IB_HCA %q; want the applied =mlx5_31,mlx5_32", got)
	}
}

// docsOutputBlock is the text of the fenced block after the marker
// <!-- output: NAME --> in a document of the repository.
func docsOutputBlock(t *testing.T, doc, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "<!-- output: "+name+" -->\n")
	if !ok {
		t.Fatalf("%s has no marker <!-- output: %s -->", doc, name)
	}
	lines := strings.Split(after, "\n")
	var body []string
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "```" {
			return strings.Join(body, "\n")
		}
		body = append(body, l)
	}
	t.Fatalf("%s: the block after <!-- output: %s --> is not closed", doc, name)
	return ""
}
