package realcluster

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestNodeLookup: a pod created bound to a Node (spec.nodeName; no kubelet
// needed) gets the profile the Node's labels select, looked up by the
// webhook through the API with its own service account.
func TestNodeLookup(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rc-gpu4-node",
		Labels: map[string]string{"nvidia.com/gpu.count": "4", "kubernetes.io/hostname": "rc-gpu4-node"}}}
	if _, err := clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clientset.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}) })
	ns := newNamespace(t, nil)
	// One GPU matches no profile by count: only the Node can choose.
	p := gpuPod("on-node", 1)
	p.Spec.NodeName = node.Name
	if _, err := clientset.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	requireMutated(t, getPod(t, ns, "on-node"), "pytorch", want{profile: "roce-4card", hca: hca4})
}

// readmeTroubleshootingCommand is the command of docs/operations.md that lists the
// PyTorchJob pods admitted without the webhook.
func readmeTroubleshootingCommand(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)\n### Pods created without the RDMA settings\n.*?```sh\n(.*?)```")
	m := re.FindStringSubmatch(string(data))
	if m == nil {
		t.Fatal("docs/operations.md has no command under ### Pods created without the RDMA settings")
	}
	return m[1]
}

// installJobAuthorCommand is the command docs/install.md gives a job's
// author to list a namespace's pods admitted without the webhook, for ns.
func installJobAuthorCommand(t testing.TB, ns string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)\n### Finding pods admitted without the webhook\n.*?```sh\n(.*?)```")
	m := re.FindStringSubmatch(string(data))
	if m == nil || !strings.Contains(m[1], "NAMESPACE") {
		t.Fatal("docs/install.md has no command with NAMESPACE under ### Finding pods admitted without the webhook")
	}
	return strings.ReplaceAll(m[1], "NAMESPACE", ns)
}

// TestFailurePolicyIgnore: with the webhook stopped, a PyTorchJob's pods are
// admitted unchanged (failurePolicy Ignore) and docs/operations.md's troubleshooting
// command lists exactly them; so does docs/install.md's for a job's author,
// in the job's namespace.
func TestFailurePolicyIgnore(t *testing.T) {
	if err := script("webhook.sh", webhookEnv, "stop", clusterDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := script("webhook.sh", webhookEnv, "start", clusterDir); err != nil {
			t.Fatalf("restart the webhook: %v", err)
		}
	})
	ns := newNamespace(t, nil)
	mustKubectl(t, jobYAML("while-down", 8, ""), "apply", "-n", ns, "-f", "-")
	var want []string
	for _, pods := range jobPods(t, ns, jobYAMLShape("while-down")) {
		for i := range pods {
			requireUntouched(t, &pods[i])
			want = append(want, ns+" "+pods[i].Name)
		}
	}
	sort.Strings(want)

	cmd := readmeTroubleshootingCommand(t)
	out, _ := mustShell(t, cmd)
	var got []string
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 2 {
			continue // the header
		}
		got = append(got, f[0]+" "+f[1])
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the command of docs/operations.md listed %q, want exactly the pods admitted while the webhook was down %q\n%s",
			got, want, out)
	}

	out, _ = mustShell(t, installJobAuthorCommand(t, ns))
	got = nil
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); i > 0 && len(f) >= 1 {
			got = append(got, ns+" "+f[0])
		}
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the command of docs/install.md listed %q, want exactly %q\n%s", got, want, out)
	}
}

// TestSelectorsKeepPodsAway: the webhook configuration's selectors, as the
// real apiserver evaluates them: pods in kube-system, in rdma-webhook, in a
// namespace labelled rdma-webhook.io/inject=false, and a pod without the
// labels (the annotation alone is not enough) never reach the webhook.
func TestSelectorsKeepPodsAway(t *testing.T) {
	ctx := context.Background()
	optedOut := newNamespace(t, map[string]string{"rdma-webhook.io/inject": "false"})
	plain := newNamespace(t, nil)
	restricted := func(p *corev1.Pod) *corev1.Pod {
		// rdma-webhook enforces Pod Security restricted.
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(1000)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		return p
	}
	unlabelled := gpuPod("annotation-only", 8)
	unlabelled.Labels = nil
	unlabelled.Annotations = map[string]string{"rdma-webhook.io/inject": "true"}
	away := []struct {
		ns  string
		pod *corev1.Pod
	}{
		{"kube-system", gpuPod("rc-kube-system", 8)},
		{"rdma-webhook", restricted(gpuPod("rc-own-namespace", 8))},
		{optedOut, gpuPod("opted-out", 8)},
		{plain, unlabelled},
	}
	for _, a := range away {
		if _, err := clientset.CoreV1().Pods(a.ns).Create(ctx, a.pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s/%s: %v", a.ns, a.pod.Name, err)
		}
		ns, name := a.ns, a.pod.Name
		t.Cleanup(func() {
			_ = clientset.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
		})
	}
	// A pod that does reach it, created last: once its line is in the log,
	// the lines of the others would be too.
	if _, err := clientset.CoreV1().Pods(plain).Create(ctx, gpuPod("control", 8), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAdmissionLine(t, plain, "control")
	for _, a := range away {
		if lines := admissionLines(t, a.ns, a.pod.Name); len(lines) > 0 {
			t.Errorf("%s/%s reached the webhook: %v", a.ns, a.pod.Name, lines)
		}
		requireUntouched(t, getPod(t, a.ns, a.pod.Name))
	}
}

// mustShell runs a shell command line with the cluster's kubectl first on
// PATH, as a user of docs/operations.md would.
func mustShell(t testing.TB, line string) (string, string) {
	t.Helper()
	return mustRun(t, time.Minute, []string{"PATH=" + filepath.Dir(kubectlBin) + ":" + os.Getenv("PATH"),
		"KUBECONFIG=" + kubeconfig}, "sh", "-c", line)
}
