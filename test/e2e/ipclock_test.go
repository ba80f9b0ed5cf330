package e2e

import (
	"strings"
	"testing"
)

// TestKubeAPIIPCLockSwitches: the admins' switches of IPC_LOCK, for policies
// other than Pod Security that refuse added capabilities (issue 22, item 2),
// served over TLS with the Namespaces of the fake API. The namespace label
// rdma-webhook.io/ipc-lock=false leaves IPC_LOCK out of its pods, read with
// the one Namespace GET Pod Security and report mode share; --ipc-lock=never
// leaves it out everywhere. Neither gives a warning, and the rest of the
// mutation stays. An unread Namespace leaves it out with Pod Security's
// warning, as before; "true" or another namespace's pods are as before.
func TestKubeAPIIPCLockSwitches(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNamespace("ipc-off", map[string]string{"rdma-webhook.io/ipc-lock": "false"})
	a.putNamespace("ipc-off-warn", map[string]string{"rdma-webhook.io/ipc-lock": "false",
		"pod-security.kubernetes.io/warn": "restricted"})
	a.putNamespace("ipc-on", map[string]string{"rdma-webhook.io/ipc-lock": "true"})
	a.putNamespace("ipc-plain", nil)
	a.putNamespace("ipc-typo", map[string]string{"rdma-webhook.io/ipc-lock": "no"})
	a.putNamespace("ipc-broken", nil)
	a.setFailure("/api/v1/namespaces/ipc-broken", 500)
	auto := startLookupInstance(t, a)
	never := startLookupInstance(t, a, "--ipc-lock", "never")
	cases := []struct {
		name string
		in   *instance
		ns   string
		ipc  bool
		warn string // the one warning, containing it; "" none
	}{
		{"label-false", auto, "ipc-off", false, ""},
		{"label-false-over-psa-warn", auto, "ipc-off-warn", false, ""},
		{"label-true", auto, "ipc-on", true, ""},
		{"no-label", auto, "ipc-plain", true, ""},
		{"label-typo", auto, "ipc-typo", true,
			`label namespace "ipc-typo" rdma-webhook.io/ipc-lock=false|true ("no" ignored)`},
		{"unread", auto, "ipc-broken", false, "check the webhook can read namespaces: Pod Security level unknown"},
		{"flag-never", never, "ipc-plain", false, ""},
		{"flag-never-label-true", never, "ipc-on", false, ""},
		{"flag-never-unread", never, "ipc-broken", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := trainingPod(8)
			rr := c.in.review(t, podCreate(c.ns, pod))
			patched := applyPatch(t, pod, rr.patch)
			if got := hasIPCLock(patched); got != c.ipc {
				t.Errorf("IPC_LOCK added: %v, want %v (warnings %q)", got, c.ipc, rr.warnings)
			}
			var relevant []string
			for _, w := range rr.warnings {
				if strings.Contains(w, "IPC_LOCK") || strings.Contains(w, "ipc-lock") {
					relevant = append(relevant, w)
				}
			}
			if c.warn == "" && len(relevant) != 0 {
				t.Errorf("unexpected warnings %q", relevant)
			}
			if c.warn != "" && (len(relevant) != 1 || !strings.Contains(relevant[0], c.warn)) {
				t.Errorf("expected one warning with %q, got %q", c.warn, rr.warnings)
			}
			expectRestOf8CardMutation(t, hcaOf(t, "roce-8card"), rr, patched)
		})
	}
}

// TestIPCLockFlagRefused: --ipc-lock takes auto or never.
func TestIPCLockFlagRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"serve", "--ipc-lock", "false"}, {"mutate", "--ipc-lock", "off"}} {
		res := runBinary(t, nil, args...)
		if res.exitCode != 2 || !strings.Contains(string(res.stderr), "--ipc-lock takes auto or never") {
			t.Errorf("rdma-webhook %s: exit %d, stderr %q; want 2 and the allowed values",
				strings.Join(args, " "), res.exitCode, res.stderr)
		}
	}
}
