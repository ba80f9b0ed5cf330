package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// How long serve may take to answer after its start, and to exit after
// SIGTERM, before the harness gives up on it. Under valgrind, with several
// memchecked servers sharing two cores (-parallel), a start or the leak
// check at exit takes many times longer: these are the harness's patience,
// not a bound any test asserts (the tests of the drain bound have their own).
var (
	readyTimeout = slowerUnderValgrind(20 * time.Second)
	stopTimeout  = slowerUnderValgrind(15 * time.Second)
)

func slowerUnderValgrind(d time.Duration) time.Duration {
	if underValgrind() {
		return 4 * d
	}
	return d
}

// server is the webhook under test: one `rdma-webhook serve` at a time on
// fixed loopback ports. If it dies, the death is recorded (the suite fails
// at the end) and the next request starts a new one, so that one crash
// does not hide what the rest of the suite would find.
type server struct {
	bin, profiles string
	addr          string // HTTPS host:port
	metrics       string // plain HTTP host:port
	certDir       string
	caPool        *x509.CertPool

	mu     sync.Mutex
	proc   *process
	runs   int
	deaths []string
	logs   []string // stderr files of every run

	sharedOnce   sync.Once
	sharedClient *http.Client
}

// process is one run of `serve`, the suite's or a test's own (instance).
type process struct {
	cmd        *exec.Cmd
	exited     chan struct{}
	waitErr    error
	stderrPath string
	// ownLog: stderr is the file at stderrPath, so waitOK can tell this
	// run's answer from another's: a port picked free can be taken by a
	// parallel test's serve before this one binds it, and that serve (the
	// suite's certificates too) then answers /healthz while this one exits
	// with "cannot listen". Only a run that logged "serving" has bound it.
	ownLog bool
}

// sanitizerMarkers are what ASan, LSan and UBSan print in their reports.
var sanitizerMarkers = []string{
	"AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
	"runtime error:",
}

// genCerts runs `gen-certs --out-dir dir` and checks the three files exist.
func genCerts(bin, dir string, extra ...string) error {
	args := append([]string{"gen-certs", "--out-dir", dir}, extra...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	for _, f := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("gen-certs did not write %s: %v", f, err)
		}
	}
	return nil
}

// certSets are the certificate sets made once per suite run, by the
// gen-certs arguments that made them: every server and fake apiserver of
// the suite uses the same default set (or the fake's), so generating it
// for each (slow under ASan, some 1.5 s under valgrind) only costs time.
// gen-certs still runs through the binary under test, once per set; the
// tests whose point is gen-certs, or that need distinct CAs or keys, call
// genCerts themselves.
var (
	certSetsMu  sync.Mutex
	certSets    = map[string]*certSet{}
	certSetsDir string // under the suite's temporary directory (run sets it)
)

type certSet struct {
	once sync.Once
	dir  string
	err  error
}

