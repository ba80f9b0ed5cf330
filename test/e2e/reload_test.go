package e2e

// Profile snapshot swapping and signals of `serve --profiles FILE`
// (docs/profiles.md "Where the profiles are read from", docs/reference.md "serve"). Every test runs
// its own server (startInstance): own directory, ports and flags.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// TestReloadConfigMapSwap: a kubelet-style ConfigMap volume; the atomic
// "..data" swap is picked up through inotify within 2 s, twice (the second
// after the kubelet removed the first directory).
func TestReloadConfigMapSwap(t *testing.T) {
	t.Parallel()
	vol := newConfigMapVolume(t, "profiles.json", shippedProfiles(t))
	in := startInstance(t, vol.path(), "--reload-interval-ms", bigInterval)
	in.waitLog(t, 0, pickUpWithin, `"profiles loaded" generation 1`, msgIs("profiles loaded", "generation", "1"))
	in.requireHCA(t, shippedHCA(t), "before the swap")

	for gen, hca := range [][]string{{"mlx5_10", "mlx5_11"}, {"mlx5_20"}} {
		gen += 2
		doc, want := profilesWithHCA(t, hca...)
		mark := in.logMark()
		changed := time.Now()
		vol.update(t, doc)
		took := in.waitHCA(t, want, changed, fmt.Sprintf("after ..data swap %d", gen-1))
		t.Logf("swap %d served after %v", gen-1, took.Round(time.Millisecond))
		in.waitLog(t, mark, pickUpWithin, fmt.Sprintf(`"profiles loaded" generation %d`, gen),
			msgIs("profiles loaded", "generation", fmt.Sprint(gen)))
		if got := in.metric(t, "rdma_webhook_profiles_generation"); got != fmt.Sprint(gen) {
			t.Errorf("rdma_webhook_profiles_generation: expected %d, got %q", gen, got)
		}
	}
}

// TestReloadPlainFileRewrite: a plain file replaced by rename, then
// overwritten in place (same inode); each version is served within 2 s.
func TestReloadPlainFileRewrite(t *testing.T) {
	t.Parallel()
	in, file := startOnShippedCopy(t, bigInterval)

	steps := []struct {
		name  string
		write func(testing.TB, string, []byte)
		hca   []string
	}{
		{"write temp + rename", writeByRename, []string{"mlx5_30", "mlx5_31"}},
		{"overwrite in place", writeInPlace, []string{"mlx5_40", "mlx5_41", "mlx5_42"}},
		// Same length as the previous version: only the mtime tells.
		{"overwrite in place, same size", writeInPlace, []string{"mlx5_50", "mlx5_51", "mlx5_52"}},
	}
	for _, s := range steps {
		doc, want := profilesWithHCA(t, s.hca...)
		mark := in.logMark()
		changed := time.Now()
		s.write(t, file, doc)
		took := in.waitHCA(t, want, changed, s.name)
		t.Logf("%s: served after %v", s.name, took.Round(time.Millisecond))
		in.waitLog(t, mark, pickUpWithin, `"profiles loaded" after `+s.name, msgIs("profiles loaded"))
	}
}

// TestReloadIntervalFallback: the re-check every --reload-interval-ms
// alone finds a change. The profiles path is a symlink into another
// directory and the target is rewritten in place, which makes no inotify
// event in the watched directory, so only the timer can see it.
func TestReloadIntervalFallback(t *testing.T) {
	t.Parallel()
	target, link := linkedProfiles(t)
	in := startInstance(t, link, "--reload-interval-ms", "200")
	in.requireHCA(t, shippedHCA(t), "at start")
	for _, hca := range [][]string{{"mlx5_60"}, {"mlx5_70", "mlx5_71"}} {
		doc, want := profilesWithHCA(t, hca...)
		changed := time.Now()
		writeInPlace(t, target, doc)
		took := in.waitHCA(t, want, changed, "in-place rewrite seen by the 200 ms re-check")
		t.Logf("served after %v", took.Round(time.Millisecond))
	}
}

