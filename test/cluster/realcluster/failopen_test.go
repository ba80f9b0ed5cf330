package realcluster

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// hungListener accepts connections and never answers them (a replica that
// is stuck, or a black hole behind a live address); it counts the
// connections and holds them until the test ends.
func hungListener(t *testing.T) (addr string, accepted *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = &atomic.Int64{}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return l.Addr().String(), accepted
}

// failOpenCount is the apiserver's
// apiserver_admission_webhook_fail_open_count for one webhook entry, 0
// before the first.
func failOpenCount(t *testing.T, name string) float64 {
	t.Helper()
	body, err := clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("the apiserver's /metrics: %v", err)
	}
	var total float64
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_admission_webhook_fail_open_count{") ||
			!strings.Contains(line, `name="`+name+`"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		total += v
	}
	return total
}

// TestFailurePolicyIgnoreHung: the shipped webhook entry for opted-in pods
// (its timeoutSeconds and failurePolicy as installed), pointed at an address
// that accepts and never answers, for pods of a label the real entries never
// select: a pod create waits the 3 s of timeoutSeconds, then is
// admitted unmutated, and the apiserver counts it in
// apiserver_admission_webhook_fail_open_count under the entry's name, the
// metric manifests/components/fail-open-alert alerts on. With the earlier
// timeoutSeconds 5 the create took 5 s, which the bound below (under 5 s,
// at least the 3 s the apiserver must have waited) fails.
func TestFailurePolicyIgnoreHung(t *testing.T) {
	ctx := context.Background()
	const entry = "opt-in.rdma-webhook.io"
	installed, err := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "rdma-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var hook *admissionregistrationv1.MutatingWebhook
	for i := range installed.Webhooks {
		if installed.Webhooks[i].Name == entry {
			hook = installed.Webhooks[i].DeepCopy()
		}
	}
	if hook == nil {
		t.Fatalf("the installed MutatingWebhookConfiguration has no entry %s", entry)
	}
	if hook.TimeoutSeconds == nil || *hook.TimeoutSeconds != 3 || hook.FailurePolicy == nil || *hook.FailurePolicy != admissionregistrationv1.Ignore {
		t.Fatalf("entry %s: timeoutSeconds %v, failurePolicy %v; want 3 and Ignore", entry, hook.TimeoutSeconds, hook.FailurePolicy)
	}
	ca, err := os.ReadFile(filepath.Join(clusterDir, "certs", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	addr, accepted := hungListener(t)
	// The copy selects pods by a label of the test's own, which the real
	// entries never select (the pods lack inject=true and the operator's
	// label), in this namespace only.
	ns := newNamespace(t, map[string]string{"rc-hung": "yes"})
	hook.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + addr + "/mutate"), CABundle: ca}
	hook.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"rc-hung": "yes"}}
	hook.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"rc-hung": "yes"}}
	hungPod := func(name string) *corev1.Pod {
		p := gpuPod(name, 8)
		p.Labels = map[string]string{"rc-hung": "yes"}
		return p
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "rc-hung-rdma-webhook"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{*hook},
	}
	if _, err := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, mwc.Name, metav1.DeleteOptions{})
	})
	// The apiserver picks the configuration up from its informer: a
	// server-side dry run reaches the hung address once it has.
	waitFor(t, podsWithin, "the hung webhook in the admission chain", func() (bool, string) {
		_, _, _ = kubectl(toJSON(t, hungPod("probe")), "create", "-n", ns, "--dry-run=server", "-f", "-")
		return accepted.Load() > 0, "no connection to the hung address yet"
	})

	before := failOpenCount(t, entry)
	start := time.Now()
	if _, err := clientset.CoreV1().Pods(ns).Create(ctx, hungPod("hung"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the pod create failed with the webhook hung (failurePolicy Ignore must admit it): %v", err)
	}
	took := time.Since(start)
	t.Logf("pod create with the webhook hung: %v", took.Round(10*time.Millisecond))
	if took < 2900*time.Millisecond || took >= 5*time.Second {
		t.Errorf("the create took %v: want the 3 s of timeoutSeconds (at least 2.9 s, under the 5 s of before)", took)
	}
	stored := getPod(t, ns, "hung")
	if v, ok := stored.Annotations["rdma-webhook.io/injected"]; ok {
		t.Errorf("the pod admitted past a hung webhook has rdma-webhook.io/injected=%q", v)
	}
	if len(stored.Spec.Containers[0].Env) != 0 {
		t.Errorf("the pod admitted past a hung webhook has env %v", stored.Spec.Containers[0].Env)
	}
	if after := failOpenCount(t, entry); after < before+1 {
		t.Errorf("apiserver_admission_webhook_fail_open_count{name=%q}: %v before, %v after; want one more", entry, before, after)
	}
}
