package realcluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	detectContainer = "rdma-webhook-detect"
	detectVolume    = "rdma-webhook-nccl"
	detectDir       = "/run/rdma-webhook"
	detectFile      = detectDir + "/nccl.conf"
	// restrictedProfile: detect on and nothing Pod Security "restricted"
	// refuses (no IPC_LOCK), chosen by annotation only.
	restrictedProfile = "restricted-detect"
)

// withDetect returns the profiles text with "detect": true in the defaults
// and one more profile, restrictedProfile.
func withDetect(t testing.TB, text string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	doc["defaults"].(map[string]any)["detect"] = true
	doc["profiles"] = append(doc["profiles"].([]any), map[string]any{
		"name": restrictedProfile, "ipcLock": false, "detect": true,
		"hca": []string{"mlx5_1", "mlx5_2"}, "resources": map[string]string{"rdma/hca": "1"},
	})
	return toJSON(t, doc)
}

func initContainer(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

// dryRunInit is the detection init container an 8-GPU pod would get now
// (nil: none), from a server-side dry run.
func dryRunInit(t testing.TB, ns string) *corev1.Container {
	t.Helper()
	out, _ := mustKubectl(t, toJSON(t, gpuPod("probe", 8)), "create", "-n", ns, "--dry-run=server", "-o", "json", "-f", "-")
	var p corev1.Pod
	fromJSON(t, out, &p)
	return initContainer(&p, detectContainer)
}

// deploymentImage is the image of the webhook Deployment's container, as
// the apiserver has it (kustomize's images: applied).
func deploymentImage(t testing.TB) string {
	t.Helper()
	d, err := clientset.AppsV1().Deployments("rdma-webhook").Get(context.Background(), "rdma-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// requireDetected: the stored pod has the init container from image, last
// of the init containers, writing to the memory volume, and container c
// reads the file (NCCL_CONF_FILE, the read-only mount; root: ~/.nccl.conf)
// with neither detected variable in its env.
func requireDetected(t testing.TB, p *corev1.Pod, c, image string, root bool) {
	t.Helper()
	what := p.Namespace + "/" + p.Name
	ic := initContainer(p, detectContainer)
	if ic == nil {
		t.Fatalf("%s: no init container %s", what, detectContainer)
	}
	if last := p.Spec.InitContainers[len(p.Spec.InitContainers)-1].Name; last != detectContainer {
		t.Errorf("%s: the last init container is %s, want %s", what, last, detectContainer)
	}
	if ic.Image != image || strings.Join(ic.Command, " ") != "/usr/local/bin/rdma-webhook" ||
		len(ic.Args) < 3 || strings.Join(ic.Args[:3], " ") != "nccl-detect --out "+detectFile {
		t.Errorf("%s: init container image %q command %q args %q, want %s running nccl-detect --out %s",
			what, ic.Image, ic.Command, ic.Args, image, detectFile)
	}
	// The apiserver's ServiceAccount admission adds its token's mount to
	// every container, the init container included (the pod's
	// automountServiceAccountToken is the user's to choose).
	writes := false
	for _, m := range ic.VolumeMounts {
		writes = writes || (m.Name == detectVolume && m.MountPath == detectDir && !m.ReadOnly)
	}
	if !writes {
		t.Errorf("%s: init container mounts %+v, want %s writable at %s", what, ic.VolumeMounts, detectVolume, detectDir)
	}
	var vol *corev1.Volume
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == detectVolume {
			vol = &p.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory || vol.EmptyDir.SizeLimit == nil {
		t.Errorf("%s: volume %s %+v, want a memory emptyDir with a sizeLimit", what, detectVolume, vol)
	}
	ctr := container(t, p, c)
	env := envOf(ctr)
	if got := env["NCCL_CONF_FILE"]; len(got) != 1 || got[0] != detectFile {
		t.Errorf("%s: NCCL_CONF_FILE %q, want [%s]", what, got, detectFile)
	}
	for _, v := range []string{"NCCL_IB_HCA", "NCCL_IB_GID_INDEX"} {
		if got, ok := env[v]; ok {
			t.Errorf("%s: %s=%q in the env, want it from the file only", what, v, got)
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m, ok := mounts[detectDir]; !ok || m.Name != detectVolume || !m.ReadOnly {
		t.Errorf("%s: mount at %s %+v, want %s read-only", what, detectDir, m, detectVolume)
	}
	m, ok := mounts["/root/.nccl.conf"]
	if root && (!ok || m.SubPath != "nccl.conf" || !m.ReadOnly) {
		t.Errorf("%s: mount at /root/.nccl.conf %+v, want subPath nccl.conf read-only", what, m)
	}
	if !root && ok {
		t.Errorf("%s: a non-root container got the ~/.nccl.conf mount", what)
	}
}

// TestRunTimeDetection: with detect on in the profiles (applied with
// kubectl as an admin does), the pods of a PyTorchJob are stored with the
// init container, its volume, the mounts and NCCL_CONF_FILE, so the real
// apiserver's validation accepted them; the init container's image is the
// Deployment's own, which the webhook read through the API with the RBAC
// of manifests/. And in a namespace that enforces Pod Security
// "restricted", the init container itself is admitted: the pod there is a
// plain restricted-compliant one opted in by label (training images run as
// root, which restricted refuses), with a profile without IPC_LOCK (which
// the webhook would leave out there anyway: TestPodSecurity).
func TestRunTimeDetection(t *testing.T) {
	image := deploymentImage(t)
	found := false
	for _, l := range logLines(t) {
		found = found || (l["msg"] == "detect image" && l["image"] == image)
	}
	if !found {
		t.Fatalf("the webhook did not log the Deployment's image %q as its detect image", image)
	}
	ns := newNamespace(t, nil)
	serveProfiles(t, ns, withDetect(t, profilesConfigMap(t).Data["profiles.json"]), func() (bool, string) {
		return dryRunInit(t, ns) != nil, "no init container yet"
	}, func() (bool, string) {
		return dryRunInit(t, ns) == nil, "the init container is still added"
	})

	mustKubectl(t, jobYAML("detect", 8, ""), "apply", "-n", ns, "-f", "-")
	for _, pods := range jobPods(t, ns, jobYAMLShape("detect")) {
		for i := range pods {
			p := &pods[i]
			requireDetected(t, p, "pytorch", image, true)
			requireIPCLock(t, p, container(t, p, "pytorch"))
			if line := waitAdmissionLine(t, ns, p.Name); line["result"] != "mutated" || line["warnings"] != float64(0) {
				t.Errorf("%s: log line %v, want mutated without warnings", p.Name, line)
			}
		}
	}

	requireDetectClaims(t, ns)

	restricted := newNamespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	p := gpuPod("restricted", 8)
	p.Annotations = map[string]string{"rdma-webhook.io/profile": restrictedProfile}
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(1000)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	_, stderr, err := kubectl(toJSON(t, p), "create", "-n", restricted, "-f", "-")
	if err != nil {
		t.Fatalf("a restricted namespace refused the pod with the detection init container: %v\n%s", err, stderr)
	}
	stored := getPod(t, restricted, "restricted")
	if stored.Annotations["rdma-webhook.io/injected"] != restrictedProfile {
		t.Fatalf("%s/restricted: not mutated with %s: %v", restricted, restrictedProfile, stored.Annotations)
	}
	requireDetected(t, stored, "pytorch", image, false)
}

// requireDetectClaims: DRA through the real apiserver. A ResourceClaim
// (resource.k8s.io/v1), and a pod whose container references it: the
// stored pod's detection init container references the same claim (the
// apiserver checks that it names one of the pod's resourceClaims), so that
// DRA gives it the same devices, and gets NODE_NAME from the downward API.
// The DeviceClass need not exist: nothing schedules the pod here.
func requireDetectClaims(t *testing.T, ns string) {
	t.Helper()
	claim := `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"rdma-nics"},` +
		`"spec":{"devices":{"requests":[{"name":"nics","exactly":{"deviceClassName":"sriov-rdma","count":2}}]}}}`
	mustKubectl(t, claim, "create", "-n", ns, "-f", "-")
	p := gpuPod("dra", 8)
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "nic", ResourceClaimName: ptr.To("rdma-nics")}}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "nic", Request: "nics"}}
	mustKubectl(t, toJSON(t, p), "create", "-n", ns, "-f", "-")
	stored := getPod(t, ns, "dra")
	ic := initContainer(stored, detectContainer)
	if ic == nil {
		t.Fatalf("%s/dra: no init container %s", ns, detectContainer)
	}
	if got, want := toJSON(t, ic.Resources.Claims), `[{"name":"nic","request":"nics"}]`; got != want {
		t.Errorf("%s/dra: init container claims %s, want %s", ns, got, want)
	}
	if len(ic.Env) != 1 || ic.Env[0].Name != "NODE_NAME" || ic.Env[0].ValueFrom == nil ||
		ic.Env[0].ValueFrom.FieldRef == nil || ic.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("%s/dra: init container env %s, want NODE_NAME from spec.nodeName", ns, toJSON(t, ic.Env))
	}
}
