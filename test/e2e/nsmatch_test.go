package e2e

// Profiles limited to namespaces (match.namespaces, issue 16) through the
// real binary: offline with --namespace and --namespace-labels, served with
// the Namespace's labels from the fake apiserver, and check-profiles
// refusing two team profiles that would tie.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const teamsProfilesPath = "../../manifests/examples/profiles-teams.json"

// gidIndex is the NCCL_IB_GID_INDEX the pytorch container of pod gets ("" none).
func gidIndex(pod obj) string {
	for _, e := range envEntries(containerByName(pod, "pytorch"), "NCCL_IB_GID_INDEX") {
		v, _ := pathStr(e, "value")
		return v
	}
	return ""
}

func teamsMutate(t *testing.T, pod obj, args ...string) (cmdResult, obj) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "pod.json")
	if err := os.WriteFile(file, mustMarshal(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runBinary(t, nil, append(append([]string{"mutate", "--profiles", teamsProfilesPath, "--patched"}, args...), file)...)
	out, _ := decodeObject(res.stdout)
	return res, out
}

// TestNamespaceProfilesOffline: the team copy wins in a namespace its
// selector matches, the cluster-wide profile elsewhere; without the labels
// nothing is guessed; a list profile of another namespace is refused by the
// annotation; --namespace fills in and must agree with the object.
func TestNamespaceProfilesOffline(t *testing.T) {
	t.Parallel()
	pod := trainingPod(8)
	res, out := teamsMutate(t, pod, "--namespace-labels", "rdma-webhook.io/nccl=2.18")
	if p, _ := pathStr(out, "metadata", "annotations", annInjected); res.exitCode != 0 || p != "nccl218-8card" || gidIndex(out) != "3" {
		t.Errorf("labelled namespace: expected nccl218-8card with GID index 3, got %q %q (exit %d)\n%s", p, gidIndex(out), res.exitCode, res.stderr)
	}
	if s, _ := pathStr(out, "metadata", "annotations", "rdma-webhook.io/selected-by"); s != "gpus" {
		t.Errorf("selected-by: expected gpus (the rule), got %q", s)
	}
	res, out = teamsMutate(t, pod, "--namespace-labels", "team=other")
	if p, _ := pathStr(out, "metadata", "annotations", annInjected); p != "roce-8card" || gidIndex(out) != "" {
		t.Errorf("other namespace: expected roce-8card without a GID index, got %q %q\n%s", p, gidIndex(out), res.stderr)
	}

	res, out = teamsMutate(t, pod)
	if p, _ := pathStr(out, "metadata", "annotations", annInjected); res.exitCode != 0 || p != "" {
		t.Errorf("no --namespace-labels: expected no profile (never guess), got %q (exit %d)", p, res.exitCode)
	}
	for _, want := range []string{
		`Warning: rdma-webhook: check the webhook can read namespaces: labels of "kubeflow" unread, no profile chosen`,
		"pass --namespace-labels K=V,...",
	} {
		if !strings.Contains(string(res.stderr), want) {
			t.Errorf("no --namespace-labels: expected %q on stderr, got:\n%s", want, res.stderr)
		}
	}

	// research-default is limited to the namespace research by a list.
	small := trainingPod(1)
	delete(small["metadata"].(obj), "namespace")
	res, out = teamsMutate(t, small, "--namespace", "research")
	if p, _ := pathStr(out, "metadata", "annotations", annInjected); res.exitCode != 0 || p != "research-default" {
		t.Errorf("--namespace research: expected research-default, got %q (exit %d)\n%s", p, res.exitCode, res.stderr)
	}
	res, out = teamsMutate(t, small)
	if p, _ := pathStr(out, "metadata", "annotations", annInjected); p != "" {
		t.Errorf("namespace default: expected no profile for 1 GPU, got %q", p)
	}
	named := trainingPod(8)
	named["metadata"].(obj)["annotations"] = obj{"rdma-webhook.io/profile": "research-default"}
	res, out = teamsMutate(t, named, "--namespace-labels", "a=b")
	if p, _ := pathStr(out, "metadata", "annotations", annInjected); p != "" {
		t.Errorf("annotation to another namespace's profile: expected nothing, got %q", p)
	}
	if want := `Warning: rdma-webhook: change rdma-webhook.io/profile: "research-default" is limited to other namespaces; nothing added`; !strings.Contains(string(res.stderr), want) {
		t.Errorf("expected %q, got:\n%s", want, res.stderr)
	}
	res, _ = teamsMutate(t, pod, "--namespace", "research")
	if want := `its namespace "kubeflow" is not --namespace "research"; drop one`; res.exitCode != 1 || !strings.Contains(string(res.stderr), want) {
		t.Errorf("--namespace against the object's: expected exit 1 and %q, got %d:\n%s", want, res.exitCode, res.stderr)
	}
}

// TestNamespaceProfilesCheck: check-profiles refuses a team profile that
// would tie with another in one namespace, with the exact message, and
// --show spells out match.namespaces.
func TestNamespaceProfilesCheck(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.json")
	doc := `{"profiles": [
	  {"name": "a", "match": {"gpus": 8, "namespaces": ["team-a", "team-b"]}},
	  {"name": "b", "match": {"gpus": 8, "namespaces": {"matchLabels": {"team": "b"}}}}]}`
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runBinary(t, nil, "check-profiles", bad)
	want := `profiles "a" and "b" have the same match rules, so neither can ever be chosen by them; change or remove one; both apply in namespace "team-a" if its labels match`
	if res.exitCode != 1 || !strings.Contains(string(res.stderr)+string(res.stdout), want) {
		t.Errorf("expected exit 1 with %q, got %d:\n%s%s", want, res.exitCode, res.stdout, res.stderr)
	}
	res = runBinary(t, nil, "check-profiles", "--show", teamsProfilesPath)
	shown, err := decodeObject(res.stdout)
	if res.exitCode != 0 || err != nil {
		t.Fatalf("--show: exit %d, %v\n%s", res.exitCode, err, res.stderr)
	}
	byName := map[string]obj{}
	for _, p := range shown["profiles"].([]interface{}) {
		byName[p.(obj)["name"].(string)] = p.(obj)
	}
	if got := compact(pathObj(byName["nccl218-8card"], "match")["namespaces"]); got != `{"matchExpressions":[{"key":"rdma-webhook.io/nccl","operator":"In","values":["2.18"]}]}` {
		t.Errorf("--show nccl218-8card match.namespaces: got %s", got)
	}
	if got := compact(pathObj(byName["research-default"], "match")["namespaces"]); got != `["research"]` {
		t.Errorf("--show research-default match.namespaces: got %s", got)
	}
	if _, ok := pathObj(byName["roce-8card"], "match")["namespaces"]; ok {
		t.Errorf("--show: a cluster-wide profile has no match.namespaces")
	}
}

// TestNamespaceProfilesServe: serve reads the Namespace's labels from the
// API (once per namespace while cached); the same pod gets the team copy
// in the labelled namespace and the cluster-wide profile in another; a
// namespace the API cannot give selects nothing, with the warning.
func TestNamespaceProfilesServe(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNamespace("ml-legacy", map[string]string{"rdma-webhook.io/nccl": "2.18"})
	a.putNamespace("ml-new", map[string]string{"team": "new"})
	in := startInstance(t, teamsProfilesPath, a.kubeFlags()...)
	admitIn := func(ns string, pod obj) (reviewResponse, obj) {
		pod["metadata"].(obj)["namespace"] = ns
		rr := in.review(t, podCreate(ns, pod))
		return rr, applyPatch(t, pod, rr.patch)
	}
	mark := a.requestMark()
	for i := 0; i < 3; i++ {
		rr, pod := admitIn("ml-legacy", trainingPod(8))
		if rr.auditProf != "nccl218-8card" || gidIndex(pod) != "3" {
			t.Errorf("ml-legacy: expected nccl218-8card with GID index 3, got %q %q (warnings %q)", rr.auditProf, gidIndex(pod), rr.warnings)
		}
	}
	if n := a.count(mark, isKind("get-namespace")); n != 1 {
		t.Errorf("3 pods in one namespace: expected 1 Namespace GET, got %d:\n%s", n, a.logSince(mark))
	}
	rr, pod := admitIn("ml-new", trainingPod(8))
	if rr.auditProf != "roce-8card" || gidIndex(pod) != "" {
		t.Errorf("ml-new: expected roce-8card without a GID index, got %q %q (warnings %q)", rr.auditProf, gidIndex(pod), rr.warnings)
	}
	mark = a.requestMark()
	rr, _ = admitIn("missing", trainingPod(8))
	if rr.auditProf != "" {
		t.Errorf("unreadable namespace: expected no profile, got %q", rr.auditProf)
	}
	want := `rdma-webhook: check the webhook can read namespaces: labels of "missing" unread, no profile chosen`
	if len(rr.warnings) != 1 || rr.warnings[0] != want {
		t.Errorf("unreadable namespace: expected the one warning %q, got %q", want, rr.warnings)
	}
	if n := a.count(mark, isKind("get-namespace")); n != 1 {
		t.Errorf("one admission: expected 1 Namespace GET, got %d:\n%s", n, a.logSince(mark))
	}
	// The cluster-wide profile named by annotation needs no lookup from
	// select; Pod Security (IPC_LOCK declared: none) and report mode's
	// label share the one Namespace GET the admission makes.
	mark = a.requestMark()
	named := trainingPod(4)
	named["metadata"].(obj)["annotations"] = obj{"rdma-webhook.io/profile": "roce-4card"}
	named["spec"].(obj)["containers"].([]interface{})[0].(obj)["securityContext"] =
		obj{"capabilities": obj{"add": []interface{}{"IPC_LOCK"}}}
	if rr, _ = admitIn("elsewhere", named); rr.auditProf != "roce-4card" {
		t.Errorf("annotation to a cluster-wide profile: got %q (warnings %q)", rr.auditProf, rr.warnings)
	}
	if n := a.count(mark, isKind("get-namespace")); n != 1 {
		t.Errorf("annotation to a cluster-wide profile: expected one Namespace GET (the mode label), got %d", n)
	}
}
