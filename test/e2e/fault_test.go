package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Faults around a running server, each with a server of the test's own:
// its profiles file or certificate broken under load, a SIGKILL and a
// restart on the same ports, and a full disk for its log.

// TestProfilesFileFaultsUnderLoad: the profiles file is deleted, truncated,
// replaced by garbage or emptied while clients keep posting reviews: each
// bad version is logged and rejected, the previous profiles keep serving
// (every review still gets roce-8card's NCCL_IB_HCA), /readyz stays 200, no
// request fails, and a good file written afterwards is picked up.
func TestProfilesFileFaultsUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "profiles.json")
	good := shippedProfiles(t)
	writeInPlace(t, file, good)
	in := startInstance(t, file, "--reload-interval-ms", "200")
	want := shippedHCA(t)
	in.requireHCA(t, want, "at start")
	load := startRotationLoad(t, in, in.caPool, mustMarshal(gpu8Review(t).body()))

	steps := []struct {
		name  string
		apply func()
		log   func(obj) bool
	}{
		{"deleted", func() {
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
		}, msgStarts("cannot read profiles")},
		{"truncated to half", func() { writeByRename(t, file, good[:len(good)/2]) }, msgStarts("profiles rejected")},
		{"truncated in place to 10 bytes", func() { writeInPlace(t, file, good[:10]) }, msgStarts("profiles rejected")},
		{"garbage bytes", func() {
			writeByRename(t, file, append([]byte("\x00\xff\xfegarbage{{{"), bytes.Repeat([]byte{0xde, 0xad}, 4096)...))
		}, msgStarts("profiles rejected")},
		{"empty", func() { writeInPlace(t, file, nil) }, msgStarts("profiles rejected")},
		{"a directory", func() {
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(file, 0o755); err != nil {
				t.Fatal(err)
			}
		}, msgStarts("cannot read profiles")},
	}
	for _, s := range steps {
		mark := in.logMark()
		s.apply()
		in.waitLog(t, mark, 3*time.Second, "rejecting the profiles file "+s.name, s.log)
		in.holdHCA(t, want, 400*time.Millisecond, "profiles file "+s.name)
		if st := in.readyz(t, false); st != http.StatusOK {
			t.Errorf("profiles file %s: /readyz expected 200 (the previous profiles serve), got %d", s.name, st)
		}
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	newer, newHCA := profilesWithHCA(t, "mlx5_2", "mlx5_3")
	since := time.Now()
	writeByRename(t, file, newer)
	in.waitHCA(t, newHCA, since, "a good file after the faults")

	load.expectAllServed(t, "while the profiles file was broken")
}

