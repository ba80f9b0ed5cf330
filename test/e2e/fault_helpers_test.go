package e2e

import (
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sanitizerLogEnv sends ASan/UBSan reports to files under dir (for servers
// whose stderr cannot be read back), keeping the suite's ASAN_OPTIONS.
func sanitizerLogEnv(dir string) []string {
	join := func(name, extra string) string {
		if cur := os.Getenv(name); cur != "" {
			return name + "=" + cur + ":" + extra
		}
		return name + "=" + extra
	}
	return []string{
		join("ASAN_OPTIONS", "log_path="+filepath.Join(dir, "asan")),
		join("UBSAN_OPTIONS", "log_path="+filepath.Join(dir, "ubsan")),
	}
}

// sanitizerFiles reports the sanitizer log files written under dir.
func sanitizerFiles(t *testing.T, dir string) {
	t.Helper()
	for _, pattern := range []string{"asan*", "ubsan*"} {
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			if len(strings.TrimSpace(string(data))) > 0 {
				t.Errorf("sanitizer report in %s:\n%s", f, cut(data))
			}
		}
	}
}

// servedCert is the DER of the leaf certificate the server presents now.
func servedCert(t *testing.T, in *instance) []byte {
	t.Helper()
	conn, err := tls.Dial("tcp", in.addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS handshake to read the served certificate: %v\nthe server's log, admissions left out:\n%s", err, in.logWithoutAdmissions())
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw
}

// fileCert is the DER of the first certificate in a PEM file.
func fileCert(t *testing.T, file string) []byte {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(file, strings.TrimSuffix(file, "tls.crt")+"tls.key")
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return pair.Certificate[0]
}

// mountTmpfs mounts a tmpfs of the given size on a new directory and
// unmounts it at the end of the test (after the servers using it stop).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount -t tmpfs -o size=%s tmpfs %s (the test needs root and mount): %v: %s", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillFile writes to path until the file system says it is full, and
// returns the error that stopped it (ENOSPC expected).
func fillFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for i := 0; i < 1<<20; i++ {
		if _, err := f.Write(chunk); err != nil {
			return err
		}
	}
	return fmt.Errorf("wrote 4 GiB without the file system filling up")
}

// logWithoutAdmissions is the instance's log without the per-admission
// lines, for failure messages about reloads.
func (in *instance) logWithoutAdmissions() string {
	var out []string
	for _, line := range in.logText() {
		if !strings.Contains(line, `"msg":"admission"`) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
