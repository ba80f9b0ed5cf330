package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const (
	injectedAnnotation = "rdma-webhook.io/injected"
	warningsAnnotation = "rdma-webhook.io/warnings"
	shmPath            = "/dev/shm"
)

// outcome is what one fixture's review produced.
type outcome struct {
	original obj
	mutated  obj
	resp     reviewResponse
}

// checkExpectation checks a fixture's expect block against the outcome.
func checkExpectation(t *testing.T, ps profileSet, e expectation, o outcome) {
	t.Helper()
	if e.Mutated != nil && mutatedBeyondWarnings(t, o.resp.patch) != *e.Mutated {
		t.Errorf("mutated: expected %v, got patch %s", *e.Mutated, o.resp.patch)
	}
	checkProfile(t, e, o)
	checkTargets(t, ps, e, o)
	checkEnvValues(t, e, o)
	checkSchedulerName(t, e, o)
	checkShmVolume(t, e, o)
	checkRdmaResource(t, ps, e, o)
	checkNcclConf(t, e, o)
	if e.Warnings != nil {
		checkWarnings(t, *e.Warnings, o.resp.warnings)
	}
}

// mutatedBeyondWarnings: the patch does more than set the warnings
// annotation, which a pod left alone but warned gets (and nothing else).
func mutatedBeyondWarnings(t *testing.T, patch []byte) bool {
	t.Helper()
	if patch == nil {
		return false
	}
	var ops []map[string]any
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatalf("patch is not a JSON array: %v: %s", err, patch)
	}
	for _, op := range ops {
		path, _ := op["path"].(string)
		value, _ := op["value"].(map[string]any)
		_, onlyWarnings := value[warningsAnnotation]
		switch {
		case path == "/metadata/annotations/rdma-webhook.io~1warnings":
		case path == "/metadata/annotations" && onlyWarnings && len(value) == 1:
		default:
			return true
		}
	}
	return false
}

func injectedProfile(pod obj) (string, bool) {
	return pathStr(pod, "metadata", "annotations", injectedAnnotation)
}

func checkProfile(t *testing.T, e expectation, o outcome) {
	t.Helper()
	want, set, err := optionalString(e.Profile)
	if err != nil {
		t.Fatalf("expect.profile: %v", err)
	}
	if !set {
		return
	}
	got, has := injectedProfile(o.mutated)
	audit := o.resp.auditProf
	if want == nil {
		// No injection now: the annotation stays as the user's pod had it
		// (a reinvoked pod already carries it) and no audit entry.
		before, hadBefore := injectedProfile(o.original)
		if has != hadBefore || got != before || audit != "" {
			t.Errorf("profile: expected no injection, got annotation %s=%q (present %v, before %q) and auditAnnotations.profile %q",
				injectedAnnotation, got, has, before, audit)
		}
		return
	}
	if got != *want {
		t.Errorf("annotation %s: expected %q, got %q (present %v)", injectedAnnotation, *want, got, has)
	}
	if audit != *want {
		t.Errorf("response.auditAnnotations.profile: expected %q, got %q (response %s)", *want, audit, compact(o.resp.response))
	}
}

// targetsOf is the expect block's list, or the CONTRACT rule's.
func targetsOf(ps profileSet, e expectation, pod obj) []string {
	if e.TargetContainers != nil {
		return *e.TargetContainers
	}
	return ps.derivedTargets(pod)
}

func checkTargets(t *testing.T, ps profileSet, e expectation, o outcome) {
	t.Helper()
	targets := targetsOf(ps, e, o.original)
	if o.resp.patch != nil {
		checkUntouchedContainers(t, o.original, o.mutated, targets)
	}
	if e.TargetContainers == nil {
		return
	}
	profile, ok := injectedProfile(o.mutated)
	if !ok {
		if len(targets) > 0 {
			t.Errorf("targetContainers %v expected, but the pod has no %s annotation", targets, injectedAnnotation)
		}
		return
	}
	hostNet := path(o.original, "spec", "hostNetwork") == true
	env := ps.envFor(t, profile, hostNet)
	for _, name := range targets {
		checkTargetContainer(t, name, containerByName(o.mutated, name), env, e.Env[name], e.IPCLock == nil || *e.IPCLock)
	}
}

