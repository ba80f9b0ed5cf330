package realcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// How long the suite waits for what the control plane does on its own: the
// operator creating a job's pods, a namespace going away.
const (
	podsWithin    = 60 * time.Second
	deletedWithin = 60 * time.Second
	pollEvery     = 100 * time.Millisecond
)

// kubectl runs the cluster's kubectl with stdin; it returns stdout and
// stderr, and err when kubectl exited non-zero.
func kubectl(stdin string, args ...string) (string, string, error) {
	cmd := exec.Command(kubectlBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// mustKubectl is kubectl that fails the test on a non-zero exit.
func mustKubectl(t testing.TB, stdin string, args ...string) (string, string) {
	t.Helper()
	out, errs, err := kubectl(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errs)
	}
	return out, errs
}

var nsCounter atomic.Int64

// newNamespace creates a namespace with labels; it is deleted, and waited
// for, when the test ends, so that cluster-wide listings of later tests see
// only their own pods.
func newNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("rc-%d-%s", nsCounter.Add(1), strings.ToLower(strings.ReplaceAll(
		strings.Split(t.Name(), "/")[0][len("Test"):], "_", "-")))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return createNamespace(t, name, labels)
}

// createNamespace makes namespace name with labels, ready for pods, and
// deletes it when the test ends. The test does not wait for the namespace
// controller to finish: names are never reused within a run (newNamespace
// numbers them, and the one fixed name is used once), and the control plane
// is thrown away at the end. Waiting cost a few seconds per test.
func createNamespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := clientset.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	// The ServiceAccount admission plugin refuses pods until the controller
	// manager made the namespace's default service account.
	waitFor(t, 30*time.Second, "the default ServiceAccount of "+name, func() (bool, string) {
		_, err := clientset.CoreV1().ServiceAccounts(name).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	t.Cleanup(func() { deleteNamespace(t, name) })
	return name
}

func deleteNamespace(t *testing.T, name string) {
	ctx := context.Background()
	// A pod bound to a node (spec.nodeName) waits for its kubelet to confirm
	// a graceful deletion, and there is no kubelet: delete at once.
	if err := clientset.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))},
		metav1.ListOptions{}); err != nil {
		t.Errorf("delete the pods of %s: %v", name, err)
	}
	if err := clientset.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete namespace %s: %v", name, err)
	}
}

// waitFor polls cond until it holds, failing the test after d with the
// last thing cond said.
func waitFor(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last: %s", d, what, last)
		}
		time.Sleep(pollEvery)
	}
}

// waitPods waits until the namespace holds n pods matching selector and
// returns them as the apiserver stored them.
func waitPods(t testing.TB, ns, selector string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, podsWithin, fmt.Sprintf("%d pods %q in %s", n, selector, ns), func() (bool, string) {
		list, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		pods = list.Items
		return len(pods) == n, fmt.Sprintf("%d pods", len(pods))
	})
	return pods
}

func getPod(t testing.TB, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := clientset.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s/%s: %v", ns, name, err)
	}
	return p
}

// logLines returns the webhook's JSON log lines, in order.
func logLines(t testing.TB) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(webhookLog)
	if err != nil {
		t.Fatalf("read the webhook's log: %v", err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(string(data), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// admissionLines returns the webhook's admission log lines for a pod.
func admissionLines(t testing.TB, ns, pod string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range logLines(t) {
		if l["namespace"] == ns && l["pod"] == pod {
			out = append(out, l)
		}
	}
	return out
}

// waitAdmissionLine waits for the webhook's log line for a pod: the log
// queue writes within 100 ms of an admission.
func waitAdmissionLine(t testing.TB, ns, pod string) map[string]any {
	t.Helper()
	var got []map[string]any
	waitFor(t, 5*time.Second, "the webhook's log line for "+ns+"/"+pod, func() (bool, string) {
		got = admissionLines(t, ns, pod)
		return len(got) > 0, "none"
	})
	return got[0]
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fromJSON decodes strictly: an unknown field is a failure.
func fromJSON(t testing.TB, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, s)
	}
}

// mustRun runs a command with extra environment, within d, and fails the
// test on a non-zero exit.
func mustRun(t testing.TB, d time.Duration, env []string, name string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}
