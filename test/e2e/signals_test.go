package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loaderDone waits until the dynamic loader has relocated the executable
// of pid: its RELRO segment turned read-only (one more r--p mapping of the
// file), the last step before the program's own code runs. Before that no
// program can block a signal, so a SIGHUP then says nothing about it.
// On a loaded machine this goroutine may first look after the relocation,
// when the count never grows again: SIGHUP already blocked says the same
// (the program blocks it from .preinit_array, after the loader).
func loaderDone(pid int, exe string, within time.Duration) bool {
	first := -1
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		if hupBlocked(pid, 0) {
			return true
		}
		maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
		if err != nil {
			return false
		}
		n := 0
		for _, l := range strings.Split(string(maps), "\n") {
			if strings.HasSuffix(l, exe) && strings.Contains(l, " r--p ") {
				n++
			}
		}
		if first < 0 && n > 0 {
			first = n
		}
		if first >= 0 && n > first {
			return true
		}
		time.Sleep(20 * time.Microsecond)
	}
	return false
}

// exited says whether pid has ended (a zombie not yet reaped, or gone).
func exited(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) STATE ...: comm may hold spaces and parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	f := strings.Fields(rest)
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// hupBlocked waits until pid blocks SIGHUP (/proc/PID/status SigBlk), or
// runs more than one thread: serve starts its threads from main, after the
// mask is set, and once main waits in sigwait the kernel shows SIGHUP
// unblocked for the wait's duration (rt_sigtimedwait lifts the waited
// signals from the mask), so a late look would never see it blocked.
// A within of 0 looks once.
func hupBlocked(pid int, within time.Duration) bool {
	for deadline := time.Now().Add(within); ; {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			return false
		}
		for _, l := range strings.Split(string(status), "\n") {
			if mask, ok := strings.CutPrefix(l, "SigBlk:"); ok {
				if v, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && v&1 != 0 {
					return true
				}
			}
			if n, ok := strings.CutPrefix(l, "Threads:"); ok {
				if v, err := strconv.Atoi(strings.TrimSpace(n)); err == nil && v > 1 {
					return true
				}
			}
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// TestSIGHUPAtStart: a SIGHUP in the first milliseconds of serve (a reload
// sent during a rollout) ended it with status 129: the signals were blocked
// only once the libraries had been set up and the flags read. Each start is
// sent SIGHUPs from the moment its own code can run (the loader done); each
// must come up, serve, and exit 0 on SIGTERM.
func TestSIGHUPAtStart(t *testing.T) {
	t.Parallel()
	exe, err := filepath.Abs(binaryPath())
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		t.Fatal(err)
	}
	sanitized := sanitizedBinary(t)
	// A sanitizer's runtime sets itself up first, from its own entry before
	// the program's (milliseconds, seconds at load 20, where a signal still
	// ends the process): there the SIGHUPs start once the mask is set, and
	// /proc/PID/maps is not read (read in a loop it holds the mm lock that
	// the runtime's mappings wait for).
	ready := func(pid int) bool {
		if sanitized {
			return hupBlocked(pid, slowerUnderValgrind(30*time.Second))
		}
		return loaderDone(pid, exe, slowerUnderValgrind(30*time.Second))
	}
	hup := func(p *os.Process) {
		// A launch whose process ends at once (its port taken by another
		// test between the pick and the bind) is retried with another
		// port: only a process still running can be judged.
		if !ready(p.Pid) {
			if exited(p.Pid) {
				t.Logf("pid %d ended before it was signalled; the launch is retried", p.Pid)
				return
			}
			t.Errorf("pid %d: neither the loader seen to finish, SIGHUP blocked nor a second thread within 30 s", p.Pid)
			return
		}
		for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
			_ = p.Signal(syscall.SIGHUP)
			time.Sleep(200 * time.Microsecond)
		}
	}
	for round := 0; round < 5; round++ {
		in := startOwn(t, instanceOptions{profiles: profilesPath, onStart: hup})
		if got := in.readyz(t, false); got != 200 {
			t.Errorf("round %d: /readyz %d after the SIGHUPs, want 200", round, got)
		}
		if err := in.terminate(slowerUnderValgrind(15 * time.Second)); err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, in.state())
		}
	}
}

