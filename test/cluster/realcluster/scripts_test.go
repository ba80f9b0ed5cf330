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
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	t.Logf("server-side apply of a refused version (%d bytes):\n%s", len(stderr), stderr)
	if !strings.Contains(stderr, `admission webhook "profiles.rdma-webhook.io" denied the request: profiles.json is not valid:`) ||
		!strings.Contains(stderr, "NCCL_IB_TIMEOUT=40: use 1..31") || len(lines) > 3 {
		t.Errorf("a refused server-side apply: want the webhook's lines and nothing else, got %d lines:\n%s", len(lines), stderr)
	}

	if err := script("webhook.sh", webhookEnv, "restart", clusterDir); err != nil {
		t.Fatal(err)
	}
	if got := dryRunHCA(t, ns); got != "=mlx5_31,mlx5_32" {
		t.Errorf("after webhook.sh restart, NCCL_IB_HCA %q; want the applied =mlx5_31,mlx5_32", got)
	}
}
