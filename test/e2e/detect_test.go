package e2e

import (
	"strings"
	"testing"
)

// Run-time detection through the real binary: a profile with "detect" and
// serve --detect-image (or --detect-image-from-deployment) give the pod the
// init container rdma-webhook-detect, its memory volume, the mounts and
// NCCL_CONF_FILE; the patch applies with evanphx/json-patch, the pod decodes
// strictly and passes the schema, and a second call adds nothing.

const (
	detectImage     = "registry.example.com/rdma-webhook:0.2.0"
	detectContainer = "rdma-webhook-detect"
	detectVolume    = "rdma-webhook-nccl"
	detectDir       = "/run/rdma-webhook"
	detectFile      = detectDir + "/nccl.conf"
	rootConf        = "/root/.nccl.conf"
)

// detectProfiles is the shipped profiles file with "detect": true in its
// defaults.
func detectProfiles(t *testing.T) string {
	t.Helper()
	doc, err := readJSONFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	pathObj(doc, "defaults")["detect"] = true
	return writeTemp(t, "profiles-detect.json", doc)
}

func initContainerNamed(pod obj, name string) obj {
	for _, c := range pathArr(pod, "spec", "initContainers") {
		if n, _ := pathStr(c, "name"); n == name {
			return c.(obj)
		}
	}
	return nil
}

func mountAt(c interface{}, mountPath string) obj {
	for _, m := range pathArr(c, "volumeMounts") {
		if p, _ := pathStr(m, "mountPath"); p == mountPath {
			return m.(obj)
		}
	}
	return nil
}

// checkDetectInit: the init container as the issue asks for it, and one
// that Pod Security "restricted" admits.
func checkDetectInit(t *testing.T, pod obj, wantArgs []string) {
	t.Helper()
	ic := initContainerNamed(pod, detectContainer)
	if ic == nil {
		t.Fatalf("no init container %s: %s", detectContainer, compact(path(pod, "spec", "initContainers")))
	}
	inits := pathArr(pod, "spec", "initContainers")
	if last, _ := pathStr(inits[len(inits)-1], "name"); last != detectContainer {
		t.Errorf("%s is not the last init container: %s", detectContainer, compact(inits))
	}
	if img, _ := pathStr(ic, "image"); img != detectImage {
		t.Errorf("image %q, expected %q", img, detectImage)
	}
	if cmd := stringsOf(ic["command"]); !sameStrings(cmd, []string{"/usr/local/bin/rdma-webhook"}) {
		t.Errorf("command %q, expected the Dockerfile's binary", cmd)
	}
	if args := stringsOf(ic["args"]); !sameStrings(args, wantArgs) {
		t.Errorf("args %q, expected %q", args, wantArgs)
	}
	if !jsonEqual(normalize(path(ic, "resources", "requests")), normalize(path(ic, "resources", "limits"))) ||
		path(ic, "resources", "limits", "memory") == nil || path(ic, "resources", "limits", "cpu") == nil {
		t.Errorf("resources %s: expected cpu and memory, requests equal to limits", compact(ic["resources"]))
	}
	sc := pathObj(ic, "securityContext")
	want := obj{"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "allowPrivilegeEscalation": false,
		"readOnlyRootFilesystem": true, "capabilities": obj{"drop": []interface{}{"ALL"}},
		"seccompProfile": obj{"type": "RuntimeDefault"}}
	if !jsonEqual(normalize(sc), normalize(want)) {
		t.Errorf("securityContext %s, expected %s", compact(sc), compact(want))
	}
	m := mountAt(ic, detectDir)
	if n, _ := pathStr(m, "name"); n != detectVolume || path(m, "readOnly") == true {
		t.Errorf("init container mount at %s: %s, expected %s writable", detectDir, compact(m), detectVolume)
	}
	var vol obj
	for _, v := range pathArr(pod, "spec", "volumes") {
		if n, _ := pathStr(v, "name"); n == detectVolume {
			vol = v.(obj)
		}
	}
	if medium, _ := pathStr(vol, "emptyDir", "medium"); medium != "Memory" || path(vol, "emptyDir", "sizeLimit") == nil {
		t.Errorf("volume %s: %s, expected an emptyDir with medium Memory and a sizeLimit", detectVolume, compact(vol))
	}
}

