package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exchange sends one request over the shared client and returns the reply
// with its headers (for Allow on a 405).
func (s *server) exchange(t testing.TB, method, p, contentType string, body []byte) (reply, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := newRequest(t, method, s.url(p), contentType, rd)
	resp, err := s.shared().Do(req)
	if err != nil {
		s.settle()
		t.Fatalf("%s %s: %v%s", method, p, err, serverState())
	}
	data := readAll(resp)
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: data}, resp.Header
}

// currentRun is the number of the shared server's current run: it changes
// when the server died and was restarted.
func (s *server) currentRun() int {
	s.ensureRunning()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs
}

// expectNotJSON posts body to the shared server's /mutate and expects a
// 400 saying "not JSON", from the run that was serving before (the body
// did not crash it).
func expectNotJSON(t *testing.T, body []byte) {
	t.Helper()
	run := srv.currentRun()
	rep := srv.post(t, "/mutate", "application/json", body)
	if rep.status != 400 {
		t.Fatalf("expected 400, got %d %q", rep.status, cut(rep.body))
	}
	checkReason(t, rep, "not JSON")
	checkSameRunServing(t, run)
}

// checkSameRunServing: a good review succeeds and the shared server is
// still the run that was serving before the bad input (it did not die and
// get restarted in between).
func checkSameRunServing(t *testing.T, run int) {
	t.Helper()
	if !srv.alive() {
		srv.settle()
		t.Fatalf("the webhook server died after the bad input%s", serverState())
	}
	checkStillServing(t)
	if now := srv.currentRun(); now != run {
		t.Errorf("the webhook server was restarted during the test (run %d -> %d): it died on the bad input", run, now)
	}
}

// checkReason: an error status carries a one-line text/plain reason that
// contains phrase (when given).
func checkReason(t *testing.T, rep reply, phrase string) {
	t.Helper()
	if !strings.HasPrefix(rep.contentType, "text/plain") {
		t.Errorf("%d Content-Type: expected text/plain, got %q", rep.status, rep.contentType)
	}
	reason := strings.TrimRight(string(rep.body), "\n")
	if reason == "" || strings.Contains(reason, "\n") || len(rep.body) > 512 {
		t.Errorf("%d body: expected a one-line reason, got %q", rep.status, cut(rep.body))
	}
	if phrase != "" && !strings.Contains(strings.ToLower(reason), strings.ToLower(phrase)) {
		t.Errorf("%d reason: expected it to contain %q, got %q", rep.status, phrase, reason)
	}
}

// dialRaw is a TLS connection of its own to the shared server (started
// again if it died), with requestTimeout as its deadline.
func (s *server) dialRaw(t testing.TB) *tls.Conn {
	t.Helper()
	s.ensureRunning()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: requestTimeout}, "tcp", s.addr, s.tlsConfig(tls.VersionTLS12, 0))
	if err != nil {
		s.settle()
		t.Fatalf("TLS dial: %v%s", err, serverState())
	}
	_ = conn.SetDeadline(time.Now().Add(requestTimeout))
	return conn
}

// rawRequest sends raw as the raw request bytes over its own TLS connection
// and reads the answer (for requests net/http will not build).
func (s *server) rawRequest(t testing.TB, raw []byte) reply {
	t.Helper()
	conn := s.dialRaw(t)
	defer conn.Close()
	go func() { _, _ = conn.Write(raw) }()
	return readReply(t, conn)
}

// closedWithin reads from conn until the peer closes it (EOF, reset) and
// returns what was read and how long it took; closed is false when the
// deadline passed with the connection still open.
func closedWithin(conn net.Conn, within time.Duration) (data []byte, took time.Duration, closed bool) {
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(within))
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		data = append(data, buf[:n]...)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return data, time.Since(start), false
			}
			return data, time.Since(start), true
		}
	}
}

// raiseNoFile raises the soft RLIMIT_NOFILE to at least n (up to the hard
// limit); servers started afterwards inherit it.
func raiseNoFile(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		lim.Max = n // root may raise the hard limit too
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("setrlimit RLIMIT_NOFILE to %d: %v", n, err)
	}
}

// fileSize is the size of path, -1 when it cannot be read.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return st.Size()
}

// readReply reads one HTTP response from conn.
func readReply(t testing.TB, conn net.Conn) reply {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		srv.settle()
		t.Fatalf("no HTTP response: %v%s", err, serverState())
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: data}
}