// copyCerts puts in dir a copy of the set `gen-certs extra...` makes,
// generating it on first use.
func copyCerts(dir string, extra ...string) error {
	key := strings.Join(extra, "\x00")
	certSetsMu.Lock()
	cs := certSets[key]
	if cs == nil {
		cs = &certSet{}
		certSets[key] = cs
	}
	base := certSetsDir
	certSetsMu.Unlock()
	cs.once.Do(func() {
		if cs.dir, cs.err = os.MkdirTemp(base, "certs-"); cs.err == nil {
			cs.err = genCerts(binaryPath(), cs.dir, extra...)
		}
	})
	if cs.err != nil {
		return cs.err
	}
	entries, err := os.ReadDir(cs.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src := filepath.Join(cs.dir, e.Name())
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func loadCAPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startServer copies the suite's certificates into dir and starts `serve`, retrying
// with new ports if the chosen ones were taken in between.
func startServer(bin, dir, profiles string) (*server, error) {
	if err := copyCerts(dir); err != nil {
		return nil, err
	}
	pool, err := loadCAPool(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, profiles: profiles, certDir: dir, caPool: pool}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if lastErr = s.pickPorts(); lastErr != nil {
			continue
		}
		if lastErr = s.launch(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

func (s *server) pickPorts() (err error) {
	if s.addr, err = freePort(); err != nil {
		return err
	}
	s.metrics, err = freePort()
	return err
}

// launch starts a run and waits until it is ready.
func (s *server) launch() error {
	s.runs++
	path := filepath.Join(s.certDir, fmt.Sprintf("serve-%d.stderr", s.runs))
	s.logs = append(s.logs, path)
	stderr, err := os.Create(path)
	if err != nil {
		return err
	}
	p, err := spawn(s.bin, serveArgs(s.addr, s.metrics, s.certDir, s.profiles, nil), stderr, path, nil)
	if err != nil {
		return err
	}
	s.proc = p
	client := s.newClient(tls.VersionTLS12, 0)
	defer client.CloseIdleConnections()
	return p.waitOK(client, s.url("/readyz"), 100*time.Millisecond)
}

// serveArgs are the flags every test's serve starts with: the two ports,
// the certificate in certDir, the profiles file (none when ""), then extra
// (where a later --tls-cert-file overrides the default one).
func serveArgs(addr, metrics, certDir, profiles string, extra []string) []string {
	args := []string{"serve", "--listen", addr, "--metrics-listen", metrics,
		"--tls-cert-file", filepath.Join(certDir, "tls.crt"),
		"--tls-private-key-file", filepath.Join(certDir, "tls.key")}
	if profiles != "" {
		args = append(args, "--profiles", profiles)
	}
	return append(args, extra...)
}

// spawn starts bin with args, stdout discarded and stderr on out (closed
// when the process ends, or here when it cannot start); readPath is where
// its log is read back. env is added to the suite's environment.
func spawn(bin string, args []string, out *os.File, readPath string, env []string) (*process, error) {
	p := &process{cmd: exec.Command(bin, args...), exited: make(chan struct{}), stderrPath: readPath,
		ownLog: readPath != "" && out.Name() == readPath}
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = out
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	if err := p.cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitOK polls url with client every interval until it answers 200. A
// process that exits first, or one still not answering after readyTimeout
// (then killed), is an error with its stderr tail.
func (p *process) waitOK(client *http.Client, url string, interval time.Duration) error {
	deadline := time.Now().Add(readyTimeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if !p.alive() {
			return fmt.Errorf("serve exited before %s answered 200: %v\nstderr:\n%s", url, p.waitErr, tail(p.stderrPath))
		}
		resp, err := client.Get(url)
		if err == nil {
			body := readAll(resp)
			if resp.StatusCode == http.StatusOK && (!p.ownLog || p.loggedServing()) {
				return nil
			}
			last = fmt.Sprintf("%d %q", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(interval)
	}
	p.kill()
	return fmt.Errorf("%s not 200 within %v (last: %s)\nstderr:\n%s", url, readyTimeout, last, tail(p.stderrPath))
}

// loggedServing: this run's stderr has the line serve writes once both
// ports are bound.
func (p *process) loggedServing() bool {
	data, _ := os.ReadFile(p.stderrPath)
	return bytes.Contains(data, []byte(`"msg":"serving"`))
}

// ensureRunning records a dead run and starts a new one on the same ports.
func (s *server) ensureRunning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.alive() {
		return
	}
	s.deaths = append(s.deaths, fmt.Sprintf("serve run %d died during the suite: %v\nstderr tail:\n%s",
		s.runs, s.proc.waitErr, tail(s.proc.stderrPath)))
	if err := s.launch(); err != nil {
		s.deaths = append(s.deaths, fmt.Sprintf("restarting serve failed: %v", err))
	}
}

func (s *server) url(p string) string { return "https://" + s.addr + p }

func (s *server) metricsURL(p string) string { return "http://" + s.metrics + p }

// alive reports whether the current run is up.
func (s *server) alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && s.proc.alive()
}

func (p *process) alive() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *process) kill() {
	if p != nil && p.alive() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// stop sends SIGTERM (docs/operations.md "Certificates and signals": finish and exit 0) and reports every death
// during the suite, an abnormal exit, or a sanitizer report on stderr.
func (s *server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	problems := append([]string(nil), s.deaths...)
	if p := s.proc; !p.alive() {
		problems = append(problems, fmt.Sprintf("serve run %d died during the suite: %v", s.runs, p.waitErr))
	} else if err := p.terminate(); err != nil {
		problems = append(problems, err.Error())
	}
	if report := s.sanitizerReport(); report != "" {
		problems = append(problems, "sanitizer/runtime error report on stderr:\n"+report)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n") + "\nlast stderr tail:\n" + tail(s.proc.stderrPath))
	}
	return nil
}

func (p *process) terminate() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.waitErr != nil {
			return fmt.Errorf("serve exited abnormally after SIGTERM: %v (want exit 0)", p.waitErr)
		}
		return nil
	case <-time.After(stopTimeout):
		p.kill()
		return fmt.Errorf("serve did not exit within %v of SIGTERM", stopTimeout)
	}
}

// stderrBytes is the current run's stderr so far.
func (s *server) stderrBytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, _ := os.ReadFile(s.proc.stderrPath)
	return data
}

// sanitizerReport returns the stderr lines of every run that carry a
// sanitizer marker.
func (s *server) sanitizerReport() string {
	var hits []string
	for _, f := range s.logs {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(data), "\n") {
			if hasSanitizerMarker(line) {
				hits = append(hits, filepath.Base(f)+": "+line)
			}
		}
	}
	return strings.Join(hits, "\n")
}

func hasSanitizerMarker(s string) bool {
	for _, m := range sanitizerMarkers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// tail is the last lines of a stderr file, for failure messages.
func tail(file string) string {
	const maxLines = 12
	data, _ := os.ReadFile(file)
	lines := strings.Split(string(bytes.TrimSpace(data)), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// stderrTail is the end of the current run's stderr.
func (s *server) stderrTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return tail(s.proc.stderrPath)
}

// settle is called after a failed request: a crashing server may take a
// moment (core dump) to be reaped, so wait for it before anyone asks.
func (s *server) settle() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	select {
	case <-p.exited:
	case <-time.After(3 * time.Second):
	}
}
