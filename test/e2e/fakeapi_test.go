package e2e

// fakeAPI: an in-process stand-in for the kube-apiserver, for the webhook's
// Kubernetes API client (docs/operations.md "The Kubernetes API": node labels, envFrom keys, profiles
// from a ConfigMap). It follows the API concepts documentation
// (https://kubernetes.io/docs/reference/using-api/api-concepts/): list,
// watch from a resourceVersion, bookmarks, 410 Gone as an HTTP status or as
// an ERROR event, chunked streaming, Status objects for every error, and
// objects serialised as the apiserver does (kubectl get -o json). Only what
// the webhook's ServiceAccount may call is served:
//
//	GET /api/v1/namespaces/NS/configmaps?fieldSelector=metadata.name=N  list
//	GET /api/v1/namespaces/NS/configmaps?watch=1&...                     watch
//	GET /api/v1/namespaces/NS/configmaps/NAME                            get
//	GET /api/v1/nodes/NAME                                               get
//	GET /api/v1/namespaces/NAME                                          get-namespace
//	POST /api/v1/namespaces/NS/configmaps                                create-configmap
//	PUT /api/v1/namespaces/NS/configmaps/NAME                            update-configmap
//	POST /apis/events.k8s.io/v1/namespaces/NS/events                     create-event
//	PATCH /apis/events.k8s.io/v1/namespaces/NS/events/NAME (merge patch) patch-event
//	POST /apis/authentication.k8s.io/v1/tokenreviews                     create-tokenreview
//	POST /apis/authorization.k8s.io/v1/subjectaccessreviews              create-subjectaccessreview
//
// (the reviews: fakeapi_reviews_test.go)
//
// A ConfigMap's create is refused 409 AlreadyExists when the name is
// taken; an update 404 when there is none, and 409 Conflict when its
// metadata.resourceVersion is not the stored one (optimistic concurrency; an
// update without one is unconditional, as the apiserver allows for
// ConfigMaps). Both keep the body's labels, annotations and data, give a
// new resourceVersion and send the watch event.
//
// Events are validated as the apiserver validates an events.k8s.io/v1
// create (the required fields, their limits, the namespace rule) and
// stored; a patch may change only the series, as an update of such an
// Event may change nothing else the webhook sends.
//
// Tests steer it: edit, delete and re-create ConfigMaps, compact, cut a
// stream mid-event, split events over chunks, delay or fail paths, rotate
// the bearer token, take the whole server down and up on the same port,
// and read the log of every request it received.

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// apiRequest is one request the fake received, as the tests inspect it.
type apiRequest struct {
	At     time.Time
	Method string
	Path   string
	Query  url.Values
	Token  string // the bearer token presented ("" when none)
	Kind   string // "list", "watch", "get-configmap", "get-node", "get-namespace", "other"
	Status int    // the HTTP status sent (0 until sent)
	// Expired: the request was answered "410 Gone", as a status or (with
	// expiredAsEvent) as the first event of a 200 stream.
	Expired bool
	Proto   string
	// Body and ContentType of a request that has one (the Events' writes).
	Body        []byte
	ContentType string
}

func (r apiRequest) String() string {
	q, _ := url.QueryUnescape(r.Query.Encode())
	return fmt.Sprintf("%s %s %s?%s -> %d%s", r.At.Format("15:04:05.000"), r.Kind, r.Path, q, r.Status,
		map[bool]string{true: " (expired)", false: ""}[r.Expired])
}

// fakeConfigMap is a stored ConfigMap.
type fakeConfigMap struct {
	ns, name   string
	uid        string
	created    time.Time
	rv         int64
	data       map[string]string
	binaryData map[string][]byte
	// written: made by a create or update through the API, which keeps
	// exactly its labels and annotations (not those of a kubectl apply).
	written     bool
	labels      map[string]string
	annotations map[string]string
}

// fakeEvent is one entry of the watch history (what etcd would still hold
// until compaction).
type fakeEvent struct {
	typ  string
	rv   int64
	ns   string
	name string
	line []byte // the encoded {"type":...,"object":...} line, with "\n"
}

// fakePayload is what one watcher is sent in one go: one or more event lines.
type fakePayload struct {
	data []byte
	rvs  []int64
}

type fakeWatcher struct {
	ns, name  string // name "" watches the whole namespace
	bookmarks bool
	ch        chan fakePayload
	done      chan struct{} // closed when the fake ends the stream
	closed    bool
	// endAfterQueued: end the stream once what is queued has been written.
	endAfterQueued bool
}

type fakeAPI struct {
	t         testing.TB
	addr      string // 127.0.0.1:PORT, kept across down/up
	dir       string
	caFile    string
	tokenFile string
	cert      tls.Certificate

	mu        sync.Mutex
	srv       *http.Server
	up        bool
	rv        int64
	compacted int64 // a watch from an RV below this is "too old"
	cms       map[string]*fakeConfigMap
	nodes     map[string]obj
	nss       map[string]obj // Namespaces by name
	deploys   map[string]obj // "ns/name" -> Deployment
	events    map[string]obj // events.k8s.io Events by "namespace/name"
	history   []fakeEvent
	watchers  map[*fakeWatcher]struct{}
	reqs      []*apiRequest
	delivered map[int64]time.Time // event RV -> when it was first flushed to a watcher
	uidSeq    int

	// Knobs (set through the methods below).
	expiredAsEvent bool
	splitPieces    int
	splitGap       time.Duration
	cutNext        bool
	delays         map[string]time.Duration // path prefix -> delay before answering
	rawGets        map[string][]byte        // exact path -> a 200 body, for huge objects
	failures       map[string]int           // path prefix -> HTTP status to answer
	rbacByName     bool                     // list/watch need fieldSelector=metadata.name=
	writeFailure   int                      // answer every ConfigMap create/update with this
	raceWrites     int                      // the next N ConfigMap writes lose a race (see raceNextWrites)
	http2          bool
	// TokenReview and SubjectAccessReview (fakeapi_reviews_test.go).
	reviewUsers    map[string]fakeUser // bearer token -> the user a TokenReview vouches for
	metricsReaders map[string]bool     // usernames allowed get on /metrics
}

