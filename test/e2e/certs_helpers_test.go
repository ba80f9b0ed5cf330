package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Certificates made in the test itself, for what gen-certs does not make:
// client certificates (--client-ca), several CAs, leaves that share a key.
// The serving certificate every instance starts with is the suite's set,
// made once per run by gen-certs (copyCerts).

// testCA is a CA made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var testSerial atomic.Int64

// nextSerial is unique within the run and across runs a second apart.
func nextSerial() *big.Int {
	return big.NewInt(time.Now().Unix()<<20 + testSerial.Add(1))
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// newTestCA is a self-signed P-256 CA valid from an hour ago for a day.
func newTestCA(t testing.TB, cn string) *testCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// pool is a pool of this CA alone, for clients that trust it.
func (ca *testCA) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// sign is the DER of tmpl for pub, signed by ca.
func (ca *testCA) sign(t testing.TB, tmpl *x509.Certificate, pub *ecdsa.PublicKey) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// clientCertSpec is what a client certificate says.
type clientCertSpec struct {
	cn       string
	dns      []string
	eku      []x509.ExtKeyUsage // nil: client auth
	notAfter time.Time          // zero: in a day
}

// issue makes a client certificate signed by ca.
func (ca *testCA) issue(t testing.TB, spec clientCertSpec) *tls.Certificate {
	t.Helper()
	key := newKey(t)
	if spec.eku == nil {
		spec.eku = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if spec.notAfter.IsZero() {
		spec.notAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: spec.cn},
		DNSNames:     spec.dns,
		NotBefore:    time.Now().Add(-2 * time.Hour),
		NotAfter:     spec.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  spec.eku,
	}
	return &tls.Certificate{Certificate: [][]byte{ca.sign(t, tmpl, &key.PublicKey)}, PrivateKey: key}
}

// certGenerations runs gen-certs into n new directories (distinct CAs and
// keys: the generations a rotation test swaps between) and returns them
// with a pool that trusts every generation's CA.
func certGenerations(t *testing.T, n int) ([]string, *x509.CertPool) {
	t.Helper()
	gens := make([]string, n)
	roots := x509.NewCertPool()
	for i := range gens {
		gens[i] = t.TempDir()
		if err := genCerts(binaryPath(), gens[i]); err != nil {
			t.Fatal(err)
		}
		ca, err := os.ReadFile(filepath.Join(gens[i], "ca.crt"))
		if err != nil || !roots.AppendCertsFromPEM(ca) {
			t.Fatalf("CA of generation %d: %v", i, err)
		}
	}
	return gens, roots
}

// liveCopyOf copies gen's tls.crt and tls.key into a new directory: the
// files a test's serve is given and the test then rewrites.
func liveCopyOf(t *testing.T, gen string) (crt, key string) {
	t.Helper()
	live := t.TempDir()
	crt, key = filepath.Join(live, "tls.crt"), filepath.Join(live, "tls.key")
	copyFile(t, filepath.Join(gen, "tls.crt"), crt)
	copyFile(t, filepath.Join(gen, "tls.key"), key)
	return crt, key
}

// certWatch is an instance serving a live copy (crt, key) of the first of
// gens, n certificate generations that roots all trust, and rereading it
// every intervalMS: what a fault test rewrites under load. first is the
// certificate in crt when it started.
type certWatch struct {
	in       *instance
	gens     []string
	roots    *x509.CertPool
	crt, key string
	first    []byte
}

func startCertWatch(t *testing.T, n int, intervalMS string) certWatch {
	t.Helper()
	w := certWatch{}
	w.gens, w.roots = certGenerations(t, n)
	w.crt, w.key = liveCopyOf(t, w.gens[0])
	w.in = startOwn(t, instanceOptions{profiles: profilesPath, roots: w.roots,
		args: []string{"--reload-interval-ms", intervalMS, "--tls-cert-file", w.crt, "--tls-private-key-file", w.key}})
	w.first = fileCert(t, w.crt)
	return w
}
