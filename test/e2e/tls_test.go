package e2e

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"testing"
)

var tlsNames = map[uint16]string{
	tls.VersionTLS10: "TLS 1.0", tls.VersionTLS11: "TLS 1.1",
	tls.VersionTLS12: "TLS 1.2", tls.VersionTLS13: "TLS 1.3",
}

// TestTLSVersions: TLS 1.2+ only (docs/operations.md "Certificates and signals"), the handshake checked against
// the suite's CA.
func TestTLSVersions(t *testing.T) {
	t.Parallel()
	srv.ensureRunning()
	t.Run("TLS 1.1 max is refused", func(t *testing.T) {
		conn, err := tls.Dial("tcp", srv.addr, srv.tlsConfig(tls.VersionTLS10, tls.VersionTLS11))
		if err == nil {
			conn.Close()
			t.Fatalf("expected the handshake to fail, got %s", tlsNames[conn.ConnectionState().Version])
		}
	})
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		v := v
		t.Run(tlsNames[v], func(t *testing.T) {
			client := srv.client(v, v)
			defer client.CloseIdleConnections()
			resp, err := client.Get(srv.url("/healthz"))
			if err != nil {
				t.Fatalf("expected a %s handshake and an answer, got %v", tlsNames[v], err)
			}
			resp.Body.Close()
			if resp.TLS == nil || resp.TLS.Version != v {
				t.Errorf("expected %s, got %+v", tlsNames[v], resp.TLS)
			}
		})
	}
	t.Run("IP SAN 127.0.0.1", func(t *testing.T) {
		cfg := srv.tlsConfig(tls.VersionTLS12, 0)
		cfg.ServerName = ""
		host, _, _ := net.SplitHostPort(srv.addr)
		conn, err := tls.Dial("tcp", srv.addr, cfg)
		if err != nil {
			t.Fatalf("expected the serving certificate to be valid for %s, got %v", host, err)
		}
		conn.Close()
	})
}

// TestKeepAlive: 50 reviews (10 under valgrind) over one connection reuse it.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	n := 50
	if underValgrind() {
		// Still one new connection and every later request a reuse of
		// it: the kept-alive path, memchecked, without 40 more rounds.
		n = 10
	}
	client := srv.client(tls.VersionTLS12, 0)
	defer client.CloseIdleConnections()
	body := goodReviewBody()
	var reused, fresh int
	for i := 0; i < n; i++ {
		var info httptrace.GotConnInfo
		trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { info = ci }}
		req := newRequest(t, http.MethodPost, srv.url("/mutate"), "application/json", bytes.NewReader(body))
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		if rep := do(t, client, req); rep.status != http.StatusOK {
			t.Fatalf("request %d: expected 200, got %d %q", i, rep.status, cut(rep.body))
		}
		if info.Reused {
			reused++
		} else {
			fresh++
		}
	}
	if fresh != 1 || reused != n-1 {
		t.Errorf("expected 1 new connection and %d reuses, got %d new and %d reused", n-1, fresh, reused)
	}
}