// TestCertificateFaultsUnderLoad: the certificate or key files are
// overwritten with garbage, emptied, or given a key that does not match,
// while clients keep handshaking: each is logged as rejected, the previous
// certificate keeps being presented, no request fails; a good new pair is
// then taken.
func TestCertificateFaultsUnderLoad(t *testing.T) {
	t.Parallel()
	w := startCertWatch(t, 3, "200")
	in, gens, roots, crt, key, first := w.in, w.gens, w.roots, w.crt, w.key, w.first
	if !bytes.Equal(servedCert(t, in), first) {
		t.Fatalf("the server does not present the first certificate")
	}
	load := startRotationLoad(t, in, roots, mustMarshal(gpu8Review(t).body()))
	read := func(p string) []byte {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	goodCrt, goodKey := read(crt), read(key)
	steps := []struct {
		name  string
		apply func()
	}{
		{"certificate replaced by garbage", func() {
			writeByRename(t, crt, []byte("-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n"))
		}},
		{"certificate replaced by random bytes", func() { writeByRename(t, crt, bytes.Repeat([]byte{0x30, 0x82, 0xff}, 3000)) }},
		{"certificate emptied in place", func() { writeInPlace(t, crt, nil) }},
		{"key replaced by garbage (certificate good)", func() {
			writeByRename(t, crt, goodCrt)
			writeByRename(t, key, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
		}},
		{"key of another certificate", func() { writeByRename(t, key, read(filepath.Join(gens[1], "tls.key"))) }},
		{"certificate of another key", func() {
			writeByRename(t, key, goodKey)
			writeByRename(t, crt, read(filepath.Join(gens[2], "tls.crt")))
		}},
	}
	for _, s := range steps {
		mark := in.logMark()
		t.Logf("step: %s", s.name)
		s.apply()
		in.waitLog(t, mark, 3*time.Second, "rejecting: "+s.name, msgStarts("new certificate rejected"))
		time.Sleep(300 * time.Millisecond)
		if !bytes.Equal(servedCert(t, in), first) {
			t.Errorf("%s: the server no longer presents the previous certificate", s.name)
		}
		if rr := in.review(t, gpu8Review(t)); rr.patch == nil {
			t.Errorf("%s: review on a new connection: expected a patch", s.name)
		}
	}
	// A good new pair: key first (a mismatch for a moment), then the cert.
	mark := in.logMark()
	writeByRename(t, key, read(filepath.Join(gens[1], "tls.key")))
	writeByRename(t, crt, read(filepath.Join(gens[1], "tls.crt")))
	in.waitLog(t, mark, 3*time.Second, "loading the good new pair", msgIs("serving certificate loaded"))
	second := fileCert(t, filepath.Join(gens[1], "tls.crt"))
	deadline := time.Now().Add(3 * time.Second)
	for !bytes.Equal(servedCert(t, in), second) {
		if time.Now().After(deadline) {
			t.Fatalf("the good new pair is not presented 3 s after it was written%s", in.state())
		}
		time.Sleep(50 * time.Millisecond)
	}
	load.expectAllServed(t, "while the certificate files were broken")
}

// TestSIGKILLRestart: the server is killed with SIGKILL under load (no
// drain) and started again on the same ports, twice: it comes back, and
// the next review gets the very same answer as before (the webhook keeps
// no state between requests).
func TestSIGKILLRestart(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath)
	r := gpu8Review(t)
	before := in.review(t, r)
	if before.patch == nil {
		t.Fatalf("expected a patch before the kill")
	}
	body := mustMarshal(r.body())
	var oldLogs []string
	for round := 1; round <= 2; round++ {
		load := startRotationLoad(t, in, in.caPool, body)
		load.waitRunning(t, 10, 30*time.Second)
		if err := in.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if _, err := in.waitExit(5 * time.Second); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		load.finish()
		if ws, ok := in.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: expected death by SIGKILL, got %v", round, in.waitErr)
		}
		oldLogs = append(oldLogs, in.stderrPath)
		out, err := os.Create(filepath.Join(in.dir, "serve-restart-"+string(rune('0'+round))+".stderr"))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := in.spawnOn(out, out.Name()); err != nil {
			t.Fatalf("round %d: restart on the same ports %s and %s: %v", round, in.addr, in.metrics, err)
		}
		waitStatus(t, readyTimeout, "/readyz after the restart", http.StatusOK, func() int { return in.readyz(t, true) })
		in.client.CloseIdleConnections() // the killed process's connection is gone
		after := in.review(t, r)
		if !samePatch(before.patch, after.patch) {
			t.Errorf("round %d: the answer after the restart differs:\nbefore %s\nafter  %s", round, before.patch, after.patch)
		}
		t.Logf("round %d: back and answering %v after the restart", round, time.Since(start).Round(time.Millisecond))
	}
	for _, f := range oldLogs {
		data, _ := os.ReadFile(f)
		if report := sanitizerBlock(strings.Split(string(data), "\n")); report != "" {
			t.Errorf("sanitizer report before the kill (%s):\n%s", f, report)
		}
	}
}

// logDiskReviews posts n reviews and checks each answer: the 8-GPU review
// gets exactly want (the patch made before the disk filled), a bad body
// still gets its 400.
func logDiskReviews(t *testing.T, in *instance, n int, r reviewRequest, want []byte) {
	t.Helper()
	for i := 0; i < n; i++ {
		if i%10 == 9 {
			rep := in.do(t, http.MethodPost, in.url("/mutate"), []byte("not json"))
			if rep.status != http.StatusBadRequest {
				t.Fatalf("bad body %d with the log disk full: expected 400, got %d %q", i, rep.status, cut(rep.body))
			}
			continue
		}
		r.uid = newUID()
		rr := in.review(t, r)
		if !samePatch(rr.patch, want) {
			t.Fatalf("review %d with the log disk full: patch differs:\nwant %s\ngot  %s", i, want, rr.patch)
		}
	}
	if rep := in.do(t, http.MethodGet, in.metricsURL("/metrics"), nil); rep.status != http.StatusOK ||
		!bytes.Contains(rep.body, []byte("rdma_webhook_admissions_total")) {
		t.Errorf("/metrics with the log disk full: expected 200 with the admissions counter, got %d %q", rep.status, cut(rep.body))
	}
}

