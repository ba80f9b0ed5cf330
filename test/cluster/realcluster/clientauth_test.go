package realcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webhookClient is an HTTPS client of the webhook's port that trusts its
// serving CA and presents cert (nil: no certificate), over TLS maxVersion.
func webhookClient(t *testing.T, cert *tls.Certificate, maxVersion uint16) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(clusterDir, "certs", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("certs/ca.crt holds no certificate")
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12, MaxVersion: maxVersion}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
}

// webhookURL is the webhook's HTTPS address (install-webhook.sh's port).
func webhookURL(t *testing.T, p string) string {
	t.Helper()
	for _, kv := range webhookEnv {
		if port, ok := strings.CutPrefix(kv, "WEBHOOK_PORT="); ok {
			return "https://127.0.0.1:" + port + p
		}
	}
	t.Fatal("webhookEnv has no WEBHOOK_PORT")
	return ""
}

// TestApiserverClientCertificate: the apiserver presents its client
// certificate to the webhook (up.sh: an AdmissionConfiguration whose
// webhook plugins name a kubeconfig with webhook-client.crt) and the
// suite's webhook requires it (webhook.sh: --client-ca, the CA of that
// certificate only). Every test of the suite is admitted that way; here: a
// pod created through the apiserver is mutated, while a client reaching the
// webhook's port directly without a certificate is refused at the TLS
// handshake ("certificate required") and counted, and the same client with
// the apiserver's certificate is served.
func TestApiserverClientCertificate(t *testing.T) {
	env, err := readEnv(filepath.Join(clusterDir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if env["WEBHOOK_CLIENT_CA"] == "" {
		t.Fatal("the cluster's env has no WEBHOOK_CLIENT_CA: up.sh made no client certificate for the webhooks")
	}
	cmdline, err := os.ReadFile(filepath.Join(clusterDir, "webhook.cmdline"))
	if err != nil || !strings.Contains(string(cmdline), "--client-ca "+env["WEBHOOK_CLIENT_CA"]) {
		t.Fatalf("the webhook does not run with --client-ca %s (%v): %s", env["WEBHOOK_CLIENT_CA"], err, cmdline)
	}

	ns := newNamespace(t, nil)
	if _, err := clientset.CoreV1().Pods(ns).Create(context.Background(), gpuPod("through-apiserver", 8), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	requireMutated(t, getPod(t, ns, "through-apiserver"), "pytorch", want{profile: "roce-8card", hca: hca8})

	const refused = `rdma_webhook_client_auth_refused_total{reason="no-certificate"}`
	before, _ := strconv.Atoi(webhookMetric(t, refused))
	// TLS 1.2, where the client's handshake waits for the server's verdict:
	// under TLS 1.3 the client writes its request first and may find the
	// connection closed ("broken pipe") before it reads the alert.
	resp, err := webhookClient(t, nil, tls.VersionTLS12).Post(webhookURL(t, "/mutate"), "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a client without a certificate was answered %d; expected the handshake refused", resp.StatusCode)
	}
	if !strings.Contains(err.Error(), "remote error: tls: certificate required") {
		t.Errorf("a client without a certificate: expected the alert \"certificate required\", got %v", err)
	}
	if after, _ := strconv.Atoi(webhookMetric(t, refused)); after != before+1 {
		t.Errorf("%s went from %d to %d, expected one more", refused, before, after)
	}

	cert, err := tls.LoadX509KeyPair(env["WEBHOOK_CLIENT_CERT"], env["WEBHOOK_CLIENT_KEY"])
	if err != nil {
		t.Fatal(err)
	}
	resp, err = webhookClient(t, &cert, tls.VersionTLS13).Get(webhookURL(t, "/healthz"))
	if err != nil {
		t.Fatalf("a client with the apiserver's certificate: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a client with the apiserver's certificate: GET /healthz %d, expected 200", resp.StatusCode)
	}
}
