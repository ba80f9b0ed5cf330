package e2e

// TestFakeAPI checks the fake apiserver on its own, with net/http as a
// client would use it, so that a failure of the webhook's API tests is the
// webhook's and not the fake's.

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeClient talks to a fakeAPI with the token of the moment.
type fakeClient struct {
	a      *fakeAPI
	token  string
	client *http.Client
}

func newFakeClient(t testing.TB, a *fakeAPI, h2 bool) *fakeClient {
	t.Helper()
	pool, err := loadCAPool(a.caFile)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: h2}
	c := &fakeClient{a: a, token: "fake-token-1", client: &http.Client{Transport: tr}}
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

func (c *fakeClient) get(t testing.TB, p string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.a.url()+p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	return c.client.Do(req)
}

// getJSON does a GET that must answer want, and decodes the body.
func (c *fakeClient) getJSON(t testing.TB, p string, want int) obj {
	t.Helper()
	resp, err := c.get(t, p)
	if err != nil {
		t.Fatalf("GET %s: %v", p, err)
	}
	body := readAll(resp)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: expected %d, got %d: %s", p, want, resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q, expected application/json", p, ct)
	}
	o, err := decodeObject(body)
	if err != nil {
		t.Fatalf("GET %s: %v: %s", p, err, body)
	}
	return o
}

func checkStatus(t testing.TB, o obj, code int, reason string) {
	t.Helper()
	if o["kind"] != "Status" || o["apiVersion"] != "v1" || o["status"] != "Failure" ||
		fmt.Sprint(o["code"]) != strconv.Itoa(code) || o["reason"] != reason {
		t.Errorf("expected a Status %d %s, got %s", code, reason, compact(o))
	}
	if _, ok := o["metadata"].(obj); !ok {
		t.Errorf("Status without metadata {}: %s", compact(o))
	}
}

// watchStream reads a watch response line by line.
type watchStream struct {
	resp  *http.Response
	lines chan string
	err   chan error
}

func (c *fakeClient) watch(t testing.TB, query string) *watchStream {
	t.Helper()
	resp, err := c.get(t, "/api/v1/namespaces/ns1/configmaps?"+query)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	s := &watchStream{resp: resp, lines: make(chan string, 100), err: make(chan error, 1)}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		return s
	}
	go func() {
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				s.err <- err
				return
			}
			s.lines <- line
		}
	}()
	return s
}

// next is the next event, decoded; it fails after within.
func (s *watchStream) next(t testing.TB, within time.Duration) obj {
	t.Helper()
	select {
	case line := <-s.lines:
		o, err := decodeObject([]byte(line))
		if err != nil {
			t.Fatalf("watch line is not a JSON object: %v: %q", err, line)
		}
		return o
	case err := <-s.err:
		t.Fatalf("watch stream ended: %v", err)
	case <-time.After(within):
		t.Fatalf("no watch event within %v", within)
	}
	return nil
}

// end waits for the stream to end and returns how it ended.
func (s *watchStream) end(t testing.TB, within time.Duration) error {
	t.Helper()
	select {
	case line := <-s.lines:
		t.Fatalf("expected the stream to end, got %q", line)
	case err := <-s.err:
		return err
	case <-time.After(within):
		t.Fatalf("the watch stream did not end within %v", within)
	}
	return nil
}

func eventRV(o obj) string {
	rv, _ := pathStr(o, "object", "metadata", "resourceVersion")
	return rv
}

const fakeSel = "fieldSelector=metadata.name%3Dcm1"

