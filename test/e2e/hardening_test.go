package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Clients that hold the server's resources (issue 13): slow clients and the
// connection slots, declared bodies and memory, certificate reloads and
// memory, bodies whose end cannot be found.

// TestSlowClientsCannotHoldEveryConnection: hundreds of clients that hold a
// connection without finishing a request (stuck in the TLS handshake, in
// the headers, in the body; reconnecting when cut, as an attacker would),
// and a client that sends its review at once is still answered within a
// second, each time. With the default flags they are a few hundred among
// 4096 slots; with --max-connections 64 they fill every slot, and a new
// connection displaces the one that has waited longest (the issue: 70 such
// clients shut a 64-slot server out; 4,200 did it to the default 4096).
func TestSlowClientsCannotHoldEveryConnection(t *testing.T) {
	// Not parallel: "answered within a second" next to hundreds of slow
	// connections is a timing bound that other tests' CPU use would break.
	cases := []struct {
		name      string
		args      []string
		crowd     int
		tlsCrowd  int // of which TLS (in the headers and in the body)
		reconnect time.Duration
		full      bool // the crowd holds every slot
	}{
		{"default flags", nil, 400, 100, 4 * time.Second, false},
		{"--max-connections 64", []string{"--max-connections", "64", "--threads", "1"}, 300, 100, 4 * time.Second, true},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			raiseNoFile(t, uint64(2*c.crowd+2048))
			in := startInstance(t, profilesPath, c.args...)
			kinds := slowKinds(2 * time.Second)
			crowd := make([]drip, 0, c.crowd)
			for i := 0; i < c.tlsCrowd; i++ {
				crowd = append(crowd, kinds[1+i%2])
			}
			for len(crowd) < c.crowd {
				crowd = append(crowd, kinds[0])
			}
			cr := startDripCrowd(in, len(crowd), crowd, c.reconnect)
			defer cr.finish()
			// The burst of first connects is over, and when the crowd is
			// larger than the limit, the slots were full: connections are
			// being displaced.
			displaced := `rdma_webhook_connections_closed_total{reason="displaced"}`
			in.waitMetric(t, displaced, 30*time.Second, "slow clients connected", func(v int64) bool {
				return (v > 0 || !c.full) && atomic.LoadInt64(&cr.up) == int64(c.crowd)
			})
			before := in.metricInt(t, displaced)
			body := goodReviewBody()
			var worst time.Duration
			served := 0
			// Within a second, as the issue asks; the ASan build is some
			// three times slower at everything, so it gets three.
			within := time.Second
			if sanitizedBinary(t) {
				within = 3 * time.Second
			}
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); served++ {
				status, took, err := in.timedReview(body, within)
				if err != nil || status != http.StatusOK {
					t.Fatalf("review %d with %d slow clients (%s): status %d after %v, %v%s",
						served, c.crowd, c.name, status, took.Round(time.Millisecond), err, in.state())
				}
				if took > worst {
					worst = took
				}
			}
			moved := in.metricInt(t, displaced) - before
			t.Logf("%d reviews served, slowest %v; %d slow connections displaced meanwhile; %d connect errors (first: %v)",
				served, worst.Round(time.Millisecond), moved, cr.errs, cr.firstErr.Load())
			if c.full && moved == 0 {
				t.Errorf("%d reviews served while the slow clients held every slot, and no connection displaced", served)
			}
		})
	}
}

