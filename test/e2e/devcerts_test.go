package e2e

// certs/install-dev-certs.sh: --print without a cluster, and the cluster
// path against a stand-in kubectl that records what would be changed.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// runInstallDevCerts runs the script with the binary under test and the
// given kubectl, and returns stdout.
func runInstallDevCerts(t *testing.T, kubectlPath string, env []string, args ...string) []byte {
	t.Helper()
	bin, err := filepath.Abs(binaryPath())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", append([]string{installDevCerts}, args...)...)
	cmd.Env = append(append(os.Environ(), "RDMA_WEBHOOK_BIN="+bin, "KUBECTL="+kubectlPath), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("install-dev-certs.sh %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	checkNoSanitizerReport(t, args, stderr.Bytes())
	return stdout.Bytes()
}

func readFile(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

// checkTLSSecret: the Secret the Deployment mounts, holding the files
// gen-certs wrote, a key pair the CA signed for the Service's names.
func checkTLSSecret(t *testing.T, secret obj, dir string) {
	t.Helper()
	if n, _ := pathStr(secret, "metadata", "name"); n != tlsSecretName {
		t.Errorf("Secret name %q, expected %q", n, tlsSecretName)
	}
	if ns, _ := pathStr(secret, "metadata", "namespace"); ns != webhookNamespace {
		t.Errorf("Secret namespace %q, expected %q", ns, webhookNamespace)
	}
	if ty, _ := pathStr(secret, "type"); ty != "kubernetes.io/tls" {
		t.Errorf("Secret type %q, expected kubernetes.io/tls", ty)
	}
	crt, _ := pathStr(secret, "data", "tls.crt")
	key, _ := pathStr(secret, "data", "tls.key")
	if crt != b64(readFile(t, filepath.Join(dir, "tls.crt"))) || key != b64(readFile(t, filepath.Join(dir, "tls.key"))) {
		t.Fatalf("Secret data is not base64 of the tls.crt/tls.key gen-certs wrote")
	}
	crtPEM, _ := base64.StdEncoding.DecodeString(crt)
	keyPEM, _ := base64.StdEncoding.DecodeString(key)
	if _, err := tls.X509KeyPair(crtPEM, keyPEM); err != nil {
		t.Errorf("Secret: tls.crt and tls.key are no key pair: %v", err)
	}
	block, _ := pem.Decode(crtPEM)
	if block == nil {
		t.Fatal("Secret: tls.crt is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(readFile(t, filepath.Join(dir, "ca.crt")))
	// As the apiserver dials the Service.
	name := webhookName + "." + webhookNamespace + ".svc"
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the serving certificate does not verify for %s against ca.crt: %v", name, err)
	}
}

func TestInstallDevCertsPrint(t *testing.T) {
	dir := t.TempDir()
	out := runInstallDevCerts(t, kubectl(t), nil, "--print", "--out-dir", dir)
	objs := yamlObjects(t, out)
	if len(objs) != 3 {
		t.Fatalf("--print: expected a Secret and the two webhook configurations, got %d objects:\n%s", len(objs), cut(out))
	}
	checkSchemas(t, namedObjects("install-dev-certs.sh --print: ", objs))
	checkTLSSecret(t, findObject(t, objs, "Secret", tlsSecretName), dir)
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		checkPrintedBundle(t, objs, kind, dir)
	}
}

// checkPrintedBundle: the webhook configuration of manifests/ of kind, every
// caBundle set to base64(ca.crt), nothing else changed.
func checkPrintedBundle(t *testing.T, objs []obj, kind, dir string) {
	t.Helper()
	mwc := findObject(t, objs, kind, webhookName)
	want := b64(readFile(t, filepath.Join(dir, "ca.crt")))
	stripped := copyObject(mwc)
	webhooks := pathArr(mwc, "webhooks")
	if len(webhooks) == 0 {
		t.Fatal("--print: no webhooks")
	}
	for i, w := range webhooks {
		name, _ := pathStr(w, "name")
		if got, _ := pathStr(w, "clientConfig", "caBundle"); got != want {
			t.Errorf("webhook %s: caBundle is not base64(ca.crt) (%d characters, expected %d)", name, len(got), len(want))
		}
		delete(pathObj(pathArr(stripped, "webhooks")[i], "clientConfig"), "caBundle")
	}
	base := findObject(t, kustomize(t, manifestsDir), kind, webhookName)
	if !jsonEqual(base, stripped) {
		t.Errorf("--print's %s differs from manifests/ beyond the caBundle:\n%s", kind, jsonDiff(base, stripped))
	}
}

// fakeKubectl is a kubectl stand-in for the script's cluster path: it
// answers the reads from a MutatingWebhookConfiguration file, records the
// patch and the applied Secret, and hands `create secret --dry-run=client`
// to the real kubectl.
const fakeKubectl = `#!/bin/sh
printf '%s\n' "$*" >>"$FAKE_DIR/calls"
case "$1 $2" in
"create secret") exec "$REAL_KUBECTL" "$@" ;;
"get namespace") exit 0 ;;
"get mutatingwebhookconfiguration")
    case "$*" in
    *range*) exec "$REAL_KUBECTL" patch --local -f "$FAKE_DIR/mwc.json" --type merge -p '{}' -o "$5" ;;
    *caBundle*) printf '%s' "$FAKE_OLD_BUNDLE"; exit 0 ;;
    *) exit 0 ;;
    esac ;;
"patch mutatingwebhookconfiguration")
    while [ $# -gt 0 ]; do
        [ "$1" = -p ] && printf '%s' "$2" >"$FAKE_DIR/patch.json"
        shift
    done
    exit 0 ;;
"get validatingwebhookconfiguration")
    case "$*" in
    *range*) exec "$REAL_KUBECTL" patch --local -f "$FAKE_DIR/vwc.json" --type merge -p '{}' -o "$5" ;;
    *) exit 0 ;;
    esac ;;
"patch validatingwebhookconfiguration")
    while [ $# -gt 0 ]; do
        [ "$1" = -p ] && printf '%s' "$2" >"$FAKE_DIR/vpatch.json"
        shift
    done
    exit 0 ;;
"apply -f") cat >"$FAKE_DIR/applied.yaml"; exit 0 ;;
esac
echo "fake kubectl: unexpected call: $*" >&2
exit 1
`

// pemCerts splits a PEM bundle into its certificates (DER).
func pemCerts(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			t.Fatalf("bundle holds a %s block", b.Type)
		}
		out = append(out, b.Bytes)
	}
	if len(bytes.TrimSpace(data)) != 0 {
		t.Fatalf("bundle has trailing data: %q", cut(data))
	}
	return out
}

func TestInstallDevCertsCluster(t *testing.T) {
	fake := t.TempDir()
	script := filepath.Join(fake, "kubectl")
	if err := os.WriteFile(script, []byte(fakeKubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	mwc := findObject(t, kustomize(t, manifestsDir), "MutatingWebhookConfiguration", webhookName)
	mwcJSON := mustMarshal(mwc)
	if err := os.WriteFile(filepath.Join(fake, "mwc.json"), mwcJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	vwcJSON := mustMarshal(findObject(t, kustomize(t, manifestsDir), "ValidatingWebhookConfiguration", webhookName))
	if err := os.WriteFile(filepath.Join(fake, "vwc.json"), vwcJSON, 0o644); err != nil {
		t.Fatal(err)
	}

	// run installs certificates while the caBundle holds old (base64 or "");
	// it returns the patched MutatingWebhookConfiguration's caBundle (PEM),
	// checking the Secret on the way.
	run := func(old string) []byte {
		t.Helper()
		for _, f := range []string{"calls", "patch.json", "vpatch.json", "applied.yaml"} {
			os.Remove(filepath.Join(fake, f))
		}
		dir := t.TempDir()
		runInstallDevCerts(t, script, []string{"FAKE_DIR=" + fake, "REAL_KUBECTL=" + kubectl(t),
			"FAKE_OLD_BUNDLE=" + old}, "--out-dir", dir)

		// The caBundle is patched before the Secret changes.
		calls := strings.Split(string(readFile(t, filepath.Join(fake, "calls"))), "\n")
		patchAt, applyAt := -1, -1
		for i, c := range calls {
			if strings.HasPrefix(c, "patch mutatingwebhookconfiguration "+webhookName) {
				patchAt = i
			}
			if strings.HasPrefix(c, "apply -f") {
				applyAt = i
			}
		}
		if patchAt < 0 || applyAt < 0 || patchAt > applyAt {
			t.Fatalf("expected the caBundle patch before the Secret's apply; calls:\n%s", strings.Join(calls, "\n"))
		}
		// The profiles check's webhook gets the same bundle, by a patch that
		// applies to its manifest.
		vraw := readFile(t, filepath.Join(fake, "vpatch.json"))
		vp, err := jsonpatch.DecodePatch(vraw)
		if err != nil {
			t.Fatalf("the ValidatingWebhookConfiguration's caBundle patch: %v\n%s", err, vraw)
		}
		vpatched, err := vp.Apply(vwcJSON)
		if err != nil {
			t.Fatalf("the caBundle patch does not apply to the ValidatingWebhookConfiguration: %v\n%s", err, vraw)
		}
		var vgot obj
		if err := json.Unmarshal(vpatched, &vgot); err != nil {
			t.Fatal(err)
		}
		applied := yamlObjects(t, readFile(t, filepath.Join(fake, "applied.yaml")))
		if len(applied) != 1 {
			t.Fatalf("expected one object applied, got %d", len(applied))
		}
		checkTLSSecret(t, applied[0], dir)

		// The patch applies to the real object (its name tests hold) and
		// sets the same bundle on every webhook.
		raw := readFile(t, filepath.Join(fake, "patch.json"))
		p, err := jsonpatch.DecodePatch(raw)
		if err != nil {
			t.Fatalf("the caBundle patch: %v\n%s", err, raw)
		}
		patched, err := p.Apply(mwcJSON)
		if err != nil {
			t.Fatalf("the caBundle patch does not apply to the MutatingWebhookConfiguration: %v\n%s", err, raw)
		}
		var got obj
		if err := json.Unmarshal(patched, &got); err != nil {
			t.Fatal(err)
		}
		var bundle string
		for i, w := range pathArr(got, "webhooks") {
			b, _ := pathStr(w, "clientConfig", "caBundle")
			if i > 0 && b != bundle {
				t.Errorf("webhook %d: a different caBundle from webhook 0", i)
			}
			bundle = b
		}
		for _, w := range pathArr(vgot, "webhooks") {
			if b, _ := pathStr(w, "clientConfig", "caBundle"); b != bundle {
				t.Errorf("the profiles check's webhook has a different caBundle from /mutate's")
			}
		}
		pemData, err := base64.StdEncoding.DecodeString(bundle)
		if err != nil {
			t.Fatalf("caBundle is not base64: %v", err)
		}
		certs := pemCerts(t, pemData)
		newCA := pemCerts(t, readFile(t, filepath.Join(dir, "ca.crt")))
		if len(certs) == 0 || !bytes.Equal(certs[0], newCA[0]) {
			t.Fatalf("caBundle does not start with the new ca.crt")
		}
		return pemData
	}

	// First install: only the new CA.
	first := run("")
	if n := len(pemCerts(t, first)); n != 1 {
		t.Errorf("first install: caBundle holds %d certificates, expected 1", n)
	}
	// Rotation: the new CA, then the previous one (so the pods' old
	// certificate stays trusted until they reload).
	second := run(b64(first))
	certs := pemCerts(t, second)
	if len(certs) != 2 || !bytes.Equal(certs[1], pemCerts(t, first)[0]) {
		t.Errorf("rotation: expected the new CA followed by the previous one, got %d certificates", len(certs))
	}
	// And again: the bundle does not grow past the current and previous CA.
	third := run(b64(second))
	certs = pemCerts(t, third)
	if len(certs) != 2 || !bytes.Equal(certs[1], pemCerts(t, second)[0]) {
		t.Errorf("second rotation: expected the new CA followed by the previous one only, got %d certificates", len(certs))
	}
}

func TestInstallDevCertsRejectsUnknownArguments(t *testing.T) {
	cmd := exec.Command("sh", installDevCerts, "--frobnicate")
	cmd.Env = append(os.Environ(), "KUBECTL="+kubectl(t))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("expected a failure for an unknown argument, got:\n%s", out)
	}
	if !strings.Contains(string(out), "--frobnicate") {
		t.Errorf("the error does not name the argument: %s", out)
	}
	if help, err := exec.Command("sh", installDevCerts, "--help").CombinedOutput(); err != nil ||
		!strings.Contains(string(help), "--print") {
		t.Errorf("--help: %v\n%s", err, help)
	}
}
