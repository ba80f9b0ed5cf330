package realcluster

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

const (
	psEnforce = "pod-security.kubernetes.io/enforce"
	psWarn    = "pod-security.kubernetes.io/warn"
)

// restrictedContainer is what Pod Security "restricted" asks of a
// container, set on the container alone so that it fits a PyTorchJob's
// template as well as a pod.
const restrictedContainer = `            securityContext:
              runAsNonRoot: true
              runAsUser: 1000
              allowPrivilegeEscalation: false
              capabilities:
                drop: ["ALL"]
              seccompProfile:
                type: RuntimeDefault
`

func restrictedPod(name string) *corev1.Pod {
	p := gpuPod(name, 8)
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(1000)), AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	return p
}

// nonRootWarning is what a non-root target container named pytorch gets
// instead of IPC_LOCK.
const nonRootWarning = `raise memlock on nodes for container "pytorch": no IPC_LOCK, which does nothing as non-root`

// TestNonRootJobGetsNoIPCLock: a PyTorchJob whose container runs as user
// 1000, in a namespace without Pod Security labels, gets every addition
// but IPC_LOCK on each stored pod: a capability added to a non-root process
// is not effective, and would only trip policies that forbid adding
// capabilities. Each pod carries the warning that says to raise memlock
// instead; the same pod as root gets IPC_LOCK as ever.
func TestNonRootJobGetsNoIPCLock(t *testing.T) {
	ns := newNamespace(t, nil)
	nonRoot := `            securityContext:
              runAsUser: 1000
`
	mustKubectl(t, jobYAML("nonroot-job", 8, nonRoot), "apply", "-n", ns, "-f", "-")
	requireJobAdmitted(t, ns, jobYAMLShape("nonroot-job"), false, nonRootWarning)
	_, stderr := mustKubectl(t, toJSON(t, gpuPod("root", 8)), "create", "-n", ns, "-f", "-")
	if strings.Contains(stderr, "non-root") {
		t.Errorf("a non-root warning for a root pod:\n%s", stderr)
	}
	requireMutated(t, getPod(t, ns, "root"), "pytorch", want{profile: "roce-8card", hca: hca8})
}

// requireJobAdmitted: the PyTorchJob's pods were all created (Pod Security
// admitted each after the webhook), mutated, with IPC_LOCK or without as
// ipc says, and, without it, with the webhook's warning in their log line
// and on the pod.
func requireJobAdmitted(t *testing.T, ns string, job pytorchJob, ipc bool, warn string) {
	t.Helper()
	for _, pods := range jobPods(t, ns, job) {
		for i := range pods {
			p := &pods[i]
			requireMutated(t, p, "pytorch", want{profile: "roce-8card", hca: hca8, noIPCLock: !ipc})
			line := waitAdmissionLine(t, ns, p.Name)
			texts, _ := line["warning_text"].([]any)
			found := false
			for _, w := range texts {
				found = found || (warn != "" && strings.Contains(w.(string), warn))
			}
			if warn != "" && !found {
				t.Errorf("%s/%s: the log line lacks %q: %v", ns, p.Name, warn, line)
			}
			if warn == "" && len(texts) != 0 {
				t.Errorf("%s/%s: unexpected warnings %v", ns, p.Name, texts)
			}
			// The annotation is a JSON array: a text with quotes is escaped there.
			var kept []string
			_ = json.Unmarshal([]byte(p.Annotations["rdma-webhook.io/warnings"]), &kept)
			if warn != "" && !strings.Contains(strings.Join(kept, "\n"), warn) {
				t.Errorf("%s/%s: rdma-webhook.io/warnings lacks %q: %q", ns, p.Name, warn, p.Annotations["rdma-webhook.io/warnings"])
			}
		}
	}
}

