package realcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The namespace label that sends a bench namespace's pods to one arm only.
const benchArm = "rc-bench-arm"

// TestBenchMutationsAgree: the three mutations `make bench-cluster` compares
// do the same to the bench's worker pod (bench/cluster/worker-pod.json):
// rdma-webhook as the suite installs it, bench/cluster/policy.yaml (a
// MutatingAdmissionPolicy) and the Go webhook bench/gowebhook, registered
// with a copy of rdma-webhook's pytorchjob entry. Each arm has a namespace
// of its own; the policy's and the Go webhook's selectors are narrowed to
// theirs, and theirs are labelled rdma-webhook.io/inject=false, which keeps
// rdma-webhook out. Each worker pod must be mutated by its arm exactly once
// and by no other; the guestbook pod (plain-pod.json) by none.
func TestBenchMutationsAgree(t *testing.T) {
	ctx := context.Background()
	worker := benchPod(t, "worker-pod.json")
	plain := benchPod(t, "plain-pod.json")

	nsWebhook := newNamespace(t, map[string]string{benchArm: "webhook"})
	nsPolicy := newNamespace(t, map[string]string{benchArm: "policy", "rdma-webhook.io/inject": "false"})
	nsGo := newNamespace(t, map[string]string{benchArm: "go", "rdma-webhook.io/inject": "false"})

	installBenchPolicy(t, nsPolicy)
	calls := installGoWebhook(t, nsGo)

	// The arms the apiserver does not run yet (its informers pick new
	// configurations up within a second or so): probed with dry runs, under
	// other names than the pods compared.
	for _, arm := range []struct{ what, ns string }{{"the policy", nsPolicy}, {"the Go webhook", nsGo}} {
		probe := worker.DeepCopy()
		probe.Name = "probe"
		waitFor(t, podsWithin, arm.what+" in the admission chain", func() (bool, string) {
			out, errs, err := kubectl(toJSON(t, probe), "create", "-n", arm.ns, "--dry-run=server", "-o", "json", "-f", "-")
			var got corev1.Pod
			if err != nil || json.Unmarshal([]byte(out), &got) != nil {
				return false, errs
			}
			return got.Annotations["rdma-webhook.io/injected"] != "", "not mutated yet"
		})
	}

	// The webhook's namespace last: its log line, awaited below, then comes
	// after any it wrote for the other two.
	stored := map[string]*corev1.Pod{}
	for _, ns := range []string{nsPolicy, nsGo, nsWebhook} {
		for _, p := range []*corev1.Pod{worker, plain} {
			if _, err := clientset.CoreV1().Pods(ns).Create(ctx, p.DeepCopy(), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s/%s: %v", ns, p.Name, err)
			}
		}
		stored[ns] = getPod(t, ns, worker.Name)
		requireMutated(t, stored[ns], "pytorch", want{profile: "roce-8card", hca: hca8})
		requireBenchUntouched(t, getPod(t, ns, plain.Name))
	}

	// rdma-webhook: one call, for its own namespace's worker, which changed
	// it (so neither the policy, which the apiserver runs before webhooks,
	// nor the Go webhook had).
	line := waitAdmissionLine(t, nsWebhook, worker.Name)
	if lines := admissionLines(t, nsWebhook, worker.Name); len(lines) != 1 {
		t.Errorf("rdma-webhook was called %d times for %s/%s, want once: %v", len(lines), nsWebhook, worker.Name, lines)
	}
	if ops, _ := line["ops"].(float64); ops == 0 {
		t.Errorf("rdma-webhook changed nothing in %s/%s (mutated before it?): %v", nsWebhook, worker.Name, line)
	}
	for _, ns := range []string{nsPolicy, nsGo, nsWebhook} {
		if ns != nsWebhook {
			if lines := admissionLines(t, ns, worker.Name); len(lines) != 0 {
				t.Errorf("rdma-webhook was called for %s/%s, another arm's: %v", ns, worker.Name, lines)
			}
		}
		if lines := admissionLines(t, ns, plain.Name); len(lines) != 0 {
			t.Errorf("rdma-webhook was called for %s/%s, not a target: %v", ns, plain.Name, lines)
		}
	}

	// The Go webhook: one call, for its namespace's worker, as yet unmutated
	// (the policy did not run there), and it answered with a patch.
	got := calls.of(worker.Name, plain.Name)
	if len(got) != 1 || got[0].namespace != nsGo || got[0].injected || !got[0].patched {
		t.Errorf("Go webhook calls for the bench's pods: %+v; want one, for %s/%s, unmutated, answered with a patch",
			got, nsGo, worker.Name)
	}

	// The three agree on everything the mutation adds.
	want := benchMutation(t, stored[nsWebhook])
	for _, ns := range []string{nsPolicy, nsGo} {
		if got := benchMutation(t, stored[ns]); got != want {
			t.Errorf("%s/%s differs from rdma-webhook's:\n got  %s\n want %s", ns, worker.Name, got, want)
		}
	}
}