func TestFakeAPI(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putConfigMap("ns1", "cm1", map[string]string{"profiles.json": `{"v":1}`})
	a.putConfigMap("ns1", "other", map[string]string{"x": "y"})
	a.putNode("node-a", map[string]string{"nvidia.com/gpu.count": "4"})
	c := newFakeClient(t, a, false)

	t.Run("auth", func(t *testing.T) {
		anon := &fakeClient{a: a, client: c.client}
		checkStatus(t, anon.getJSON(t, "/api/v1/nodes/node-a", 401), 401, "Unauthorized")
		bad := &fakeClient{a: a, token: "nope", client: c.client}
		checkStatus(t, bad.getJSON(t, "/api/v1/nodes/node-a", 401), 401, "Unauthorized")
		c.getJSON(t, "/api/v1/nodes/node-a", 200)
		a.setToken(t, "fake-token-2\n")
		checkStatus(t, c.getJSON(t, "/api/v1/nodes/node-a", 401), 401, "Unauthorized")
		c.token = "fake-token-2"
		c.getJSON(t, "/api/v1/nodes/node-a", 200)
		a.setToken(t, "fake-token-1")
		c.token = "fake-token-1"
	})

	t.Run("get", func(t *testing.T) {
		n := c.getJSON(t, "/api/v1/nodes/node-a", 200)
		if v, _ := pathStr(n, "metadata", "labels", "nvidia.com/gpu.count"); v != "4" || n["kind"] != "Node" {
			t.Errorf("node: %s", compact(n))
		}
		st := c.getJSON(t, "/api/v1/nodes/nope", 404)
		checkStatus(t, st, 404, "NotFound")
		if m, _ := pathStr(st, "message"); m != `nodes "nope" not found` {
			t.Errorf("404 message %q", m)
		}
		cm := c.getJSON(t, "/api/v1/namespaces/ns1/configmaps/cm1", 200)
		if cm["kind"] != "ConfigMap" || cm["apiVersion"] != "v1" {
			t.Errorf("configmap: %s", compact(cm))
		}
		if v, _ := pathStr(cm, "data", "profiles.json"); v != `{"v":1}` {
			t.Errorf("configmap data: %s", compact(cm))
		}
		for _, f := range []string{"name", "namespace", "uid", "resourceVersion", "creationTimestamp"} {
			if _, ok := pathStr(cm, "metadata", f); !ok {
				t.Errorf("configmap metadata.%s missing: %s", f, compact(cm))
			}
		}
		a.putConfigMapFull("ns1", "bin", map[string]string{"a": "b"}, map[string][]byte{"blob": {0, 1, 2}})
		bin := c.getJSON(t, "/api/v1/namespaces/ns1/configmaps/bin", 200)
		if v, _ := pathStr(bin, "binaryData", "blob"); v != "AAEC" {
			t.Errorf("binaryData: %s", compact(bin))
		}
		checkStatus(t, c.getJSON(t, "/api/v1/namespaces/ns1/configmaps/nope", 404), 404, "NotFound")
	})

	t.Run("list", func(t *testing.T) {
		l := c.getJSON(t, "/api/v1/namespaces/ns1/configmaps?"+fakeSel, 200)
		if l["kind"] != "ConfigMapList" || l["apiVersion"] != "v1" {
			t.Errorf("list: %s", compact(l))
		}
		if rv, _ := pathStr(l, "metadata", "resourceVersion"); rv != strconv.FormatInt(a.currentRV(), 10) {
			t.Errorf("list resourceVersion %q, expected %d", rv, a.currentRV())
		}
		items := pathArr(l, "items")
		if len(items) != 1 {
			t.Fatalf("items: %s", compact(l))
		}
		if _, has := items[0].(obj)["kind"]; has {
			t.Errorf("list items carry no kind in the apiserver's output: %s", compact(items[0]))
		}
		if n, _ := pathStr(items[0], "metadata", "name"); n != "cm1" {
			t.Errorf("item name %q", n)
		}
		checkStatus(t, c.getJSON(t, "/api/v1/namespaces/ns1/configmaps", 403), 403, "Forbidden")
		checkStatus(t, c.getJSON(t, "/api/v1/namespaces/ns1/configmaps?fieldSelector=spec.x%3Dy", 400), 400, "BadRequest")
		empty := c.getJSON(t, "/api/v1/namespaces/ns2/configmaps?"+fakeSel, 200)
		if items := pathArr(empty, "items"); items == nil || len(items) != 0 {
			t.Errorf("empty list: expected items [], got %s", compact(empty))
		}
	})

	t.Run("watch", func(t *testing.T) {
		rv := a.currentRV()
		s := c.watch(t, fmt.Sprintf("watch=1&%s&resourceVersion=%d&allowWatchBookmarks=true&timeoutSeconds=2", fakeSel, rv))
		if s.resp.StatusCode != 200 || s.resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("watch: %d %q", s.resp.StatusCode, s.resp.Header.Get("Content-Type"))
		}
		if te := s.resp.TransferEncoding; len(te) != 1 || te[0] != "chunked" {
			t.Errorf("watch Transfer-Encoding: %v, expected chunked", te)
		}
		started := time.Now()
		a.putConfigMap("ns1", "other", map[string]string{"x": "z"}) // not selected
		mod := a.putConfigMap("ns1", "cm1", map[string]string{"profiles.json": `{"v":2}`})
		ev := s.next(t, time.Second)
		if ev["type"] != "MODIFIED" || eventRV(ev) != strconv.FormatInt(mod, 10) {
			t.Errorf("expected MODIFIED at %d, got %s", mod, compact(ev))
		}
		if k, _ := pathStr(ev, "object", "kind"); k != "ConfigMap" {
			t.Errorf("event object kind %q", k)
		}
		a.waitDelivered(t, mod, time.Second)
		bm, n := a.bookmark()
		if n != 1 {
			t.Errorf("bookmark sent to %d watches, expected 1", n)
		}
		ev = s.next(t, time.Second)
		if ev["type"] != "BOOKMARK" || eventRV(ev) != strconv.FormatInt(bm, 10) {
			t.Errorf("expected BOOKMARK at %d, got %s", bm, compact(ev))
		}
		if md := pathObj(ev, "object", "metadata"); len(md) != 2 || md["creationTimestamp"] != nil {
			t.Errorf("bookmark metadata: expected resourceVersion (and creationTimestamp null) only, got %s", compact(md))
		}
		del := a.deleteConfigMap("ns1", "cm1")
		ev = s.next(t, time.Second)
		if ev["type"] != "DELETED" || eventRV(ev) != strconv.FormatInt(del, 10) {
			t.Errorf("expected DELETED at %d, got %s", del, compact(ev))
		}
		add := a.putConfigMap("ns1", "cm1", map[string]string{"profiles.json": `{"v":3}`})
		ev = s.next(t, time.Second)
		if ev["type"] != "ADDED" || eventRV(ev) != strconv.FormatInt(add, 10) {
			t.Errorf("expected ADDED at %d, got %s", add, compact(ev))
		}
		if err := s.end(t, 3*time.Second); err != io.EOF {
			t.Errorf("timeoutSeconds: expected a clean end (EOF), got %v", err)
		}
		if took := time.Since(started); took < 1500*time.Millisecond || took > 2800*time.Millisecond {
			t.Errorf("timeoutSeconds=2: the stream ended after %v", took)
		}

		// From an older resourceVersion: the history since then.
		s = c.watch(t, fmt.Sprintf("watch=true&%s&resourceVersion=%d&timeoutSeconds=1", fakeSel, rv))
		for _, want := range []string{"MODIFIED", "DELETED", "ADDED"} {
			if ev := s.next(t, time.Second); ev["type"] != want {
				t.Errorf("replay: expected %s, got %s", want, compact(ev))
			}
		}
		// Without a resourceVersion: what exists now, as ADDED.
		s = c.watch(t, fmt.Sprintf("watch=1&%s&timeoutSeconds=1", fakeSel))
		if ev := s.next(t, time.Second); ev["type"] != "ADDED" || eventRV(ev) != strconv.FormatInt(add, 10) {
			t.Errorf("watch without resourceVersion: expected ADDED at %d, got %s", add, compact(ev))
		}
	})

	t.Run("expired", func(t *testing.T) {
		old := a.currentRV()
		a.putConfigMap("ns1", "cm1", map[string]string{"profiles.json": `{"v":4}`})
		a.compact()
		st := c.getJSON(t, fmt.Sprintf("/api/v1/namespaces/ns1/configmaps?watch=1&%s&resourceVersion=%d", fakeSel, old), 410)
		checkStatus(t, st, 410, "Expired")
		if m, _ := pathStr(st, "message"); !strings.HasPrefix(m, fmt.Sprintf("too old resource version: %d (", old)) {
			t.Errorf("410 message %q", m)
		}
		a.setExpiredAsEvent(true)
		s := c.watch(t, fmt.Sprintf("watch=1&%s&resourceVersion=%d", fakeSel, old))
		if s.resp.StatusCode != 200 {
			t.Fatalf("expired as event: status %d", s.resp.StatusCode)
		}
		ev := s.next(t, time.Second)
		if ev["type"] != "ERROR" {
			t.Fatalf("expected an ERROR event, got %s", compact(ev))
		}
		checkStatus(t, pathObj(ev, "object"), 410, "Expired")
		if err := s.end(t, time.Second); err != io.EOF {
			t.Errorf("after the ERROR event: expected EOF, got %v", err)
		}
		a.setExpiredAsEvent(false)
		// From the current resourceVersion the watch works.
		s = c.watch(t, fmt.Sprintf("watch=1&%s&resourceVersion=%d&timeoutSeconds=1", fakeSel, a.currentRV()))
		if s.resp.StatusCode != 200 {
			t.Errorf("watch from the current resourceVersion after compaction: %d", s.resp.StatusCode)
		}
		reqs := a.requests()
		expired := 0
		for _, r := range reqs {
			if r.Expired {
				expired++
			}
		}
		if expired != 2 {
			t.Errorf("request log: expected 2 expired watches, got %d:\n%s", expired, a.logSince(0))
		}

		// watchError(): an ERROR event with the Status, then the end.
		s = c.watch(t, fmt.Sprintf("watch=1&%s&resourceVersion=%d", fakeSel, a.currentRV()))
		waitFor(t, time.Second, "the watch to be open", func() bool { return a.openWatches() >= 1 })
		a.watchError(500)
		if ev := s.next(t, time.Second); ev["type"] != "ERROR" {
			t.Errorf("watchError: expected an ERROR event, got %s", compact(ev))
		} else {
			checkStatus(t, pathObj(ev, "object"), 500, "InternalError")
		}
		if err := s.end(t, time.Second); err != io.EOF {
			t.Errorf("watchError: expected the watch to end with EOF, got %v", err)
		}
		// endWatches(): open watches end cleanly.
		s = c.watch(t, fmt.Sprintf("watch=1&%s&resourceVersion=%d", fakeSel, a.currentRV()))
		waitFor(t, time.Second, "the watch to be open", func() bool { return a.openWatches() >= 1 })
		a.endWatches()
		if err := s.end(t, time.Second); err != io.EOF {
			t.Errorf("endWatches: expected the watch to end with EOF, got %v", err)
		}
		// expire(): open watches end cleanly, the edit is seen by none.
		s = c.watch(t, fmt.Sprintf("watch=1&%s&resourceVersion=%d", fakeSel, a.currentRV()))
		waitFor(t, time.Second, "the watch to be open", func() bool { return a.openWatches() >= 1 })
		a.expire(func(l *fakeAPI) { l.putLocked("ns1", "cm1", map[string]string{"profiles.json": `{"v":5}`}, nil, nil) })
		if err := s.end(t, time.Second); err != io.EOF {
			t.Errorf("expire: expected the watch to end with EOF, got %v", err)
		}
	})

	t.Run("cut mid-event", func(t *testing.T) {
		s := c.watch(t, fmt.Sprintf("watch=1&%s&resourceVersion=%d", fakeSel, a.currentRV()))
		waitFor(t, time.Second, "the watch to be open", func() bool { return a.openWatches() >= 1 })
		a.cutNextEvent()
		a.putConfigMap("ns1", "cm1", map[string]string{"profiles.json": `{"v":6}`})
		err := s.end(t, 2*time.Second)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut: expected an unexpected EOF inside the chunked body, got %v", err)
		}
	})

	t.Run("split chunks", func(t *testing.T) {
		a.setSplit(4, 20*time.Millisecond)
		defer a.setSplit(0, 0)
		chunks := rawWatchChunks(t, a, func() {
			a.putConfigMaps("ns1", "cm1", map[string]string{"profiles.json": `{"v":7}`},
				map[string]string{"profiles.json": `{"v":8}`})
		})
		if len(chunks) != 4 {
			t.Errorf("expected the two events in 4 chunks, got %d: %q", len(chunks), chunks)
		}
		joined := strings.Join(chunks, "")
		lines := strings.Split(strings.TrimSuffix(joined, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("expected 2 lines, got %q", joined)
		}
		midLine := 0
		for _, ch := range chunks[:len(chunks)-1] {
			if !strings.HasSuffix(ch, "\n") {
				midLine++
			}
		}
		if midLine < 2 {
			t.Errorf("expected chunk boundaries inside lines, got %q", chunks)
		}
		for _, l := range lines {
			if _, err := decodeObject([]byte(l)); err != nil {
				t.Errorf("line %q: %v", l, err)
			}
		}
	})

	t.Run("delay and failure", func(t *testing.T) {
		a.setDelay("/api/v1/nodes/", 300*time.Millisecond)
		start := time.Now()
		c.getJSON(t, "/api/v1/nodes/node-a", 200)
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Errorf("delay: answered after %v", took)
		}
		a.setDelay("/api/v1/nodes/", 0)
		a.setFailure("/api/v1/nodes/", 500)
		checkStatus(t, c.getJSON(t, "/api/v1/nodes/node-a", 500), 500, "InternalError")
		a.setFailure("/api/v1/nodes/", 0)
		c.getJSON(t, "/api/v1/nodes/node-a", 200)
	})

	t.Run("down and up", func(t *testing.T) {
		s := c.watch(t, fmt.Sprintf("watch=1&%s&resourceVersion=%d", fakeSel, a.currentRV()))
		waitFor(t, time.Second, "the watch to be open", func() bool { return a.openWatches() >= 1 })
		a.stop()
		if err := s.end(t, 2*time.Second); err == nil {
			t.Errorf("down: the open watch should end")
		}
		c.client.Transport.(*http.Transport).CloseIdleConnections()
		if resp, err := c.get(t, "/api/v1/nodes/node-a"); err == nil {
			resp.Body.Close()
			t.Fatalf("down: expected the connection to fail, got %d", resp.StatusCode)
		}
		a.start(t)
		c.getJSON(t, "/api/v1/nodes/node-a", 200)
	})

	t.Run("counts", func(t *testing.T) {
		mark := a.requestMark()
		for i := 0; i < 3; i++ {
			c.getJSON(t, "/api/v1/nodes/node-a", 200)
		}
		c.getJSON(t, "/api/v1/namespaces/ns1/configmaps/cm1", 200)
		if n := a.count(mark, isKind("get-node")); n != 3 {
			t.Errorf("get-node count %d", n)
		}
		if n := a.count(mark, isKind("get-configmap")); n != 1 {
			t.Errorf("get-configmap count %d", n)
		}
	})
}

