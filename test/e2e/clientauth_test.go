package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of serve --client-ca and --client-names: the HTTPS port serves
// only TLS clients whose certificate chains to the CA file (and names one of
// the names); the others are refused at the TLS handshake, before any HTTP
// is read, so they never get a status, only a fatal alert saying why
// (TLS 1.2: the handshake fails; TLS 1.3: the client's side of the
// handshake is over when the server judges its certificate, so the alert
// comes on the first read). The plain port is not affected.
//
// Why at the handshake and not a 403: nothing of a refused client is parsed
// (not even its headers), and the apiserver's own error names the reason
// ("remote error: tls: certificate required").

// writeCA writes the CAs' PEM into one file in dir.
func writeCA(t *testing.T, path string, cas ...*testCA) {
	t.Helper()
	var data []byte
	for _, ca := range cas {
		data = append(data, ca.pem...)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// postAs posts a review to the instance's /mutate as a client presenting
// cert (nil: none) over TLS maxVersion, on a fresh connection: the status,
// or the transport error.
func postAs(t *testing.T, in *instance, cert *tls.Certificate, maxVersion uint16) (int, error) {
	t.Helper()
	cfg := &tls.Config{RootCAs: in.caPool, ServerName: "localhost", MinVersion: tls.VersionTLS12, MaxVersion: maxVersion}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	req := newRequest(t, http.MethodPost, in.url("/mutate"), "application/json",
		strings.NewReader(string(mustMarshal(gpu8Review(t).body()))))
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	readAll(resp)
	return resp.StatusCode, nil
}

// refusedMetric is rdma_webhook_client_auth_refused_total for reason.
func refusedMetric(t *testing.T, in *instance, reason string) string {
	t.Helper()
	return in.metric(t, `rdma_webhook_client_auth_refused_total{reason="`+reason+`"}`)
}

// tlsRefusal connects to the instance as a client presenting cert (nil:
// none) over TLS maxVersion, sends nothing, and reads: the error that ends
// the connection (the server's alert), or nil when the server waits for a
// request (it served the handshake). Nothing is written, so the alert is
// read whole: a client that sends its request at once can find the
// connection already closed (TLS 1.3: "broken pipe" instead of the alert).
func tlsRefusal(in *instance, cert *tls.Certificate, maxVersion uint16) error {
	cfg := &tls.Config{RootCAs: in.caPool, ServerName: "localhost", MinVersion: tls.VersionTLS12, MaxVersion: maxVersion}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", in.addr, cfg)
	if err != nil {
		return err // TLS 1.2: the handshake itself fails
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(slowerUnderValgrind(5 * time.Second)))
	_, err = conn.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return nil
	}
	return err
}

// expectRefused: the client got no answer, only the TLS alert that says why
// ("certificate required", "bad certificate", "access denied").
func expectRefused(t *testing.T, in *instance, what string, cert *tls.Certificate, maxVersion uint16, alert string) {
	t.Helper()
	err := tlsRefusal(in, cert, maxVersion)
	if err == nil {
		t.Errorf("%s: the handshake was served; expected it refused%s", what, in.state())
	} else if !strings.Contains(err.Error(), "remote error: tls: "+alert) {
		t.Errorf("%s: expected the alert %q, got %v", what, alert, err)
	}
}

func expectServed(t *testing.T, in *instance, what string, cert *tls.Certificate) {
	t.Helper()
	if status, err := postAs(t, in, cert, tls.VersionTLS13); err != nil || status != http.StatusOK {
		t.Errorf("%s: expected 200, got %d, %v%s", what, status, err, in.state())
	}
}

// TestClientCARefusesOthers: with --client-ca, a review from a client with a
// certificate of that CA is served; without a certificate (TLS 1.2 and 1.3),
// with one of another CA, an expired one or one only for server auth, the
// handshake is refused, each counted by reason and logged once a minute by
// reason. The plain port's /healthz and /metrics need no certificate.
func TestClientCARefusesOthers(t *testing.T) {
	t.Parallel()
	ca, other := newTestCA(t, "apiserver-client-ca"), newTestCA(t, "some-other-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	writeCA(t, caFile, ca)
	good := ca.issue(t, clientCertSpec{cn: "kube-apiserver"})
	in := startOwn(t, instanceOptions{profiles: profilesPath, clientCert: good, args: []string{"--client-ca", caFile}})

	if rr := in.review(t, gpu8Review(t)); rr.patch == nil {
		t.Errorf("a review over the instance's client (with the right certificate) got no patch")
	}
	expectServed(t, in, "a certificate of the --client-ca CA", good)
	expectRefused(t, in, "no certificate, TLS 1.3", nil, tls.VersionTLS13, "certificate required")
	expectRefused(t, in, "no certificate, TLS 1.2", nil, tls.VersionTLS12, "certificate required")
	expectRefused(t, in, "a certificate of another CA", other.issue(t, clientCertSpec{cn: "kube-apiserver"}), tls.VersionTLS13, "bad certificate")
	expectRefused(t, in, "an expired certificate", ca.issue(t, clientCertSpec{cn: "kube-apiserver",
		notAfter: time.Now().Add(-time.Hour)}), tls.VersionTLS12, "bad certificate")
	expectRefused(t, in, "a certificate for server auth only", ca.issue(t, clientCertSpec{cn: "kube-apiserver",
		eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}), tls.VersionTLS13, "bad certificate")
	expectServed(t, in, "the right certificate again", good)

	if got := refusedMetric(t, in, "no-certificate"); got != "2" {
		t.Errorf(`refused{reason="no-certificate"} = %q, expected 2`, got)
	}
	if got := refusedMetric(t, in, "untrusted"); got != "3" {
		t.Errorf(`refused{reason="untrusted"} = %q, expected 3`, got)
	}
	if got := refusedMetric(t, in, "name"); got != "0" {
		t.Errorf(`refused{reason="name"} = %q, expected 0`, got)
	}
	if in.readyz(t, true) != http.StatusOK {
		t.Errorf("/readyz on the plain port is not 200")
	}
	// One line for each reason, whatever the count.
	in.waitLog(t, 0, 5*time.Second, "refusing the client without a certificate",
		msgIs("TLS client refused: --client-ca requires a client certificate", "reason", "no-certificate"))
	lines := map[string]int{}
	for _, o := range in.logLines() {
		if m, _ := pathStr(o, "msg"); strings.HasPrefix(m, "TLS client refused") {
			r, _ := pathStr(o, "reason")
			lines[r]++
			if r == "untrusted" {
				if s, _ := pathStr(o, "subject"); !strings.Contains(s, "CN=kube-apiserver") {
					t.Errorf("the refusal's line names subject %q, expected CN=kube-apiserver", s)
				}
			}
		}
	}
	if lines["no-certificate"] != 1 || lines["untrusted"] != 1 {
		t.Errorf("refusal log lines by reason %v, expected one each for no-certificate and untrusted", lines)
	}
}

// TestClientNamesRefusesOtherNames: with --client-names, a certificate of
// the CA must also name one of them, as its CN or a DNS SAN.
func TestClientNamesRefusesOtherNames(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "apiserver-client-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	writeCA(t, caFile, ca)
	byCN := ca.issue(t, clientCertSpec{cn: "kube-apiserver"})
	in := startOwn(t, instanceOptions{profiles: profilesPath, clientCert: byCN, args: []string{"--client-ca", caFile,
		"--client-names", "rdma-webhook.rdma-webhook.svc,kube-apiserver"}})

	expectServed(t, in, "CN kube-apiserver", byCN)
	expectServed(t, in, "DNS SAN rdma-webhook.rdma-webhook.svc",
		ca.issue(t, clientCertSpec{cn: "front-proxy", dns: []string{"x.example", "rdma-webhook.rdma-webhook.svc"}}))
	expectRefused(t, in, "CN and SANs naming none", ca.issue(t, clientCertSpec{cn: "system:node:gpu-1",
		dns: []string{"kube-apiserver.example"}}), tls.VersionTLS13, "access denied")
	expectRefused(t, in, "a name's prefix", ca.issue(t, clientCertSpec{cn: "kube-apiserve"}), tls.VersionTLS12, "access denied")
	if got := refusedMetric(t, in, "name"); got != "2" {
		t.Errorf(`refused{reason="name"} = %q, expected 2`, got)
	}
}

// TestClientCAReload: a new CA file is taken on SIGHUP (and by the watch):
// certificates of the new CA are served, those of the old one refused; a
// file that is not PEM keeps the CAs serving.
func TestClientCAReload(t *testing.T) {
	t.Parallel()
	oldCA, newCA := newTestCA(t, "old-client-ca"), newTestCA(t, "new-client-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	writeCA(t, caFile, oldCA)
	oldCert, newCert := oldCA.issue(t, clientCertSpec{cn: "kube-apiserver"}), newCA.issue(t, clientCertSpec{cn: "kube-apiserver"})
	in := startOwn(t, instanceOptions{profiles: profilesPath, clientCert: oldCert,
		args: []string{"--client-ca", caFile, "--reload-interval-ms", "3600000"}})
	expectServed(t, in, "the old CA's certificate", oldCert)
	expectRefused(t, in, "the new CA's certificate before the reload", newCert, tls.VersionTLS13, "bad certificate")

	mark := in.logMark()
	if err := os.WriteFile(caFile, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in.signal(syscall.SIGHUP)
	in.waitLog(t, mark, 10*time.Second, "rejecting a CA file that is not PEM", msgIs("new client CA file rejected; the previous CAs stay"))
	expectServed(t, in, "the old CA's certificate after a bad file", oldCert)

	mark = in.logMark()
	writeCA(t, caFile, newCA)
	in.signal(syscall.SIGHUP)
	in.waitLog(t, mark, 10*time.Second, "loading the new CA", msgIs("client CA loaded", "certificates", "1"))
	expectServed(t, in, "the new CA's certificate after the reload", newCert)
	expectRefused(t, in, "the old CA's certificate after the reload", oldCert, tls.VersionTLS13, "bad certificate")
}

// TestClientCAFlags: --client-names needs --client-ca (usage, exit 2); a
// CA file that is missing or holds no certificate stops serve at start
// (exit 1), naming the file; --help lists both flags.
func TestClientCAFlags(t *testing.T) {
	t.Parallel()
	base := []string{"serve", "--no-kube-api", "--profiles", profilesPath, "--listen", "127.0.0.1:0", "--metrics-listen", ""}
	res, _ := runBinaryWithin(t, nil, 10*time.Second, append(base, "--client-names", "kube-apiserver")...)
	if res.exitCode != 2 || !strings.Contains(string(res.stderr), "--client-names goes with --client-ca") {
		t.Errorf("--client-names alone: expected exit 2 and the reason, got %d: %s", res.exitCode, res.stderr)
	}
	dir := t.TempDir()
	if err := copyCerts(dir); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not-pem.crt")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	certs := []string{"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key")}
	for _, c := range []struct{ args []string }{
		{[]string{"--client-ca", filepath.Join(dir, "none.crt")}},
		{[]string{"--client-ca", notPEM}},
		{[]string{"--client-ca", filepath.Join(dir, "ca.crt"), "--client-names", "a,,b"}},
	} {
		args := append(append(append([]string{}, base...), certs...), c.args...)
		res, exited := runBinaryWithin(t, nil, 10*time.Second, args...)
		if !exited || res.exitCode != 1 || !strings.Contains(string(res.stderr), "cannot start") {
			t.Errorf("serve %v: expected exit 1 and \"cannot start\", got %d (exited %v): %s", c.args, res.exitCode, exited, res.stderr)
		}
	}
	help := serveHelp(t)
	for _, f := range []string{"--client-ca FILE", "--client-names NAME,..."} {
		if !strings.Contains(help, f) {
			t.Errorf("serve --help lacks %s", f)
		}
	}
}