// TestReloadRejectsBadVersions: invalid JSON, then JSON that fails
// validation: each is logged ("profiles rejected", and a "profiles problem"
// naming the field) while the previous version keeps serving; then a
// valid version is picked up.
func TestReloadRejectsBadVersions(t *testing.T) {
	t.Parallel()
	in, file := startOnShippedCopy(t, bigInterval)
	old := shippedHCA(t)

	t.Run("invalid JSON", func(t *testing.T) {
		mark := in.logMark()
		writeByRename(t, file, []byte(`{"profiles": [{"name": "roce-8card", `))
		line, _ := in.waitLog(t, mark, pickUpWithin, `"profiles rejected"`, msgStarts("profiles rejected"))
		if line["level"] != "error" {
			t.Errorf("rejection line: expected level error, got %v (%s)", line["level"], compact(line))
		}
		in.holdHCA(t, old, time.Second, "invalid JSON on disk")
		if st := in.readyz(t, false); st != http.StatusOK {
			t.Errorf("/readyz with a rejected new version: expected 200 (the old one serves), got %d", st)
		}
	})
	t.Run("NCCL_IB_TIMEOUT 40", func(t *testing.T) {
		mark := in.logMark()
		writeByRename(t, file, profilesBadTimeout(t))
		in.waitLog(t, mark, pickUpWithin, `"profiles rejected"`, msgStarts("profiles rejected"))
		line, _ := in.waitLog(t, mark, pickUpWithin, `"profiles problem" naming NCCL_IB_TIMEOUT`,
			func(o obj) bool {
				p, _ := pathStr(o, "problem")
				return msgIs("profiles problem")(o) && strings.Contains(p, "NCCL_IB_TIMEOUT")
			})
		if p, _ := pathStr(line, "problem"); !strings.Contains(p, "roce-8card") || !strings.Contains(p, "40") {
			t.Errorf("problem line: expected it to name profile roce-8card and the value 40, got %q", p)
		}
		in.holdHCA(t, old, time.Second, "NCCL_IB_TIMEOUT 40 on disk")
		if got := in.metric(t, "rdma_webhook_profiles_generation"); got != "1" {
			t.Errorf("rdma_webhook_profiles_generation after two rejected versions: expected 1, got %q", got)
		}
	})
	t.Run("valid again", func(t *testing.T) {
		doc, want := profilesWithHCA(t, "mlx5_90")
		mark := in.logMark()
		changed := time.Now()
		writeByRename(t, file, doc)
		in.waitHCA(t, want, changed, "valid version after rejected ones")
		in.waitLog(t, mark, pickUpWithin, `"profiles loaded" generation 2`, msgIs("profiles loaded", "generation", "2"))
	})
}

// TestReloadFileDeleted: a deleted profiles file is logged as an error and
// the old version keeps serving (and ready); the re-created file is
// picked up.
func TestReloadFileDeleted(t *testing.T) {
	t.Parallel()
	in, file := startOnShippedCopy(t, bigInterval)
	old := shippedHCA(t)

	mark := in.logMark()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	in.waitLog(t, mark, pickUpWithin, "at level error after the file was deleted",
		func(o obj) bool { return o["level"] == "error" })
	in.holdHCA(t, old, time.Second, "profiles file deleted")
	for _, plain := range []bool{false, true} {
		if st := in.readyz(t, plain); st != http.StatusOK {
			t.Errorf("/readyz (plain port %v) with the file deleted: expected 200 (the old version serves), got %d", plain, st)
		}
	}

	doc, want := profilesWithHCA(t, "mlx5_7")
	changed := time.Now()
	writeInPlace(t, file, doc)
	in.waitHCA(t, want, changed, "re-created profiles file")
}

