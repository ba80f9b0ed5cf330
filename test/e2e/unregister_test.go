package e2e

// unregister (the Helm chart's pre-delete hook) against a small fake API:
// the DELETEs it sends, 404 as success, and a 403 that names what to grant.

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// unregisterAPI answers DELETE of a webhook configuration with the status
// statusFor gives its path, and records each request as "METHOD PATH".
func unregisterAPI(t *testing.T, statusFor map[string]int) (url, ca, token string, reqs func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer hook-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		st, ok := statusFor[r.URL.Path]
		if !ok || r.Method != http.MethodDelete {
			st = http.StatusMethodNotAllowed
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		if st >= 400 {
			_, _ = w.Write([]byte(`{"kind":"Status","status":"Failure","message":"fake says ` + http.StatusText(st) + `"}`))
		} else {
			_, _ = w.Write([]byte(`{"kind":"Status","status":"Success"}`))
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca = filepath.Join(dir, "ca.crt")
	token = filepath.Join(dir, "token")
	der := srv.Certificate().Raw
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("hook-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv.URL, ca, token, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

const (
	unregMWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
	unregVWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
)

// TestUnregisterDeletesBoth: one DELETE per name, 200 and 404 both success,
// one line each, exit 0.
func TestUnregisterDeletesBoth(t *testing.T) {
	url, ca, token, reqs := unregisterAPI(t, map[string]int{unregMWC + "m1": 200, unregVWC + "v1": 404})
	res := runBinary(t, nil, "unregister", "--webhook-configs", "m1,v1", "--kube-api", url,
		"--kube-ca", ca, "--kube-token-file", token)
	if res.exitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.exitCode, res.stderr)
	}
	want := "mutatingwebhookconfigurations m1 deleted\nvalidatingwebhookconfigurations v1 already gone\n"
	if string(res.stdout) != want {
		t.Errorf("stdout %q, want %q", res.stdout, want)
	}
	got := strings.Join(reqs(), "\n")
	if got != "DELETE "+unregMWC+"m1\nDELETE "+unregVWC+"v1" {
		t.Errorf("requests:\n%s", got)
	}
}

// TestUnregisterForbidden: a 403 on one exits 1 naming the verb, resource
// and name to grant, and the other is still deleted; an empty name skips one.
func TestUnregisterForbidden(t *testing.T) {
	url, ca, token, reqs := unregisterAPI(t, map[string]int{unregMWC + "m": 403, unregVWC + "v": 200})
	res := runBinary(t, nil, "unregister", "--webhook-configs", "m,v", "--kube-api", url,
		"--kube-ca", ca, "--kube-token-file", token)
	if res.exitCode != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", res.exitCode, res.stderr)
	}
	for _, s := range []string{`verb "delete"`, "mutatingwebhookconfigurations", "resourceNames [m]", "fake says Forbidden"} {
		if !strings.Contains(string(res.stderr), s) {
			t.Errorf("stderr lacks %q:\n%s", s, res.stderr)
		}
	}
	if string(res.stdout) != "validatingwebhookconfigurations v deleted\n" {
		t.Errorf("stdout %q", res.stdout)
	}
	res = runBinary(t, nil, "unregister", "--webhook-configs", ",v", "--kube-api", url,
		"--kube-ca", ca, "--kube-token-file", token)
	if res.exitCode != 0 || len(reqs()) != 3 || reqs()[2] != "DELETE "+unregVWC+"v" {
		t.Errorf("--webhook-configs ,v: exit %d, requests %q, stderr %s", res.exitCode, reqs(), res.stderr)
	}
}

// TestUnregisterUsage: a malformed --webhook-configs or --kube-api without
// its files is a usage error (2) before any request.
func TestUnregisterUsage(t *testing.T) {
	for _, args := range [][]string{
		{"unregister", "--webhook-configs", "only-one"},
		{"unregister", "--webhook-configs", "a,b,c"},
		{"unregister", "--kube-api", "https://127.0.0.1:1"},
		{"unregister", "extra"},
	} {
		if res := runBinary(t, nil, args...); res.exitCode != 2 || len(res.stderr) == 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, res.exitCode, res.stderr)
		}
	}
}

// TestUnregisterRefusedToken: a token the API refuses (401) exits 1 and says
// to check the token; the main usage lists the command.
func TestUnregisterRefusedToken(t *testing.T) {
	url, ca, _, reqs := unregisterAPI(t, map[string]int{unregMWC + "m": 200, unregVWC + "v": 200})
	bad := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(bad, []byte("not-the-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runBinary(t, nil, "unregister", "--webhook-configs", "m,v", "--kube-api", url,
		"--kube-ca", ca, "--kube-token-file", bad)
	if res.exitCode != 1 || strings.Count(string(res.stderr), "refused the token (401)") != 2 || len(res.stdout) != 0 {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", res.exitCode, res.stdout, res.stderr)
	}
	if len(reqs()) != 2 {
		t.Errorf("requests %q: want both names tried", reqs())
	}
	if help := runBinary(t, nil, "--help"); !strings.Contains(string(help.stdout), "\n  unregister ") {
		t.Errorf("rdma-webhook --help does not list unregister:\n%s", help.stdout)
	}
}
