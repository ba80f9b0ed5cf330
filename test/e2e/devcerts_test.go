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
	"errors"
	"fmt"
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

// runInstallDevCertsResult runs the script as runInstallDevCerts does and
// returns its exit status and output, for the runs that must fail.
func runInstallDevCertsResult(t *testing.T, args ...string) (int, []byte, []byte) {
	t.Helper()
	bin, err := filepath.Abs(binaryPath())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", append([]string{installDevCerts}, args...)...)
	cmd.Env = append(os.Environ(), "RDMA_WEBHOOK_BIN="+bin, "KUBECTL="+kubectl(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	code := 0
	if exit != nil {
		code = exit.ExitCode()
	}
	return code, stdout.Bytes(), stderr.Bytes()
}

// printedSecret runs the `kubectl create secret tls` line --print gives (as
// a comment) with --dry-run, and returns the Secret it makes.
func printedSecret(t *testing.T, out []byte) obj {
	t.Helper()
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "#   ") && strings.Contains(l, " create secret tls ") {
			line = strings.TrimPrefix(l, "#   ")
		}
	}
	if line == "" {
		t.Fatalf("--print: no `kubectl create secret tls` line:\n%s", cut(out))
	}
	made, err := exec.Command("sh", "-c", line+" --dry-run=client -o json").Output()
	if err != nil {
		t.Fatalf("--print's line %q: %v", line, err)
	}
	secret, err := decodeObject(made)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// checkNoPrivateKey: nothing of the keys in dir, PEM or base64, is in out.
func checkNoPrivateKey(t *testing.T, out []byte, dir string) {
	t.Helper()
	if bytes.Contains(out, []byte("PRIVATE KEY")) {
		t.Errorf("--print prints a private key:\n%s", cut(out))
	}
	for _, f := range []string{"tls.key", "ca.key"} {
		key := readFile(t, filepath.Join(dir, f))
		if bytes.Contains(out, []byte(b64(key))) || bytes.Contains(out, []byte(b64(key)[:40])) {
			t.Errorf("--print prints %s (base64)", f)
		}
	}
}

// TestInstallDevCertsPrint: --print changes nothing, prints the
// MutatingWebhookConfiguration of manifests/ with the caBundle filled in
// and, instead of the Secret with its private key, the command that makes
// the Secret from --out-dir, which makes the Secret the Deployment mounts.
func TestInstallDevCertsPrint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := runInstallDevCerts(t, kubectl(t), nil, "--print", "--out-dir", dir)
	checkNoPrivateKey(t, out, dir)
	objs := yamlObjects(t, out)
	if len(objs) != 2 {
		t.Fatalf("--print: expected the two webhook configurations only, got %d objects:\n%s", len(objs), cut(out))
	}
	checkSchemas(t, namedObjects("install-dev-certs.sh --print: ", objs))
	checkTLSSecret(t, printedSecret(t, out), dir)
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		checkPrintedBundle(t, objs, kind, dir)
	}
	// Without --out-dir the key would be gone at exit: refused.
	code, _, stderr := runInstallDevCertsResult(t, "--print")
	if code == 0 || !strings.Contains(string(stderr), "--print needs --out-dir DIR") {
		t.Errorf("--print without --out-dir: expected a failure naming --out-dir, got %d: %s", code, stderr)
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

// TestInstallDevCertsNamespaceService: the certificate's names follow
// --namespace and --service, and so do the Secret's namespace and the
// Service the printed webhook configuration calls.
func TestInstallDevCertsNamespaceService(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := runInstallDevCerts(t, kubectl(t), nil, "--print", "--namespace", "ml-infra", "--service=rdma-hook", "--out-dir", dir)
	checkNoPrivateKey(t, out, dir)
	cert := readCert(t, filepath.Join(dir, "tls.crt"))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(readFile(t, filepath.Join(dir, "ca.crt")))
	for _, name := range []string{"rdma-hook", "rdma-hook.ml-infra", "rdma-hook.ml-infra.svc", "rdma-hook.ml-infra.svc.cluster.local"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("certificate for %s: %v (SANs %v)", name, err, cert.DNSNames)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: webhookName + "." + webhookNamespace + ".svc", Roots: roots}); err == nil {
		t.Errorf("the certificate is still valid for the default Service name")
	}
	if ns, _ := pathStr(printedSecret(t, out), "metadata", "namespace"); ns != "ml-infra" {
		t.Errorf("the Secret's namespace %q, expected ml-infra", ns)
	}
	mwc := findObject(t, yamlObjects(t, out), "MutatingWebhookConfiguration", webhookName)
	for _, w := range pathArr(mwc, "webhooks") {
		name, _ := pathStr(w, "clientConfig", "service", "name")
		ns, _ := pathStr(w, "clientConfig", "service", "namespace")
		if name != "rdma-hook" || ns != "ml-infra" {
			t.Errorf("webhook calls Service %s/%s, expected ml-infra/rdma-hook", ns, name)
		}
	}
	// The webhook's own namespace moves with it: the pod webhooks leave
	// ml-infra alone (not rdma-webhook), the profiles check selects it.
	for _, w := range pathArr(mwc, "webhooks") {
		exprs := pathArr(w, "namespaceSelector", "matchExpressions")
		name, _ := pathStr(w, "name")
		if len(exprs) == 0 || fmt.Sprint(pathArr(exprs[0], "values")) != "[kube-system ml-infra]" {
			t.Errorf("webhook %s: namespaceSelector %v, expected NotIn [kube-system ml-infra] first", name, exprs)
		}
	}
	vwc := findObject(t, yamlObjects(t, out), "ValidatingWebhookConfiguration", webhookName)
	for _, w := range pathArr(vwc, "webhooks") {
		if got, _ := pathStr(w, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"); got != "ml-infra" {
			t.Errorf("the profiles check selects namespace %q, expected ml-infra", got)
		}
	}
	// The cluster path, against the stand-in kubectl: the namespace it
	// checks and the Secret it applies follow --namespace.
	fake := t.TempDir()
	script := filepath.Join(fake, "kubectl")
	writeExecutable(t, script, []byte(fakeKubectl))
	if err := os.WriteFile(filepath.Join(fake, "mwc.json"), mustMarshal(mwcOfManifests(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	runInstallDevCerts(t, script, []string{"FAKE_DIR=" + fake, "REAL_KUBECTL=" + kubectl(t), "FAKE_OLD_BUNDLE="},
		"--namespace", "ml-infra", "--service", "rdma-hook", "--out-dir", t.TempDir())
	if calls := string(readFile(t, filepath.Join(fake, "calls"))); !strings.Contains(calls, "get namespace ml-infra") {
		t.Errorf("the cluster path did not check namespace ml-infra; calls:\n%s", calls)
	}
	applied := yamlObjects(t, readFile(t, filepath.Join(fake, "applied.yaml")))
	if len(applied) != 1 {
		t.Fatalf("expected one Secret applied, got %d", len(applied))
	}
	if ns, _ := pathStr(applied[0], "metadata", "namespace"); ns != "ml-infra" {
		t.Errorf("the applied Secret's namespace %q, expected ml-infra", ns)
	}
	if code, _, stderr := runInstallDevCertsResult(t, "--print", "--namespace", "Bad_NS", "--out-dir", t.TempDir()); code == 0 ||
		!strings.Contains(string(stderr), "Bad_NS") {
		t.Errorf("an invalid namespace: expected a failure naming it, got %d: %s", code, stderr)
	}
}

func mwcOfManifests(t *testing.T) obj {
	t.Helper()
	return findObject(t, kustomize(t, manifestsDir), "MutatingWebhookConfiguration", webhookName)
}

// TestInstallDevCertsForce: an --out-dir that holds certificates is
// refused, naming --force, and left as it was; --force replaces them.
func TestInstallDevCertsForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runInstallDevCerts(t, kubectl(t), nil, "--print", "--out-dir", dir)
	before := readFile(t, filepath.Join(dir, "ca.key"))
	code, _, stderr := runInstallDevCertsResult(t, "--print", "--out-dir", dir)
	if code == 0 || !strings.Contains(string(stderr), "--force") {
		t.Errorf("a full --out-dir: expected a failure naming --force, got %d: %s", code, stderr)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, "ca.key")), before) {
		t.Errorf("ca.key changed without --force")
	}
	runInstallDevCerts(t, kubectl(t), nil, "--print", "--force", "--out-dir", dir)
	if bytes.Equal(readFile(t, filepath.Join(dir, "ca.key")), before) {
		t.Errorf("--force did not replace ca.key")
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
	t.Parallel()
	fake := t.TempDir()
	script := filepath.Join(fake, "kubectl")
	writeExecutable(t, script, []byte(fakeKubectl))
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
	t.Parallel()
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