// checkReadsFile: the container reads the detected file, and its env has
// neither of the detected variables.
func checkReadsFile(t *testing.T, c obj, root bool) {
	t.Helper()
	name, _ := pathStr(c, "name")
	if got := envEntries(c, "NCCL_CONF_FILE"); len(got) != 1 || path(got[0], "value") != detectFile {
		t.Errorf("container %s: NCCL_CONF_FILE %s, expected [%s]", name, compact(got), detectFile)
	}
	for _, v := range []string{"NCCL_IB_HCA", "NCCL_IB_GID_INDEX"} {
		if got := envEntries(c, v); len(got) != 0 {
			t.Errorf("container %s: %s %s in the env, expected it from the file only", name, v, compact(got))
		}
	}
	if m := mountAt(c, detectDir); m == nil || path(m, "readOnly") != true || path(m, "name") != detectVolume {
		t.Errorf("container %s: mount at %s %s, expected %s read-only", name, detectDir, compact(m), detectVolume)
	}
	m := mountAt(c, rootConf)
	if root && (m == nil || path(m, "subPath") != "nccl.conf" || path(m, "readOnly") != true) {
		t.Errorf("container %s (root): mount at %s %s, expected subPath nccl.conf read-only", name, rootConf, compact(m))
	}
	if !root && m != nil {
		t.Errorf("container %s (non-root): unexpected mount at %s", name, rootConf)
	}
}

// checkInitContainerRules: what the apiserver refuses among the init
// containers' additions (checkApiserverRules covers the regular ones) and
// container names unique across both lists.
func checkInitContainerRules(t *testing.T, original, mutated obj) {
	t.Helper()
	volumes := map[string]int{}
	for _, v := range pathArr(mutated, "spec", "volumes") {
		n, _ := pathStr(v, "name")
		volumes[n]++
	}
	names := map[string]int{}
	for _, list := range []string{"containers", "initContainers"} {
		for _, c := range pathArr(mutated, "spec", list) {
			n, _ := pathStr(c, "name")
			names[n]++
			if list == "initContainers" {
				var before obj
				for _, o := range pathArr(original, "spec", "initContainers") {
					if on, _ := pathStr(o, "name"); on == n {
						before = o.(obj)
					}
				}
				checkContainerRules(t, n, before, c, volumes)
			}
		}
	}
	for n, count := range names {
		if count > 1 {
			t.Errorf("container name %q appears %d times", n, count)
		}
	}
}

// detectCase is one pod and what detection must make of it.
type detectCase struct {
	name     string
	pod      obj
	detected []string // containers that read the file
	root     bool     // the detected containers run as root
	warnings []string
}

func withInitContainer(pod obj, c obj) obj {
	spec := pathObj(pod, "spec")
	list, _ := spec["initContainers"].([]interface{})
	spec["initContainers"] = append(list, c)
	return pod
}

func detectCases() []detectCase {
	nonRoot := trainingPod(8)
	pathObj(nonRoot, "spec")["securityContext"] = obj{"runAsNonRoot": true, "runAsUser": 1000}
	return []detectCase{
		{name: "root container: NCCL_CONF_FILE and ~/.nccl.conf", pod: trainingPod(8),
			detected: []string{"pytorch"}, root: true, warnings: []string{}},
		{name: "non-root pod: no ~/.nccl.conf mount", pod: nonRoot, detected: []string{"pytorch"},
			warnings: []string{"non-root"}},
		{name: "after the operator's init container",
			pod:      withInitContainer(trainingPod(8), obj{"name": "init-pytorch", "image": "alpine:3.10", "command": []interface{}{"sh", "-c", "true"}}),
			detected: []string{"pytorch"}, root: true, warnings: []string{}},
		{name: "the user's NCCL_CONF_FILE wins", pod: withEnv(trainingPod(8), "NCCL_CONF_FILE", "/etc/mine.conf"),
			warnings: []string{`drop container "pytorch"'s own NCCL_CONF_FILE`}},
		{name: "NCCL_IB_DISABLE=1: nothing to detect", pod: withEnv(trainingPod(8), "NCCL_IB_DISABLE", "1"),
			warnings: []string{"NCCL_IB_DISABLE=1"}},
		{name: "the user's own init container of that name",
			pod:      withInitContainer(trainingPod(8), obj{"name": detectContainer, "image": "mine:1"}),
			warnings: []string{`rename the pod's init container "rdma-webhook-detect"`}},
	}
}