// TestStartWithoutValidProfiles: started with no valid profiles, the
// server is not ready (503 on both ports) and answers /mutate with 503;
// once a valid file appears it is ready within 2 s and mutates.
func TestStartWithoutValidProfiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		initial []byte // nil: no file
		fix     func(testing.TB, string, []byte)
	}{
		{"missing file", nil, writeInPlace},
		{"invalid JSON", []byte("{\n"), writeByRename},
		{"fails validation", nil, writeInPlace},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "profiles.json")
			initial := c.initial
			if c.name == "fails validation" {
				initial = profilesBadTimeout(t)
			}
			if initial != nil {
				writeInPlace(t, file, initial)
			}
			in := startInstance(t, file, "--reload-interval-ms", bigInterval)
			for _, plain := range []bool{false, true} {
				if st := in.readyz(t, plain); st != http.StatusServiceUnavailable {
					t.Errorf("/readyz (plain port %v) without valid profiles: expected 503, got %d", plain, st)
				}
			}
			rep := in.do(t, http.MethodPost, in.url("/mutate"), mustMarshal(gpu8Review(t).body()))
			if rep.status != http.StatusServiceUnavailable {
				t.Errorf("POST /mutate without valid profiles: expected 503, got %d %q", rep.status, cut(rep.body))
			}
			// The log says what is so: nothing serves yet.
			line, _ := in.waitLog(t, 0, pickUpWithin, "the profiles refused at start", func(l obj) bool {
				m, _ := pathStr(l, "msg")
				return strings.HasPrefix(m, "profiles rejected") || strings.HasPrefix(m, "cannot read profiles")
			})
			if m, _ := pathStr(line, "msg"); !strings.HasSuffix(m, "; none loaded yet: /mutate answers 503 until a valid version loads") {
				t.Errorf("start-up log line %q: expected it to say none is loaded yet", m)
			}
			for _, l := range in.logText() {
				if strings.Contains(l, "keeps serving") {
					t.Errorf("with no version loaded, the log claims one keeps serving: %s", l)
				}
			}

			mark := in.logMark()
			c.fix(t, file, shippedProfiles(t))
			for _, plain := range []bool{false, true} {
				plain := plain
				took := waitStatus(t, pickUpWithin, fmt.Sprintf("/readyz (plain port %v) after a valid file appeared", plain),
					http.StatusOK, func() int { return in.readyz(t, plain) })
				t.Logf("/readyz (plain %v) 200 after %v", plain, took.Round(time.Millisecond))
			}
			in.requireHCA(t, shippedHCA(t), "after a valid file appeared")
			in.waitLog(t, mark, pickUpWithin, `"profiles loaded" generation 1`, msgIs("profiles loaded", "generation", "1"))
		})
	}
}

// TestSIGHUPReloads: SIGHUP logs "SIGHUP: reloading profiles..." and then
// loads the file. The file is a symlink into another directory whose
// target is rewritten in place, and the re-check interval is 10 minutes,
// so the new value can only come from the SIGHUP.
func TestSIGHUPReloads(t *testing.T) {
	t.Parallel()
	target, link := linkedProfiles(t)
	in := startInstance(t, link, "--reload-interval-ms", "600000")
	in.requireHCA(t, shippedHCA(t), "at start")

	doc, want := profilesWithHCA(t, "mlx5_99")
	writeInPlace(t, target, doc)
	gen := in.metric(t, "rdma_webhook_profiles_generation")
	var before int
	if _, err := fmt.Sscan(gen, &before); err != nil {
		t.Fatalf("rdma_webhook_profiles_generation: %q: %v", gen, err)
	}
	mark := in.logMark()
	in.signal(syscall.SIGHUP)
	_, hup := in.waitLog(t, mark, pickUpWithin, `"SIGHUP: reloading profiles..."`, msgStarts("SIGHUP: reloading profiles"))
	in.waitLog(t, hup+1, pickUpWithin, fmt.Sprintf(`"profiles loaded" generation %d after the SIGHUP line`, before+1),
		msgIs("profiles loaded", "generation", fmt.Sprint(before+1)))
	in.requireHCA(t, want, "after SIGHUP")
	if !in.alive() {
		t.Fatalf("serve exited on SIGHUP: %v", in.waitErr)
	}
}