// TestLogDiskFull: the server's stderr is a file on a 64 KiB tmpfs that is
// then filled up: reviews keep being answered correctly while every log
// write fails, and once space is freed the log gets complete lines again.
func TestLogDiskFull(t *testing.T) {
	t.Parallel()
	mnt := mountTmpfs(t, "64k")
	logFile := filepath.Join(mnt, "serve.stderr")
	sanDir := t.TempDir()
	in := startOwn(t, instanceOptions{profiles: profilesPath, args: []string{"--log-level", "debug"},
		openStderr: func() (*os.File, error) { return os.Create(logFile) }, readPath: logFile, env: sanitizerLogEnv(sanDir)})
	t.Cleanup(func() { sanitizerFiles(t, sanDir) })
	r := gpu8Review(t)
	want := in.review(t, r).patch
	if want == nil {
		t.Fatalf("expected a patch before the disk filled")
	}
	filler := filepath.Join(mnt, "filler")
	if err := fillFile(filler); err == nil || !strings.Contains(err.Error(), "no space") {
		t.Fatalf("filling the tmpfs: expected ENOSPC, got %v", err)
	}
	// The log file's last page may still take a few lines: run until its
	// size stops growing, then as many again with every write failing.
	logDiskReviews(t, in, 100, r, want)
	full := fileSize(logFile)
	logDiskReviews(t, in, 200, r, want)
	if got := fileSize(logFile); got != full {
		t.Errorf("the log grew from %d to %d bytes on a full file system?", full, got)
	}
	if !in.alive() {
		t.Fatalf("the server died with its log disk full%s", in.state())
	}
	// Free the space: a new admission's log line must appear, whole.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r.uid = newUID()
	in.review(t, r)
	deadline := time.Now().Add(3 * time.Second)
	for {
		for _, line := range in.logText() {
			if !strings.Contains(line, r.uid) {
				continue
			}
			if o, err := decodeObject([]byte(line)); err != nil || o["uid"] != r.uid {
				t.Fatalf("the first admission logged after space was freed is not a JSON line of its own "+
					"(a line cut by the full disk is left without its newline and the next one is glued to it): %v\n%s", err, line)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line for the admission %s within 3 s of space being freed; stderr tail:\n%s", r.uid, tail(logFile))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestLogToDevFull: the server's stderr is /dev/full (every write fails
// with ENOSPC from the start): it starts, serves reviews correctly and
// shuts down cleanly.
func TestLogToDevFull(t *testing.T) {
	t.Parallel()
	sanDir := t.TempDir()
	stand := filepath.Join(sanDir, "stderr-stand-in")
	if err := os.WriteFile(stand, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in := startOwn(t, instanceOptions{profiles: profilesPath, args: []string{"--log-level", "debug"},
		openStderr: func() (*os.File, error) { return os.OpenFile("/dev/full", os.O_WRONLY, 0) },
		readPath:   stand, env: sanitizerLogEnv(sanDir)})
	t.Cleanup(func() { sanitizerFiles(t, sanDir) })
	waitStatus(t, readyTimeout, "/readyz with stderr on /dev/full", http.StatusOK, func() int { return in.readyz(t, false) })
	r := gpu8Review(t)
	want := in.review(t, r).patch
	if want == nil {
		t.Fatalf("expected a patch with stderr on /dev/full")
	}
	logDiskReviews(t, in, 200, r, want)
	if !in.alive() {
		t.Fatalf("the server died with stderr on /dev/full%s", in.state())
	}
}

// TestMismatchedCertificateRace: the key file is rewritten (same key) and
// right after it the certificate file is replaced by one of another key,
// twenty times, while clients keep making new handshakes. The pair on disk
// is a mismatch every time, so the server must keep presenting the
// previous certificate with its own key: no handshake may fail, and after
// each round the certificate served is still the first one.
func TestMismatchedCertificateRace(t *testing.T) {
	t.Parallel()
	w := startCertWatch(t, 2, "100")
	in, gens, roots, crt, key, first := w.in, w.gens, w.roots, w.crt, w.key, w.first
	goodCrt, goodKey, otherCrt := mustRead(t, crt), mustRead(t, key), mustRead(t, filepath.Join(gens[1], "tls.crt"))
	load := startRotationLoad(t, in, roots, mustMarshal(gpu8Review(t).body()))
	for round := 1; round <= 8; round++ {
		mark := in.logMark()
		writeByRename(t, key, goodKey)
		writeByRename(t, crt, otherCrt)
		in.waitLog(t, mark, 3*time.Second, "rejecting the mismatched pair", msgStarts("new certificate rejected"))
		time.Sleep(150 * time.Millisecond)
		served := servedCert(t, in)
		if !bytes.Equal(served, first) {
			t.Fatalf("round %d: with a mismatched pair on disk the server no longer presents its previous certificate\n"+
				"the server's log, admissions left out:\n%s", round, in.logWithoutAdmissions())
		}
		mark = in.logMark()
		writeByRename(t, crt, goodCrt)
		in.waitLog(t, mark, 3*time.Second, "loading the good pair again", msgIs("serving certificate loaded"))
	}
	ok, failed, firstErr := load.finish()
	t.Logf("%d reviews during 8 rounds", ok)
	if failed != 0 {
		t.Errorf("%d of %d reviews failed while a mismatched certificate was on disk (first: %s)\nthe server's log, admissions left out:\n%s",
			failed, ok+failed, firstErr, in.logWithoutAdmissions())
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestLogReaderStalled: stderr is a pipe that nobody reads for a while. With
// a write per line, the request threads would block in write(2) once the
// pipe was full; with the log queue, every review is answered, the lines the
// queue cannot hold are dropped and counted on /metrics, and once the pipe
// is read the log is whole JSON lines, with a warning that counts the drop.
func TestLogReaderStalled(t *testing.T) {
	t.Parallel()
	sanDir := t.TempDir()
	stand := filepath.Join(sanDir, "stderr-stand-in")
	if err := os.WriteFile(stand, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var readEnd *os.File
	openPipe := func() (*os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			if readEnd != nil {
				readEnd.Close()
			}
			readEnd = r
		}
		return w, err
	}
	in := startOwn(t, instanceOptions{profiles: profilesPath, openStderr: openPipe, readPath: stand, env: sanitizerLogEnv(sanDir)})
	t.Cleanup(func() { sanitizerFiles(t, sanDir) })
	defer readEnd.Close()

	// The pipe (64 KiB) and the queue (two 256 KiB buffers) hold about 2,000
	// admission lines; 3,000 reviews overflow them.
	r := gpu8Review(t)
	want := in.review(t, r).patch
	if want == nil {
		t.Fatalf("expected a patch (control)")
	}
	const reviews = 3000
	for i := 0; i < reviews; i++ {
		r.uid = newUID()
		if rr := in.review(t, r); !samePatch(rr.patch, want) {
			t.Fatalf("review %d with stderr unread: patch differs:\nwant %s\ngot  %s", i, want, rr.patch)
		}
	}
	dropped := atoi(t, in.metric(t, "rdma_webhook_log_lines_dropped_total"))
	if dropped <= 0 || dropped >= reviews {
		t.Fatalf("rdma_webhook_log_lines_dropped_total after %d reviews with stderr unread: expected 0 < n < %d, got %d",
			reviews, reviews, dropped)
	}

	// Read again; once the drop warning is out, the queue has caught up and
	// the shutdown's own lines have room.
	var (
		mu  sync.Mutex
		log bytes.Buffer
	)
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := readEnd.Read(buf)
			mu.Lock()
			log.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				close(done)
				return
			}
		}
	}()
	logged := func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
	waitFor(t, 10*time.Second, "the drop warning after reading stderr again",
		func() bool { return strings.Contains(logged(), "log lines dropped") })
	if err := in.terminate(stopTimeout); err != nil {
		t.Fatalf("stopping after the reader came back: %v", err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("stderr was not closed within 10 s of the exit")
	}
	if !strings.Contains(logged(), `"shutting down"`) {
		t.Errorf("the shutdown's log line is missing after the queue caught up")
	}
	admissions, warned := 0, 0
	for _, line := range strings.Split(strings.TrimSuffix(logged(), "\n"), "\n") {
		o, err := decodeObject([]byte(line))
		if err != nil {
			t.Fatalf("stderr line is not a JSON object (a line was cut or glued): %v\n%q", err, line)
		}
		switch m, _ := pathStr(o, "msg"); m {
		case "admission":
			admissions++
		case "log lines dropped: stderr is not read fast enough":
			if n, _ := scalarString(o["dropped"]); n != "" && n != "0" {
				warned += atoi(t, n)
			}
		}
	}
	if admissions+dropped != reviews+1 {
		t.Errorf("admission lines written (%d) plus dropped (%d) != reviews (%d)", admissions, dropped, reviews+1)
	}
	if warned != dropped {
		t.Errorf("the drop warnings count %d lines, /metrics %d", warned, dropped)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}