// startFakeAPI serves on a fresh loopback port with a certificate from
// gen-certs (SANs 127.0.0.1 and localhost; caFile is its CA) and accepts
// the token "fake-token-1" (tokenFile holds it). It is stopped when the
// test ends.
func startFakeAPI(t testing.TB, opts ...func(*fakeAPI)) *fakeAPI {
	t.Helper()
	dir := t.TempDir()
	if err := copyCerts(dir, "--service", "kubernetes", "--namespace", "default"); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	a := &fakeAPI{
		t: t, dir: dir, caFile: filepath.Join(dir, "ca.crt"),
		tokenFile: filepath.Join(dir, "token"), cert: cert,
		rv: 1000, cms: map[string]*fakeConfigMap{}, nodes: map[string]obj{}, deploys: map[string]obj{},
		nss:      map[string]obj{},
		events:   map[string]obj{},
		watchers: map[*fakeWatcher]struct{}{}, delivered: map[int64]time.Time{},
		delays: map[string]time.Duration{}, failures: map[string]int{}, rawGets: map[string][]byte{},
		rbacByName: true,
	}
	// The namespaces the tests' pods are in exist, as a pod's always does
	// (the apiserver refuses a pod in a namespace that does not), for the
	// webhook's Namespace lookups (Pod Security, report mode, teams).
	a.putNamespace(jobNS, nil)
	a.putNamespace("default", nil)
	for _, o := range opts {
		o(a)
	}
	a.setToken(t, "fake-token-1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.addr = ln.Addr().String()
	a.serveOn(ln)
	t.Cleanup(a.stop)
	return a
}

// withHTTP2 offers h2 through ALPN, as the real apiserver does (the default
// fake speaks HTTP/1.1 only, so that watches are chunked).
func withHTTP2(a *fakeAPI) { a.http2 = true }

func (a *fakeAPI) url() string { return "https://" + a.addr }

// kubeFlags are the serve flags that point the webhook at this fake, with
// --metrics-auth none: the suites that use them read /metrics over plain
// HTTP for what they test (lookups, Events, the last good copy), and the
// access to /metrics itself is metricsauth_test.go's (which takes
// apiFlags, the default's --metrics-auth kubernetes).
func (a *fakeAPI) kubeFlags() []string {
	return append(a.apiFlags(), "--metrics-auth", "none")
}

// apiFlags point the webhook at this fake and nothing else.
func (a *fakeAPI) apiFlags() []string {
	return []string{"--kube-api", a.url(), "--kube-ca", a.caFile, "--kube-token-file", a.tokenFile}
}

// ---- server life cycle -------------------------------------------------

func (a *fakeAPI) serveOn(ln net.Listener) {
	srv := &http.Server{
		Handler:   http.HandlerFunc(a.handle),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{a.cert}, MinVersion: tls.VersionTLS12},
		// The webhook closing connections (shutdown, cancelled lookups) is
		// normal here; keep the test output clean.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	if !a.http2 {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	a.mu.Lock()
	a.srv = srv
	a.up = true
	a.mu.Unlock()
	go func() { _ = srv.ServeTLS(ln, "", "") }()
}

// stop takes the server down: the listener is closed (connections are
// refused) and every open connection, watches included, is dropped.
func (a *fakeAPI) stop() {
	a.mu.Lock()
	srv := a.srv
	a.srv = nil
	a.up = false
	for w := range a.watchers {
		a.detachLocked(w)
	}
	a.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// start brings the server back on the same port.
func (a *fakeAPI) start(t testing.TB) {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", a.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("fake apiserver: listening again on %s: %v", a.addr, err)
	}
	a.serveOn(ln)
}

// setToken replaces the token file (write and rename, as the kubelet's
// projected volume does); the fake accepts only its trimmed content from
// now on.
func (a *fakeAPI) setToken(t testing.TB, content string) {
	t.Helper()
	tmp := a.tokenFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, a.tokenFile); err != nil {
		t.Fatal(err)
	}
}

// ---- knobs -------------------------------------------------------------

func (a *fakeAPI) setExpiredAsEvent(on bool) { a.mu.Lock(); a.expiredAsEvent = on; a.mu.Unlock() }

// setSplit writes every watch payload in pieces flushed gap apart, so that
// one event spans several chunks (and chunk boundaries fall mid-line).
func (a *fakeAPI) setSplit(pieces int, gap time.Duration) {
	a.mu.Lock()
	a.splitPieces, a.splitGap = pieces, gap
	a.mu.Unlock()
}

// cutNextEvent makes the next payload a watcher is sent end after half of
// its first line, with the connection closed (no terminating chunk).
func (a *fakeAPI) cutNextEvent() { a.mu.Lock(); a.cutNext = true; a.mu.Unlock() }

// setDelay holds every request whose path starts with prefix for d before
// answering (0 removes it).
func (a *fakeAPI) setDelay(prefix string, d time.Duration) { setByPrefix(a, a.delays, prefix, d) }

// setRawGet answers every GET of path with body (200), as given: for
// objects too large to keep as maps (one body may serve many paths).
func (a *fakeAPI) setRawGet(path string, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rawGets[path] = body
}

// setFailure answers every request whose path starts with prefix with
// status (a Status object; 0 removes it).
func (a *fakeAPI) setFailure(prefix string, status int) { setByPrefix(a, a.failures, prefix, status) }

