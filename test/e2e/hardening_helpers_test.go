package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Helpers of hardening_test.go: slow clients, memory readings, a PKI whose
// certificates share one key, and counting log lines as they are written.

// sanitizedBinary reports whether the binary under test is built with
// AddressSanitizer, whose allocator (quarantine, shadow memory) makes RSS
// readings meaningless and address-space limits impossible.
func sanitizedBinary(t testing.TB) bool {
	t.Helper()
	f, err := elf.Open(binaryPath())
	if err != nil {
		return false // a wrapper script (valgrind): not ASan
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if s.Name == "__asan_init" {
			return true
		}
	}
	return false
}

// underValgrind reports whether the binary under test is the valgrind
// wrapper (`make valgrind`: test/valgrind-wrap.sh), where every request
// costs some 50 times what it costs natively. Tests that repeat one path
// many times use fewer rounds there: memcheck reports an error on the first
// pass through a path, so the repeats add time, not coverage; the native
// and ASan runs keep the full counts.
func underValgrind() bool {
	return strings.HasSuffix(binaryPath(), "valgrind-wrap.sh")
}

// procStatusKiB is a "Name:   123 kB" field of /proc/PID/status, in KiB.
func procStatusKiB(t testing.TB, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the server's /proc status: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/status %s: %q", pid, field, line)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

func (in *instance) rssKiB(t testing.TB) int64 {
	return procStatusKiB(t, in.cmd.Process.Pid, "VmRSS")
}

// metricInt is a sample of /metrics as an integer; the test fails when the
// sample is missing.
func (in *instance) metricInt(t testing.TB, sample string) int64 {
	t.Helper()
	v := in.metric(t, sample)
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("/metrics sample %s: %q is not a number%s", sample, v, in.state())
	}
	return int64(n)
}

// waitMetric polls sample until ok accepts it; the test fails after within.
func (in *instance) waitMetric(t testing.TB, sample string, within time.Duration, what string, ok func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		v := in.metricInt(t, sample)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s is %d after %v%s", what, sample, v, within, in.state())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dialTLS is a TLS connection to the instance with its handshake done.
func (in *instance) dialTLS(timeout time.Duration) (*tls.Conn, error) {
	raw, err := net.DialTimeout("tcp", in.addr, timeout)
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, in.tlsConfig())
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := c.Handshake(); err != nil {
		raw.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// postHead is the request line and headers of a POST /mutate with a
// Content-Length.
func postHead(length int) string {
	return fmt.Sprintf("POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n", length)
}

// drip is a slow client: it connects (and shakes hands when tls), sends
// head at once, then one byte of trickle every every, round and round.
type drip struct {
	name    string
	tls     bool
	head    string
	trickle string
	every   time.Duration
}

// A few bytes of a ClientHello: the TLS handshake never completes.
const clientHelloStart = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"

// slowKinds are the ways to hold a connection without finishing a request:
// in the TLS handshake, in the headers, in the body.
func slowKinds(every time.Duration) []drip {
	return []drip{
		{"TCP, a ClientHello byte by byte", false, "", clientHelloStart, every},
		{"TLS, the headers byte by byte", true, "", "POST /mutate HTTP/1.1\r\nHost: localhost\r\nX-Slow: " +
			strings.Repeat("s", 200), every},
		{"TLS, the body byte by byte", true, postHead(4096), strings.Repeat(" ", 4096), every},
	}
}

// run holds one connection: it returns when the server closes it (or the
// write fails), when stop closes, or after limit. closedAfter is how long
// after the phase start (the connect, or the end of head) the server ended
// it, or -1 when it did not. up, when not nil, is called once connected.
func (d drip) run(in *instance, stop <-chan struct{}, limit time.Duration, up func()) (closedAfter time.Duration, err error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", in.addr, 10*time.Second)
	if err != nil {
		return -1, err
	}
	defer c.Close()
	if up != nil {
		up()
	}
	if d.tls {
		tc := tls.Client(c, in.tlsConfig())
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			return -1, err
		}
		_ = tc.SetDeadline(time.Time{})
		c = tc
	}
	if d.head != "" {
		if _, err := io.WriteString(c, d.head); err != nil {
			return time.Since(start), nil
		}
		start = time.Now()
	}
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, c) // returns when the server ends the connection
		closed <- time.Since(start)
	}()
	tick := time.NewTicker(d.every)
	defer tick.Stop()
	end := time.After(limit)
	for i := 0; ; i++ {
		select {
		case after := <-closed:
			return after, nil
		case <-stop:
			return -1, nil
		case <-end:
			return -1, nil
		case <-tick.C:
			// A write error means the server is gone; the reader says when.
			_, _ = io.WriteString(c, d.trickle[i%len(d.trickle):i%len(d.trickle)+1])
		}
	}
}

// dripCrowd keeps n slow clients of the given kinds (round robin) on the
// instance until stop: each reconnects, after pause and up to half as much
// again (so that they do not come back in waves), when the server ends it,
// as an attacker would. up counts the clients connected at least once.
type dripCrowd struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	up       int64
	cut      int64
	errs     int64
	firstErr atomic.Value
}