func TestDetectInitContainer(t *testing.T) {
	t.Parallel()
	profiles := detectProfiles(t)
	if res := runBinary(t, nil, "check-profiles", profiles); res.exitCode != 0 {
		t.Fatalf("check-profiles: exit %d: %s", res.exitCode, res.stderr)
	}
	in := startInstance(t, profiles, "--detect-image", detectImage)
	hca := loadProfiles(t).envFor(t, "roce-8card", false)["NCCL_IB_HCA"]
	wantArgs := []string{"nccl-detect", "--out", detectFile, "--hca", hca, "--socket-ifname", "eth0"}
	var schemaSet []namedObject
	for _, c := range detectCases() {
		c := c
		t.Run(c.name, func(t *testing.T) {
			original := copyObject(c.pod)
			rr := in.review(t, podCreate(jobNS, copyObject(c.pod)))
			mutated := applyPatch(t, original, rr.patch)
			checkNothingLost(t, original, mutated)
			checkApiserverRules(t, original, mutated)
			checkInitContainerRules(t, original, mutated)
			checkWarnings(t, c.warnings, rr.warnings)
			if len(c.detected) > 0 {
				checkDetectInit(t, mutated, wantArgs)
			} else if ic := initContainerNamed(mutated, detectContainer); ic != nil && initContainerNamed(original, detectContainer) == nil {
				t.Errorf("unexpected init container %s", compact(ic))
			}
			for _, name := range c.detected {
				checkReadsFile(t, containerByName(mutated, name), c.root)
			}
			if len(c.detected) == 0 {
				c := containerByName(mutated, "pytorch")
				if mountAt(c, detectDir) != nil || mountAt(c, rootConf) != nil {
					t.Errorf("a container that does not read the file got its mounts: %s", compact(c["volumeMounts"]))
				}
			}
			if again := in.review(t, podCreate(jobNS, copyObject(mutated))); again.patch != nil {
				t.Errorf("second call on the mutated pod: expected no patch, got %s", again.patch)
			}
			schemaSet = append(schemaSet, namedObject{c.name, mutated})
		})
	}
	t.Run("kubernetes-schema", func(t *testing.T) { checkSchemas(t, schemaSet) })
}

// TestDetectWithoutImage: the profile asks for detect, the webhook was not
// given the image: the pod gets the static env and one warning that says
// what to set.
func TestDetectWithoutImage(t *testing.T) {
	t.Parallel()
	in := startInstance(t, detectProfiles(t))
	pod := trainingPod(8)
	rr := in.review(t, podCreate(jobNS, copyObject(pod)))
	mutated := applyPatch(t, pod, rr.patch)
	checkWarnings(t, []string{"--detect-image"}, rr.warnings)
	if path(mutated, "spec", "initContainers") != nil {
		t.Errorf("init containers without an image: %s", compact(path(mutated, "spec", "initContainers")))
	}
	checkHCA(t, loadProfiles(t).envFor(t, "roce-8card", false)["NCCL_IB_HCA"], mutated)
}

// TestDetectImageFromDeployment: serve reads the image of the first
// container of its own Deployment through the API, as the manifests ask.
func TestDetectImageFromDeployment(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putDeployment(webhookNamespace, webhookName, detectImage)
	mark := a.requestMark()
	in := startInstance(t, detectProfiles(t), append(a.kubeFlags(),
		"--detect-image-from-deployment", webhookNamespace+"/"+webhookName)...)
	if n := a.count(mark, isKind("get-deployment")); n != 1 {
		t.Errorf("expected one GET of the Deployment, got %d", n)
	}
	in.waitLog(t, 0, pickUpWithin, "the detect image logged", msgIs("detect image", "image", detectImage))
	ad := in.admit(t, trainingPod(8))
	ic := initContainerNamed(ad.patched, detectContainer)
	if img, _ := pathStr(ic, "image"); img != detectImage {
		t.Errorf("init container image %q, expected the Deployment's %q", img, detectImage)
	}

	// A Deployment that is not there: serving goes on, without detection.
	b := startFakeAPI(t)
	in = startInstance(t, detectProfiles(t), append(b.kubeFlags(),
		"--detect-image-from-deployment", webhookNamespace+"/"+webhookName)...)
	in.waitLog(t, 0, pickUpWithin, "the missing image logged", func(l obj) bool {
		return l != nil && l["msg"] == "no detect image: profiles with detect get no init container" &&
			strings.Contains(compact(l["error"]), "HTTP 404")
	})
	ad = in.admit(t, trainingPod(8))
	if initContainerNamed(ad.patched, detectContainer) != nil || ad.warningWith("--detect-image") == "" {
		t.Errorf("without the Deployment: expected no init container and the warning, got %q", ad.rr.warnings)
	}
}