// TestFakeAPIHTTP2: offered h2, the fake streams a watch over it.
func TestFakeAPIHTTP2(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t, withHTTP2)
	a.putConfigMap("ns1", "cm1", map[string]string{"k": "1"})
	c := newFakeClient(t, a, true)
	s := c.watch(t, fmt.Sprintf("watch=1&%s&resourceVersion=%d&timeoutSeconds=1", fakeSel, a.currentRV()))
	if s.resp.ProtoMajor != 2 {
		t.Fatalf("expected HTTP/2, got %s", s.resp.Proto)
	}
	rv := a.putConfigMap("ns1", "cm1", map[string]string{"k": "2"})
	if ev := s.next(t, time.Second); ev["type"] != "MODIFIED" || eventRV(ev) != strconv.FormatInt(rv, 10) {
		t.Errorf("h2 watch: %s", compact(ev))
	}
	if err := s.end(t, 2*time.Second); err != io.EOF {
		t.Errorf("h2 watch end: %v", err)
	}
}

// rawWatchChunks opens a watch over a raw TLS connection, runs trigger, and
// returns the chunks (their data) that carry the events, up to a chunk
// ending a line with nothing more to come for 300 ms.
func rawWatchChunks(t *testing.T, a *fakeAPI, trigger func()) []string {
	t.Helper()
	pool, err := loadCAPool(a.caFile)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", a.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := url.Values{"watch": {"1"}, "fieldSelector": {"metadata.name=cm1"},
		"resourceVersion": {strconv.FormatInt(a.currentRV(), 10)}}
	fmt.Fprintf(conn, "GET /api/v1/namespaces/ns1/configmaps?%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer fake-token-1\r\nAccept: application/json\r\n\r\n",
		q.Encode(), a.addr)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("raw watch: %d", resp.StatusCode)
	}
	if te := resp.TransferEncoding; len(te) != 1 || te[0] != "chunked" {
		t.Fatalf("raw watch: Transfer-Encoding %v", te)
	}
	// ReadResponse wrapped the body in a chunked reader; read the framing
	// ourselves from br instead, which holds everything after the headers.
	trigger()
	var chunks []string
	for {
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		sizeLine, err := br.ReadString('\n')
		if err != nil {
			if len(chunks) > 0 && strings.HasSuffix(chunks[len(chunks)-1], "\n") {
				return chunks
			}
			t.Fatalf("reading a chunk size: %v (chunks so far %q)", err, chunks)
		}
		size, err := strconv.ParseInt(strings.TrimSpace(sizeLine), 16, 64)
		if err != nil {
			t.Fatalf("chunk size line %q: %v", sizeLine, err)
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(br, data); err != nil {
			t.Fatalf("chunk data: %v", err)
		}
		if size == 0 {
			return chunks
		}
		chunks = append(chunks, string(data[:size]))
	}
}

