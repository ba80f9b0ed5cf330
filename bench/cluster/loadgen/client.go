package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// apiFlags are the connection flags every subcommand that talks to the
// apiserver takes.
type apiFlags struct {
	server, ca, cert, key string
}

func (f *apiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "apiserver URL (https://127.0.0.1:PORT)")
	fs.StringVar(&f.ca, "ca", "", "CA certificate file of the apiserver")
	fs.StringVar(&f.cert, "cert", "", "client certificate file")
	fs.StringVar(&f.key, "key", "", "client key file")
}

// apiClient is one HTTP/2 connection pool to the apiserver.
type apiClient struct {
	base string
	http *http.Client
}

func newAPIClient(f *apiFlags, conns int) (*apiClient, error) {
	if f.server == "" || f.ca == "" || f.cert == "" || f.key == "" {
		return nil, fmt.Errorf("-server, -ca, -cert and -key are required")
	}
	caPEM, err := os.ReadFile(f.ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s: no certificate", f.ca)
	}
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
	}
	return &apiClient{base: strings.TrimRight(f.server, "/"), http: &http.Client{Transport: tr, Timeout: 60 * time.Second}}, nil
}

// do sends one request and reads the whole answer.
func (c *apiClient) do(method, path string, body []byte) (int, []byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, data, resp.Header, err
}

// getJSON GETs path into out, failing on anything but 200.
func (c *apiClient) getJSON(path string, out interface{}) error {
	code, data, _, err := c.do("GET", path, nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, firstLine(data))
	}
	return json.Unmarshal(data, out)
}

func firstLine(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