// checkTargetContainer: IPC_LOCK unless privileged (none at all where the
// expect block says "ipcLock": false, as for a non-root pod), a mount at
// /dev/shm, and every profile variable in env (unless the expect block says
// absent).
func checkTargetContainer(t *testing.T, name string, c obj, env map[string]string, exact map[string]*string, ipcLock bool) {
	t.Helper()
	if c == nil {
		t.Errorf("target container %q: not in the mutated pod", name)
		return
	}
	has := contains(stringList(pathArr(c, "securityContext", "capabilities", "add")), "IPC_LOCK")
	if ipcLock && path(c, "securityContext", "privileged") != true && !has {
		t.Errorf("target container %q: expected IPC_LOCK in securityContext.capabilities.add, got %s",
			name, compact(path(c, "securityContext")))
	}
	if !ipcLock && has {
		t.Errorf("target container %q: expected no IPC_LOCK (expect.ipcLock false), got %s",
			name, compact(path(c, "securityContext")))
	}
	if !hasMountAt(c, shmPath) {
		t.Errorf("target container %q: expected a volumeMount at %s, got %s", name, shmPath, compact(path(c, "volumeMounts")))
	}
	for v := range env {
		if want, listed := exact[v]; listed && want == nil {
			continue
		}
		if len(envEntries(c, v)) == 0 {
			t.Errorf("target container %q: profile variable %s missing from env %s", name, v, compact(path(c, "env")))
		}
	}
}

