package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

const requestTimeout = 30 * time.Second

// tlsConfig trusts only the suite's CA and checks the name localhost.
func (s *server) tlsConfig(minVersion, maxVersion uint16) *tls.Config {
	return &tls.Config{
		RootCAs:    s.caPool,
		ServerName: "localhost",
		MinVersion: minVersion,
		MaxVersion: maxVersion,
	}
}

// client returns an HTTPS client with its own connection pool, after
// making sure the server is running.
func (s *server) client(minVersion, maxVersion uint16) *http.Client {
	s.ensureRunning()
	return s.newClient(minVersion, maxVersion)
}

func (s *server) newClient(minVersion, maxVersion uint16) *http.Client {
	return &http.Client{
		Timeout: requestTimeout,
		Transport: &http.Transport{
			TLSClientConfig:     s.tlsConfig(minVersion, maxVersion),
			MaxConnsPerHost:     1,
			MaxIdleConnsPerHost: 1,
			ForceAttemptHTTP2:   false,
		},
	}
}

// reply is a finished HTTP exchange.
type reply struct {
	status      int
	contentType string
	body        []byte
}

func do(t testing.TB, client *http.Client, req *http.Request) reply {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		srv.settle()
		t.Fatalf("%s %s: %v%s", req.Method, req.URL.Path, err, serverState())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL.Path, err)
	}
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body}
}

func newRequest(t testing.TB, method, url, contentType string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req
}

// shared is the client most requests use: one kept-alive connection, as
// the apiserver keeps to a webhook.
func (s *server) shared() *http.Client {
	s.ensureRunning()
	s.sharedOnce.Do(func() { s.sharedClient = s.newClient(tls.VersionTLS12, 0) })
	return s.sharedClient
}

// post sends body to the HTTPS port with the given content type.
func (s *server) post(t testing.TB, p, contentType string, body []byte) reply {
	t.Helper()
	return do(t, s.shared(), newRequest(t, http.MethodPost, s.url(p), contentType, bytes.NewReader(body)))
}

func (s *server) get(t testing.TB, url string) reply {
	t.Helper()
	return do(t, s.shared(), newRequest(t, http.MethodGet, url, "", nil))
}

// serverState explains a failed request when the server has died; the
// stderr tail is shown once per run.
func serverState() string {
	if srv == nil || srv.alive() {
		return ""
	}
	srv.mu.Lock()
	p := srv.proc
	srv.mu.Unlock()
	return fmt.Sprintf("\n(the webhook server has exited: %v; it is restarted for the next test)\nstderr tail:\n%s",
		p.waitErr, tail(p.stderrPath))
}

// readAll reads and closes a response body (empty on a read error).
func readAll(resp *http.Response) []byte {
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return data
}
