package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// instance is a `serve` of a test's own: its own temporary directory,
// certificates, ports and flags, for tests that rewrite the profiles file,
// signal or stop the server. The suite's shared server (srv) is never
// touched. Unlike srv, a dead instance is not restarted: its death is the
// test's finding.
type instance struct {
	bin, dir      string
	profiles      string
	addr, metrics string
	caPool        *x509.CertPool
	clientCert    *tls.Certificate // presented by the instance's own clients (--client-ca); nil: none
	args          []string

	cmd        *exec.Cmd
	exited     chan struct{}
	waitErr    error
	stderrPath string
	signalled  bool // a test sent SIGTERM/SIGINT itself and checked the exit
	client     *http.Client
	onStart    func(*os.Process) // called as soon as the process runs, before it answers
}

// startInstance starts `serve --profiles profiles` plus extra flags and
// waits until it answers /healthz (not /readyz: some tests start it without
// valid profiles). At the end of the test it is stopped with SIGTERM and
// must exit 0 with no sanitizer report on stderr.
func startInstance(t testing.TB, profiles string, extra ...string) *instance {
	t.Helper()
	return startInstanceTrusting(t, nil, profiles, extra...)
}

// startInstanceTrusting is startInstance for a test that serves its own
// certificate (through extra flags): roots are the CAs its clients trust.
func startInstanceTrusting(t testing.TB, roots *x509.CertPool, profiles string, extra ...string) *instance {
	t.Helper()
	return startInstanceAs(t, roots, nil, profiles, extra...)
}

// startInstanceAs is startInstanceTrusting for a server that requires a
// client certificate (--client-ca in extra): the instance's own clients,
// waitUp's included, present cert.
func startInstanceAs(t testing.TB, roots *x509.CertPool, cert *tls.Certificate, profiles string, extra ...string) *instance {
	t.Helper()
	return startInstanceWith(t, roots, cert, nil, profiles, extra...)
}

// startInstanceHooked is startInstanceTrusting with onStart called as soon
// as each launch's process runs (to signal it at once).
func startInstanceHooked(t testing.TB, roots *x509.CertPool, onStart func(*os.Process), profiles string, extra ...string) *instance {
	t.Helper()
	return startInstanceWith(t, roots, nil, onStart, profiles, extra...)
}

// startInstanceWith is what the start helpers above share.
func startInstanceWith(t testing.TB, roots *x509.CertPool, cert *tls.Certificate, onStart func(*os.Process), profiles string, extra ...string) *instance {
	t.Helper()
	dir := t.TempDir()
	if err := copyCerts(dir); err != nil {
		t.Fatal(err)
	}
	pool, err := loadCAPool(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if roots != nil {
		pool = roots
	}
	in := &instance{bin: binaryPath(), dir: dir, profiles: profiles, caPool: pool, clientCert: cert, args: extra, onStart: onStart}
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		if lastErr = in.launch(attempt); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("starting an own serve: %v", lastErr)
	}
	in.client = in.newClient(slowerUnderValgrind(10 * time.Second))
	t.Cleanup(func() { in.finish(t) })
	return in
}

func (in *instance) launch(attempt int) error {
	var err error
	if in.addr, err = freePort(); err != nil {
		return err
	}
	if in.metrics, err = freePort(); err != nil {
		return err
	}
	in.stderrPath = filepath.Join(in.dir, fmt.Sprintf("serve-%d.stderr", attempt))
	stderr, err := os.Create(in.stderrPath)
	if err != nil {
		return err
	}
	args := append([]string{"serve",
		"--listen", in.addr, "--metrics-listen", in.metrics,
		"--tls-cert-file", filepath.Join(in.dir, "tls.crt"),
		"--tls-private-key-file", filepath.Join(in.dir, "tls.key"),
		"--profiles", in.profiles}, in.args...)
	in.cmd = exec.Command(in.bin, args...)
	in.cmd.Stdout = io.Discard
	in.cmd.Stderr = stderr
	if err := in.cmd.Start(); err != nil {
		stderr.Close()
		return err
	}
	if in.onStart != nil {
		in.onStart(in.cmd.Process)
	}
	in.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		in.waitErr = cmd.Wait()
		stderr.Close()
		close(exited)
	}(in.cmd, in.exited)
	return in.waitUp()
}