// slowPost opens a TLS connection and sends the headers of POST /mutate
// with the full Content-Length but only the first half of body.
func (in *instance) slowPost(t testing.TB, body []byte) *tls.Conn {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", in.addr, in.tlsConfig())
	if err != nil {
		t.Fatalf("TLS dial: %v%s", err, in.state())
	}
	_ = conn.SetDeadline(time.Now().Add(requestTimeout))
	head := fmt.Sprintf("POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n", len(body))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitInFlight polls /metrics until the server counts n requests in flight.
func (in *instance) waitInFlight(t testing.TB, n int) {
	t.Helper()
	waitStatus(t, 5*time.Second, "rdma_webhook_in_flight_requests", n, func() int {
		var v int
		fmt.Sscan(in.metric(t, "rdma_webhook_in_flight_requests"), &v)
		return v
	})
}

// readyzDuringDrain is what a new client gets from /readyz: the status, or
// the connection error ("" when it answered).
func (in *instance) readyzDuringDrain(plain bool) (int, string) {
	c := in.newClient(time.Second)
	defer c.CloseIdleConnections()
	u := in.url("/readyz")
	if plain {
		u = in.metricsURL("/readyz")
	}
	resp, err := c.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	readAll(resp)
	return resp.StatusCode, ""
}

// draining is an instance (--shutdown-grace 5) in its drain, with one
// review held in flight: half its body sent on conn, closed when the test
// ends. termAt is when SIGTERM went; "shutting down" is logged.
type draining struct {
	in     *instance
	review reviewRequest
	body   []byte
	conn   *tls.Conn
	termAt time.Time
}

func drainWithOneInFlight(t *testing.T) draining {
	d := draining{review: gpu8Review(t)}
	d.in = startInstance(t, profilesPath, "--shutdown-grace", "5", "--reload-interval-ms", bigInterval)
	d.body = mustMarshal(d.review.body())
	d.conn = d.in.slowPost(t, d.body)
	t.Cleanup(func() { d.conn.Close() })
	d.in.waitInFlight(t, 1)
	mark := d.in.logMark()
	d.termAt = time.Now()
	d.in.signal(syscall.SIGTERM)
	d.in.waitLog(t, mark, 2*time.Second, `"shutting down"`, msgIs("shutting down"))
	return d
}

// TestSIGTERMDrainsInFlight: a review whose body is half sent when SIGTERM
// arrives still completes with 200; meanwhile /readyz is not 200 (503, or
// the connection is refused); the process exits 0 within --shutdown-grace.
func TestSIGTERMDrainsInFlight(t *testing.T) {
	t.Parallel()
	const grace = 5 * time.Second
	d := drainWithOneInFlight(t)
	in, r, body, conn, termAt := d.in, d.review, d.body, d.conn, d.termAt
	for _, plain := range []bool{true, false} {
		port := map[bool]string{true: "plain", false: "https"}[plain]
		deadline := time.Now().Add(time.Second)
		for {
			st, errText := in.readyzDuringDrain(plain)
			if st != http.StatusOK {
				t.Logf("/readyz on the %s port during the drain: status %d %s", port, st, errText)
				if st != 0 && st != http.StatusServiceUnavailable {
					t.Errorf("/readyz on the %s port during the drain: expected 503 or no connection, got %d", port, st)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("/readyz on the %s port still 200 %v after SIGTERM", port, time.Since(termAt))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !in.alive() {
		t.Fatalf("serve exited with a request in flight, %v after SIGTERM: %v", time.Since(termAt), in.waitErr)
	}
	if _, err := conn.Write(body[len(body)/2:]); err != nil {
		t.Fatalf("sending the rest of the body after SIGTERM: %v%s", err, in.state())
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request: no response after SIGTERM: %v%s", err, in.state())
	}
	data := readAll(resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("in-flight request: expected 200, got %d %q", resp.StatusCode, cut(data))
	}
	if rr := parseReview(t, data, r); rr.patch == nil || rr.auditProf != "roce-8card" {
		t.Errorf("in-flight request: expected a roce-8card patch, got %s", compact(rr.response))
	}

	left := grace - time.Since(termAt)
	if _, err := in.waitExit(left); err != nil {
		t.Fatalf("after the in-flight request finished: %v (grace %v from SIGTERM)%s", err, grace, in.state())
	}
	t.Logf("exited %v after SIGTERM", time.Since(termAt).Round(time.Millisecond))
	if in.waitErr != nil {
		t.Errorf("exit after SIGTERM: expected status 0, got %v%s", in.waitErr, in.state())
	}
	for _, l := range in.logLines() {
		if m, _ := pathStr(l, "msg"); strings.HasPrefix(m, "grace period over") {
			t.Errorf("the request finished in time, yet the log says %q", m)
		}
	}
}

// TestSIGTERMGraceBound: a client that never finishes its body does not
// hold the process past --shutdown-grace: exit 0 after about the grace,
// not before (the request was given its time).
func TestSIGTERMGraceBound(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath, "--shutdown-grace", "1", "--reload-interval-ms", bigInterval)
	conn := in.slowPost(t, mustMarshal(gpu8Review(t).body()))
	defer conn.Close()
	in.waitInFlight(t, 1)
	mark := in.logMark()
	in.signal(syscall.SIGTERM)
	took, err := in.waitExit(4 * time.Second)
	if err != nil {
		t.Fatalf("with a stuck request and --shutdown-grace 1: %v%s", err, in.state())
	}
	t.Logf("exited %v after SIGTERM", took.Round(time.Millisecond))
	if in.waitErr != nil {
		t.Errorf("exit after the grace period: expected status 0, got %v%s", in.waitErr, in.state())
	}
	if took < 800*time.Millisecond {
		t.Errorf("exited %v after SIGTERM with a request in flight: expected to wait about the 1 s grace", took)
	}
	in.waitLog(t, mark, time.Second, `"grace period over"`, msgStarts("grace period over"))
}

// TestSIGTERMIdle: with nothing in flight the process exits 0 promptly on
// SIGTERM or SIGINT, also with an idle kept-alive connection open (as the
// apiserver keeps them), long before the 5 s grace.
func TestSIGTERMIdle(t *testing.T) {
	t.Parallel()
	const prompt = 2 * time.Second
	cases := []struct {
		name      string
		sig       syscall.Signal
		keepAlive bool
	}{
		{"SIGTERM, no connection", syscall.SIGTERM, false},
		{"SIGTERM, idle keep-alive connection", syscall.SIGTERM, true},
		{"SIGINT, no connection", syscall.SIGINT, false},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			in := startInstance(t, profilesPath, "--shutdown-grace", "5", "--reload-interval-ms", bigInterval)
			if c.keepAlive {
				in.requireHCA(t, shippedHCA(t), "before the signal")
			} else {
				in.client.CloseIdleConnections()
			}
			in.signal(c.sig)
			took, err := in.waitExit(prompt)
			if err != nil {
				t.Fatalf("idle: %v%s", err, in.state())
			}
			t.Logf("exited %v after the signal", took.Round(time.Millisecond))
			if in.waitErr != nil {
				t.Errorf("idle exit: expected status 0, got %v%s", in.waitErr, in.state())
			}
		})
	}
}

// TestSIGTERMNewConnectionsDuringDrain: while a request holds the drain
// open, a new client asking https /readyz must learn at once that this
// replica is going away: a 503, or the connection refused or reset. A
// connection that is neither answered nor refused (left in the listen
// backlog) keeps the apiserver and the kubelet's probe waiting until their
// own timeouts, and hides the replica's state.
func TestSIGTERMNewConnectionsDuringDrain(t *testing.T) {
	t.Parallel()
	d := drainWithOneInFlight(t)
	in, body, conn := d.in, d.body, d.conn
	// Readiness goes false before the listener stops: wait for the plain
	// port to say so, then ask the HTTPS port on a new connection.
	waitStatus(t, time.Second, "plain /readyz during the drain", http.StatusServiceUnavailable,
		func() int { st, _ := in.readyzDuringDrain(true); return st })
	st, errText := in.readyzDuringDrain(false)
	t.Logf("https /readyz on a new connection during the drain: status %d %s", st, errText)
	switch {
	case st == http.StatusServiceUnavailable:
	case st != 0:
		t.Errorf("https /readyz during the drain: expected 503 or a refused connection, got %d", st)
	case strings.Contains(errText, "Timeout") || strings.Contains(errText, "deadline exceeded"):
		t.Errorf("https /readyz during the drain: the new connection was neither answered nor refused "+
			"within 1 s (%s): expected 503 or connection refused/reset", errText)
	}
	// Let the held request finish so that the process exits cleanly.
	if _, err := conn.Write(body[len(body)/2:]); err == nil {
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			readAll(resp)
		}
	}
	if _, err := in.waitExit(5 * time.Second); err != nil {
		t.Fatalf("%v%s", err, in.state())
	}
	if in.waitErr != nil {
		t.Errorf("exit after SIGTERM: expected status 0, got %v", in.waitErr)
	}
}

// TestReloadUnderLoad: reviews keep flowing on several connections while
// the profiles are swapped many times. Each answer comes from one whole
// snapshot (the two versions differ in NCCL_IB_HCA and in a defaults.env
// value; a mix would be a torn read), none fails, and the last version
// wins. Under ASan this also exercises the snapshot reference counting.
func TestReloadUnderLoad(t *testing.T) {
	t.Parallel()
	const workers, swaps = 6, 100
	type version struct {
		doc      []byte
		hca, qps string
	}
	mk := func(qps string, hca ...string) version {
		doc, want := profilesWithHCA(t, hca...)
		d, err := decodeObject(doc)
		if err != nil {
			t.Fatal(err)
		}
		pathObj(d, "defaults", "env")["NCCL_IB_QPS_PER_CONNECTION"] = qps
		return version{mustMarshal(d), want, qps}
	}
	versions := []version{mk("4", "mlx5_1"), mk("2", "mlx5_2", "mlx5_3")}
	file := filepath.Join(t.TempDir(), "profiles.json")
	writeInPlace(t, file, versions[0].doc)
	in := startInstance(t, file, "--reload-interval-ms", bigInterval)

	valid := map[string]string{versions[0].hca: versions[0].qps, versions[1].hca: versions[1].qps}
	stop := make(chan struct{})
	type result struct {
		seen map[string]int
		errs []string
		n    int
	}
	results := make(chan result, workers)
	for w := 0; w < workers; w++ {
		go func() {
			res := result{seen: map[string]int{}}
			defer func() { results <- res }()
			client := in.newClient(10 * time.Second)
			defer client.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				hca, qps, err := reviewEnv(in, client)
				res.n++
				switch {
				case err != nil:
					res.errs = append(res.errs, err.Error())
				case valid[hca] != qps || qps == "":
					res.errs = append(res.errs, fmt.Sprintf("torn or unknown snapshot: NCCL_IB_HCA %q with NCCL_IB_QPS_PER_CONNECTION %q", hca, qps))
				default:
					res.seen[hca]++
				}
				if len(res.errs) > 5 {
					return
				}
			}
		}()
	}
	for i := 1; i <= swaps; i++ {
		writeByRename(t, file, versions[i%2].doc)
		gen := fmt.Sprint(i + 1)
		start := time.Now()
		for in.metric(t, "rdma_webhook_profiles_generation") != gen {
			if time.Since(start) > pickUpWithin {
				close(stop)
				t.Fatalf("swap %d: generation %s not reached within %v%s", i, gen, pickUpWithin, in.state())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(stop)
	total, seen := 0, map[string]int{}
	var errs []string
	for w := 0; w < workers; w++ {
		r := <-results
		total += r.n
		errs = append(errs, r.errs...)
		for k, v := range r.seen {
			seen[k] += v
		}
	}
	t.Logf("%d reviews during %d swaps; answers per NCCL_IB_HCA: %v", total, swaps, seen)
	if len(errs) > 0 {
		t.Fatalf("%d reviews went wrong during the swaps, e.g.:\n%s", len(errs), strings.Join(errs[:minInt(len(errs), 5)], "\n"))
	}
	for _, v := range versions {
		if seen[v.hca] == 0 {
			t.Errorf("no review was answered with version NCCL_IB_HCA %q: the swaps did not show", v.hca)
		}
	}
	in.requireHCA(t, versions[swaps%2].hca, "after the last swap")
}

// reviewEnv posts the 8-GPU review with client and returns the
// NCCL_IB_HCA and NCCL_IB_QPS_PER_CONNECTION its patch gives pytorch (no
// testing.T: it runs on worker goroutines).
func reviewEnv(in *instance, client *http.Client) (hca, qps string, err error) {
	f, err := readJSONFile(gpu8Fixture)
	if err != nil {
		return "", "", err
	}
	r := podCreate(pathStrOr(f, "namespace"), pathObj(f, "object"))
	resp, err := client.Post(in.url("/mutate"), "application/json", bytes.NewReader(mustMarshal(r.body())))
	if err != nil {
		return "", "", err
	}
	body := readAll(resp)
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("status %d: %s", resp.StatusCode, cut(body))
	}
	out, err := decodeObject(body)
	if err != nil {
		return "", "", err
	}
	if path(out, "response", "uid") != r.uid {
		return "", "", fmt.Errorf("answer for another uid: %s", cut(body))
	}
	enc, _ := pathStr(out, "response", "patch")
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return "", "", err
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return "", "", err
	}
	doc := mustMarshal(r.object)
	patched, err := p.Apply(doc)
	if err != nil {
		return "", "", err
	}
	pod, err := decodeObject(patched)
	if err != nil {
		return "", "", err
	}
	if err := checkPatchedPod(doc, patched); err != nil {
		return "", "", err
	}
	c := containerByName(pod, "pytorch")
	for _, e := range envEntries(c, "NCCL_IB_HCA") {
		hca, _ = pathStr(e, "value")
	}
	for _, e := range envEntries(c, "NCCL_IB_QPS_PER_CONNECTION") {
		qps, _ = pathStr(e, "value")
	}
	return hca, qps, nil
}

func pathStrOr(v interface{}, keys ...string) string {
	s, _ := pathStr(v, keys...)
	return s
}

// TestReloadStormSIGHUP: a config-reload sidecar sending SIGHUP while the
// file keeps being replaced (the kubelet's swap) makes the main thread and
// the watcher reload at once, 1000 times. The server must survive it (the
// ASan build reported a use-after-free in the "profiles loaded" line), and
// the reloads are serialised: once the storm is over, the file's last
// version is what serves, and keeps serving, with no further change.
func TestReloadStormSIGHUP(t *testing.T) {
	t.Parallel()
	const rounds = 1000
	in, file := startOnShippedCopy(t, "50")

	docs := make([][]byte, 3)
	for i := range docs {
		docs[i], _ = profilesWithHCA(t, fmt.Sprintf("mlx5_%d", 40+i))
	}
	for i := 0; i < rounds; i++ {
		writeByRename(t, file, docs[i%len(docs)])
		in.signal(syscall.SIGHUP)
		time.Sleep(time.Millisecond)
	}
	last, want := profilesWithHCA(t, "mlx5_77")
	writeByRename(t, file, last)
	in.signal(syscall.SIGHUP)
	in.waitHCA(t, want, time.Now(), "after the storm")
	in.holdHCA(t, want, time.Second, "after the storm")
	if !in.alive() {
		t.Fatalf("serve died in the reload storm: %v%s", in.waitErr, in.state())
	}
}