// waitFor polls cond until it holds, within d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// send does a request with a JSON body and decodes the answer.
func (c *fakeClient) send(t testing.TB, method, p string, body obj) (int, obj) {
	t.Helper()
	req, err := http.NewRequest(method, c.a.url()+p, strings.NewReader(string(mustMarshal(body))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, p, err)
	}
	o, err := decodeObject(readAll(resp))
	if err != nil {
		t.Fatalf("%s %s: %v", method, p, err)
	}
	return resp.StatusCode, o
}

// TestFakeAPIConfigMapWrites: creates and updates of a ConfigMap as the
// apiserver answers them: 201 with a resourceVersion, 409 AlreadyExists for
// a name taken, 404 for an update of none, 409 Conflict for a stale
// resourceVersion, 200 for the current one (labels and annotations kept as
// sent); a lost race and a refused write as the knobs say.
func TestFakeAPIConfigMapWrites(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	c := newFakeClient(t, a, false)
	coll := "/api/v1/namespaces/ns/configmaps"
	cm := func(rv string, v string) obj {
		meta := obj{"name": "copy", "namespace": "ns", "labels": obj{"l": "1"}, "annotations": obj{"a": v}}
		if rv != "" {
			meta["resourceVersion"] = rv
		}
		return obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": obj{"k": v}}
	}
	st, o := c.send(t, http.MethodPut, coll+"/copy", cm("", "x"))
	if st != http.StatusNotFound {
		t.Fatalf("update of none: %d %s", st, compact(o))
	}
	checkStatus(t, o, 404, "NotFound")
	st, o = c.send(t, http.MethodPost, coll, cm("", "v1"))
	rv1, _ := pathStr(o, "metadata", "resourceVersion")
	if st != http.StatusCreated || rv1 == "" {
		t.Fatalf("create: %d %s", st, compact(o))
	}
	st, o = c.send(t, http.MethodPost, coll, cm("", "v1"))
	if st != http.StatusConflict {
		t.Fatalf("create of a name taken: %d", st)
	}
	checkStatus(t, o, 409, "AlreadyExists")
	st, o = c.send(t, http.MethodPut, coll+"/copy", cm("1", "v2"))
	if st != http.StatusConflict {
		t.Fatalf("update with a stale resourceVersion: %d", st)
	}
	checkStatus(t, o, 409, "Conflict")
	st, o = c.send(t, http.MethodPut, coll+"/copy", cm(rv1, "v2"))
	if rv2, _ := pathStr(o, "metadata", "resourceVersion"); st != http.StatusOK || rv2 == rv1 {
		t.Fatalf("update: %d %s", st, compact(o))
	}
	got := c.getJSON(t, coll+"/copy", 200)
	if v, _ := pathStr(got, "data", "k"); v != "v2" {
		t.Errorf("after the update: data %s", compact(got["data"]))
	}
	if v, _ := pathStr(got, "metadata", "annotations", "a"); v != "v2" {
		t.Errorf("after the update: annotations %s", compact(path(got, "metadata", "annotations")))
	}
	if v, _ := pathStr(got, "metadata", "labels", "l"); v != "1" {
		t.Errorf("after the update: labels %s", compact(path(got, "metadata", "labels")))
	}
	rv3, _ := pathStr(got, "metadata", "resourceVersion")
	a.raceNextWrites(1)
	if st, _ = c.send(t, http.MethodPut, coll+"/copy", cm(rv3, "v3")); st != http.StatusConflict {
		t.Errorf("a lost race: %d, expected 409", st)
	}
	if v, _ := pathStr(c.getJSON(t, coll+"/copy", 200), "data", "k"); v != "v3" {
		t.Errorf("after a lost race: the other writer's v3 is not stored (%q)", v)
	}
	a.setWriteFailure(http.StatusForbidden)
	if st, o = c.send(t, http.MethodPost, coll, cm("", "v4")); st != http.StatusForbidden {
		t.Errorf("a refused write: %d", st)
	}
	checkStatus(t, o, 403, "Forbidden")
}