// waitUp polls https /healthz until it answers 200.
func (in *instance) waitUp() error {
	client := in.newClient(2 * time.Second)
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(readyTimeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if !in.alive() {
			return fmt.Errorf("serve exited before it answered: %v\nstderr:\n%s", in.waitErr, tail(in.stderrPath))
		}
		resp, err := client.Get(in.url("/healthz"))
		if err == nil {
			body := readAll(resp)
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %q", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	in.kill()
	return fmt.Errorf("/healthz not 200 within %v (last: %s)\nstderr:\n%s", readyTimeout, last, tail(in.stderrPath))
}

// finish stops the instance unless the test already did, and reports an
// abnormal exit or a sanitizer report.
func (in *instance) finish(t testing.TB) {
	if in.client != nil {
		in.client.CloseIdleConnections()
	}
	if !in.signalled {
		if !in.alive() {
			t.Errorf("serve died during the test: %v\nstderr tail:\n%s", in.waitErr, tail(in.stderrPath))
		} else if err := in.terminate(stopTimeout); err != nil {
			t.Errorf("%v\nstderr tail:\n%s", err, tail(in.stderrPath))
		}
	}
	in.kill()
	if report := sanitizerBlock(in.logText()); report != "" {
		t.Errorf("sanitizer/runtime error report on the instance's stderr:\n%s", report)
	}
}

// sanitizerBlock is the first sanitizer report in lines, from its first
// marked line on (with the stack), at most 80 lines; "" when none.
func sanitizerBlock(lines []string) string {
	for i, line := range lines {
		if hasSanitizerMarker(line) {
			end := i + 80
			if end > len(lines) {
				end = len(lines)
			}
			return strings.Join(lines[i:end], "\n")
		}
	}
	return ""
}

// terminate sends SIGTERM and waits up to limit for exit status 0.
func (in *instance) terminate(limit time.Duration) error {
	in.signal(syscall.SIGTERM)
	elapsed, err := in.waitExit(limit)
	if err != nil {
		return err
	}
	if in.waitErr != nil {
		return fmt.Errorf("serve exited abnormally %v after SIGTERM: %v (want exit 0)", elapsed, in.waitErr)
	}
	return nil
}

func (in *instance) signal(sig syscall.Signal) {
	if sig == syscall.SIGTERM || sig == syscall.SIGINT {
		in.signalled = true
	}
	_ = in.cmd.Process.Signal(sig)
}

// waitExit waits up to limit for the process to exit and says how long it
// took; it kills the process when the limit passes.
func (in *instance) waitExit(limit time.Duration) (time.Duration, error) {
	start := time.Now()
	select {
	case <-in.exited:
		return time.Since(start), nil
	case <-time.After(limit):
		in.kill()
		return time.Since(start), fmt.Errorf("serve did not exit within %v", limit)
	}
}

func (in *instance) alive() bool {
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}

func (in *instance) kill() {
	if in.cmd != nil && in.alive() {
		_ = in.cmd.Process.Kill()
		<-in.exited
	}
}

func (in *instance) url(p string) string        { return "https://" + in.addr + p }
func (in *instance) metricsURL(p string) string { return "http://" + in.metrics + p }

func (in *instance) tlsConfig() *tls.Config {
	cfg := &tls.Config{RootCAs: in.caPool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if in.clientCert != nil {
		cfg.Certificates = []tls.Certificate{*in.clientCert}
	}
	return cfg
}

// newClient is an HTTPS/HTTP client with one kept-alive connection and the
// given overall timeout.
func (in *instance) newClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:     in.tlsConfig(),
			MaxConnsPerHost:     1,
			MaxIdleConnsPerHost: 1,
		},
	}
}

