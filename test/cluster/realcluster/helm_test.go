package realcluster

// charts/rdma-webhook through Helm (test/cluster/helm's, built by build.sh
// beside kubectl) on the control plane: a second install, in a namespace
// and under a name of its own (rdma-webhook-helm), beside the suite's
// kustomize install. As the suite's, its webhook runs on the host: the
// chart's webhook.url points the apiserver at it, its flags are the ones
// the chart's Deployment carries (read back from the apiserver) and its
// token is one of the chart's ServiceAccount, so it has the chart's RBAC.
//
// helm install with nothing before it (certificates.mode self-signed, the
// default: no Secret, no caBundle): the host webhook, with the chart's
// --cert-secret and --webhook-configs, makes the Secret and writes the
// caBundles through the API, by the chart's NAME-certs roles. Then the
// PyTorchJob checks of TestPyTorchJobsMutated; helm upgrade with other
// profiles, served to the next job's pods, the caBundle kept; helm
// uninstall, watched: the webhook configurations are deleted before the
// Deployment and the Service, by the chart's pre-delete hook (run on the
// host, as the webhook is: there is no kubelet), with Helm 4 and Helm 3
// (whose UninstallOrder alone would delete them last), and afterwards
// nothing of the chart is left but what the webhook wrote itself: the last
// good copy of the profiles and the certificate Secret (the chart's
// README, "Certificates": a reinstall serves the same CA). Helm 4 once more
// with certificates.mode existing (a caBundle patched in afterwards, as
// certs/install-dev-certs.sh does).

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"crypto/tls"
	"crypto/x509"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"
)

// helmRun is one Helm's run of the test: its binary's name beside kubectl,
// and the release, which names the namespace and every object too.
type helmRun struct {
	bin, release, certMode string
}

// selfSigned: the run uses certificates.mode self-signed.
func (h helmRun) selfSigned() bool { return h.certMode == "self-signed" }

const (
	// The label the chart's webhook.namespaceLabels asks of a namespace:
	// this install is called for the test's own namespace only.
	helmTestLabel = "rdma-webhook.io/helm-test"
)

// helmCmd runs the pinned helm against the cluster, with caches of its own.
func (h helmRun) helmCmd(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(kubectlBin), h.bin)
	home := filepath.Join(clusterDir, "helm-home")
	env := []string{"KUBECONFIG=" + kubeconfig, "HELM_CACHE_HOME=" + home + "/cache",
		"HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data"}
	out, _ := mustRun(t, 2*time.Minute, env, bin, args...)
	return out
}

// helmWebhook runs a second webhook binary on the host with the chart's
// Deployment's flags (paths and ports mapped as webhook.sh maps them).
type helmWebhook struct {
	cmd   *exec.Cmd
	log   string
	mport string
	// caFile: the CA its metrics listener is verified with (the suite's),
	// or empty: the ca.crt of the Secret ns/secret it makes itself.
	caFile, ns, secret string
}