// setByPrefix sets m[prefix] to v under a's lock; v's zero removes it, so
// that a test can undo what it set.
func setByPrefix[V comparable](a *fakeAPI, m map[string]V, prefix string, v V) {
	var zero V

	a.mu.Lock()
	defer a.mu.Unlock()
	if v == zero {
		delete(m, prefix)
	} else {
		m[prefix] = v
	}
}

// setWriteFailure answers every create and update of a ConfigMap with
// status (a Status object; 0 removes it); reads are not affected.
func (a *fakeAPI) setWriteFailure(status int) { a.mu.Lock(); a.writeFailure = status; a.mu.Unlock() }

// raceNextWrites makes the next n ConfigMap writes lose a race to another
// replica writing the same body just before: the object is created (or
// updated, with a new resourceVersion) from the body, and the write itself
// is answered 409 (AlreadyExists, or Conflict for the stale
// resourceVersion), as the apiserver answers the slower of two writers.
func (a *fakeAPI) raceNextWrites(n int) { a.mu.Lock(); a.raceWrites = n; a.mu.Unlock() }

// configMap is a copy of the stored ConfigMap's data, labels and
// annotations (nil when there is none), and its resourceVersion.
func (a *fakeAPI) configMap(ns, name string) (data, labels, annotations map[string]string, rv int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cm, ok := a.cms[ns+"/"+name]
	if !ok {
		return nil, nil, nil, 0
	}
	return copyStrings(cm.data), copyStrings(cm.labels), copyStrings(cm.annotations), cm.rv
}

// ---- objects -----------------------------------------------------------

func (a *fakeAPI) newUID() string {
	a.uidSeq++
	return fmt.Sprintf("5f0c3b9e-7a21-4c4e-9d3a-%012x", a.uidSeq)
}

// putConfigMap creates (ADDED) or replaces (MODIFIED) the ConfigMap's data
// and returns the new resourceVersion.
func (a *fakeAPI) putConfigMap(ns, name string, data map[string]string) int64 {
	return a.putConfigMapFull(ns, name, data, nil)
}

func (a *fakeAPI) putConfigMapFull(ns, name string, data map[string]string, binary map[string][]byte) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.putLocked(ns, name, data, binary, nil)
}

func (a *fakeAPI) putLocked(ns, name string, data map[string]string, binary map[string][]byte, batch *[]fakeEvent) int64 {
	key := ns + "/" + name
	cm, exists := a.cms[key]
	typ := "MODIFIED"
	if !exists {
		typ = "ADDED"
		cm = &fakeConfigMap{ns: ns, name: name, uid: a.newUID(), created: time.Now().UTC()}
		a.cms[key] = cm
	}
	a.rv++
	cm.rv = a.rv
	cm.data = copyStrings(data)
	cm.binaryData = binary
	ev := a.eventLocked(typ, cm, a.rv)
	if batch != nil {
		*batch = append(*batch, ev)
	} else {
		a.broadcastLocked([]fakeEvent{ev})
	}
	return a.rv
}

// putConfigMaps applies several edits at once; their events reach each
// watcher in a single write (several lines in one chunk).
func (a *fakeAPI) putConfigMaps(ns, name string, versions ...map[string]string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var batch []fakeEvent
	for _, d := range versions {
		a.putLocked(ns, name, d, nil, &batch)
	}
	a.broadcastLocked(batch)
	return a.rv
}

// deleteConfigMap removes it (a DELETED event carrying its last state at
// the deletion's resourceVersion) and returns that resourceVersion.
func (a *fakeAPI) deleteConfigMap(ns, name string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := ns + "/" + name
	cm, ok := a.cms[key]
	if !ok {
		a.t.Fatalf("fake apiserver: no ConfigMap %s to delete", key)
	}
	delete(a.cms, key)
	a.rv++
	a.broadcastLocked([]fakeEvent{a.eventLocked("DELETED", cm, a.rv)})
	return a.rv
}

// putNode stores a Node with these labels (plus the ones every node has).
func (a *fakeAPI) putNode(name string, labels map[string]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rv++
	a.nodes[name] = fakeNodeObject(name, a.newUID(), a.rv, labels)
}

// putNamespace stores a Namespace with these labels (plus the
// kubernetes.io/metadata.name label the apiserver sets on every one).
func (a *fakeAPI) putNamespace(name string, labels map[string]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rv++
	l := obj{"kubernetes.io/metadata.name": name}
	for k, v := range labels {
		l[k] = v
	}
	a.nss[name] = obj{
		"kind": "Namespace", "apiVersion": "v1",
		"metadata": obj{"name": name, "uid": a.newUID(), "resourceVersion": strconv.FormatInt(a.rv, 10),
			"creationTimestamp": *kubeTime(time.Now().Add(-24 * time.Hour)), "labels": l},
		"spec":   obj{"finalizers": []interface{}{"kubernetes"}},
		"status": obj{"phase": "Active"},
	}
}

// bumpRV advances the resourceVersion as writes to other objects do.
func (a *fakeAPI) bumpRV(n int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rv += n
	return a.rv
}

// currentRV is the resourceVersion of the latest write.
func (a *fakeAPI) currentRV() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rv
}

// bookmark sends a BOOKMARK at the current resourceVersion to every watch
// that asked for bookmarks, and returns that resourceVersion and how many
// watches it was sent to.
func (a *fakeAPI) bookmark() (int64, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	line := eventLine("BOOKMARK", bookmarkObject{Kind: "ConfigMap", APIVersion: "v1",
		Metadata: kubeMeta{ResourceVersion: strconv.FormatInt(a.rv, 10)}})
	n := 0
	for w := range a.watchers {
		if w.bookmarks {
			a.sendLocked(w, fakePayload{data: line, rvs: []int64{a.rv}})
			n++
		}
	}
	return a.rv, n
}

