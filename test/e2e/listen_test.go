package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each TLS thread has its own listening socket on the port (SO_REUSEPORT).
// Sockets that all set it share a port silently, so a second server started
// on the same port by mistake must still be refused, and the first must keep
// serving.
func TestSecondServerOnSamePortIsRefused(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath, "--threads", "4")
	res, exited := runBinaryWithin(t, nil, 10*time.Second, "serve", "--listen", in.addr,
		"--metrics-listen", "", "--threads", "4", "--tls-cert-file", filepath.Join(in.dir, "tls.crt"),
		"--tls-private-key-file", filepath.Join(in.dir, "tls.key"), "--profiles", in.profiles)
	if !exited {
		t.Fatalf("the second server on %s was still running after 10 s: it shares the port", in.addr)
	}
	if res.exitCode == 0 {
		t.Fatalf("the second server exited 0; stderr:\n%s", res.stderr)
	}
	if !strings.Contains(string(res.stderr), "in use") {
		t.Errorf("expected an \"in use\" error naming the address, got:\n%s", res.stderr)
	}
	if rr := in.review(t, podCreate("kubeflow", trainingPod(8))); rr.patch == nil {
		t.Errorf("the first server no longer mutates after the refused start")
	}
}

// Connections opened at once are spread over the TLS threads: with one
// listening socket per thread the kernel spreads them, where a shared socket
// let one thread take them all. Every thread must end up serving some of 32
// connections (a thread left out with 4 threads has odds under 1 in 10^3),
// and none may do most of the work, as the one that wins a burst did.
func TestConnectionsSpreadOverThreads(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath, "--threads", "4")
	body := goodReviewBody()
	before := in.threadCPU(t)
	conns := make([]keepAlive, 32)
	errs := make(chan error, len(conns))
	defer func() {
		for _, k := range conns {
			if k.c != nil {
				k.c.Close()
			}
		}
	}()
	// All at once, as a client's pool opens them: a shared listening socket
	// hands such a burst to whichever thread wakes first.
	for i := range conns {
		go func(i int) {
			c, err := tls.Dial("tcp", in.addr, in.tlsConfig())
			if err == nil {
				conns[i] = keepAlive{c, bufio.NewReader(c)}
			}
			errs <- err
		}(i)
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Enough requests that each thread's share is well over a clock tick of CPU.
	for round := 0; round < 300; round++ {
		for _, k := range conns {
			if err := k.post(body); err != nil {
				t.Fatalf("round %d: %v%s", round, err, in.state())
			}
		}
	}
	after := in.threadCPU(t)
	busy, total, most := 0, 0, 0
	for tid, ticks := range after {
		d := ticks - before[tid]
		if d > 0 {
			busy++
		}
		total += d
		if d > most {
			most = d
		}
	}
	// Four TLS threads and the plain port's, which serves none of this.
	if busy < 4 {
		t.Errorf("only %d libmicrohttpd threads used CPU serving 32 connections (want the 4 TLS "+
			"threads): before %v, after %v", busy, before, after)
	}
	// An even spread gives each about a quarter; 60% or more has odds well under
	// 1 in 10^5.
	if most*10 > total*6 {
		t.Errorf("one thread did %d of %d CPU ticks serving 32 connections: %v -> %v", most, total, before, after)
	}
}

// keepAlive is one client connection reused for many requests.
type keepAlive struct {
	c *tls.Conn
	r *bufio.Reader
}

func (k keepAlive) post(body []byte) error {
	writeRawPost(k.c, "/mutate", body, false)
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// threadCPU is the CPU time (clock ticks) of each libmicrohttpd thread of the
// instance, by thread id.
func (in *instance) threadCPU(t *testing.T) map[string]int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/task", in.cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, task := range tasks {
		comm, err1 := os.ReadFile(filepath.Join(dir, task.Name(), "comm"))
		stat, err2 := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err1 != nil || err2 != nil || !strings.HasPrefix(string(comm), "MHD-") {
			continue
		}
		// Fields after the parenthesised name: state is field 3, utime 14, stime 15.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		utime, _ := strconv.Atoi(f[11])
		stime, _ := strconv.Atoi(f[12])
		out[task.Name()] = utime + stime
	}
	return out
}