func (h helmRun) startHelmWebhook(t *testing.T, port string) *helmWebhook {
	t.Helper()
	env, err := readEnv(filepath.Join(clusterDir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	mport, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	argsText, _ := mustKubectl(t, "", "-n", h.release, "get", "deployment", h.release,
		"-o", `jsonpath={range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}`)
	token, _ := mustKubectl(t, "", "-n", h.release, "create", "token", h.release, "--duration=1h")
	tokenFile := filepath.Join(clusterDir, "helm-webhook.token")
	if err := os.WriteFile(tokenFile, []byte(strings.TrimSpace(token)), 0o600); err != nil {
		t.Fatal(err)
	}
	// Mode self-signed writes the pair where --tls-cert-file points: a
	// directory of its own, never the suite's certs.
	tlsDir := filepath.Join(clusterDir, "certs")
	if h.selfSigned() {
		tlsDir = t.TempDir()
	}
	var args []string
	for _, a := range strings.Split(strings.TrimSpace(argsText), "\n") {
		switch {
		case a == ":8443":
			a = "127.0.0.1:" + port
		case a == ":9090":
			a = "127.0.0.1:" + mport
		case strings.HasPrefix(a, "/etc/rdma-webhook/tls/"):
			a = filepath.Join(tlsDir, strings.TrimPrefix(a, "/etc/rdma-webhook/tls/"))
		}
		args = append(args, a)
	}
	args = append(args, "--kube-api", env["APISERVER"], "--kube-ca", env["CLUSTER_CA_CERT"],
		"--kube-token-file", tokenFile)
	if ca := env["WEBHOOK_CLIENT_CA"]; ca != "" {
		args = append(args, "--client-ca", ca)
	}
	bin := os.Getenv("RDMA_WEBHOOK_BIN")
	if bin == "" {
		bin = filepath.Join(root, "build", "rdma-webhook")
	}
	w := &helmWebhook{log: filepath.Join(clusterDir, "logs", h.release+"-webhook.log"), mport: mport,
		caFile: filepath.Join(clusterDir, "certs", "ca.crt"), ns: h.release, secret: helmTLSSecret}
	if h.selfSigned() {
		w.caFile = ""
	}
	logf, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	w.cmd = exec.Command(bin, args...)
	w.cmd.Stdout, w.cmd.Stderr = logf, logf
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	t.Cleanup(func() { w.stop(t) })
	w.waitReady(t)
	return w
}

func (w *helmWebhook) stop(t *testing.T) {
	if w.cmd == nil || w.cmd.Process == nil {
		return
	}
	_ = w.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = w.cmd.Process.Kill()
		<-done
	}
	w.cmd = nil
	if report := sanitizerReport(w.log); report != "" {
		t.Errorf("the chart's webhook's sanitizer report:\n%s", report)
	}
}

// waitReady: /readyz is 200 once the profiles came through the API, from
// the chart's ConfigMap, by the chart's Role (and, in mode self-signed, the
// pair it served is the Secret's, verified with the Secret's CA).
func (w *helmWebhook) waitReady(t *testing.T) {
	t.Helper()
	waitFor(t, 60*time.Second, "the chart's webhook ready", func() (bool, string) {
		var pem []byte
		var err error
		if w.caFile != "" {
			pem, err = os.ReadFile(w.caFile)
		} else {
			var s *corev1.Secret
			s, err = clientset.CoreV1().Secrets(w.ns).Get(context.Background(), w.secret, metav1.GetOptions{})
			if err == nil {
				pem = s.Data["ca.crt"]
			}
		}
		if err != nil {
			return false, err.Error()
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
		resp, err := c.Get("https://127.0.0.1:" + w.mport + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
}

// logHas: the chart's webhook logged its admission of pod ns/name, within
// a few seconds (its log is written by a thread of its own).
func (w *helmWebhook) logHas(ns, name string) bool {
	want := fmt.Sprintf(`"namespace":%q,"pod":%q,"result":"mutated"`, ns, name)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(pollEvery) {
		if data, _ := os.ReadFile(w.log); strings.Contains(string(data), want) {
			return true
		}
	}
	return false
}

// excludeFromSuiteWebhook keeps the suite's own install away from ns, so
// that only the chart's webhook mutates its pods: ns joins the NotIn of
// each entry's first namespace requirement, until the test ends.
func excludeFromSuiteWebhook(t *testing.T, ns string) {
	t.Helper()
	var ops, undo []string
	for i := 0; i < 5; i++ {
		p := fmt.Sprintf("/webhooks/%d/namespaceSelector/matchExpressions/0/values", i)
		ops = append(ops, fmt.Sprintf(`{"op":"test","path":"%s/0","value":"kube-system"}`, p),
			fmt.Sprintf(`{"op":"add","path":"%s/-","value":%q}`, p, ns))
		undo = append(undo, fmt.Sprintf(`{"op":"test","path":"%s/2","value":%q}`, p, ns),
			fmt.Sprintf(`{"op":"remove","path":"%s/2"}`, p))
	}
	mustKubectl(t, "", "patch", "mutatingwebhookconfiguration", "rdma-webhook", "--type", "json",
		"-p", "["+strings.Join(ops, ",")+"]")
	t.Cleanup(func() {
		mustKubectl(t, "", "patch", "mutatingwebhookconfiguration", "rdma-webhook", "--type", "json",
			"-p", "["+strings.Join(undo, ",")+"]")
	})
	// The apiserver reads webhook configurations through an informer.
	time.Sleep(2 * time.Second)
}

// renamedJob is the job of doc under another name.
func renamedJob(t *testing.T, doc string, j pytorchJob, name string) (string, pytorchJob) {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	m["metadata"].(map[string]any)["name"] = name
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	j.Metadata.Name = name
	return string(out), j
}

func requireJobMutated(t *testing.T, w *helmWebhook, ns string, byType map[string][]corev1.Pod, j pytorchJob, doc string, want want) {
	t.Helper()
	if len(byType["master"]) != 1 || len(byType["worker"]) != 1 {
		t.Errorf("want one master and one worker pod, got %d and %d", len(byType["master"]), len(byType["worker"]))
	}
	for rt, pods := range byType {
		for i := range pods {
			p := &pods[i]
			requireMutated(t, p, "pytorch", want)
			requireKept(t, p, template(t, j, rt), "pytorch")
			if !w.logHas(ns, p.Name) {
				t.Errorf("%s: not in the chart's webhook's log %s: another webhook mutated it", p.Name, w.log)
			}
		}
	}
}

func TestHelmInstallUpgradeUninstall(t *testing.T) {
	// Helm 4, then Helm 3, each with a release and a namespace of its own,
	// with the default certificates; then Helm 4 with mode existing.
	for _, h := range []helmRun{{"helm", "rdma-webhook-helm", "self-signed"}, {"helm3", "rdma-webhook-helm3", "self-signed"},
		{"helm", "rdma-webhook-helm-existing", "existing"}} {
		t.Run(h.bin+"-"+h.certMode, h.lifecycle)
	}
}

func (h helmRun) lifecycle(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(clusterDir, "certs", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, h.release, nil)
	ns := newNamespace(t, map[string]string{helmTestLabel: "true"})
	excludeFromSuiteWebhook(t, ns)

	chart := filepath.Join(root, "charts", "rdma-webhook")
	// The caBundle, however it got there, must survive the helm upgrade
	// below (values.yaml says it does), or the pods after the upgrade are
	// admitted unmutated (failurePolicy Ignore, TLS refused).
	sets := []string{"name=" + h.release, "webhook.url=https://127.0.0.1:" + port}
	if !h.selfSigned() {
		sets = append(sets, "certificates.mode="+h.certMode)
	}
	h.helmCmd(t, "install", h.release, chart, "-n", h.release, "--set", strings.Join(sets, ","),
		"--set-string", "webhook.namespaceLabels."+strings.ReplaceAll(helmTestLabel, ".", `\.`)+"=true")
	var bundle string
	var w *helmWebhook
	if h.selfSigned() {
		// Nothing before it: no Secret, no caBundle; the webhook makes both.
		if _, err := clientset.CoreV1().Secrets(h.release).Get(context.Background(), helmTLSSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the Secret %s/%s before the webhook started: %v", h.release, helmTLSSecret, err)
		}
		requireCABundles(t, h.release, "helm install", "")
		w = h.startHelmWebhook(t, port)
		bundle = base64.StdEncoding.EncodeToString(h.tlsSecret(t).Data["ca.crt"])
		waitFor(t, 30*time.Second, "the webhook writing its CA into the caBundles", func() (bool, string) {
			n := 0
			for kind := range helmHookEntries {
				out, _ := mustKubectl(t, "", "get", kind, h.release, "-o", "jsonpath={.webhooks[*].clientConfig.caBundle}")
				n += strings.Count(out, bundle)
			}
			return n == 6, fmt.Sprintf("%d of 6 entries have the Secret's CA", n)
		})
	} else {
		// certificates.mode existing without a caBundle: patched in
		// afterwards, as certs/install-dev-certs.sh does.
		bundle = base64.StdEncoding.EncodeToString(ca)
		for kind, n := range helmHookEntries {
			var ops []string
			for i := 0; i < n; i++ {
				ops = append(ops, fmt.Sprintf(`{"op":"add","path":"/webhooks/%d/clientConfig/caBundle","value":%q}`, i, bundle))
			}
			mustKubectl(t, "", "patch", kind, h.release, "--type", "json", "-p", "["+strings.Join(ops, ",")+"]")
		}
		w = h.startHelmWebhook(t, port)
	}

	// The PyTorchJob checks of TestPyTorchJobsMutated, through the chart.
	doc, j := readJob(t, filepath.Join(root, "test", "e2e", "testdata", "pytorchjob-swin.json"))
	userEnv := map[string]string{"NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": "0"}
	requireJobMutated(t, w, ns, submitJob(t, ns, doc, j), j, doc, want{profile: "roce-8card", hca: hca8, userEnv: userEnv})

	// helm upgrade with other profiles: the ConfigMap changes in place and
	// the next pods get them, with no restart of the webhook.
	shipped, err := os.ReadFile(filepath.Join(root, "manifests", "profiles.json"))
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.ReplaceAll(string(shipped), `"roce-8card"`, `"helm-8card"`)
	if changed == string(shipped) {
		t.Fatal("manifests/profiles.json has no profile roce-8card to rename")
	}
	pfile := filepath.Join(t.TempDir(), "profiles.json")
	if err := os.WriteFile(pfile, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	h.helmCmd(t, "upgrade", h.release, chart, "-n", h.release, "--reuse-values", "--set-file", "profiles.inline="+pfile)
	waitFor(t, 30*time.Second, "the chart's webhook serving the upgraded profiles", func() (bool, string) {
		got := dryRunProfile(t, ns)
		return got == "helm-8card", "a dry-run 8-GPU pod got " + got
	})
	requireCABundles(t, h.release, "helm upgrade", bundle)
	doc2, j2 := renamedJob(t, doc, j, j.Metadata.Name+"-upgraded")
	requireJobMutated(t, w, ns, submitJob(t, ns, doc2, j2), j2, doc2, want{profile: "helm-8card", hca: hca8, userEnv: userEnv})

	// helm uninstall, watched: the order of the deletions is the order of
	// their etcd revisions (a deleted object's resourceVersion).
	// With both Helms the chart's pre-delete hook deletes the webhook
	// configurations first; Helm 3 alone would delete them last (its
	// UninstallOrder lists no webhook kind). No kubelet runs the hook's pod:
	// the test runs its command on the host and completes the Job.
	order := h.watchDeletions(t)
	uninstalled := h.helmBackground(t, 2*time.Minute, "uninstall", h.release, "-n", h.release, "--wait", "--timeout", "90s")
	h.runUninstallHook(t)
	if err := <-uninstalled; err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	got := order()
	t.Logf("uninstall: the deletions' etcd revisions: %v", got)
	for _, hook := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, backend := range []string{"Deployment", "Service"} {
			h, ok1 := got[hook]
			b, ok2 := got[backend]
			if !ok1 || !ok2 {
				t.Errorf("uninstall: saw no deletion of %s (%v) or %s (%v): %v", hook, ok1, backend, ok2, got)
			} else if h >= b {
				t.Errorf("uninstall deleted %s (revision %d) after %s (revision %d): the apiserver could call a webhook that is gone", hook, h, backend, b)
			}
		}
	}
	w.stop(t)
	h.requireNothingLeft(t, bundle)
}

// helmBackground runs helm as helmCmd does, in the background: the
// channel gets its error (with its output) once it ends.
func (h helmRun) helmBackground(t *testing.T, d time.Duration, args ...string) <-chan error {
	t.Helper()
	home := filepath.Join(clusterDir, "helm-home")
	cmd := exec.Command(filepath.Join(filepath.Dir(kubectlBin), h.bin), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HELM_CACHE_HOME="+home+"/cache",
		"HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		timer := time.AfterFunc(d, func() { _ = cmd.Process.Kill() })
		err := cmd.Wait()
		timer.Stop()
		if err != nil {
			err = fmt.Errorf("%v\n%s", err, out.String())
		}
		done <- err
	}()
	return done
}

// runUninstallHook does what a kubelet would do with the chart's pre-delete
// hook Job: waits for it, runs its container's command on the host (the
// binary, a token of the hook's ServiceAccount, so the hook's RBAC, and the
// apiserver's address and CA as the host webhook gets them), then marks the
// Job complete through its status subresource as the Job controller would,
// which is what Helm waits for before it deletes the rest.
func (h helmRun) runUninstallHook(t *testing.T) {
	t.Helper()
	hook := h.release + "-uninstall"
	waitFor(t, 60*time.Second, "helm creating the pre-delete hook Job "+hook, func() (bool, string) {
		_, err := clientset.BatchV1().Jobs(h.release).Get(context.Background(), hook, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	argsText, _ := mustKubectl(t, "", "-n", h.release, "get", "job", hook,
		"-o", `jsonpath={range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}`)
	args := strings.Split(strings.TrimSpace(argsText), "\n")
	if len(args) == 0 || args[0] != "unregister" {
		t.Fatalf("the hook Job runs %q, not unregister", args)
	}
	env, err := readEnv(filepath.Join(clusterDir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	token, _ := mustKubectl(t, "", "-n", h.release, "create", "token", hook, "--duration=10m")
	tokenFile := filepath.Join(clusterDir, "helm-hook.token")
	if err := os.WriteFile(tokenFile, []byte(strings.TrimSpace(token)), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, "--kube-api", env["APISERVER"], "--kube-ca", env["CLUSTER_CA_CERT"],
		"--kube-token-file", tokenFile)
	bin := os.Getenv("RDMA_WEBHOOK_BIN")
	if bin == "" {
		bin = filepath.Join(root, "build", "rdma-webhook")
	}
	out, _ := mustRun(t, time.Minute, nil, bin, args...)
	want := fmt.Sprintf("mutatingwebhookconfigurations %s deleted\nvalidatingwebhookconfigurations %s deleted\n",
		h.release, h.release)
	if out != want {
		t.Errorf("the hook's unregister printed %q, want %q", out, want)
	}
	// The Job controller sets startTime on its first sync (a finished Job
	// needs one, and the API refuses to change it on a running Job).
	startTime := ""
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && startTime == ""; time.Sleep(pollEvery) {
		startTime, _ = mustKubectl(t, "", "-n", h.release, "get", "job", hook, "-o", "jsonpath={.status.startTime}")
	}
	now := time.Now().UTC().Format(time.RFC3339)
	start := ""
	if startTime == "" {
		start = fmt.Sprintf(`"startTime":%q,`, now)
	}
	cond := func(typ string) string {
		return fmt.Sprintf(`{"type":%q,"status":"True","reason":"RunOnHost","message":"the realcluster test ran it",`+
			`"lastProbeTime":%q,"lastTransitionTime":%q}`, typ, now, now)
	}
	patch := fmt.Sprintf(`{"status":{%s"completionTime":%q,"active":0,"ready":0,"terminating":0,"succeeded":1,`+
		`"uncountedTerminatedPods":null,"conditions":[%s,%s]}}`, start, now, cond("SuccessCriteriaMet"), cond("Complete"))
	mustKubectl(t, "", "-n", h.release, "patch", "job", hook, "--subresource=status", "--type=merge", "-p", patch)
}

// helmTLSSecret: certificates.secretName's default.
const helmTLSSecret = "rdma-webhook-tls"

// helmHookEntries: the entries of the chart's two webhook configurations.
var helmHookEntries = map[string]int{"mutatingwebhookconfiguration": 5, "validatingwebhookconfiguration": 1}

// requireCABundles: every entry of the release's two webhook
// configurations has the caBundle bundle (base64), or none when bundle is "".
func requireCABundles(t *testing.T, release, when, bundle string) {
	t.Helper()
	for kind, n := range helmHookEntries {
		out, _ := mustKubectl(t, "", "get", kind, release, "-o", "jsonpath={.webhooks[*].clientConfig.caBundle}")
		got := strings.Fields(out)
		ok := len(got) == 0
		if bundle != "" {
			ok = len(got) == n && strings.Count(out, bundle) == n
		}
		if !ok {
			t.Errorf("%s: %s %s has %d caBundles (expected %d, equal to %.20q...): %.80q", when, kind, release,
				len(got), map[bool]int{true: n}[bundle != ""], bundle, out)
		}
	}
}

// tlsSecret: the certificate Secret the webhook made in the release's
// namespace.
func (h helmRun) tlsSecret(t *testing.T) *corev1.Secret {
	t.Helper()
	s, err := clientset.CoreV1().Secrets(h.release).Get(context.Background(), helmTLSSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Secret %s/%s: %v", h.release, helmTLSSecret, err)
	}
	return s
}

// watchDeletions watches the webhook configurations, Deployments and
// Services of the chart and returns a function that stops and returns each
// kind's deletion revision.
func (h helmRun) watchDeletions(t *testing.T) func() map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + h.release}
	var ws []watch.Interface
	add := func(kind string, wi watch.Interface, err error) {
		if err != nil {
			cancel()
			t.Fatalf("watch %s: %v", kind, err)
		}
		ws = append(ws, wi)
	}
	kinds := []string{}
	a := clientset.AdmissionregistrationV1()
	wi, err := a.MutatingWebhookConfigurations().Watch(ctx, sel)
	add("MutatingWebhookConfiguration", wi, err)
	kinds = append(kinds, "MutatingWebhookConfiguration")
	wi, err = a.ValidatingWebhookConfigurations().Watch(ctx, sel)
	add("ValidatingWebhookConfiguration", wi, err)
	kinds = append(kinds, "ValidatingWebhookConfiguration")
	wi, err = clientset.AppsV1().Deployments(h.release).Watch(ctx, sel)
	add("Deployment", wi, err)
	kinds = append(kinds, "Deployment")
	wi, err = clientset.CoreV1().Services(h.release).Watch(ctx, sel)
	add("Service", wi, err)
	kinds = append(kinds, "Service")
	var mu sync.Mutex
	got := map[string]int64{}
	var wg sync.WaitGroup
	for i, wi := range ws {
		wg.Add(1)
		go func(kind string, wi watch.Interface) {
			defer wg.Done()
			for ev := range wi.ResultChan() {
				if ev.Type != watch.Deleted {
					continue
				}
				m, err := meta.Accessor(ev.Object)
				if err != nil {
					continue
				}
				rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
				if err != nil {
					continue
				}
				mu.Lock()
				got[kind] = rv
				mu.Unlock()
			}
		}(kinds[i], wi)
	}
	return func() map[string]int64 {
		// The last deletion's event may still be on its way.
		waitFor(t, 10*time.Second, "the deletions' watch events", func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return len(got) == len(kinds), fmt.Sprint(got)
		})
		cancel()
		for _, wi := range ws {
			wi.Stop()
		}
		wg.Wait()
		return got
	}
}

// requireNothingLeft lists every kind the chart makes, by name and by the
// release's label, namespaced and cluster-wide, and the release's own
// Secrets: only what the webhook wrote itself (not Helm's to delete) may
// be left, and must be: the last good copy of the profiles and, in mode
// self-signed, the certificate Secret, not Helm's, with the CA served
// (bundle, base64), so that a reinstall serves the same CA.
func (h helmRun) requireNothingLeft(t *testing.T, bundle string) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + h.release}
	var left []string
	note := func(kind string, names []string) {
		for _, n := range names {
			left = append(left, kind+"/"+n)
		}
	}
	names := func(items []metav1.Object) []string {
		var out []string
		for _, o := range items {
			out = append(out, o.GetName())
		}
		return out
	}
	waitFor(t, deletedWithin, "the garbage collector to delete the ReplicaSets and pods", func() (bool, string) {
		rs, err1 := clientset.AppsV1().ReplicaSets(h.release).List(ctx, metav1.ListOptions{})
		pods, err2 := clientset.CoreV1().Pods(h.release).List(ctx, metav1.ListOptions{})
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		return len(rs.Items)+len(pods.Items) == 0, fmt.Sprintf("%d ReplicaSets, %d pods", len(rs.Items), len(pods.Items))
	})
	c := clientset
	if l, err := c.CoreV1().ServiceAccounts(h.release).List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			if o.Name != "default" { // the namespace's own
				note("ServiceAccount", []string{o.Name})
			}
		}
	} else {
		t.Error(err)
	}
	lastGood := false
	if l, err := c.CoreV1().ConfigMaps(h.release).List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			switch o.Name {
			case "kube-root-ca.crt": // the namespace's own
			case h.release + "-profiles-last-good": // the webhook's own (README: "Uninstall")
				lastGood = true
			default:
				note("ConfigMap", []string{o.Name})
			}
		}
	} else {
		t.Error(err)
	}
	if !lastGood {
		t.Errorf("helm uninstall: the webhook's %s-profiles-last-good is gone; the README says it stays", h.release)
	}
	certKept := false
	if l, err := c.CoreV1().Secrets(h.release).List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			if h.selfSigned() && o.Name == helmTLSSecret {
				// The webhook's own (README: "Certificates"): not Helm's.
				certKept = true
				if by := o.Labels["app.kubernetes.io/managed-by"]; by != "" || o.Type != corev1.SecretTypeTLS {
					t.Errorf("the Secret %s: managed-by %q, type %q: expected the webhook's kubernetes.io/tls", o.Name, by, o.Type)
				}
				if base64.StdEncoding.EncodeToString(o.Data["ca.crt"]) != bundle {
					t.Errorf("the Secret %s after uninstall holds another CA than the one served", o.Name)
				}
				continue
			}
			note("Secret", []string{o.Name}) // Helm's release records among them
		}
	} else {
		t.Error(err)
	}
	if certKept != h.selfSigned() {
		t.Errorf("helm uninstall (certificates.mode %s): the certificate Secret %s left: %v", h.certMode, helmTLSSecret, certKept)
	}
	type lister func() ([]metav1.Object, error)
	listers := map[string]lister{
		"Service": func() ([]metav1.Object, error) {
			l, err := c.CoreV1().Services(h.release).List(ctx, metav1.ListOptions{})
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
		"Deployment": func() ([]metav1.Object, error) {
			l, err := c.AppsV1().Deployments(h.release).List(ctx, metav1.ListOptions{})
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
		"Role": func() ([]metav1.Object, error) {
			l, err := c.RbacV1().Roles(h.release).List(ctx, metav1.ListOptions{})
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
		"RoleBinding": func() ([]metav1.Object, error) {
			l, err := c.RbacV1().RoleBindings(h.release).List(ctx, metav1.ListOptions{})
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
		"PodDisruptionBudget": func() ([]metav1.Object, error) {
			l, err := c.PolicyV1().PodDisruptionBudgets(h.release).List(ctx, metav1.ListOptions{})
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
		"NetworkPolicy": func() ([]metav1.Object, error) {
			l, err := c.NetworkingV1().NetworkPolicies(h.release).List(ctx, metav1.ListOptions{})
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
		// Cluster-wide: by the release's label.
		"ClusterRole": func() ([]metav1.Object, error) {
			l, err := c.RbacV1().ClusterRoles().List(ctx, sel)
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
		"ClusterRoleBinding": func() ([]metav1.Object, error) {
			l, err := c.RbacV1().ClusterRoleBindings().List(ctx, sel)
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
		"MutatingWebhookConfiguration": func() ([]metav1.Object, error) {
			l, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, sel)
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
		"ValidatingWebhookConfiguration": func() ([]metav1.Object, error) {
			l, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, sel)
			return objs(l, err, func() []metav1.Object { return itemsOf(l.Items) })
		},
	}
	for kind, list := range listers {
		items, err := list()
		if err != nil {
			t.Errorf("list %s: %v", kind, err)
			continue
		}
		note(kind, names(items))
	}
	// And by name, cluster-wide: a label the chart forgot would hide one.
	for _, n := range []string{h.release, h.release + "-metrics-reader", h.release + "-certs", h.release + "-uninstall"} {
		if _, err := c.RbacV1().ClusterRoles().Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			note("ClusterRole(by name)", []string{n})
		}
	}
	// The pre-delete hook's own objects, deleted by Helm once it succeeded
	// (hook-delete-policy hook-succeeded).
	if _, err := c.RbacV1().ClusterRoleBindings().Get(ctx, h.release+"-uninstall", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		note("ClusterRoleBinding(by name)", []string{h.release + "-uninstall"})
	}
	if l, err := c.BatchV1().Jobs(h.release).List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			note("Job", []string{o.Name})
		}
	} else {
		t.Error(err)
	}
	if _, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, h.release, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		note("MutatingWebhookConfiguration(by name)", []string{h.release})
	}
	// Helm 4 lists releases in every status by default; Helm 3 with -a.
	list := []string{"list", "-n", h.release, "-q"}
	if h.bin == "helm3" {
		list = append(list, "-a")
	}
	if out := h.helmCmd(t, list...); strings.TrimSpace(out) != "" {
		note("helm release", strings.Fields(out))
	}
	if len(left) != 0 {
		t.Errorf("helm uninstall left: %v", left)
	}
}

func objs(_ any, err error, f func() []metav1.Object) ([]metav1.Object, error) {
	if err != nil {
		return nil, err
	}
	return f(), nil
}

// itemsOf turns a list's items into their ObjectMeta accessors.
func itemsOf[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}
