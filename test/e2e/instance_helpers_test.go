package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
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
	env           []string

	*process       // the current run (cmd, exited, waitErr, stderrPath)
	signalled bool // a test sent SIGTERM/SIGINT itself and checked the exit
	client    *http.Client
	onStart   func(*os.Process) // called as soon as the process runs, before it answers
}

// instanceOptions says how startOwn starts a test's own serve. Every field
// may be left out: the default is the suite's certificate set, no
// --profiles flag, stderr in a file of the instance's directory.
type instanceOptions struct {
	profiles   string            // --profiles FILE; "": no --profiles flag (e.g. --profiles-configmap in args)
	args       []string          // more flags, after the defaults
	roots      *x509.CertPool    // the CAs the clients trust, for a test serving its own certificate; nil: the suite's
	clientCert *tls.Certificate  // presented by the instance's clients, waitUp's included (--client-ca in args)
	onStart    func(*os.Process) // called as soon as each launch's process runs (to signal it at once)
	env        []string          // added to the process environment
	// openStderr opens where stderr goes (nil: serve-N.stderr in the
	// instance's directory), read back from readPath (the file itself, or
	// a stand-in when it cannot be read back, e.g. /dev/full).
	openStderr func() (*os.File, error)
	readPath   string
}

// startInstance starts `serve --profiles profiles` plus extra flags and
// waits until it answers /healthz (not /readyz: some tests start it without
// valid profiles). At the end of the test it is stopped with SIGTERM and
// must exit 0 with no sanitizer report on stderr.
func startInstance(t testing.TB, profiles string, extra ...string) *instance {
	t.Helper()
	return startOwn(t, instanceOptions{profiles: profiles, args: extra})
}

// startOwn is startInstance with every way a test's serve can differ: the
// one builder of instances. Each try gets new ports (a port taken in
// between is retried); the default certificates are the suite's set,
// generated once per run (copyCerts).
func startOwn(t testing.TB, o instanceOptions) *instance {
	t.Helper()
	dir := t.TempDir()
	if err := copyCerts(dir); err != nil {
		t.Fatal(err)
	}
	pool, err := loadCAPool(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if o.roots != nil {
		pool = o.roots
	}
	in := &instance{bin: binaryPath(), dir: dir, profiles: o.profiles, caPool: pool, clientCert: o.clientCert,
		args: o.args, env: o.env, onStart: o.onStart}
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		if lastErr = in.launch(attempt, o); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("starting an own serve: %v", lastErr)
	}
	in.client = in.newClient(slowerUnderValgrind(10 * time.Second))
	t.Cleanup(func() {
		start := time.Now()
		in.finish(t)
		if took := time.Since(start); took > 2*time.Second {
			t.Logf("serve took %v to stop (SIGTERM at %s); stderr tail:\n%s", took.Round(time.Millisecond),
				start.UTC().Format("15:04:05.000"), tail(in.stderrPath))
		}
	})
	return in
}

// launch is one try of startOwn: new ports, stderr as o says, a run.
// Where stderr is a file of its own, serve binds port 0 and the ports come
// from its "serving" line (no window in which a parallel test takes them);
// otherwise they are picked free beforehand.
func (in *instance) launch(attempt int, o instanceOptions) error {
	var err error
	readPath := o.readPath
	in.addr, in.metrics = anyPort, anyPort
	if o.openStderr != nil {
		if in.addr, err = freePort(); err != nil {
			return err
		}
		if in.metrics, err = freePort(); err != nil {
			return err
		}
	}
	var out *os.File
	if o.openStderr != nil {
		out, err = o.openStderr()
	} else {
		readPath = filepath.Join(in.dir, fmt.Sprintf("serve-%d.stderr", attempt))
		out, err = os.Create(readPath)
	}
	if err != nil {
		return fmt.Errorf("opening the server's stderr: %v", err)
	}
	return in.spawnOn(out, readPath)
}

// spawnOn starts a run on the instance's current ports with stderr going
// to out (read back from readPath) and waits until it answers /healthz; a
// test restarting a killed instance on the same ports calls it itself.
func (in *instance) spawnOn(out *os.File, readPath string) error {
	p, err := spawn(in.bin, serveArgs(in.addr, in.metrics, in.dir, in.profiles, in.args), out, readPath, in.env)
	if err != nil {
		return err
	}
	in.process = p
	in.signalled = false
	if in.onStart != nil {
		in.onStart(p.cmd.Process)
	}
	if in.addr == anyPort {
		if err := in.readPorts(); err != nil {
			p.kill()
			return err
		}
	}
	return in.waitUp()
}

// anyPort asks serve for a port of the kernel's choice.
const anyPort = "127.0.0.1:0"

// logPort is a port number field of a log line, or 0.
func logPort(l obj, key string) int {
	n, ok := l[key].(json.Number)
	if !ok {
		return 0
	}
	v, err := n.Int64()
	if err != nil || v <= 0 || v > 65535 {
		return 0
	}
	return int(v)
}

// readPorts waits for the run's "serving" line and takes the ports it
// bound from it. Without a metrics port (--metrics-listen "" among the
// flags) in.metrics is a port picked free and left closed.
func (in *instance) readPorts() error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		for _, l := range in.logLines() {
			if l["msg"] != "serving" {
				continue
			}
			port := logPort(l, "port")
			if port == 0 {
				return fmt.Errorf("serving line without a port: %v", l)
			}
			in.addr = fmt.Sprintf("127.0.0.1:%d", port)
			if mport := logPort(l, "metrics_port"); mport != 0 {
				in.metrics = fmt.Sprintf("127.0.0.1:%d", mport)
				return nil
			}
			var err error
			in.metrics, err = freePort()
			return err
		}
		if !in.alive() {
			return fmt.Errorf("serve exited before logging \"serving\": %v\nstderr:\n%s", in.waitErr, tail(in.stderrPath))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no \"serving\" line within %v\nstderr:\n%s", readyTimeout, tail(in.stderrPath))
}

// waitUp polls https /healthz until it answers 200.
func (in *instance) waitUp() error {
	client := in.newClient(2 * time.Second)
	defer client.CloseIdleConnections()
	return in.process.waitOK(client, in.url("/healthz"), 50*time.Millisecond)
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

// writeExecutable writes data to path, mode 0755, for the test to run.
// The final file is written by cp, not by this process: a file this process
// had open for writing stays open in any child that a parallel test forks
// meanwhile, and exec of it then fails with "text file busy"
// (golang/go#22315).
func writeExecutable(t testing.TB, path string, data []byte) {
	t.Helper()
	staged := path + ".staged"
	if err := os.WriteFile(staged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", staged, path).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v\n%s", staged, path, err, out)
	}
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(staged); err != nil {
		t.Fatal(err)
	}
}