// compact forgets the history: a watch from any resourceVersion below the
// current one is answered 410 Gone.
func (a *fakeAPI) compact() {
	a.mu.Lock()
	a.compacted = a.rv
	a.history = nil
	a.mu.Unlock()
}

// expire ends every open watch (cleanly, as on a timeout), then applies
// edit without any watcher seeing it, then compacts: the webhook's next
// watch, from the resourceVersion it had, is too old, and only a new list
// can show it what edit did.
func (a *fakeAPI) expire(edit func(locked *fakeAPI)) {
	a.mu.Lock()
	for w := range a.watchers {
		a.detachLocked(w)
	}
	if edit != nil {
		edit(a)
	}
	a.compacted = a.rv
	a.history = nil
	a.mu.Unlock()
}

// endWatches ends every open watch cleanly (the terminating chunk), as the
// apiserver does when timeoutSeconds is up or it shuts down gracefully.
func (a *fakeAPI) endWatches() {
	a.mu.Lock()
	for w := range a.watchers {
		a.detachLocked(w)
	}
	a.mu.Unlock()
}

// watchError sends every open watch an ERROR event carrying a Status with
// code (e.g. 500, as when etcd times out) and ends the streams.
func (a *fakeAPI) watchError(code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	line := eventLine("ERROR", newStatus(code, statusReason(code),
		"etcdserver: request timed out, possibly due to previous leader failure", nil))
	for w := range a.watchers {
		a.sendLocked(w, fakePayload{data: line})
		w.endAfterQueued = true
	}
}

// openWatches is how many watch streams are open.
func (a *fakeAPI) openWatches() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.watchers)
}

// ---- request log -------------------------------------------------------

// requests is a copy of the log of every request so far.
func (a *fakeAPI) requests() []apiRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]apiRequest, len(a.reqs))
	for i, r := range a.reqs {
		out[i] = *r
	}
	return out
}

func (a *fakeAPI) requestMark() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.reqs)
}

// count is how many requests since from match.
func (a *fakeAPI) count(from int, match func(apiRequest) bool) int {
	n := 0
	reqs := a.requests()
	for i := from; i < len(reqs); i++ {
		if match(reqs[i]) {
			n++
		}
	}
	return n
}