// TestPodSecurity: a namespace per Pod Security level. Under enforce
// baseline and restricted the webhook leaves IPC_LOCK out, so Pod Security
// admits the pods (for a PyTorchJob: they are created), with the webhook's
// warning; everything else it adds passes those levels. Under privileged
// the pods get IPC_LOCK, and with only warn=restricted they get it too,
// with the webhook's warning beside Pod Security's own. The remedy in docs/operations.md,
// labelling the namespace privileged, gives IPC_LOCK to later pods within
// --namespace-cache-seconds, without a restart.
func TestPodSecurity(t *testing.T) {
	t.Run("baseline", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{psEnforce: "baseline"})
		_, stderr, err := kubectl(toJSON(t, gpuPod("psa", 8)), "create", "-n", ns, "-f", "-")
		if err != nil {
			t.Fatalf("Pod Security baseline refused the mutated pod: %v\n%s", err, stderr)
		}
		if !strings.Contains(stderr, `Warning: rdma-webhook: raise memlock on nodes for container "pytorch": no IPC_LOCK under Pod Security baseline`) {
			t.Errorf("kubectl's stderr lacks the webhook's Pod Security warning:\n%s", stderr)
		}
		requireMutated(t, getPod(t, ns, "psa"), "pytorch", want{profile: "roce-8card", hca: hca8, noIPCLock: true})
		mustKubectl(t, jobYAML("psa-job", 8, ""), "apply", "-n", ns, "-f", "-")
		requireJobAdmitted(t, ns, jobYAMLShape("psa-job"), false, "no IPC_LOCK under Pod Security baseline")

		// The remedy: enforce=privileged, read again once the cached labels expire.
		mustKubectl(t, "", "label", "namespace", ns, psEnforce+"=privileged", "--overwrite")
		waitFor(t, 20*time.Second, "IPC_LOCK after labelling the namespace privileged", func() (bool, string) {
			out, _ := mustKubectl(t, toJSON(t, gpuPod("probe", 8)), "create", "-n", ns, "--dry-run=server", "-o", "json", "-f", "-")
			var p corev1.Pod
			fromJSON(t, out, &p)
			return hasIPCLock(&p.Spec.Containers[0]), "no IPC_LOCK yet"
		})
		mustKubectl(t, toJSON(t, gpuPod("psa-after", 8)), "create", "-n", ns, "-f", "-")
		requireMutated(t, getPod(t, ns, "psa-after"), "pytorch", want{profile: "roce-8card", hca: hca8})
	})
	t.Run("restricted", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{psEnforce: "restricted"})
		_, stderr, err := kubectl(toJSON(t, restrictedPod("psr")), "create", "-n", ns, "-f", "-")
		if err != nil {
			t.Fatalf("Pod Security restricted refused the mutated pod: %v\n%s", err, stderr)
		}
		// Restricted asks for a non-root container, where IPC_LOCK would do
		// nothing anyway: the webhook says that, and Pod Security has no say.
		if !strings.Contains(stderr, nonRootWarning) {
			t.Errorf("kubectl's stderr lacks the webhook's non-root warning:\n%s", stderr)
		}
		if strings.Contains(stderr, "rdma-webhook: raise memlock on nodes for container \"pytorch\": no IPC_LOCK under Pod Security") {
			t.Errorf("a Pod Security warning about an IPC_LOCK a non-root container would not get anyway:\n%s", stderr)
		}
		requireMutated(t, getPod(t, ns, "psr"), "pytorch", want{profile: "roce-8card", hca: hca8, noIPCLock: true})
		// Master only: the training-operator gives Worker pods its own init
		// container "init-pytorch", which restricted refuses, webhook or not.
		job, _, found := strings.Cut(jobYAML("psr-job", 8, restrictedContainer), "    Worker:\n")
		if !found {
			t.Fatal("jobYAML has no Worker replica to cut")
		}
		mustKubectl(t, job, "apply", "-n", ns, "-f", "-")
		shape := jobYAMLShape("psr-job")
		delete(shape.Spec.Replicas, "Worker")
		requireJobAdmitted(t, ns, shape, false, nonRootWarning)
	})
	t.Run("privileged", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{psEnforce: "privileged"})
		mustKubectl(t, jobYAML("psp-job", 8, ""), "apply", "-n", ns, "-f", "-")
		requireJobAdmitted(t, ns, jobYAMLShape("psp-job"), true, "")
	})
	t.Run("warn restricted", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{psWarn: "restricted"})
		_, stderr := mustKubectl(t, toJSON(t, gpuPod("psw", 8)), "create", "-n", ns, "-f", "-")
		if !strings.Contains(stderr, `Warning: rdma-webhook: ignore Pod Security restricted warning on IPC_LOCK in container "pytorch" (added for RDMA)`) {
			t.Errorf("kubectl's stderr lacks the webhook's warning:\n%s", stderr)
		}
		if !strings.Contains(stderr, `would violate PodSecurity "restricted:latest"`) || !strings.Contains(stderr, "IPC_LOCK") {
			t.Errorf("kubectl's stderr lacks Pod Security's own warning about IPC_LOCK:\n%s", stderr)
		}
		requireMutated(t, getPod(t, ns, "psw"), "pytorch", want{profile: "roce-8card", hca: hca8})
	})
}