// benchPod reads one of the bench's pods from bench/cluster.
func benchPod(t *testing.T, file string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "bench", "cluster", file))
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	fromJSON(t, string(data), &p)
	return &p
}

// benchMutation is what the mutation adds to the worker pod, as JSON: the
// GPU container's NCCL env (in order), its securityContext, its /dev/shm
// mount and the volume, schedulerName, the rdma/* resources and the
// rdma-webhook.io/* annotations.
func benchMutation(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	c := container(t, p, "pytorch")
	var env []corev1.EnvVar
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "NCCL_") {
			env = append(env, e)
		}
	}
	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == "/dev/shm" {
			mount = &c.VolumeMounts[i]
		}
	}
	var vol *corev1.Volume
	for i := range p.Spec.Volumes {
		if mount != nil && p.Spec.Volumes[i].Name == mount.Name {
			vol = &p.Spec.Volumes[i]
		}
	}
	rdma := map[string]corev1.ResourceList{"limits": {}, "requests": {}}
	for kind, rl := range map[string]corev1.ResourceList{"limits": c.Resources.Limits, "requests": c.Resources.Requests} {
		for name, q := range rl {
			if strings.HasPrefix(string(name), "rdma/") {
				rdma[kind][name] = q
			}
		}
	}
	ann := map[string]string{}
	for k, v := range p.Annotations {
		if strings.HasPrefix(k, "rdma-webhook.io/") {
			ann[k] = v
		}
	}
	return toJSON(t, map[string]any{"env": env, "securityContext": c.SecurityContext, "mount": mount,
		"volume": vol, "schedulerName": p.Spec.SchedulerName, "rdma": rdma, "annotations": ann})
}

// requireBenchUntouched: the guestbook pod got none of the mutation.
func requireBenchUntouched(t *testing.T, p *corev1.Pod) {
	t.Helper()
	requireUntouched(t, p)
	what := p.Namespace + "/" + p.Name
	for k := range p.Annotations {
		if strings.HasPrefix(k, "rdma-webhook.io/") {
			t.Errorf("%s: annotation %s, want no mutation", what, k)
		}
	}
	if p.Spec.SchedulerName != "default-scheduler" {
		t.Errorf("%s: schedulerName %q, want default-scheduler", what, p.Spec.SchedulerName)
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			t.Errorf("%s: got an emptyDir volume %s, want no mutation", what, v.Name)
		}
	}
	for _, c := range p.Spec.Containers {
		if c.SecurityContext != nil || len(c.VolumeMounts) != 1 {
			t.Errorf("%s: container %s got securityContext %+v, mounts %+v; want only the token's mount",
				what, c.Name, c.SecurityContext, c.VolumeMounts)
		}
		for name := range c.Resources.Limits {
			if strings.HasPrefix(string(name), "rdma/") {
				t.Errorf("%s: container %s got %s, want no mutation", what, c.Name, name)
			}
		}
	}
}

// installBenchPolicy applies bench/cluster/policy.yaml, its param in a
// namespace of the test's and its namespaceSelector narrowed to ns (the
// file's rdma-webhook.io/inject NotIn [false] traded for the arm's label),
// and removes it all when the test ends.
func installBenchPolicy(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(root, "bench", "cluster", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		policy  *admissionregistrationv1.MutatingAdmissionPolicy
		binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
		param   *corev1.ConfigMap
	)
	for _, doc := range strings.Split(string(data), "\n---\n") {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("policy.yaml: %v", err)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(js, &tm); err != nil {
			t.Fatalf("policy.yaml: %v", err)
		}
		switch tm.Kind {
		case "MutatingAdmissionPolicy":
			policy = &admissionregistrationv1.MutatingAdmissionPolicy{}
			fromJSON(t, string(js), policy)
		case "MutatingAdmissionPolicyBinding":
			binding = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
			fromJSON(t, string(js), binding)
		case "ConfigMap":
			param = &corev1.ConfigMap{}
			fromJSON(t, string(js), param)
		case "Namespace", "":
		default:
			t.Fatalf("policy.yaml: unexpected %s", tm.Kind)
		}
	}
	if policy == nil || binding == nil || param == nil {
		t.Fatal("policy.yaml lacks the policy, its binding or its param")
	}
	narrowToArm(t, policy.Spec.MatchConstraints.NamespaceSelector, "policy")

	paramNS := newNamespace(t, nil)
	param.Namespace = paramNS
	binding.Spec.ParamRef.Namespace = paramNS
	if _, err := clientset.CoreV1().ConfigMaps(paramNS).Create(ctx, param, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	api := clientset.AdmissionregistrationV1()
	if _, err := api.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MutatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{}) })
	if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.MutatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })
}