// waitRequest polls the log for the first request at index >= from that
// matches (and has been answered), failing the test after within.
func (a *fakeAPI) waitRequest(t testing.TB, from int, within time.Duration, what string, match func(apiRequest) bool) (apiRequest, int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		reqs := a.requests()
		for i := from; i < len(reqs); i++ {
			if reqs[i].Status != 0 && match(reqs[i]) {
				return reqs[i], i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake apiserver: no request %s within %v; requests since #%d:\n%s", what, within, from, a.logSince(from))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logSince renders the request log from index from, for failure messages.
func (a *fakeAPI) logSince(from int) string {
	reqs := a.requests()
	var b strings.Builder
	for i := from; i < len(reqs); i++ {
		fmt.Fprintf(&b, "  #%d %s\n", i, reqs[i])
	}
	if b.Len() == 0 {
		return "  (none)\n"
	}
	return b.String()
}

// waitDelivered is when the event with resourceVersion rv was flushed to a
// watch stream; it fails the test after within.
func (a *fakeAPI) waitDelivered(t testing.TB, rv int64, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		a.mu.Lock()
		at, ok := a.delivered[rv]
		a.mu.Unlock()
		if ok {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake apiserver: the event at resourceVersion %d was not sent to any watch within %v; requests:\n%s",
				rv, within, a.logSince(0))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isKind(kind string) func(apiRequest) bool {
	return func(r apiRequest) bool { return r.Kind == kind }
}

// ---- serialisation, as the apiserver writes it -------------------------

type kubeMeta struct {
	Name              string            `json:"name,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp *string           `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	ManagedFields     []interface{}     `json:"managedFields,omitempty"`
}

type kubeConfigMap struct {
	Kind       string            `json:"kind,omitempty"`
	APIVersion string            `json:"apiVersion,omitempty"`
	Metadata   kubeMeta          `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

type bookmarkObject struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion"`
	Metadata   kubeMeta `json:"metadata"`
}

type kubeListMeta struct {
	ResourceVersion string `json:"resourceVersion"`
}

type kubeConfigMapList struct {
	Kind       string          `json:"kind"`
	APIVersion string          `json:"apiVersion"`
	Metadata   kubeListMeta    `json:"metadata"`
	Items      []kubeConfigMap `json:"items"`
}

type kubeStatusDetails struct {
	Name string `json:"name,omitempty"`
	Kind string `json:"kind,omitempty"`
}

type kubeStatus struct {
	Kind       string             `json:"kind"`
	APIVersion string             `json:"apiVersion"`
	Metadata   struct{}           `json:"metadata"`
	Status     string             `json:"status"`
	Message    string             `json:"message"`
	Reason     string             `json:"reason,omitempty"`
	Details    *kubeStatusDetails `json:"details,omitempty"`
	Code       int                `json:"code"`
}

type kubeEvent struct {
	Type   string      `json:"type"`
	Object interface{} `json:"object"`
}

func eventLine(typ string, object interface{}) []byte {
	return append(mustMarshal(kubeEvent{Type: typ, Object: object}), '\n')
}

func kubeTime(t time.Time) *string {
	s := t.UTC().Format("2006-01-02T15:04:05Z")
	return &s
}

// object renders the ConfigMap as the apiserver does; kind and apiVersion
// are left out for the items of a list.
func (cm *fakeConfigMap) object(inList bool) kubeConfigMap {
	applied := mustMarshal(obj{"apiVersion": "v1", "data": cm.data, "kind": "ConfigMap",
		"metadata": obj{"annotations": obj{}, "name": cm.name, "namespace": cm.ns}})
	fields := obj{}
	for k := range cm.data {
		fields["f:"+k] = obj{}
	}
	fields["."] = obj{}
	out := kubeConfigMap{
		Metadata: kubeMeta{
			Name: cm.name, Namespace: cm.ns, UID: cm.uid,
			ResourceVersion:   strconv.FormatInt(cm.rv, 10),
			CreationTimestamp: kubeTime(cm.created),
			Labels:            map[string]string{"app.kubernetes.io/name": "rdma-webhook"},
			// What `kubectl apply` leaves: the whole object once more, as
			// text, in an annotation.
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied) + "\n"},
			ManagedFields: []interface{}{obj{
				"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
				"time": *kubeTime(cm.created), "fieldsType": "FieldsV1",
				"fieldsV1": obj{"f:data": fields, "f:metadata": obj{"f:annotations": obj{".": obj{},
					"f:kubectl.kubernetes.io/last-applied-configuration": obj{}}}},
			}},
		},
		Data:       cm.data,
		BinaryData: cm.binaryData,
	}
	if cm.written {
		out.Metadata.Labels, out.Metadata.Annotations = cm.labels, cm.annotations
		out.Metadata.ManagedFields = []interface{}{obj{"manager": "rdma-webhook", "operation": "Update",
			"apiVersion": "v1", "time": *kubeTime(cm.created), "fieldsType": "FieldsV1",
			"fieldsV1": obj{"f:data": fields}}}
	}
	if !inList {
		out.Kind, out.APIVersion = "ConfigMap", "v1"
	}
	return out
}

func (a *fakeAPI) eventLocked(typ string, cm *fakeConfigMap, rv int64) fakeEvent {
	o := cm.object(false)
	o.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	ev := fakeEvent{typ: typ, rv: rv, ns: cm.ns, name: cm.name, line: eventLine(typ, o)}
	a.history = append(a.history, ev)
	return ev
}

func fakeNodeObject(name, uid string, rv int64, labels map[string]string) obj {
	l := obj{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
		"node.kubernetes.io/instance-type": "bcc.lgn5.c128m1024.8a100.4d",
	}
	for k, v := range labels {
		l[k] = v
	}
	created := *kubeTime(time.Now().Add(-72 * time.Hour))
	return obj{
		"kind": "Node", "apiVersion": "v1",
		"metadata": obj{
			"name": name, "uid": uid, "resourceVersion": strconv.FormatInt(rv, 10),
			"creationTimestamp": created, "labels": l,
			"annotations": obj{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		"spec": obj{"podCIDR": "10.244.3.0/24", "podCIDRs": []interface{}{"10.244.3.0/24"},
			"providerID": "cce://i-" + name},
		"status": obj{
			"capacity":    obj{"cpu": "128", "memory": "1056462760Ki", "nvidia.com/gpu": "8", "pods": "110", "rdma/hca": "1k"},
			"allocatable": obj{"cpu": "127900m", "memory": "1035491240Ki", "nvidia.com/gpu": "8", "pods": "110", "rdma/hca": "1k"},
			"conditions": []interface{}{obj{"type": "Ready", "status": "True", "reason": "KubeletReady",
				"message": "kubelet is posting ready status", "lastHeartbeatTime": created, "lastTransitionTime": created}},
			"addresses": []interface{}{obj{"type": "InternalIP", "address": "192.168.0.13"},
				obj{"type": "Hostname", "address": name}},
			"daemonEndpoints": obj{"kubeletEndpoint": obj{"Port": 10250}},
			"nodeInfo": obj{"kubeletVersion": "v1.28.8", "containerRuntimeVersion": "containerd://1.6.28",
				"kernelVersion": "5.10.0-28-amd64", "osImage": "Ubuntu 22.04.4 LTS", "architecture": "amd64",
				"operatingSystem": "linux"},
		},
	}
}

func copyStrings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ---- watchers ----------------------------------------------------------

func (w *fakeWatcher) wants(ns, name string) bool {
	return w.ns == ns && (w.name == "" || w.name == name)
}

func (a *fakeAPI) broadcastLocked(events []fakeEvent) {
	for w := range a.watchers {
		var p fakePayload
		for _, ev := range events {
			if w.wants(ev.ns, ev.name) {
				p.data = append(p.data, ev.line...)
				p.rvs = append(p.rvs, ev.rv)
			}
		}
		if len(p.data) > 0 {
			a.sendLocked(w, p)
		}
	}
}

// sendLocked queues p for w; a watcher that does not keep up is dropped,
// as the apiserver drops slow watchers.
func (a *fakeAPI) sendLocked(w *fakeWatcher, p fakePayload) {
	select {
	case w.ch <- p:
	default:
		a.detachLocked(w)
	}
}

func (a *fakeAPI) detachLocked(w *fakeWatcher) {
	if !w.closed {
		w.closed = true
		close(w.done)
	}
	delete(a.watchers, w)
}

// ---- HTTP --------------------------------------------------------------

type statusRecorder struct {
	http.ResponseWriter
	a   *fakeAPI
	req *apiRequest
}

func (s *statusRecorder) WriteHeader(code int) {
	s.a.mu.Lock()
	s.req.Status = code
	s.a.mu.Unlock()
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func requestKind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	events := len(parts) >= 6 && parts[0] == "apis" && parts[1] == "events.k8s.io" && parts[2] == "v1" &&
		parts[3] == "namespaces" && parts[5] == "events"
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/apis/authentication.k8s.io/v1/tokenreviews":
		return "create-tokenreview"
	case r.Method == http.MethodPost && r.URL.Path == "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		return "create-subjectaccessreview"
	case events && len(parts) == 6 && r.Method == http.MethodPost:
		return "create-event"
	case events && len(parts) == 7 && r.Method == http.MethodPatch:
		return "patch-event"
	case len(parts) == 4 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "nodes":
		return "get-node"
	case len(parts) == 4 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces":
		return "get-namespace"
	case len(parts) == 6 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "configmaps" &&
		r.Method == http.MethodPut:
		return "update-configmap"
	case len(parts) == 5 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "configmaps" &&
		r.Method == http.MethodPost:
		return "create-configmap"
	case len(parts) == 6 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "configmaps":
		return "get-configmap"
	case len(parts) == 7 && parts[0] == "apis" && parts[1] == "apps" && parts[2] == "v1" && parts[3] == "namespaces" &&
		parts[5] == "deployments":
		return "get-deployment"
	case len(parts) == 5 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "configmaps":
		if w := r.URL.Query().Get("watch"); w == "1" || w == "true" {
			return "watch"
		}
		return "list"
	}
	return "other"
}

func (a *fakeAPI) handle(rw http.ResponseWriter, r *http.Request) {
	token := ""
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		token = strings.TrimPrefix(h, "Bearer ")
	}
	rec := &apiRequest{At: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
		Token: token, Kind: requestKind(r), Proto: r.Proto, ContentType: r.Header.Get("Content-Type")}
	if r.Method != http.MethodGet {
		rec.Body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
	}
	a.mu.Lock()
	a.reqs = append(a.reqs, rec)
	delay, failure := a.matchPrefixLocked(r.URL.Path)
	a.mu.Unlock()
	w := &statusRecorder{ResponseWriter: rw, a: a, req: rec}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")

	want, err := os.ReadFile(a.tokenFile)
	if err != nil || token == "" || token != strings.TrimSpace(string(want)) {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized", nil)
		return
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	a.mu.Lock()
	raw, isRaw := a.rawGets[r.URL.Path]
	a.mu.Unlock()
	if isRaw && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
		return
	}
	if failure != 0 {
		writeStatus(w, failure, statusReason(failure),
			fmt.Sprintf("Internal error occurred: the fake apiserver answers %d here", failure), nil)
		return
	}
	switch rec.Kind {
	case "create-event":
		a.createEvent(w, rec, parts[4])
		return
	case "patch-event":
		a.patchEvent(w, rec, parts[4], parts[6])
		return
	case "create-configmap":
		a.writeConfigMap(w, rec, parts[3], "")
		return
	case "update-configmap":
		a.writeConfigMap(w, rec, parts[3], parts[5])
		return
	case "create-tokenreview":
		a.tokenReview(w, rec)
		return
	case "create-subjectaccessreview":
		a.subjectAccessReview(w, rec)
		return
	}
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed",
			fmt.Sprintf("the server does not allow this method on the requested resource (%s)", r.Method), nil)
		return
	}
	switch rec.Kind {
	case "get-node":
		a.getClusterObject(w, a.nodes, "nodes", parts[3])
	case "get-namespace":
		a.getClusterObject(w, a.nss, "namespaces", parts[3])
	case "get-configmap":
		a.getConfigMap(w, parts[3], parts[5])
	case "get-deployment":
		a.getDeployment(w, parts[4], parts[6])
	case "list", "watch":
		a.listOrWatch(w, r, rec, parts[3])
	default:
		writeStatus(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource", nil)
	}
}

func (a *fakeAPI) matchPrefixLocked(p string) (time.Duration, int) {
	var delay time.Duration
	failure, best, bestDelay := 0, -1, -1
	for prefix, d := range a.delays {
		if strings.HasPrefix(p, prefix) && len(prefix) > bestDelay {
			delay, bestDelay = d, len(prefix)
		}
	}
	for prefix, st := range a.failures {
		if strings.HasPrefix(p, prefix) && len(prefix) > best {
			failure, best = st, len(prefix)
		}
	}
	return delay, failure
}

func statusReason(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusGone:
		return "Expired"
	case http.StatusTooManyRequests:
		return "TooManyRequests"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	case http.StatusGatewayTimeout:
		return "Timeout"
	}
	return "InternalError"
}

