package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// secretVolume lays out a Secret volume as the kubelet does: the files are
// symlinks through ..data, which is swapped atomically to a new directory.
type secretVolume struct {
	dir string
	n   int
}

func newSecretVolume(t *testing.T, first string) *secretVolume {
	t.Helper()
	v := &secretVolume{dir: t.TempDir()}
	v.swapTo(t, first)
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(v.dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// swapTo copies src's tls.crt and tls.key into a fresh ..N directory and
// points ..data at it with a rename, the kubelet's atomic update.
func (v *secretVolume) swapTo(t *testing.T, src string) {
	t.Helper()
	v.n++
	gen := fmt.Sprintf("..%d", v.n)
	if err := os.Mkdir(filepath.Join(v.dir, gen), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v.dir, gen, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(gen, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// certSerial is the serial of a PEM certificate file, as openssl prints it.
func certSerial(t *testing.T, file string) string {
	t.Helper()
	out, err := exec.Command("openssl", "x509", "-noout", "-serial", "-in", file).Output()
	if err != nil {
		t.Fatalf("openssl x509 %s: %v", file, err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "serial=")
}

// servedSerial asks the server for its certificate with openssl s_client,
// an independent TLS client, and returns the serial it presents.
func servedSerial(t *testing.T, addr string) string {
	t.Helper()
	sc := exec.Command("openssl", "s_client", "-connect", addr, "-servername", "localhost")
	sc.Stdin = strings.NewReader("")
	pem, err := sc.Output()
	if err != nil {
		return ""
	}
	x := exec.Command("openssl", "x509", "-noout", "-serial")
	x.Stdin = bytes.NewReader(pem)
	out, err := x.Output()
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "serial=")
}

// rotationLoad posts reviews from several clients until stopped, half of
// them on a fresh connection (a new handshake) each time, so requests run
// across every swap.
type rotationLoad struct {
	ok, failed int64
	firstErr   atomic.Value
	stop       chan struct{}
	wg         sync.WaitGroup
}

func startRotationLoad(t *testing.T, in *instance, roots *x509.CertPool, body []byte) *rotationLoad {
	l := &rotationLoad{stop: make(chan struct{})}
	for i := 0; i < 6; i++ {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12},
			DisableKeepAlives: i%2 == 0,
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: tr}
		l.wg.Add(1)
		go l.run(client, in.url("/mutate"), body)
	}
	return l
}

func (l *rotationLoad) run(client *http.Client, url string, body []byte) {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err == nil {
			readAll(resp)
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		if err != nil {
			atomic.AddInt64(&l.failed, 1)
			l.firstErr.CompareAndSwap(nil, err.Error())
			continue
		}
		atomic.AddInt64(&l.ok, 1)
	}
}

// waitRunning waits until the load has had n requests answered, so that
// what follows happens under load (a fixed sleep did not make sure of it on
// a loaded machine or under valgrind, and waited longer than needed when
// the load was quick).
func (l *rotationLoad) waitRunning(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for atomic.LoadInt64(&l.ok) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the load had %d requests answered (%d failed) after %v, want %d first",
				atomic.LoadInt64(&l.ok), atomic.LoadInt64(&l.failed), within, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expectAllServed finishes the load and fails the test unless every
// review succeeded and at least 20 ran (so that the load overlapped what
// the test did to the server: during says what that was).
func (l *rotationLoad) expectAllServed(t *testing.T, during string) {
	t.Helper()
	ok, failed, firstErr := l.finish()
	t.Logf("%d reviews under load %s", ok, during)
	if failed != 0 {
		t.Errorf("%d of %d reviews failed %s (first: %s)", failed, ok+failed, during, firstErr)
	}
	if ok < 20 {
		t.Errorf("only %d reviews ran: the load did not overlap what happened %s", ok, during)
	}
}

func (l *rotationLoad) finish() (ok, failed int64, firstErr string) {
	close(l.stop)
	l.wg.Wait()
	if e, _ := l.firstErr.Load().(string); e != "" {
		firstErr = e
	}
	return atomic.LoadInt64(&l.ok), atomic.LoadInt64(&l.failed), firstErr
}

// waitServedSerial polls until the server presents want, and says how long
// that took.
func waitServedSerial(t *testing.T, in *instance, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	got := ""
	for time.Since(start) < within {
		if got = servedSerial(t, in.addr); got == want {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server still presents serial %q, want %q after %v%s", got, want, within, in.state())
	return 0
}

// TestCertificateRotationUnderLoad replaces the serving certificate the way a
// Secret volume updates (the ..data swap) while clients keep posting
// reviews: the new serial must be presented within a few seconds, no request
// may fail, and a broken pair (key of another certificate) must be refused
// with the previous certificate still served.
func TestCertificateRotationUnderLoad(t *testing.T) {
	t.Parallel()
	gens, roots := certGenerations(t, 3)
	vol := newSecretVolume(t, gens[0])
	in := startOwn(t, instanceOptions{profiles: profilesPath, roots: roots, args: []string{
		"--reload-interval-ms", bigInterval,
		"--tls-cert-file", filepath.Join(vol.dir, "tls.crt"),
		"--tls-private-key-file", filepath.Join(vol.dir, "tls.key")}})
	if got, want := servedSerial(t, in.addr), certSerial(t, filepath.Join(gens[0], "tls.crt")); got != want {
		t.Fatalf("served serial %q, want the first certificate's %q", got, want)
	}
	body := mustMarshal(podCreate("kubeflow", loadFixture(t, gpu8Fixture, "").object).body())
	load := startRotationLoad(t, in, roots, body)
	load.waitRunning(t, 10, 30*time.Second)

	mark := in.logMark()
	vol.swapTo(t, gens[1])
	second := certSerial(t, filepath.Join(gens[1], "tls.crt"))
	took := waitServedSerial(t, in, second, 5*time.Second)
	in.waitLog(t, mark, 2*time.Second, "serving certificate loaded (second)", msgIs("serving certificate loaded", "serial", second))
	time.Sleep(300 * time.Millisecond)

	broken := t.TempDir()
	copyFile(t, filepath.Join(gens[2], "tls.crt"), filepath.Join(broken, "tls.crt"))
	copyFile(t, filepath.Join(gens[0], "tls.key"), filepath.Join(broken, "tls.key"))
	mark = in.logMark()
	vol.swapTo(t, broken)
	in.waitLog(t, mark, 2*time.Second, "new certificate rejected", msgStarts("new certificate rejected"))
	time.Sleep(300 * time.Millisecond)
	if got := servedSerial(t, in.addr); got != second {
		t.Errorf("after a mismatched pair the server presents %q, want the previous %q", got, second)
	}

	ok, failed, firstErr := load.finish()
	t.Logf("new serial served %v after the swap; %d requests succeeded during the rotations", took, ok)
	if failed != 0 {
		t.Errorf("%d of %d requests failed during rotation (first: %s)", failed, ok+failed, firstErr)
	}
	if ok < 20 {
		t.Errorf("only %d requests ran during the rotation; the load did not overlap it", ok)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
