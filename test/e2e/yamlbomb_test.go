package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// aliasBomb is a YAML ConfigMap whose anchor &s holds a scalar of size
// bytes, aliased inner times in an anchor &m that is aliased outer times
// (outer 0: the scalar's aliases are the list): a small input asking for
// size*inner*outer bytes.
func aliasBomb(size, inner, outer int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ns: &s ")
	b.WriteString(strings.Repeat("x", size))
	b.WriteString("\nm: &m [*s" + strings.Repeat(", *s", inner-1) + "]\n")
	if outer > 0 {
		b.WriteString("l: [*m" + strings.Repeat(", *m", outer-1) + "]\n")
	}
	return b.Bytes()
}

// runBounded runs the binary with args, killed after limit, and says its
// peak RSS in KiB. The shipped binary runs under a 4 GiB address-space cap
// (ASan's shadow needs more), so that a reader without the byte cap fails
// here instead of taking the machine.
func runBounded(t *testing.T, limit time.Duration, args ...string) (res cmdResult, peakKiB int64) {
	t.Helper()
	cmd := exec.Command(binaryPath(), args...)
	if !sanitizedBinary(t) && !underValgrind() {
		cmd = exec.Command("sh", append([]string{"-c", `ulimit -v 4194304 && exec "$0" "$@"`, binaryPath()}, args...)...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(limit, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	timer.Stop()
	res = finishedRun(t, err, &stdout, &stderr, args)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peakKiB = ru.Maxrss
	}
	return res, peakKiB
}

// TestYAMLAliasBombsRefused: aliases are bounded in bytes. A 1 MiB scalar
// aliased 400 times in an anchor aliased 590 times (236 GB asked for) and
// an 8 MiB scalar aliased 200 times (1.6 GB) are refused by mutate, and a
// 256 KiB one aliased 400 x 590 by serve --pod-security-config at start:
// exit 1, a message naming the limit, at a modest peak RSS.
func TestYAMLAliasBombsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const say = "aliases expand the input to more than"
	for _, c := range []struct {
		name               string
		size, inner, outer int
	}{{"nested", 1 << 20, 400, 590}, {"wide", 8 << 20, 200, 0}} {
		file := filepath.Join(dir, c.name+".yaml")
		if err := os.WriteFile(file, aliasBomb(c.size, c.inner, c.outer), 0o644); err != nil {
			t.Fatal(err)
		}
		res, peak := runBounded(t, 60*time.Second, "mutate", "--profiles", profilesPath, file)
		if res.exitCode != 1 || !strings.Contains(string(res.stderr), say) {
			t.Errorf("mutate %s bomb: exit %d, want 1 and %q: %s", c.name, res.exitCode, say, cut(res.stderr))
		}
		// The input, libyaml's copy of the scalar and at most 16 MiB or 4
		// times the input of copies; ASan's own memory is larger.
		if !sanitizedBinary(t) && !underValgrind() && peak > 160*1024 {
			t.Errorf("mutate %s bomb: peak RSS %d KiB, want under 160 MiB", c.name, peak)
		}
	}
	file := filepath.Join(dir, "podsec.yaml")
	if err := os.WriteFile(file, aliasBomb(256<<10, 400, 590), 0o644); err != nil {
		t.Fatal(err)
	}
	res, peak := runBounded(t, 60*time.Second, "serve", "--no-kube-api", "--profiles", profilesPath,
		"--listen", "127.0.0.1:0", "--metrics-listen", "", "--pod-security-config", file)
	if res.exitCode != 1 || !strings.Contains(string(res.stderr), say) || !strings.Contains(string(res.stderr), "cannot start") {
		t.Errorf("serve --pod-security-config bomb: exit %d, want 1, \"cannot start\" and %q: %s", res.exitCode, say, cut(res.stderr))
	}
	if !sanitizedBinary(t) && !underValgrind() && peak > 160*1024 {
		t.Errorf("serve --pod-security-config bomb: peak RSS %d KiB, want under 160 MiB", peak)
	}
}
