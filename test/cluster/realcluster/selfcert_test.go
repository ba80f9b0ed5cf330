package realcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The second webhook of TestSelfManagedCertificates: its own Secret, its own
// webhook configurations (named to sort first, so the apiserver calls it
// before the suite's), its own service account with exactly the RBAC of
// manifests/components/self-signed/rbac.yaml for those names.
const (
	scName      = "a-rdma-webhook-selfcert"
	scSecret    = "rdma-webhook-selfcert-tls"
	scNSLabel   = "rdma-webhook.io/selfcert-test"
	scNamespace = "rdma-webhook"
)

func scManifests(port string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: selfcert-test, namespace: %[2]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: selfcert-test-lookups}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: rdma-webhook}
subjects: [{kind: ServiceAccount, name: selfcert-test, namespace: %[2]s}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: selfcert-test, namespace: %[2]s}
rules:
- {apiGroups: [""], resources: [secrets], resourceNames: [%[3]s], verbs: [get, update]}
- {apiGroups: [""], resources: [secrets], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: selfcert-test, namespace: %[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: selfcert-test}
subjects: [{kind: ServiceAccount, name: selfcert-test, namespace: %[2]s}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: selfcert-test}
rules:
- apiGroups: [admissionregistration.k8s.io]
  resources: [mutatingwebhookconfigurations, validatingwebhookconfigurations]
  resourceNames: [%[4]s]
  verbs: [get, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: selfcert-test}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: selfcert-test}