func stringList(list []interface{}) []string {
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func hasMountAt(c interface{}, mountPath string) bool {
	for _, m := range pathArr(c, "volumeMounts") {
		if p, _ := pathStr(m, "mountPath"); p == mountPath {
			return true
		}
	}
	return false
}

// checkEnvValues: exact values after mutation, null meaning absent.
func checkEnvValues(t *testing.T, e expectation, o outcome) {
	t.Helper()
	for cname, vars := range e.Env {
		c := containerByName(o.mutated, cname)
		if c == nil {
			t.Errorf("env: container %q not in the mutated pod", cname)
			continue
		}
		for v, want := range vars {
			checkEnvValue(t, cname, v, want, envEntries(c, v))
		}
	}
}

func checkEnvValue(t *testing.T, cname, v string, want *string, entries []obj) {
	t.Helper()
	switch {
	case want == nil && len(entries) > 0:
		t.Errorf("container %q env %s: expected absent, got %s", cname, v, compact(entries))
	case want == nil:
	case len(entries) != 1:
		t.Errorf("container %q env %s: expected one entry with value %q, got %s", cname, v, *want, compact(entries))
	default:
		if got, _ := pathStr(entries[0], "value"); got != *want || entries[0]["valueFrom"] != nil {
			t.Errorf("container %q env %s: expected %q, got %s", cname, v, *want, compact(entries[0]))
		}
	}
}

func checkSchedulerName(t *testing.T, e expectation, o outcome) {
	t.Helper()
	want, set, err := optionalString(e.SchedulerName)
	if err != nil {
		t.Fatalf("expect.schedulerName: %v", err)
	}
	if !set {
		return
	}
	got, has := pathStr(o.mutated, "spec", "schedulerName")
	if want == nil && has {
		t.Errorf("schedulerName: expected absent, got %q", got)
	}
	if want != nil && got != *want {
		t.Errorf("schedulerName: expected %q, got %q (present %v)", *want, got, has)
	}
}

// addedVolumes returns the volumes the mutation appended.
func addedVolumes(o outcome) []interface{} {
	before := len(pathArr(o.original, "spec", "volumes"))
	after := pathArr(o.mutated, "spec", "volumes")
	if len(after) <= before {
		return nil
	}
	return after[before:]
}

func checkShmVolume(t *testing.T, e expectation, o outcome) {
	t.Helper()
	want, set, err := optionalString(e.ShmVolume)
	if err != nil {
		t.Fatalf("expect.shmVolume: %v", err)
	}
	if !set {
		return
	}
	var memory []interface{}
	for _, v := range addedVolumes(o) {
		if path(v, "emptyDir", "medium") == "Memory" {
			memory = append(memory, v)
		}
	}
	if want == nil {
		if len(memory) > 0 {
			t.Errorf("shmVolume: expected no memory volume added, got %s", compact(memory))
		}
		return
	}
	if len(memory) != 1 || path(memory[0], "name") != *want {
		t.Errorf("shmVolume: expected one added volume %q with emptyDir.medium Memory, got %s", *want, compact(addedVolumes(o)))
	}
}

func checkRdmaResource(t *testing.T, ps profileSet, e expectation, o outcome) {
	t.Helper()
	want, set, err := optionalRdma(e.RdmaResource)
	if err != nil {
		t.Fatalf("expect.rdmaResource: %v", err)
	}
	if !set {
		return
	}
	added := addedRdmaResources(ps, o)
	if want == nil {
		if len(added) > 0 {
			t.Errorf("rdmaResource: expected none added, got %v", added)
		}
		return
	}
	c := containerByName(o.mutated, want.Container)
	for _, section := range []string{"limits", "requests"} {
		got, _ := scalarString(path(c, "resources", section, want.Name))
		if got != want.Value {
			t.Errorf("rdmaResource: expected %s %s=%q in container %q, got %q (resources %s)",
				section, want.Name, want.Value, want.Container, got, compact(path(c, "resources")))
		}
	}
	if len(added) > 2 {
		t.Errorf("rdmaResource: expected only %s in limits and requests of %q added, got %v", want.Name, want.Container, added)
	}
}

// addedRdmaResources lists "container section name" for every RDMA
// resource the mutation added.
func addedRdmaResources(ps profileSet, o outcome) []string {
	var out []string
	for _, c := range pathArr(o.mutated, "spec", "containers") {
		name, _ := pathStr(c, "name")
		orig := containerByName(o.original, name)
		for _, section := range []string{"limits", "requests"} {
			for res := range pathObj(c, "resources", section) {
				if strings.HasPrefix(res, ps.rdmaPrefix) && path(orig, "resources", section, res) == nil {
					out = append(out, name+" "+section+" "+res)
				}
			}
		}
	}
	return out
}

// checkWarnings: each phrase matched by a distinct warning, and no more
// warnings than phrases.
func checkWarnings(t *testing.T, phrases, warnings []string) {
	t.Helper()
	if len(warnings) != len(phrases) {
		t.Errorf("warnings: expected %d (phrases %q), got %d: %q", len(phrases), phrases, len(warnings), warnings)
	}
	if unmatched := unmatchedPhrases(phrases, warnings); len(unmatched) > 0 {
		t.Errorf("warnings: no distinct warning contains %q; got %q", unmatched, warnings)
	}
}

// unmatchedPhrases finds a maximum matching of phrases to warnings that
// contain them (case-insensitive) and returns the phrases left over.
func unmatchedPhrases(phrases, warnings []string) []string {
	owner := make([]int, len(warnings))
	for i := range owner {
		owner[i] = -1
	}
	var unmatched []string
	for p := range phrases {
		if !augment(p, phrases, warnings, owner, make([]bool, len(warnings))) {
			unmatched = append(unmatched, phrases[p])
		}
	}
	return unmatched
}

func augment(p int, phrases, warnings []string, owner []int, seen []bool) bool {
	for w := range warnings {
		if seen[w] || !strings.Contains(strings.ToLower(warnings[w]), strings.ToLower(phrases[p])) {
			continue
		}
		seen[w] = true
		if owner[w] < 0 || augment(owner[w], phrases, warnings, owner, seen) {
			owner[w] = p
			return true
		}
	}
	return false
}

// ncclConfOf is the text a container reads at /etc/nccl.conf as the kubelet
// resolves it: its mount's volume, a downwardAPI item at the mount's
// subPath, and the pod annotation that item projects. ok is false without
// such a mount; err says which link is missing.
func ncclConfOf(pod obj, c obj) (text string, ok bool, err error) {
	var mount interface{}
	for _, m := range pathArr(c, "volumeMounts") {
		if p, _ := pathStr(m, "mountPath"); p == "/etc/nccl.conf" {
			mount = m
		}
	}
	if mount == nil {
		return "", false, nil
	}
	volName, _ := pathStr(mount, "name")
	subPath, _ := pathStr(mount, "subPath")
	if ro, _ := path(mount, "readOnly").(bool); !ro {
		return "", true, fmt.Errorf("mount %s is not readOnly", compact(mount))
	}
	for _, v := range pathArr(pod, "spec", "volumes") {
		if n, _ := pathStr(v, "name"); n != volName {
			continue
		}
		for _, it := range pathArr(v, "downwardAPI", "items") {
			if p, _ := pathStr(it, "path"); p != subPath {
				continue
			}
			fp, _ := pathStr(it, "fieldRef", "fieldPath")
			key := strings.TrimSuffix(strings.TrimPrefix(fp, "metadata.annotations['"), "']")
			value, has := pathStr(pod, "metadata", "annotations", key)
			if !has {
				return "", true, fmt.Errorf("volume %q projects %q, which the pod lacks", volName, fp)
			}
			return value, true, nil
		}
		return "", true, fmt.Errorf("volume %s has no downwardAPI item %q", compact(v), subPath)
	}
	return "", true, fmt.Errorf("no volume %q", volName)
}

func checkNcclConf(t *testing.T, e expectation, o outcome) {
	t.Helper()
	for cname, want := range e.NcclConf {
		c := containerByName(o.mutated, cname)
		if c == nil {
			t.Errorf("ncclConf: no container %q", cname)
			continue
		}
		got, ok, err := ncclConfOf(o.mutated, c)
		switch {
		case err != nil:
			t.Errorf("ncclConf %q: %v", cname, err)
		case want == nil && ok:
			t.Errorf("ncclConf %q: expected no /etc/nccl.conf, got %q", cname, got)
		case want != nil && !ok:
			t.Errorf("ncclConf %q: expected /etc/nccl.conf %q, got no mount", cname, *want)
		case want != nil && got != *want:
			t.Errorf("ncclConf %q: /etc/nccl.conf is %q, want %q", cname, got, *want)
		}
	}
}