// TestSlowClientDeadlines: whatever trickle of bytes keeps libmicrohttpd's
// idle timeout from firing, a connection must finish its TLS handshake and
// headers within --header-timeout of the accept, its body within
// --body-timeout of the headers, and, kept alive, its next request's
// headers within --connection-timeout of the previous response. A client
// that sends reviews at once on one connection is never cut.
func TestSlowClientDeadlines(t *testing.T) {
	// Not parallel: each cut is checked against its deadline to within
	// -200 ms/+1.5 s, which a busy machine would miss.
	const header, body, idle = 2 * time.Second, 2 * time.Second, 3 * time.Second
	in := startInstance(t, profilesPath, "--header-timeout", "2", "--body-timeout", "2", "--connection-timeout", "3")
	review := goodReviewBody()
	every := 300 * time.Millisecond // well inside the idle timeout
	kinds := slowKinds(every)
	afterReview := drip{"TLS, a review answered, then the next headers byte by byte", true,
		postHead(len(review)) + string(review), "POST /mutate HTTP/1.1\r\nHost: localhost\r\nX-Slow: ssssssssssssssss", every}
	cases := []struct {
		d        drip
		deadline time.Duration
	}{{kinds[0], header}, {kinds[1], header}, {kinds[2], body}, {afterReview, idle}}
	type result struct {
		name     string
		deadline time.Duration
		after    time.Duration
		err      error
	}
	results := make(chan result, 64)
	var wg sync.WaitGroup
	for _, c := range cases {
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(d drip, deadline time.Duration) {
				defer wg.Done()
				if d.name == afterReview.name {
					after, err := dripAfterReview(in, d)
					results <- result{d.name, deadline, after, err}
					return
				}
				after, err := d.run(in, nil, deadline+4*time.Second, nil)
				results <- result{d.name, deadline, after, err}
			}(c.d, c.deadline)
		}
	}
	// Meanwhile one connection sends a review every 300 ms for longer than
	// any deadline: it is never cut.
	keep, err := in.dialTLS(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	k := keepAlive{keep, bufio.NewReader(keep)}
	for end := time.Now().Add(idle + 2*time.Second); time.Now().Before(end); time.Sleep(every) {
		_ = keep.SetDeadline(time.Now().Add(5 * time.Second))
		if err := k.post(review); err != nil {
			t.Fatalf("a kept-alive connection sending a review every %v was cut: %v%s", every, err, in.state())
		}
	}
	wg.Wait()
	close(results)
	// The deadline thread looks every 100 ms; the rest is scheduling on a
	// loaded machine, more of it under ASan.
	late := 1500 * time.Millisecond
	if sanitizedBinary(t) {
		late = 3 * time.Second
	}
	for r := range results {
		switch {
		case r.err != nil:
			t.Errorf("%s: %v", r.name, r.err)
		case r.after < 0:
			t.Errorf("%s: still open %v after its deadline of %v", r.name, 4*time.Second, r.deadline)
		case r.after < r.deadline-200*time.Millisecond || r.after > r.deadline+late:
			t.Errorf("%s: cut after %v, want about %v", r.name, r.after.Round(time.Millisecond), r.deadline)
		}
	}
	if n := in.metricInt(t, `rdma_webhook_connections_closed_total{reason="header-timeout"}`); n < 24 {
		t.Errorf("header-timeout closes counted: %d, want at least 24", n)
	}
	if n := in.metricInt(t, `rdma_webhook_connections_closed_total{reason="body-timeout"}`); n < 8 {
		t.Errorf("body-timeout closes counted: %d, want at least 8", n)
	}
}

// dripAfterReview sends one whole review, reads its answer, then trickles
// the next request; it says how long after the answer the server cut it.
func dripAfterReview(in *instance, d drip) (time.Duration, error) {
	c, err := in.dialTLS(10 * time.Second)
	if err != nil {
		return -1, err
	}
	defer c.Close()
	br := bufio.NewReader(c)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, d.head); err != nil {
		return -1, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return -1, fmt.Errorf("the first review: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return -1, fmt.Errorf("the first review: status %d", resp.StatusCode)
	}
	_ = c.SetDeadline(time.Time{})
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, br)
		closed <- time.Since(start)
	}()
	tick := time.NewTicker(d.every)
	defer tick.Stop()
	end := time.After(8 * time.Second)
	for i := 0; ; i++ {
		select {
		case after := <-closed:
			return after, nil
		case <-end:
			return -1, nil
		case <-tick.C:
			_, _ = io.WriteString(c, d.trickle[i%len(d.trickle):i%len(d.trickle)+1])
		}
	}
}