func newStatus(code int, reason, message string, details *kubeStatusDetails) kubeStatus {
	return kubeStatus{Kind: "Status", APIVersion: "v1", Status: "Failure", Message: message,
		Reason: reason, Details: details, Code: code}
}

func writeStatus(w http.ResponseWriter, code int, reason, message string, details *kubeStatusDetails) {
	writeJSON(w, code, newStatus(code, reason, message, details))
}

func writeJSON(w http.ResponseWriter, code int, v interface{}) {
	body := mustMarshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Audit-Id", newUID())
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// getClusterObject answers the GET of a cluster-scoped object of
// resource (nodes, namespaces) from objects, as the apiserver does: the
// object, or a 404 Status naming it.
func (a *fakeAPI) getClusterObject(w http.ResponseWriter, objects map[string]obj, resource, name string) {
	a.mu.Lock()
	o, ok := objects[name]
	var body []byte
	if ok {
		body = mustMarshal(o)
	}
	a.mu.Unlock()
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s %q not found", resource, name),
			&kubeStatusDetails{Name: name, Kind: resource})
		return
	}
	writeJSON(w, http.StatusOK, json.RawMessage(body))
}

// putDeployment stores a Deployment whose first container has image, as the
// apiserver returns one (a second container after it).
func (a *fakeAPI) putDeployment(ns, name, image string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rv++
	a.deploys[ns+"/"+name] = obj{
		"kind": "Deployment", "apiVersion": "apps/v1",
		"metadata": obj{"name": name, "namespace": ns, "uid": a.newUID(),
			"resourceVersion": strconv.FormatInt(a.rv, 10), "generation": 3},
		"spec": obj{"replicas": 2, "template": obj{
			"metadata": obj{"labels": obj{"app.kubernetes.io/name": name}},
			"spec": obj{"containers": []interface{}{
				obj{"name": name, "image": image, "args": []interface{}{"serve"}},
				obj{"name": "sidecar", "image": "other:1"},
			}}}},
		"status": obj{"replicas": 2, "readyReplicas": 2},
	}
}