// TestMutateOfflineDetectImage: `rdma-webhook mutate --detect-image` adds
// the same init container as serve; without the flag it warns on stderr.
func TestMutateOfflineDetectImage(t *testing.T) {
	t.Parallel()
	profiles := detectProfiles(t)
	pod := trainingPod(8)
	out := mustSucceed(t, mustMarshal(pod), "mutate", "--profiles", profiles, "--detect-image", detectImage, "--patched")
	hca := loadProfiles(t).envFor(t, "roce-8card", false)["NCCL_IB_HCA"]
	checkDetectInit(t, out, []string{"nccl-detect", "--out", detectFile, "--hca", hca, "--socket-ifname", "eth0"})
	checkReadsFile(t, containerByName(out, "pytorch"), true)

	res := runBinary(t, mustMarshal(pod), "mutate", "--profiles", profiles, "--patched")
	if res.exitCode != 0 || !strings.Contains(string(res.stderr), "--detect-image") {
		t.Errorf("without --detect-image: exit %d, stderr %q; expected 0 and the warning", res.exitCode, res.stderr)
	}
	if res := runBinary(t, mustMarshal(pod), "mutate", "--profiles", profiles, "--detect-image", "a b"); res.exitCode != 2 {
		t.Errorf("--detect-image with a space: expected exit 2, got %d", res.exitCode)
	}
}

// TestDetectClaimsNodeNameAndRequire: the init container references the
// reading container's resource claims (DRA then gives it the same devices,
// dra-driver-sriov's CDI variables among them), gets NODE_NAME from the
// downward API for its mismatch line, and --require-hca when the profile's
// detect asks for the job's list whole.
func TestDetectClaimsNodeNameAndRequire(t *testing.T) {
	t.Parallel()
	doc, err := readJSONFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	pathObj(doc, "defaults")["detect"] = true
	for _, p := range pathArr(doc, "profiles") {
		if n, _ := pathStr(p, "name"); n == "roce-8card" {
			p.(obj)["detect"] = obj{"requireHca": true}
		}
	}
	profiles := writeTemp(t, "profiles-require.json", doc)
	if res := runBinary(t, nil, "check-profiles", profiles); res.exitCode != 0 {
		t.Fatalf("check-profiles: exit %d: %s", res.exitCode, res.stderr)
	}
	pod := trainingPod(8)
	pathObj(pod, "spec")["resourceClaims"] = []interface{}{
		obj{"name": "rdma", "resourceClaimName": "rdma-nics"},
		obj{"name": "other", "resourceClaimName": "other-devices"},
	}
	c := containerByName(pod, "pytorch")
	pathObj(c, "resources")["claims"] = []interface{}{obj{"name": "rdma", "request": "nics"}, obj{"name": "rdma", "request": "nics"}}
	out := mustSucceed(t, mustMarshal(pod), "mutate", "--profiles", profiles, "--detect-image", detectImage, "--patched")
	hca := loadProfiles(t).envFor(t, "roce-8card", false)["NCCL_IB_HCA"]
	checkDetectInit(t, out, []string{"nccl-detect", "--out", detectFile, "--hca", hca, "--socket-ifname", "eth0", "--require-hca"})
	ic := initContainerNamed(out, detectContainer)
	if got, want := compact(path(ic, "resources", "claims")), `[{"name":"rdma","request":"nics"}]`; got != want {
		t.Errorf("init container claims %s, expected %s (the reader's, once)", got, want)
	}
	if got, want := compact(ic["env"]), `[{"name":"NODE_NAME","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}]`; got != want {
		t.Errorf("init container env %s, expected %s", got, want)
	}
	checkSchemas(t, []namedObject{{"claims", out}})

	// A profile that asks for requireHca without an exact list is refused.
	pathObj(doc, "defaults")["detect"] = obj{"requireHca": true}
	for _, p := range pathArr(doc, "profiles") {
		delete(p.(obj), "hca")
	}
	bad := writeTemp(t, "profiles-require-bad.json", doc)
	if res := runBinary(t, nil, "check-profiles", bad); res.exitCode == 0 || !strings.Contains(string(res.stderr)+string(res.stdout), "detect.requireHca: needs the list the job expects") {
		t.Errorf("check-profiles with requireHca and no list: exit %d, %s%s", res.exitCode, res.stdout, res.stderr)
	}
}
