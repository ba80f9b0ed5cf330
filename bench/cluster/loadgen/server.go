package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// serverFlags name what loadgen reads of the webhook itself: its own
// latency histogram (rdma-webhook's /metrics, behind --metrics-auth) and
// the TCP connections to its port, to tell the time the webhook spends from
// the time its callers spend reaching it.
type serverFlags struct {
	metricsURL, token, ca string
	ports                 string
}

func (s *serverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.metricsURL, "webhook-metrics", "", "rdma-webhook's /metrics URL (https)")
	fs.StringVar(&s.token, "webhook-token", "", "file with a bearer token allowed to read it")
	fs.StringVar(&s.ca, "webhook-ca", "", "CA of its serving certificate")
	fs.StringVar(&s.ports, "conn-ports", "", "NAME=PORT,... servers whose TCP connections to count")
}

const webhookLatency = "rdma_webhook_admission_duration_seconds"

func scrapeWebhook(s *serverFlags) (map[string]Series, error) {
	if s.metricsURL == "" {
		return map[string]Series{}, nil
	}
	pem, err := os.ReadFile(s.ca)
	if err != nil {
		return nil, err
	}
	tok, err := os.ReadFile(s.token)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	req, err := http.NewRequest("GET", s.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d %s", s.metricsURL, resp.StatusCode, firstLine(data))
	}
	return parseHistograms(data, []string{webhookLatency})
}

// Conns is what /proc/net/tcp{,6} shows of one server's port: connections
// established now, and the peer ports among them (to tell new connections
// from kept-alive ones).
type Conns struct {
	Established int `json:"established"`
	New         int `json:"new"` // established at the end and not at the start
	peers       map[string]bool
}

func countConns(spec string) (map[string]Conns, error) {
	out := map[string]Conns{}
	if spec == "" {
		return out, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		name, p, ok := strings.Cut(kv, "=")
		port, err := strconv.Atoi(p)
		if !ok || err != nil {
			return nil, fmt.Errorf("-conn-ports %q: NAME=PORT,...", spec)
		}
		c := Conns{peers: map[string]bool{}}
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(data), "\n")[1:] {
				fl := strings.Fields(line)
				// local_address rem_address st: the server's side of a
				// connection has the port as its local one; 01 = ESTABLISHED.
				if len(fl) < 4 || fl[3] != "01" || !hasPort(fl[1], port) {
					continue
				}
				c.Established++
				c.peers[fl[2]] = true
			}
		}
		out[name] = c
	}
	return out, nil
}

func hasPort(addr string, port int) bool {
	i := strings.LastIndexByte(addr, ':')
	v, err := strconv.ParseUint(addr[i+1:], 16, 32)
	return i >= 0 && err == nil && int(v) == port
}

func diffConns(before, after map[string]Conns) map[string]Conns {
	out := map[string]Conns{}
	for name, a := range after {
		d := Conns{Established: a.Established}
		for p := range a.peers {
			if !before[name].peers[p] {
				d.New++
			}
		}
		out[name] = d
	}
	return out
}
