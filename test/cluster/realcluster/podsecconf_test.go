package realcluster

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// exemptName is the namespace and the RuntimeClass that the control plane's
// PodSecurity configuration (test/cluster/admission.yaml) exempts.
const exemptName = "rc-psa-exempt"

// restartWebhook runs the webhook again with extra serve flags, and as
// installed when the test ends.
func restartWebhook(t *testing.T, flags ...string) {
	t.Helper()
	if err := script("webhook.sh", webhookEnv, "stop", clusterDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := script("webhook.sh", webhookEnv, "stop", clusterDir); err != nil {
			t.Errorf("stop the webhook: %v", err)
		}
		if err := script("webhook.sh", webhookEnv, "start", clusterDir); err != nil {
			t.Fatalf("restart the webhook as installed: %v", err)
		}
	})
	if err := script("webhook.sh", webhookEnv, append([]string{"start", clusterDir}, flags...)...); err != nil {
		t.Fatal(err)
	}
}

// TestPodSecurityConfig: the apiserver's PodSecurity plugin exempts
// namespace rc-psa-exempt and runtimeClassName rc-psa-exempt
// (test/cluster/admission.yaml). The webhook as installed cannot see that:
// in rc-psa-exempt, labelled enforce=restricted, it leaves IPC_LOCK out and
// warns. Given the same file (--pod-security-config), it adds IPC_LOCK to
// exempt pods, which Pod Security then admits though they meet no level's
// rules (a PyTorchJob's Worker pods with the operator's init container
// too), and it still leaves IPC_LOCK out for a pod that is evaluated.
func TestPodSecurityConfig(t *testing.T) {
	ctx := context.Background()
	exempt := createNamespace(t, exemptName, map[string]string{psEnforce: "restricted"})
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: exemptName}, Handler: "runc"}
	if _, err := clientset.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RuntimeClass %s: %v", exemptName, err)
	}
	t.Cleanup(func() {
		_ = clientset.NodeV1().RuntimeClasses().Delete(context.Background(), exemptName, metav1.DeleteOptions{})
	})

	t.Run("as installed: IPC_LOCK left out", func(t *testing.T) {
		_, stderr, err := kubectl(toJSON(t, gpuPod("before", 8)), "create", "-n", exempt, "-f", "-")
		if err != nil {
			t.Fatalf("Pod Security should exempt namespace %s: %v\n%s", exempt, err, stderr)
		}
		if !strings.Contains(stderr, "no IPC_LOCK under Pod Security restricted") {
			t.Errorf("kubectl's stderr lacks the webhook's Pod Security warning:\n%s", stderr)
		}
		requireMutated(t, getPod(t, exempt, "before"), "pytorch", want{profile: "roce-8card", hca: hca8, noIPCLock: true})
	})

	restartWebhook(t, "--pod-security-config", filepath.Join(root, "test", "cluster", "admission.yaml"))

	t.Run("exempt namespace", func(t *testing.T) {
		_, stderr, err := kubectl(toJSON(t, gpuPod("after", 8)), "create", "-n", exempt, "-f", "-")
		if err != nil {
			t.Fatalf("the pod with IPC_LOCK in exempt namespace %s was refused: %v\n%s", exempt, err, stderr)
		}
		if strings.Contains(stderr, "Pod Security") {
			t.Errorf("a Pod Security warning for an exempt pod:\n%s", stderr)
		}
		requireMutated(t, getPod(t, exempt, "after"), "pytorch", want{profile: "roce-8card", hca: hca8})
		// Every replica, the Worker with the operator's init container too.
		mustKubectl(t, jobYAML("exempt-job", 8, ""), "apply", "-n", exempt, "-f", "-")
		requireJobAdmitted(t, exempt, jobYAMLShape("exempt-job"), true, "")
	})
	t.Run("exempt runtimeClass", func(t *testing.T) {
		ns := newNamespace(t, map[string]string{psEnforce: "restricted"})
		p := gpuPod("kata", 8)
		p.Spec.RuntimeClassName = &rc.Name
		_, stderr, err := kubectl(toJSON(t, p), "create", "-n", ns, "-f", "-")
		if err != nil {
			t.Fatalf("the pod with runtimeClassName %s was refused: %v\n%s", exemptName, err, stderr)
		}
		requireMutated(t, getPod(t, ns, "kata"), "pytorch", want{profile: "roce-8card", hca: hca8})
		// Without it the pod is evaluated: restricted, which asks for a
		// non-root container, so no IPC_LOCK (it would do nothing there).
		_, stderr, err = kubectl(toJSON(t, restrictedPod("plain")), "create", "-n", ns, "-f", "-")
		if err != nil {
			t.Fatalf("Pod Security restricted refused the mutated pod: %v\n%s", err, stderr)
		}
		if !strings.Contains(stderr, nonRootWarning) {
			t.Errorf("kubectl's stderr lacks the webhook's non-root warning:\n%s", stderr)
		}
		requireMutated(t, getPod(t, ns, "plain"), "pytorch", want{profile: "roce-8card", hca: hca8, noIPCLock: true})
	})
}