func (a *fakeAPI) getDeployment(w http.ResponseWriter, ns, name string) {
	a.mu.Lock()
	d, ok := a.deploys[ns+"/"+name]
	var body []byte
	if ok {
		body = mustMarshal(d)
	}
	a.mu.Unlock()
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("deployments.apps %q not found", name),
			&kubeStatusDetails{Name: name, Kind: "deployments"})
		return
	}
	writeJSON(w, http.StatusOK, json.RawMessage(body))
}

func (a *fakeAPI) getConfigMap(w http.ResponseWriter, ns, name string) {
	a.mu.Lock()
	cm, ok := a.cms[ns+"/"+name]
	var o kubeConfigMap
	if ok {
		o = cm.object(false)
	}
	a.mu.Unlock()
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("configmaps %q not found", name),
			&kubeStatusDetails{Name: name, Kind: "configmaps"})
		return
	}
	writeJSON(w, http.StatusOK, o)
}

// fieldName is the name a fieldSelector pins ("" when none); ok is false
// for a selector the apiserver would refuse.
func fieldName(sel string) (name string, ok bool) {
	if sel == "" {
		return "", true
	}
	for _, term := range strings.Split(sel, ",") {
		var k, v string
		switch {
		case strings.Contains(term, "!="):
			return "", false
		case strings.Contains(term, "=="):
			kv := strings.SplitN(term, "==", 2)
			k, v = kv[0], kv[1]
		case strings.Contains(term, "="):
			kv := strings.SplitN(term, "=", 2)
			k, v = kv[0], kv[1]
		default:
			return "", false
		}
		switch strings.TrimSpace(k) {
		case "metadata.name":
			name = strings.TrimSpace(v)
		case "metadata.namespace":
		default:
			return "", false
		}
	}
	return name, true
}

func (a *fakeAPI) listOrWatch(w http.ResponseWriter, r *http.Request, rec *apiRequest, ns string) {
	q := r.URL.Query()
	name, ok := fieldName(q.Get("fieldSelector"))
	if !ok {
		writeStatus(w, http.StatusBadRequest, "BadRequest",
			fmt.Sprintf("field label not supported: %q", q.Get("fieldSelector")), nil)
		return
	}
	a.mu.Lock()
	rbac := a.rbacByName
	a.mu.Unlock()
	if rbac && name == "" {
		// A Role limited by resourceNames allows list and watch only with a
		// metadata.name field selector.
		writeStatus(w, http.StatusForbidden, "Forbidden", fmt.Sprintf(
			`configmaps is forbidden: User "system:serviceaccount:rdma-webhook:rdma-webhook" cannot %s resource "configmaps" in API group "" in the namespace %q`,
			rec.Kind, ns), &kubeStatusDetails{Kind: "configmaps"})
		return
	}
	if rec.Kind == "list" {
		a.list(w, ns, name)
		return
	}
	a.watch(w, r, rec, ns, name)
}

func (a *fakeAPI) list(w http.ResponseWriter, ns, name string) {
	a.mu.Lock()
	list := kubeConfigMapList{Kind: "ConfigMapList", APIVersion: "v1",
		Metadata: kubeListMeta{ResourceVersion: strconv.FormatInt(a.rv, 10)}, Items: []kubeConfigMap{}}
	var keys []string
	for k, cm := range a.cms {
		if cm.ns == ns && (name == "" || cm.name == name) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		list.Items = append(list.Items, a.cms[k].object(true))
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, list)
}