// TestUnsupportedTransferEncoding: a body whose end libmicrohttpd cannot
// find (a Transfer-Encoding other than exactly chunked) used to hang until
// the connection timeout with no status. Each gets its status at once and
// the connection is closed; plain chunked is still served.
func TestUnsupportedTransferEncoding(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath)
	review := string(goodReviewBody())
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(review), review)
	head := "POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
	cases := []struct {
		name, fields, body string
		status             int
		phrase             string
	}{
		{"gzip, chunked", "Transfer-Encoding: gzip, chunked\r\n", "5\r\nhello\r\n", 501, "only Transfer-Encoding: chunked"},
		{"x-custom, chunked", "Transfer-Encoding: x-custom, chunked\r\n", "", 501, "only Transfer-Encoding: chunked"},
		{"chunked with a parameter", "Transfer-Encoding: chunked;ext=1\r\n", "", 501, "only Transfer-Encoding: chunked"},
		{"gzip and chunked in two fields", "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", "", 501, "only Transfer-Encoding: chunked"},
		{"identity", "Transfer-Encoding: identity\r\n", review, 400, "must end in chunked"},
		{"gzip", "Transfer-Encoding: gzip\r\n", review, 400, "must end in chunked"},
		{"chunked, gzip", "Transfer-Encoding: chunked, gzip\r\n", "", 400, "must end in chunked"},
		{"chunked, chunked", "Transfer-Encoding: chunked, chunked\r\n", "", 400, "must end in chunked"},
		{"chunked in two fields", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "", 400, "must end in chunked"},
		{"empty", "Transfer-Encoding: \r\n", review, 400, "malformed"},
		{"not a token", "Transfer-Encoding: chu\"nked\r\n", "", 400, "malformed"},
		{"chunked and Content-Length", fmt.Sprintf("Transfer-Encoding: chunked\r\nContent-Length: %d\r\n", len(chunked)), chunked, 400, "not both"},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			rep, _, closed := in.rawExchange(t, head+c.fields+"\r\n"+c.body, 3*time.Second, 2*time.Second)
			if rep.status != c.status {
				t.Fatalf("expected %d, got %d %q", c.status, rep.status, cut(rep.body))
			}
			checkReason(t, rep, c.phrase)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("answered after %v, want at once", took.Round(time.Millisecond))
			}
			if !closed {
				t.Errorf("the connection stayed open after the %d", c.status)
			}
		})
	}
	t.Run("on GET /healthz too", func(t *testing.T) {
		rep, _, _ := in.rawExchange(t, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
			3*time.Second, 2*time.Second)
		if rep.status != 501 {
			t.Errorf("expected 501, got %d %q", rep.status, cut(rep.body))
		}
	})
	t.Run("Chunked, any case, is served", func(t *testing.T) {
		rep, _, _ := in.rawExchange(t, head+"Transfer-Encoding: Chunked\r\n\r\n"+chunked, 10*time.Second, time.Millisecond)
		if rep.status != http.StatusOK || !strings.Contains(string(rep.body), `"patch"`) {
			t.Errorf("expected 200 with a patch, got %d %q", rep.status, cut(rep.body))
		}
	})
}

// bodyHolder is one client of TestRequestBodyBudget: it declares a body,
// sends all of it but the last KiB, and holds.
type bodyHolder struct {
	conn   net.Conn
	body   []byte
	sent   chan struct{} // closed once the part is written (or writing failed)
	resp   chan holderReply
	failed error
}

type holderReply struct {
	status     int
	retryAfter string
	err        error
}