// narrowToArm replaces the selector's rdma-webhook.io/inject NotIn [false]
// with benchArm In [arm]: the arm's namespace is labelled inject=false to
// keep rdma-webhook out, and only it may be served.
func narrowToArm(t *testing.T, sel *metav1.LabelSelector, arm string) {
	t.Helper()
	for i, e := range sel.MatchExpressions {
		if e.Key == "rdma-webhook.io/inject" {
			sel.MatchExpressions[i] = metav1.LabelSelectorRequirement{Key: benchArm,
				Operator: metav1.LabelSelectorOpIn, Values: []string{arm}}
			return
		}
	}
	t.Fatalf("namespaceSelector %+v has no rdma-webhook.io/inject requirement", sel)
}

// goCall is one review the Go webhook got, as the test's proxy saw it.
type goCall struct {
	namespace, pod string
	injected       bool // the pod already had rdma-webhook.io/injected
	patched        bool // the answer had a patch
}

type goCalls struct {
	mu    sync.Mutex
	calls []goCall
}

// of returns the calls for pods of those names.
func (c *goCalls) of(names ...string) []goCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []goCall
	for _, g := range c.calls {
		for _, n := range names {
			if g.pod == n {
				out = append(out, g)
			}
		}
	}
	return out
}

// installGoWebhook starts build/bench/gowebhook with the suite's serving
// certificate, behind a proxy of the test's that records each review, and
// registers it with a copy of rdma-webhook's pytorchjob entry narrowed to
// ns; all of it goes when the test ends.
func installGoWebhook(t *testing.T, ns string) *goCalls {
	t.Helper()
	ctx := context.Background()
	bin := filepath.Join(root, "build", "bench", "gowebhook")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run `make build/bench/gowebhook`", err)
	}
	certs := filepath.Join(clusterDir, "certs")
	ca, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no certificate in certs/ca.crt")
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	goURL := "https://127.0.0.1:" + port
	cmd := exec.Command(bin, "-listen", "127.0.0.1:"+port,
		"-cert", filepath.Join(certs, "tls.crt"), "-key", filepath.Join(certs, "tls.key"))
	var goErr bytes.Buffer
	cmd.Stderr = &goErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	client := &http.Client{Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	waitFor(t, 10*time.Second, "the Go webhook's /readyz", func() (bool, string) {
		resp, err := client.Get(goURL + "/readyz")
		if err != nil {
			return false, err.Error() + "; stderr: " + goErr.String()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})

	calls := &goCalls{}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		resp, err := client.Post(goURL+"/mutate", r.Header.Get("Content-Type"), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		var in, out admissionv1.AdmissionReview
		var pod corev1.Pod
		if json.Unmarshal(body, &in) == nil && in.Request != nil && json.Unmarshal(in.Request.Object.Raw, &pod) == nil &&
			json.Unmarshal(answer, &out) == nil && out.Response != nil {
			_, injected := pod.Annotations["rdma-webhook.io/injected"]
			calls.mu.Lock()
			calls.calls = append(calls.calls, goCall{namespace: in.Request.Namespace, pod: pod.Name,
				injected: injected, patched: len(out.Response.Patch) > 0})
			calls.mu.Unlock()
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.ServeTLS(l, filepath.Join(certs, "tls.crt"), filepath.Join(certs, "tls.key")) }()
	t.Cleanup(func() { _ = srv.Close() })

	installed, err := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "rdma-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var entry *admissionregistrationv1.MutatingWebhook
	for i := range installed.Webhooks {
		if installed.Webhooks[i].Name == "pytorchjob.rdma-webhook.io" {
			entry = installed.Webhooks[i].DeepCopy()
		}
	}
	if entry == nil {
		t.Fatal("the installed MutatingWebhookConfiguration has no pytorchjob.rdma-webhook.io")
	}
	entry.Name = "pytorchjob.gowebhook.bench.example.com"
	entry.ClientConfig = admissionregistrationv1.WebhookClientConfig{
		URL: ptr.To(fmt.Sprintf("https://%s/mutate", l.Addr())), CABundle: ca}
	narrowToArm(t, entry.NamespaceSelector, "go")
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "rc-bench-gowebhook"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{*entry},
	}
	api := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := api.Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Delete(ctx, mwc.Name, metav1.DeleteOptions{}) })
	return calls
}