// do sends one request with the instance's client; a transport error fails
// the test with the instance's stderr tail.
func (in *instance) do(t testing.TB, method, url string, body []byte) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := newRequest(t, method, url, "application/json", rd)
	resp, err := in.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v%s", method, url, err, in.state())
	}
	data := readAll(resp)
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: data}
}

// state explains a failed request: whether the process is still there,
// and the end of its stderr.
func (in *instance) state() string {
	status := "still running"
	if !in.alive() {
		status = fmt.Sprintf("exited: %v", in.waitErr)
	}
	return fmt.Sprintf("\n(own serve %s)\nstderr tail:\n%s", status, tail(in.stderrPath))
}

// review posts r to /mutate and checks the generic response properties.
func (in *instance) review(t testing.TB, r reviewRequest) reviewResponse {
	t.Helper()
	rep := in.do(t, http.MethodPost, in.url("/mutate"), mustMarshal(r.body()))
	if rep.status != http.StatusOK {
		t.Fatalf("POST /mutate: expected 200, got %d: %q%s", rep.status, cut(rep.body), in.state())
	}
	return parseReview(t, rep.body, r)
}

// readyz is the status of GET /readyz on the HTTPS or the plain port.
func (in *instance) readyz(t testing.TB, plain bool) int {
	t.Helper()
	u := in.url("/readyz")
	if plain {
		u = in.metricsURL("/readyz")
	}
	return in.do(t, http.MethodGet, u, nil).status
}

// logText is the instance's stderr so far, one entry per line.
func (in *instance) logText() []string {
	data, _ := os.ReadFile(in.stderrPath)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	return out
}

// logLines is the instance's stderr so far, each line decoded (a line that
// is not a JSON object decodes to nil).
func (in *instance) logLines() []obj {
	text := in.logText()
	out := make([]obj, len(text))
	for i, line := range text {
		out[i], _ = decodeObject([]byte(line))
	}
	return out
}

// logMark is where the log is now: waitLog(from: mark) sees only what
// comes after.
func (in *instance) logMark() int { return len(in.logText()) }

// msgIs matches log lines by their "msg" (and, when given, more fields
// compared as text, e.g. "generation": "2").
func msgIs(msg string, fields ...string) func(obj) bool {
	return func(o obj) bool {
		if m, _ := pathStr(o, "msg"); m != msg {
			return false
		}
		for i := 0; i+1 < len(fields); i += 2 {
			if v, ok := scalarString(o[fields[i]]); !ok || v != fields[i+1] {
				return false
			}
		}
		return true
	}
}

// msgStarts matches log lines whose "msg" starts with prefix.
func msgStarts(prefix string) func(obj) bool {
	return func(o obj) bool {
		m, _ := pathStr(o, "msg")
		return strings.HasPrefix(m, prefix)
	}
}

// waitLog polls the log for the first line at index >= from that matches,
// and returns it with its index; it fails the test after within.
func (in *instance) waitLog(t testing.TB, from int, within time.Duration, what string, match func(obj) bool) (obj, int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		// Only the lines from `from` on are decoded: a log under load holds
		// thousands of admission lines, and decoding them all every 25 ms
		// made the wait itself slow enough to miss its deadline.
		text := in.logText()
		for i := from; i < len(text); i++ {
			if o, _ := decodeObject([]byte(text[i])); o != nil && match(o) {
				return o, i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line %s within %v after line %d; stderr tail:\n%s", what, within, from, tail(in.stderrPath))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// metric is the value of one unlabelled sample on /metrics, "" if absent.
func (in *instance) metric(t testing.TB, name string) string {
	t.Helper()
	rep := in.do(t, http.MethodGet, in.metricsURL("/metrics"), nil)
	for _, line := range strings.Split(string(rep.body), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			return f[1]
		}
	}
	return ""
}
