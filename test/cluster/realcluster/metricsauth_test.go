package realcluster

// /metrics behind the real apiserver's TokenReview and SubjectAccessReview
// (--metrics-auth kubernetes, the default whenever the webhook uses the API,
// as the suite's does): two ServiceAccounts, one bound to the shipped
// ClusterRole rdma-webhook-metrics-reader, each with a token from
// TokenRequest (`kubectl create token`); the reader's token gets the
// metrics over HTTPS, the other's 403, none or a forged one 401. The
// suite's other scrapes (webhookMetric) use the reader's token too, as a
// Prometheus bound to that role would.

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	metricsTestNS     = "rdma-webhook"
	metricsReaderSA   = "metrics-reader-test"
	metricsNobodySA   = "metrics-nobody-test"
	metricsReaderBind = "rdma-webhook-metrics-reader-test"
)

var (
	metricsTokensOnce sync.Once
	metricsTokensErr  string
	readerTokenValue  string
	nobodyTokenValue  string
)

// metricsTokens makes the two ServiceAccounts, binds the reader, waits
// until the apiserver's authorizer says the reader may get /metrics (so
// that the webhook's first decision, which it keeps 10 s, is not made
// before the binding counts), and returns both tokens. Once per suite.
func metricsTokens(t testing.TB) (reader, nobody string) {
	t.Helper()
	metricsTokensOnce.Do(func() {
		for _, sa := range []string{metricsReaderSA, metricsNobodySA} {
			if out, errs, err := kubectl("", "-n", metricsTestNS, "create", "serviceaccount", sa); err != nil &&
				!strings.Contains(errs, "AlreadyExists") {
				metricsTokensErr = "create serviceaccount " + sa + ": " + out + errs
				return
			}
		}
		if out, errs, err := kubectl("", "create", "clusterrolebinding", metricsReaderBind,
			"--clusterrole", "rdma-webhook-metrics-reader",
			"--serviceaccount", metricsTestNS+":"+metricsReaderSA); err != nil && !strings.Contains(errs, "AlreadyExists") {
			metricsTokensErr = "create clusterrolebinding: " + out + errs
			return
		}
		as := "--as=system:serviceaccount:" + metricsTestNS + ":" + metricsReaderSA
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, _, _ := kubectl("", "auth", "can-i", "get", "/metrics", as)
			if strings.TrimSpace(out) == "yes" {
				break
			}
			if time.Now().After(deadline) {
				metricsTokensErr = "the binding did not take effect within 30 s: kubectl auth can-i says " + out
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, p := range []struct {
			sa  string
			out *string
		}{{metricsReaderSA, &readerTokenValue}, {metricsNobodySA, &nobodyTokenValue}} {
			out, errs, err := kubectl("", "-n", metricsTestNS, "create", "token", p.sa, "--duration=1h")
			if err != nil {
				metricsTokensErr = "create token " + p.sa + ": " + errs
				return
			}
			*p.out = strings.TrimSpace(out)
		}
	})
	if metricsTokensErr != "" {
		t.Fatal(metricsTokensErr)
	}
	return readerTokenValue, nobodyTokenValue
}

// metricsClient trusts the webhook's serving CA (install-webhook.sh's
// certs), which the metrics port presents too.
func metricsClient(t testing.TB) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(clusterDir, "certs", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("certs/ca.crt holds no certificate")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}}}
}

// metricsGet is GET https://metricsAddr+p with the bearer token (none for
// ""): the status and the body.
func metricsGet(t testing.TB, p, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+metricsAddr+p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := metricsClient(t).Do(req)
	if err != nil {
		t.Fatalf("GET %s on the metrics port: %v", p, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestMetricsNeedTheReaderRole: the real apiserver decides who reads
// /metrics; the probes' paths stay open.
func TestMetricsNeedTheReaderRole(t *testing.T) {
	reader, nobody := metricsTokens(t)
	if code, body := metricsGet(t, "/metrics", nobody); code != http.StatusForbidden {
		t.Errorf("a ServiceAccount without the reader role: %d %q, expected 403", code, body)
	}
	if code, body := metricsGet(t, "/metrics", reader); code != http.StatusOK || !strings.Contains(body, "rdma_webhook_admissions_total") {
		t.Errorf("a ServiceAccount bound to rdma-webhook-metrics-reader: %d %.200q, expected 200 with the metrics", code, body)
	}
	if code, body := metricsGet(t, "/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d %q, expected 401", code, body)
	}
	// A token the apiserver did not issue: its signature fails.
	forged := reader[:len(reader)-4] + "AAAA"
	if code, body := metricsGet(t, "/metrics", forged); code != http.StatusUnauthorized {
		t.Errorf("a forged token: %d %q, expected 401", code, body)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := metricsGet(t, p, ""); code != http.StatusOK {
			t.Errorf("GET %s without a token: %d %q, expected 200 (the kubelet's probes carry none)", p, code, body)
		}
	}
	// Plain HTTP no longer reads the metrics.
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + metricsAddr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP to the metrics port got 200")
		}
	}
}