subjects: [{kind: ServiceAccount, name: selfcert-test, namespace: %[2]s}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: %[4]s}
webhooks:
- name: selfcert.rdma-webhook.io
  clientConfig: {url: "https://127.0.0.1:%[1]s/mutate"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {%[5]s: "true"}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 10
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: %[4]s}
webhooks:
- name: selfcert-profiles.rdma-webhook.io
  clientConfig: {url: "https://127.0.0.1:%[1]s/validate-profiles"}
  rules: [{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  objectSelector: {matchLabels: {%[5]s: "never"}}
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
`, port, scNamespace, scSecret, scName, scNSLabel)
}

// scWebhook starts the second webhook with --cert-secret and waits for
// /readyz; it is stopped (SIGTERM, a clean exit) when the test ends.
func scWebhook(t *testing.T, port string) string {
	t.Helper()
	env, err := readEnv(filepath.Join(clusterDir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	token, _ := mustKubectl(t, "", "-n", scNamespace, "create", "token", "selfcert-test", "--duration=1h")
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(strings.TrimSpace(token)), 0o600); err != nil {
		t.Fatal(err)
	}
	mport, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("RDMA_WEBHOOK_BIN")
	if bin == "" {
		bin = filepath.Join(root, "build", "rdma-webhook")
	}
	logPath := filepath.Join(dir, "webhook.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:"+port, "--metrics-listen", "127.0.0.1:"+mport,
		"--metrics-auth", "none", "--profiles", filepath.Join(root, "manifests", "profiles.json"),
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key"),
		"--kube-api", env["APISERVER"], "--kube-ca", env["CLUSTER_CA_CERT"], "--kube-token-file", filepath.Join(dir, "token"),
		"--cert-secret", scNamespace+"/"+scSecret, "--webhook-configs", scName+","+scName,
		"--cert-sync-seconds", "1", "--ca-overlap-seconds", "3")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the second webhook exited with %v", err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the second webhook did not stop within 20 s")
		}
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("the second webhook's log:\n%s", data)
		}
	})
	waitFor(t, 60*time.Second, "the second webhook's /readyz", func() (bool, string) {
		resp, err := http.Get("http://127.0.0.1:" + mport + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return logPath
}

type scState struct {
	caCrt, signer []byte
	caBundle      []byte // the MutatingWebhookConfiguration's
}

func scRead(t *testing.T) scState {
	t.Helper()
	ctx := context.Background()
	s, err := clientset.CoreV1().Secrets(scNamespace).Get(ctx, scSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Secret %s/%s: %v", scNamespace, scSecret, err)
	}
	m, err := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, scName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return scState{caCrt: s.Data["ca.crt"], signer: s.Data["signer.crt"], caBundle: m.Webhooks[0].ClientConfig.CABundle}
}

func scCount(b []byte) int {
	n := 0
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return n
		}
		n++
	}
}

// scAdmitted: the second webhook's log has an admission line for ns/pod.
func scAdmitted(t *testing.T, logPath, ns, pod string) bool {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil && m["namespace"] == ns && m["pod"] == pod {
			return true
		}
	}
	return false
}

// TestSelfManagedCertificates: serve --cert-secret against the real
// apiserver, with no Secret beforehand: the Secret is created, the caBundle
// written, and a pod created through the apiserver is mutated by this
// webhook (failurePolicy Fail: a TLS failure would refuse the pod). Then a
// forced CA rotation (rdma-webhook.io/rotate=ca) while pods are created in
// a loop: the new CA joins the bundle, signs, the old one goes, and not one
// pod creation fails.
func TestSelfManagedCertificates(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, scManifests(port), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _, _ = kubectl("", "delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration", scName, "--ignore-not-found")
	})
	if _, err := clientset.CoreV1().Secrets(scNamespace).Get(context.Background(), scSecret, metav1.GetOptions{}); err == nil {
		t.Fatalf("the Secret %s exists before the webhook started", scSecret)
	}
	logPath := scWebhook(t, port)
	first := scRead(t)
	if scCount(first.caCrt) != 1 || !bytes.Equal(first.caCrt, first.caBundle) {
		t.Fatalf("after start: ca.crt has %d certificates, caBundle equal: %v", scCount(first.caCrt),
			bytes.Equal(first.caCrt, first.caBundle))
	}
	ns := newNamespace(t, map[string]string{scNSLabel: "true"})
	ctx := context.Background()
	if _, err := clientset.CoreV1().Pods(ns).Create(ctx, gpuPod("before", 8), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod through the apiserver and the self-certified webhook: %v", err)
	}
	requireMutated(t, getPod(t, ns, "before"), "pytorch", want{profile: "roce-8card", hca: hca8})
	waitFor(t, 5*time.Second, "the second webhook's admission line", func() (bool, string) {
		return scAdmitted(t, logPath, ns, "before"), "none"
	})

	var (
		mu       sync.Mutex
		created  int
		failures []string
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, err := clientset.CoreV1().Pods(ns).Create(ctx, gpuPod(fmt.Sprintf("during-%d", i), 8), metav1.CreateOptions{})
			mu.Lock()
			if err != nil {
				failures = append(failures, err.Error())
			} else {
				created++
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	mustKubectl(t, "", "-n", scNamespace, "annotate", "secret", scSecret, "rdma-webhook.io/rotate=ca")
	sawTwo := false
	waitFor(t, 60*time.Second, "the CA rotation's three steps", func() (bool, string) {
		s := scRead(t)
		n := scCount(s.caCrt)
		sawTwo = sawTwo || n == 2
		done := sawTwo && n == 1 && !bytes.Equal(s.signer, first.signer) && bytes.Equal(s.caCrt, s.caBundle)
		return done, fmt.Sprintf("ca.crt has %d certificates, saw two: %v", n, sawTwo)
	})
	time.Sleep(2 * time.Second) // pods against the new CA alone
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d pod creations failed during the rotation; first: %s", len(failures),
			len(failures)+created, failures[0])
	}
	if created < 20 {
		t.Fatalf("only %d pods created during the rotation", created)
	}
	last := fmt.Sprintf("during-%d", created-1)
	requireMutated(t, getPod(t, ns, last), "pytorch", want{profile: "roce-8card", hca: hca8})
	t.Logf("%d pods created through the apiserver during the rotation, none refused", created)
}