func startBodyHolder(in *instance, body []byte, hold int) *bodyHolder {
	h := &bodyHolder{body: body, sent: make(chan struct{}), resp: make(chan holderReply, 1)}
	go func() {
		defer close(h.sent)
		c, err := in.dialTLS(20 * time.Second)
		if err != nil {
			h.failed = err
			h.resp <- holderReply{err: err}
			return
		}
		h.conn = c
		go func() { // the answer may come early: 503 before the body
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				h.resp <- holderReply{err: err}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			h.resp <- holderReply{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
		}()
		if _, err := io.WriteString(c, postHead(len(body))); err != nil {
			return
		}
		_, _ = c.Write(body[:len(body)-hold])
	}()
	return h
}

// TestRequestBodyBudget: 40 clients each declare an 8 MiB review, send all
// but its last KiB and hold. Memory for bodies grows with the bytes that
// arrive and stays within --body-budget-bytes (the default, 32 MiB): the
// server's RSS stays under its idle RSS plus the budget plus what 40 TLS
// connections take, where it used to reserve every declared body (11 ->
// 333 MiB). A normal review is still served meanwhile; the bodies that did
// not fit get 503 with Retry-After, the others are served.
func TestRequestBodyBudget(t *testing.T) {
	t.Parallel()
	const holders, budget = 40, 32 << 20
	// The bodies are held open for longer than the default --body-timeout
	// might allow under ASan.
	in := startInstance(t, profilesPath, "--body-timeout", "60")
	idle := in.rssKiB(t)
	body := paddedReview(8<<20 - 8<<10)
	hs := make([]*bodyHolder, holders)
	for i := range hs {
		hs[i] = startBodyHolder(in, body, 1024)
	}
	defer func() {
		for _, h := range hs {
			if h.conn != nil {
				h.conn.Close()
			}
		}
	}()
	for _, h := range hs {
		<-h.sent
		if h.failed != nil {
			t.Fatalf("a holder could not connect: %v", h.failed)
		}
	}
	// Every body was either refused or has grown to its full size.
	declared := int64(len(body))
	var held int64
	in.waitMetric(t, "rdma_webhook_request_body_refused_total", 30*time.Second, "every body refused or held whole",
		func(refused int64) bool {
			held = in.metricInt(t, "rdma_webhook_request_body_bytes") / declared
			return refused+held >= holders
		})
	rss := in.rssKiB(t)
	bound := idle + budget/1024 + holders*256 + 16<<10
	t.Logf("RSS idle %d KiB, with %d bodies of %d bytes held open %d KiB (bound %d KiB); %d held whole",
		idle, holders, declared, rss, bound, held)
	if sanitizedBinary(t) {
		t.Logf("ASan build: its allocator's RSS says nothing about the server's; not checked")
	} else if rss > bound {
		t.Errorf("RSS %d KiB with %d held bodies, over idle %d KiB + the %d MiB budget + 256 KiB a connection + 16 MiB",
			rss, holders, idle, budget>>20)
	}
	// A body grows only while as much again stays free (bodybuf.h).
	if held < 1 || (held+1)*declared > budget {
		t.Errorf("%d bodies of %d bytes held at once in a budget of %d: want at least one, and room for one more",
			held, declared, budget)
	}
	if status, took, err := in.timedReview(goodReviewBody(), 2*time.Second); err != nil || status != http.StatusOK {
		t.Fatalf("a normal review beside the held bodies: status %d after %v, %v%s", status, took, err, in.state())
	}
	// The rest of each body: the held ones are served, the refused get 503.
	counts := map[int]int{}
	for _, h := range hs {
		_, _ = h.conn.Write(h.body[len(h.body)-1024:])
	}
	for i, h := range hs {
		select {
		case r := <-h.resp:
			switch {
			case r.err != nil:
				t.Errorf("holder %d: no answer: %v", i, r.err)
			case r.status == http.StatusServiceUnavailable && r.retryAfter == "":
				t.Errorf("holder %d: 503 without Retry-After", i)
			}
			counts[r.status]++
		case <-time.After(20 * time.Second):
			t.Fatalf("holder %d: no answer 20 s after its body was complete", i)
		}
	}
	t.Logf("answers: %v", counts)
	if counts[http.StatusOK] != int(held) || counts[http.StatusServiceUnavailable] != holders-int(held) {
		t.Errorf("answers %v: want %d x 200 (the bodies held) and %d x 503", counts, held, holders-int(held))
	}
}

// TestRequestBodyOutOfMemory: running out of memory while a body arrives is
// 500 "out of memory", not 413 (which says the body is over
// --max-body-bytes). The server's writable memory (RLIMIT_DATA, which also
// covers the arenas glibc reserved at start) is limited while one 8 MiB
// review arrives; the server then serves again.
func TestRequestBodyOutOfMemory(t *testing.T) {
	t.Parallel()
	if sanitizedBinary(t) {
		t.Skip("ASan's allocator aborts rather than fail, and maps terabytes of shadow")
	}
	in := startInstance(t, profilesPath)
	pid := in.cmd.Process.Pid
	var old syscall.Rlimit
	if err := prlimit(pid, syscall.RLIMIT_DATA, nil, &old); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	// Room for the connection and the first megabytes of the body, not for
	// the whole of it.
	tight := syscall.Rlimit{Cur: uint64(procStatusKiB(t, pid, "VmData")+3<<10) << 10, Max: old.Max}
	if err := prlimit(pid, syscall.RLIMIT_DATA, &tight, nil); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	body := paddedReview(8<<20 - 8<<10)
	rep, _, _ := in.rawExchange(t, postHead(len(body))+string(body), 20*time.Second, time.Millisecond)
	if err := prlimit(pid, syscall.RLIMIT_DATA, &old, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	if rep.status != http.StatusInternalServerError {
		t.Fatalf("an 8 MiB review without memory for it: expected 500, got %d %q", rep.status, cut(rep.body))
	}
	checkReason(t, rep, "out of memory")
	if rr := in.review(t, gpu8Review(t)); rr.patch == nil {
		t.Errorf("review after the memory came back: expected a patch")
	}
}

func prlimit(pid int, resource int, set, get *syscall.Rlimit) error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(resource),
		uintptr(unsafe.Pointer(set)), uintptr(unsafe.Pointer(get)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// TestCertificateReloadOnlyOnChange: SIGHUPs and touches of the files load
// no new pair when the bytes are those serving (the loads counter stays,
// memory does not grow: it grew 3.8 KB a reload), a real rotation still
// loads, and the pairs a rotation replaces are freed once no connection
// uses them, while a connection made before the rotations keeps working.
func TestCertificateReloadOnlyOnChange(t *testing.T) {
	t.Parallel()
	asan := sanitizedBinary(t)
	rotations, storm := 1000, 2000
	if asan {
		rotations = 200 // each costs a certificate check, much slower under ASan
	}
	pki := newSameKeyPKI(t, 3)
	dir := t.TempDir()
	crt, key := pki.write(t, dir, 0)
	// The first connection idles through the whole test, which can take
	// longer than the default 30 s idle timeout on a loaded machine.
	in := startOwn(t, instanceOptions{profiles: profilesPath, roots: pki.roots,
		args: []string{"--tls-cert-file", crt, "--tls-private-key-file", key, "--connection-timeout", "600"}})
	const loads = "rdma_webhook_certificate_loads_total"
	old, err := in.dialTLS(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	kept := keepAlive{old, bufio.NewReader(old)}
	review := goodReviewBody()
	if err := kept.post(review); err != nil {
		t.Fatalf("review on the first connection: %v", err)
	}
	sighups := &logCounter{path: in.stderrPath, needle: []byte(`"SIGHUP: reloading profiles and certificate"`)}
	certLines := &logCounter{path: in.stderrPath, needle: []byte(`"serving certificate loaded"`)}
	hup := func(n int) {
		want := sighups.count(t) + n
		deadline := time.Now().Add(60 * time.Second)
		for sighups.count(t) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d SIGHUPs handled after 60 s%s", sighups.count(t), want, in.state())
			}
			for i := 0; i < 50; i++ {
				in.signal(syscall.SIGHUP)
				time.Sleep(time.Millisecond)
			}
		}
	}
	hup(100) // allocator caches warm
	before := in.rssKiB(t)
	hup(storm)
	touched := certLines.count(t)
	now := time.Now()
	for i := 0; i < storm; i++ {
		stamp := now.Add(time.Duration(i) * time.Millisecond)
		_ = os.Chtimes(crt, stamp, stamp)
		_ = os.Chtimes(key, stamp, stamp)
		time.Sleep(200 * time.Microsecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for certLines.count(t) < touched+100 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := certLines.count(t) - touched; n < 100 {
		t.Errorf("only %d reloads after %d touches of the files", n, storm)
	}
	after := in.rssKiB(t)
	if n := in.metricInt(t, loads); n != 1 {
		t.Fatalf("%s is %d after %d SIGHUPs and %d touches of unchanged files, want 1", loads, n, storm, storm)
	}
	t.Logf("RSS %d KiB before and %d KiB after %d SIGHUPs and %d touches", before, after, storm, storm)
	if !asan && after-before > 1024 {
		t.Errorf("RSS grew %d KiB over %d SIGHUPs and %d touches of unchanged files", after-before, storm, storm)
	}
	// Real rotations, between the second and third certificate: each loads,
	// and the pairs replaced are freed.
	for i := 1; i <= rotations; i++ {
		writeByRename(t, crt, pki.certs[1+i%2])
		in.waitMetric(t, loads, 10*time.Second, fmt.Sprintf("rotation %d", i), func(v int64) bool { return v == int64(1+i) })
	}
	rotated := in.rssKiB(t)
	t.Logf("RSS %d KiB after %d rotations", rotated, rotations)
	if !asan && rotated-after > 1536 {
		t.Errorf("RSS grew %d KiB over %d rotations: replaced pairs are kept", rotated-after, rotations)
	}
	if got, want := in.servedSerialOf(t), pki.serial[1+rotations%2]; got != want {
		t.Errorf("a new connection is served certificate %s, want the newest, %s", got, want)
	}
	// The first connection's pair was replaced 1,000 times over; it is
	// still that connection's.
	_ = old.SetDeadline(time.Now().Add(10 * time.Second))
	if err := kept.post(review); err != nil {
		t.Errorf("review on the connection made before the rotations: %v", err)
	}
}