// TestFIFOInPlaceOfServedFiles: the profiles file, or the certificate,
// replaced by a FIFO no one writes: a blocking open() held the reload for
// ever, and SIGTERM then never ended the process. The reload now refuses it
// with an error naming the file, serving goes on, and SIGTERM exits 0.
func TestFIFOInPlaceOfServedFiles(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"profiles", "tls.crt"} {
		which := which
		t.Run(which, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			profiles := filepath.Join(dir, "profiles.json")
			data, err := os.ReadFile(profilesPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(profiles, data, 0o644); err != nil {
				t.Fatal(err)
			}
			in := startInstance(t, profiles)
			target := profiles
			if which == "tls.crt" {
				target = filepath.Join(in.dir, "tls.crt")
			}
			mark := in.logMark()
			if err := os.Remove(target); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(target, 0o600); err != nil {
				t.Fatal(err)
			}
			in.signal(syscall.SIGHUP)
			in.waitLog(t, mark, slowerUnderValgrind(10*time.Second), "an error naming "+target, func(l obj) bool {
				return strings.Contains(compact(l), target) && strings.Contains(compact(l), "not a regular file")
			})
			if got := in.readyz(t, false); got != 200 {
				t.Errorf("/readyz %d after the FIFO, want 200 (the last good version serves)", got)
			}
			if err := in.terminate(slowerUnderValgrind(10 * time.Second)); err != nil {
				t.Fatalf("%v%s", err, in.state())
			}
		})
	}
}

// TestFIFOInPlaceOfAPIAndClientFiles: the API token, the API's CA, the
// --client-ca file or the private key replaced by a FIFO no one writes.
// Each is read again later (the token and the CA before every API call, the
// others on SIGHUP): a blocking open() of the FIFO held an admission's
// lookup, or the reload, for ever, and then SIGTERM never ended the
// process. Admissions are still answered (without the API's answer), and
// SIGHUP then SIGTERM end the process with status 0.
func TestFIFOInPlaceOfAPIAndClientFiles(t *testing.T) {
	t.Parallel()
	const node = "gpu-node-fifo"
	for _, which := range []string{"token", "kube-ca", "client-ca", "tls.key"} {
		which := which
		t.Run(which, func(t *testing.T) {
			t.Parallel()
			a := startFakeAPI(t)
			a.putNode(node, map[string]string{"nvidia.com/gpu.count": "8"})
			var in *instance
			target := map[string]string{"token": a.tokenFile, "kube-ca": a.caFile}[which]
			switch which {
			case "client-ca":
				ca := newTestCA(t, "apiserver-client-ca")
				target = filepath.Join(t.TempDir(), "client-ca.crt")
				writeCA(t, target, ca)
				in = startOwn(t, instanceOptions{profiles: profilesPath,
					clientCert: ca.issue(t, clientCertSpec{cn: "kube-apiserver"}),
					args:       []string{"--client-ca", target, "--shutdown-grace", "1"}})
			default:
				in = startLookupInstance(t, a, "--shutdown-grace", "1", "--api-budget-ms", "1000")
			}
			if which == "tls.key" {
				target = filepath.Join(in.dir, "tls.key")
			}
			if err := os.Remove(target); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(target, 0o600); err != nil {
				t.Fatal(err)
			}
			mark := in.logMark()
			// Another Node each time: no cached answer stands in for the call.
			for i := 0; i < 3; i++ {
				if rr := in.review(t, podCreate(jobNS, nodePod(8, fmt.Sprintf("%s-%d", node, i)))); rr.patch == nil {
					t.Errorf("admission %d after the FIFO: no patch (8 GPUs)", i)
				}
			}
			in.signal(syscall.SIGHUP)
			in.waitLog(t, mark, slowerUnderValgrind(10*time.Second), "an error naming "+target, func(l obj) bool {
				return strings.Contains(compact(l), target) && strings.Contains(compact(l), "not a regular file")
			})
			if err := in.terminate(slowerUnderValgrind(10 * time.Second)); err != nil {
				t.Fatalf("%v%s", err, in.state())
			}
		})
	}
}