func startDripCrowd(in *instance, n int, kinds []drip, pause time.Duration) *dripCrowd {
	cr := &dripCrowd{stop: make(chan struct{})}
	for i := 0; i < n; i++ {
		cr.wg.Add(1)
		go func(d drip, delay time.Duration) {
			defer cr.wg.Done()
			time.Sleep(delay) // spread the first connects a little
			var once sync.Once
			up := func() { once.Do(func() { atomic.AddInt64(&cr.up, 1) }) }
			for {
				select {
				case <-cr.stop:
					return
				default:
				}
				after, err := d.run(in, cr.stop, time.Minute, up)
				if err != nil {
					atomic.AddInt64(&cr.errs, 1)
					cr.firstErr.CompareAndSwap(nil, d.name+": "+err.Error())
				} else if after >= 0 {
					atomic.AddInt64(&cr.cut, 1)
				}
				select {
				case <-cr.stop:
					return
				case <-time.After(pause + time.Duration(mrand.Int63n(int64(pause/2)+1))):
				}
			}
		}(kinds[i%len(kinds)], time.Duration(i%50)*time.Millisecond)
	}
	return cr
}

func (cr *dripCrowd) finish() {
	close(cr.stop)
	cr.wg.Wait()
}

// timedReview posts a review on a new connection with an overall timeout
// and says how long it took.
func (in *instance) timedReview(body []byte, timeout time.Duration) (int, time.Duration, error) {
	c := in.newClient(timeout)
	defer c.CloseIdleConnections()
	start := time.Now()
	resp, err := c.Post(in.url("/mutate"), "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, time.Since(start), err
	}
	readAll(resp)
	return resp.StatusCode, time.Since(start), nil
}

// rawExchange sends raw on a new TLS connection and reads one response
// within limit; then it reports whether the server closed the connection
// within closeWithin of the response.
func (in *instance) rawExchange(t testing.TB, raw string, limit, closeWithin time.Duration) (reply, http.Header, bool) {
	t.Helper()
	c, err := in.dialTLS(limit)
	if err != nil {
		t.Fatalf("TLS dial: %v%s", err, in.state())
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(limit))
	go func() { _, _ = io.WriteString(c, raw) }()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response within %v: %v", limit, err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = c.SetReadDeadline(time.Now().Add(closeWithin))
	_, err = br.ReadByte()
	var ne net.Error
	closed := err != nil && !(asNetError(err, &ne) && ne.Timeout())
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: data}, resp.Header, closed
}

func asNetError(err error, ne *net.Error) bool {
	e, ok := err.(net.Error)
	if ok {
		*ne = e
	}
	return ok
}

// logCounter counts the lines of a growing log file that contain needle,
// reading only what was added since the last call.
type logCounter struct {
	path    string
	needle  []byte
	off     int64
	partial []byte
	n       int
}

func (lc *logCounter) count(t testing.TB) int {
	t.Helper()
	f, err := os.Open(lc.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(lc.off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	lc.off += int64(len(data))
	data = append(lc.partial, data...)
	last := bytes.LastIndexByte(data, '\n')
	lc.partial = append([]byte(nil), data[last+1:]...)
	for _, line := range bytes.Split(data[:last+1], []byte("\n")) {
		if bytes.Contains(line, lc.needle) {
			lc.n++
		}
	}
	return lc.n
}

// sameKeyPKI is a CA and leaf certificates for localhost that all share
// one key, so that a rotation is the certificate file alone.
type sameKeyPKI struct {
	roots  *x509.CertPool
	keyPEM []byte
	certs  [][]byte // PEM, each with its own serial
	serial []string // hex, as the server logs them
}

func newSameKeyPKI(t testing.TB, n int) *sameKeyPKI {
	t.Helper()
	ca := newTestCA(t, "e2e same-key CA")
	p := &sameKeyPKI{roots: ca.pool()}
	leafKey := newKey(t)
	der, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		t.Fatal(err)
	}
	p.keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	now := time.Now()
	for i := 0; i < n; i++ {
		serial := big.NewInt(int64(0x1000 + i))
		tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "localhost"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{"localhost"},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		leaf := ca.sign(t, tmpl, &leafKey.PublicKey)
		p.certs = append(p.certs, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf}))
		p.serial = append(p.serial, fmt.Sprintf("%X", serial))
	}
	return p
}

// write puts certificate i and the key in dir and returns their paths.
func (p *sameKeyPKI) write(t testing.TB, dir string, i int) (crt, key string) {
	t.Helper()
	crt, key = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeByRename(t, crt, p.certs[i])
	writeByRename(t, key, p.keyPEM)
	return crt, key
}

// servedSerialOf is the serial (hex) of the certificate on a new connection.
func (in *instance) servedSerialOf(t testing.TB) string {
	t.Helper()
	c, err := in.dialTLS(10 * time.Second)
	if err != nil {
		t.Fatalf("TLS dial: %v%s", err, in.state())
	}
	defer c.Close()
	return fmt.Sprintf("%X", c.ConnectionState().PeerCertificates[0].SerialNumber)
}