func (a *fakeAPI) watch(rw http.ResponseWriter, r *http.Request, rec *apiRequest, ns, name string) {
	q := r.URL.Query()
	timeout := 30 * time.Minute
	if s := q.Get("timeoutSeconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			writeStatus(rw, http.StatusBadRequest, "BadRequest", fmt.Sprintf("invalid timeoutSeconds %q", s), nil)
			return
		}
		if n > 0 {
			timeout = time.Duration(n) * time.Second
		}
	}
	rvText := q.Get("resourceVersion")
	var from int64
	if rvText != "" && rvText != "0" {
		var err error
		if from, err = strconv.ParseInt(rvText, 10, 64); err != nil || from < 0 {
			writeStatus(rw, http.StatusBadRequest, "BadRequest", fmt.Sprintf("invalid resource version %q", rvText), nil)
			return
		}
	}
	flusher, _ := rw.(http.Flusher)

	a.mu.Lock()
	if from != 0 && from < a.compacted {
		st := newStatus(http.StatusGone, "Expired", fmt.Sprintf("too old resource version: %d (%d)", from, a.compacted), nil)
		asEvent := a.expiredAsEvent
		rec.Expired = true
		a.mu.Unlock()
		if !asEvent {
			writeJSON(rw, http.StatusGone, st)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusOK)
		_, _ = rw.Write(eventLine("ERROR", st))
		flusher.Flush()
		return
	}
	wt := &fakeWatcher{ns: ns, name: name, bookmarks: q.Get("allowWatchBookmarks") == "true",
		ch: make(chan fakePayload, 256), done: make(chan struct{})}
	var first fakePayload
	if from == 0 {
		// No resourceVersion: synthetic ADDED events for what exists now.
		var keys []string
		for k, cm := range a.cms {
			if wt.wants(cm.ns, cm.name) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			cm := a.cms[k]
			first.data = append(first.data, eventLine("ADDED", cm.object(false))...)
			first.rvs = append(first.rvs, cm.rv)
		}
	} else {
		for _, ev := range a.history {
			if ev.rv > from && wt.wants(ev.ns, ev.name) {
				first.data = append(first.data, ev.line...)
				first.rvs = append(first.rvs, ev.rv)
			}
		}
	}
	a.watchers[wt] = struct{}{}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.detachLocked(wt)
		a.mu.Unlock()
	}()

	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-cache, private")
	rw.WriteHeader(http.StatusOK)
	flusher.Flush()
	if len(first.data) > 0 {
		a.writePayload(rw, flusher, first)
	}
	end := time.NewTimer(timeout)
	defer end.Stop()
	for {
		select {
		case p := <-wt.ch:
			a.writePayload(rw, flusher, p)
			a.mu.Lock()
			end := wt.endAfterQueued && len(wt.ch) == 0
			a.mu.Unlock()
			if end {
				return
			}
		case <-wt.done:
			return
		case <-end.C:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// writePayload writes p (split, or cut, as the knobs say) and records when
// its events were delivered. A cut ends the handler with the connection
// closed.
func (a *fakeAPI) writePayload(w io.Writer, f http.Flusher, p fakePayload) {
	a.mu.Lock()
	cut := a.cutNext
	a.cutNext = false
	pieces, gap := a.splitPieces, a.splitGap
	a.mu.Unlock()
	if cut {
		line := p.data
		if i := strings.IndexByte(string(line), '\n'); i >= 0 {
			line = line[:i]
		}
		_, _ = w.Write(line[:len(line)/2])
		f.Flush()
		time.Sleep(50 * time.Millisecond)
		// Closes the connection without the terminating chunk.
		panic(http.ErrAbortHandler)
	}
	if pieces < 2 {
		pieces = 1
	}
	size := (len(p.data) + pieces - 1) / pieces
	for off := 0; off < len(p.data); off += size {
		endAt := off + size
		if endAt > len(p.data) {
			endAt = len(p.data)
		}
		if _, err := w.Write(p.data[off:endAt]); err != nil {
			return
		}
		f.Flush()
		if endAt < len(p.data) && gap > 0 {
			time.Sleep(gap)
		}
	}
	now := time.Now()
	a.mu.Lock()
	for _, rv := range p.rvs {
		if _, seen := a.delivered[rv]; !seen {
			a.delivered[rv] = now
		}
	}
	a.mu.Unlock()
}

// writeConfigMap serves a create (name "") or an update of a ConfigMap in
// ns, as the apiserver does (see the top of this file).
func (a *fakeAPI) writeConfigMap(w http.ResponseWriter, rec *apiRequest, ns, name string) {
	var in kubeConfigMap
	if err := json.Unmarshal(rec.Body, &in); err != nil || rec.ContentType != "application/json" {
		writeStatus(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("the body is not a JSON ConfigMap (%s): %v", rec.ContentType, err), nil)
		return
	}
	// Answered once the lock is released: the recorder takes it.
	code, body := a.writeConfigMapLocked(ns, name, in)
	writeJSON(w, code, body)
}

func (a *fakeAPI) writeConfigMapLocked(ns, name string, in kubeConfigMap) (int, interface{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	create := name == ""
	if create {
		name = in.Metadata.Name
	}
	details := &kubeStatusDetails{Name: name, Kind: "configmaps"}
	fail := func(code int, reason, msg string) (int, interface{}) {
		return code, newStatus(code, reason, msg, details)
	}
	if a.writeFailure != 0 {
		return fail(a.writeFailure, statusReason(a.writeFailure), "the fake apiserver refuses ConfigMap writes")
	}
	if in.Metadata.Name != name || (in.Metadata.Namespace != "" && in.Metadata.Namespace != ns) || name == "" {
		return fail(http.StatusBadRequest, "BadRequest", "the name or namespace of the body does not match the request")
	}
	if create && in.Metadata.ResourceVersion != "" {
		return fail(http.StatusBadRequest, "BadRequest", "resourceVersion should not be set on objects to be created")
	}
	if a.raceWrites > 0 {
		a.raceWrites--
		// The other replica's write, of the same body, came first.
		other := in
		other.Metadata.ResourceVersion = ""
		a.storeWrittenLocked(ns, name, other)
	}
	cm, exists := a.cms[ns+"/"+name]
	switch {
	case create && exists:
		return fail(http.StatusConflict, "AlreadyExists", fmt.Sprintf("configmaps %q already exists", name))
	case !create && !exists:
		return fail(http.StatusNotFound, "NotFound", fmt.Sprintf("configmaps %q not found", name))
	case !create && in.Metadata.ResourceVersion != "" && in.Metadata.ResourceVersion != strconv.FormatInt(cm.rv, 10):
		return fail(http.StatusConflict, "Conflict", fmt.Sprintf("Operation cannot be fulfilled on configmaps %q: "+
			"the object has been modified; please apply your changes to the latest version and try again", name))
	}
	cm = a.storeWrittenLocked(ns, name, in)
	if create {
		return http.StatusCreated, cm.object(false)
	}
	return http.StatusOK, cm.object(false)
}

func (a *fakeAPI) storeWrittenLocked(ns, name string, in kubeConfigMap) *fakeConfigMap {
	a.putLocked(ns, name, in.Data, nil, nil)
	cm := a.cms[ns+"/"+name]
	cm.written, cm.labels, cm.annotations = true, copyStrings(in.Metadata.Labels), copyStrings(in.Metadata.Annotations)
	return cm
}
