package e2e

import (
	"strconv"
	"strings"
	"testing"
)

// capabilitiesAdd is the securityContext.capabilities.add of container
// name in pod.
func capabilitiesAdd(pod obj, name string) []string {
	c := containerByName(pod, name)
	sc, _ := c["securityContext"].(map[string]interface{})
	caps, _ := sc["capabilities"].(map[string]interface{})
	add, _ := caps["add"].([]interface{})
	return stringList(add)
}

func hasIPCLock(pod obj) bool {
	for _, c := range capabilitiesAdd(pod, "pytorch") {
		if c == "IPC_LOCK" {
			return true
		}
	}
	return false
}

// TestKubeAPIPodSecurity: the webhook reads the Namespace's Pod Security
// labels through the API: IPC_LOCK is left out where enforce is baseline or
// restricted (or not a level, which Pod Security reads as restricted) and
// where the Namespace cannot be read, with a warning counted as
// pod_security; it is added, with a warning, where only warn or audit
// forbid it; it is added silently under privileged; the rest of the
// profile is added everywhere. One Namespace GET per namespace (cached).
func TestKubeAPIPodSecurity(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	cases := []struct {
		ns     string
		labels map[string]string
		status int // the Namespace GET fails with it
		ipc    bool
		warn   string // a warning containing it; "" none of pod_security
	}{
		{"ps-privileged", map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}, 0, true, ""},
		{"ps-unlabelled", nil, 0, true, ""},
		{"ps-baseline", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}, 0, false,
			`rdma-webhook: raise memlock on nodes for container "pytorch": no IPC_LOCK under Pod Security baseline`},
		{"ps-restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/enforce-version": "v1.21"}, 0, false, "no IPC_LOCK under Pod Security restricted"},
		{"ps-typo", map[string]string{"pod-security.kubernetes.io/enforce": "basline"}, 0, false,
			`fix Pod Security enforce="basline", read as restricted: no IPC_LOCK in "pytorch"`},
		{"ps-warn", map[string]string{"pod-security.kubernetes.io/warn": "restricted"}, 0, true,
			`ignore Pod Security restricted warning on IPC_LOCK in container "pytorch" (added for RDMA)`},
		{"ps-audit", map[string]string{"pod-security.kubernetes.io/audit": "baseline"}, 0, true,
			"ignore Pod Security baseline audit on IPC_LOCK"},
		{"ps-broken", nil, 500, false, "check the webhook can read namespaces: Pod Security level unknown"},
		{"ps-missing", nil, 404, false, "check the webhook can read namespaces"},
	}
	for _, c := range cases {
		if c.status != 404 {
			a.putNamespace(c.ns, c.labels)
		}
		if c.status == 500 {
			a.setFailure("/api/v1/namespaces/"+c.ns, 500)
		}
	}
	in := startLookupInstance(t, a)
	hca8 := hcaOf(t, "roce-8card")
	before := in.metric(t, `rdma_webhook_warnings_total{kind="pod_security"}`)
	if before != "0" {
		t.Fatalf(`rdma_webhook_warnings_total{kind="pod_security"}: expected 0 at start, got %q`, before)
	}
	warned := 0
	for _, c := range cases {
		t.Run(c.ns, func(t *testing.T) {
			mark := a.requestMark()
			pod := trainingPod(8)
			for i := 0; i < 2; i++ { // the second from the cache
				rr := in.review(t, podCreate(c.ns, pod))
				patched := applyPatch(t, pod, rr.patch)
				if got := hasIPCLock(patched); got != c.ipc {
					t.Errorf("IPC_LOCK added: %v, want %v (warnings %q)", got, c.ipc, rr.warnings)
				}
				found := ""
				for _, w := range rr.warnings {
					if strings.Contains(w, "Pod Security") {
						found = w
					}
				}
				if c.warn == "" && found != "" {
					t.Errorf("unexpected warning %q", found)
				}
				if c.warn != "" && !strings.Contains(found, c.warn) {
					t.Errorf("expected a warning with %q, got %q", c.warn, rr.warnings)
				}
				if c.warn != "" {
					warned++
				}
				expectRestOf8CardMutation(t, hca8, rr, patched)
			}
			// A failure is remembered for a second, as an answer is.
			if n := a.count(mark, isKind("get-namespace")); n != 1 {
				t.Errorf("2 pods in %s: expected 1 Namespace GET, got %d:\n%s", c.ns, n, a.logSince(mark))
			}
		})
	}
	if got, want := in.metric(t, `rdma_webhook_warnings_total{kind="pod_security"}`), strconv.Itoa(warned); got != want {
		t.Errorf(`rdma_webhook_warnings_total{kind="pod_security"}: expected %s, got %q`, want, got)
	}
}

// TestKubeAPIPodSecurityUserIPCLock: a container that declares IPC_LOCK
// itself keeps it in a baseline namespace, with no Pod Security warning;
// the one Namespace GET is report mode's (its rdma-webhook.io/mode label,
// read for every pod that gets anything).
func TestKubeAPIPodSecurityUserIPCLock(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNamespace("ps-baseline", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	in := startLookupInstance(t, a)
	pod := trainingPod(8)
	c := containerByName(pod, "pytorch")
	c["securityContext"] = obj{"capabilities": obj{"add": []interface{}{"IPC_LOCK"}}}
	mark := a.requestMark()
	rr := in.review(t, podCreate("ps-baseline", pod))
	patched := applyPatch(t, pod, rr.patch)
	if add := capabilitiesAdd(patched, "pytorch"); len(add) != 1 || add[0] != "IPC_LOCK" {
		t.Errorf("the user's IPC_LOCK: capabilities.add %q, want [IPC_LOCK]", add)
	}
	for _, w := range rr.warnings {
		if strings.Contains(w, "Pod Security") {
			t.Errorf("unexpected warning %q", w)
		}
	}
	if n := a.count(mark, isKind("get-namespace")); n != 1 {
		t.Errorf("expected one Namespace GET (the mode label), got %d:\n%s", n, a.logSince(mark))
	}
}

// TestPodSecurityWithoutAPI: --no-kube-api (no Namespace lookup): IPC_LOCK
// is added as before, with no Pod Security warning.
func TestPodSecurityWithoutAPI(t *testing.T) {
	t.Parallel()
	rr := srv.review(t, podCreate("ps-baseline", trainingPod(8)))
	patched := applyPatch(t, trainingPod(8), rr.patch)
	if !hasIPCLock(patched) {
		t.Errorf("without the API: IPC_LOCK not added (warnings %q)", rr.warnings)
	}
	for _, w := range rr.warnings {
		if strings.Contains(w, "Pod Security") || strings.Contains(w, "namespaces") {
			t.Errorf("unexpected warning %q", w)
		}
	}
}

// expectRestOf8CardMutation: whatever was decided about IPC_LOCK, the rest of
// roce-8card's mutation is there: the HCA list, the scheduler, /dev/shm.
func expectRestOf8CardMutation(t *testing.T, hca8 string, rr reviewResponse, patched obj) {
	t.Helper()
	ad := admission{rr: rr, patched: patched}
	if got := ad.envValues("NCCL_IB_HCA"); len(got) != 1 || got[0] != hca8 {
		t.Errorf("NCCL_IB_HCA: expected [%q], got %q", hca8, got)
	}
	if s, _ := pathStr(patched, "spec", "schedulerName"); s != "volcano" {
		t.Errorf("schedulerName %q, want volcano", s)
	}
	if !hasMountAt(containerByName(patched, "pytorch"), "/dev/shm") {
		t.Errorf("no /dev/shm mount")
	}
}
