package e2e

// serve --cert-secret (webhook/kube/selfcert.h) against a small fake API of
// its own: Secrets and the two webhook configurations, with
// resourceVersions and 409s as the apiserver has them. Whatever a replica
// serves must verify against the caBundle the configurations hold at that
// moment: that is what the apiserver checks.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	scNS     = "rdma-webhook"
	scSecret = "rdma-webhook-tls"
	scMWC    = "rdma-webhook"
	scVWC    = "rdma-webhook-profiles"
)

// scAPI is the fake: objects by path, each a JSON object with
// metadata.resourceVersion.
type scAPI struct {
	mu      sync.Mutex
	objs    map[string]map[string]any
	rv      int
	posts   int
	puts    map[string]int
	pool    *x509.CertPool // gets every ca.crt a write of the Secret carries
	addr    string
	caFile  string
	tokFile string
}

func startSCAPI(t *testing.T) *scAPI {
	t.Helper()
	dir := t.TempDir()
	if err := copyCerts(dir, "--service", "kubernetes", "--namespace", "default"); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	a := &scAPI{objs: map[string]map[string]any{}, puts: map[string]int{}, pool: x509.NewCertPool(),
		caFile: filepath.Join(dir, "ca.crt"), tokFile: filepath.Join(dir, "token")}
	if err := os.WriteFile(a.tokFile, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a.mwcPath(), a.vwcPath()} {
		a.objs[p] = map[string]any{
			"metadata": map[string]any{"name": filepath.Base(p), "resourceVersion": "1"},
			"webhooks": []any{
				map[string]any{"name": "a.rdma-webhook.io", "clientConfig": map[string]any{"service": map[string]any{"name": "x"}}},
				map[string]any{"name": "b.rdma-webhook.io", "clientConfig": map[string]any{"caBundle": ""}},
			},
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(a.handle),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return a
}

func (a *scAPI) secretPath() string {
	return "/api/v1/namespaces/" + scNS + "/secrets/" + scSecret
}
func (a *scAPI) mwcPath() string {
	return "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/" + scMWC
}
func (a *scAPI) vwcPath() string {
	return "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" + scVWC
}

func (a *scAPI) flags() []string {
	return []string{"--kube-api", "https://" + a.addr, "--kube-ca", a.caFile, "--kube-token-file", a.tokFile,
		"--metrics-auth", "none", "--cert-secret", scNS + "/" + scSecret,
		"--webhook-configs", scMWC + "," + scVWC, "--cert-sync-seconds", "1", "--ca-overlap-seconds", "3"}
}

func scStatus(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "status": "Failure", "reason": reason, "code": code})
}

func scRV(o map[string]any) string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m["resourceVersion"].(string)
	return s
}

func (a *scAPI) storeLocked(path string, o map[string]any) {
	a.rv++
	o["metadata"].(map[string]any)["resourceVersion"] = strconv.Itoa(a.rv)
	a.objs[path] = o
	if path == a.secretPath() {
		if data, ok := o["data"].(map[string]any); ok {
			if s, ok := data["ca.crt"].(string); ok {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					a.pool.AppendCertsFromPEM(b)
				}
			}
		}
	}
}

func (a *scAPI) handle(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer t0ken" {
		scStatus(w, 401, "Unauthorized")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	a.mu.Lock()
	defer a.mu.Unlock()
	path := r.URL.Path
	switch r.Method {
	case http.MethodGet:
		o, ok := a.objs[path]
		if !ok {
			scStatus(w, 404, "NotFound")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(o)
	case http.MethodPost:
		var o map[string]any
		if json.Unmarshal(body, &o) != nil {
			scStatus(w, 400, "BadRequest")
			return
		}
		name, _ := o["metadata"].(map[string]any)["name"].(string)
		full := path + "/" + name
		if _, ok := a.objs[full]; ok {
			scStatus(w, 409, "AlreadyExists")
			return
		}
		a.posts++
		a.storeLocked(full, o)
		w.WriteHeader(201)
		_ = json.NewEncoder(w).Encode(o)
	case http.MethodPut:
		var o map[string]any
		cur, ok := a.objs[path]
		if json.Unmarshal(body, &o) != nil || !ok {
			scStatus(w, 404, "NotFound")
			return
		}
		if scRV(o) != scRV(cur) {
			scStatus(w, 409, "Conflict")
			return
		}
		a.puts[path]++
		a.storeLocked(path, o)
		_ = json.NewEncoder(w).Encode(o)
	default:
		scStatus(w, 405, "MethodNotAllowed")
	}
}

// secretData is the Secret's data, decoded; nil when there is none.
func (a *scAPI) secretData(t *testing.T) map[string][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.objs[a.secretPath()]
	if !ok {
		return nil
	}
	out := map[string][]byte{}
	for k, v := range o["data"].(map[string]any) {
		b, err := base64.StdEncoding.DecodeString(v.(string))
		if err != nil {
			t.Fatalf("data.%s is not base64: %v", k, err)
		}
		out[k] = b
	}
	return out
}

// bundles are the caBundles of every webhook of both configurations.
func (a *scAPI) bundles() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, p := range []string{a.mwcPath(), a.vwcPath()} {
		for _, h := range a.objs[p]["webhooks"].([]any) {
			cc := h.(map[string]any)["clientConfig"].(map[string]any)
			s, _ := cc["caBundle"].(string)
			out = append(out, s)
		}
	}
	return out
}

func (a *scAPI) annotate(key, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o := a.objs[a.secretPath()]
	m := o["metadata"].(map[string]any)
	ann, _ := m["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		m["annotations"] = ann
	}
	ann[key] = value
	a.rv++
	m["resourceVersion"] = strconv.Itoa(a.rv)
}

func pemCount(b []byte) int {
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return n
		}
		n++
	}
}

// scServed is the leaf instance in presents, verified against bundle
// (PEM): an error when the apiserver would refuse it.
func scServed(addr string, bundle []byte) (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: pool, ServerName: scMWC + "." + scNS + ".svc"})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func startSelfCert(t *testing.T, a *scAPI) *instance {
	t.Helper()
	return startOwn(t, instanceOptions{profiles: profilesPath, args: a.flags(), roots: a.pool})
}

func TestSelfCertNoSecretIsCreatedAndServed(t *testing.T) {
	a := startSCAPI(t)
	in := startSelfCert(t, a)
	d := a.secretData(t)
	if d == nil || len(d["tls.crt"]) == 0 || len(d["ca.key"]) == 0 || pemCount(d["ca.crt"]) != 1 {
		t.Fatalf("no complete Secret: %v", d)
	}
	want := base64.StdEncoding.EncodeToString(d["ca.crt"])
	for i, b := range a.bundles() {
		if b != want {
			t.Fatalf("webhook %d's caBundle is %.40q, not the Secret's ca.crt", i, b)
		}
	}
	leaf, err := scServed(in.addr, d["ca.crt"])
	if err != nil {
		t.Fatalf("the served certificate does not verify against the caBundle: %v", err)
	}
	blk, _ := pem.Decode(d["tls.crt"])
	if blk == nil || string(blk.Bytes) != string(leaf.Raw) {
		t.Fatal("the served certificate is not the Secret's tls.crt")
	}
	if got := in.readyz(t, false); got != 200 {
		t.Fatalf("/readyz %d", got)
	}
}

// Two replicas starting together agree on one Secret: one create, and both
// serve its pair.
func TestSelfCertReplicasAgreeOnOneSecret(t *testing.T) {
	a := startSCAPI(t)
	var wg sync.WaitGroup
	ins := make([]*instance, 2)
	for i := range ins {
		wg.Add(1)
		go func(i int) { defer wg.Done(); ins[i] = startSelfCert(t, a) }(i)
	}
	wg.Wait()
	a.mu.Lock()
	posts := a.posts
	a.mu.Unlock()
	if posts != 1 {
		t.Fatalf("%d creates of the Secret, want 1", posts)
	}
	d := a.secretData(t)
	for i, in := range ins {
		if in == nil {
			t.Fatalf("replica %d did not start", i)
		}
		leaf, err := scServed(in.addr, d["ca.crt"])
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		blk, _ := pem.Decode(d["tls.crt"])
		if string(blk.Bytes) != string(leaf.Raw) {
			t.Fatalf("replica %d serves another pair than the Secret's", i)
		}
	}
	// A later start uses the Secret as it is.
	before := a.puts[a.secretPath()]
	startSelfCert(t, a)
	if a.posts != 1 || a.puts[a.secretPath()] != before {
		t.Fatalf("a start with the Secret present wrote it (posts %d, puts %d -> %d)", a.posts, before,
			a.puts[a.secretPath()])
	}
}

// A forced CA rotation (rdma-webhook.io/rotate=ca) while handshakes run
// against whatever caBundle the configurations hold: none fails, the new CA
// joins the bundle before it signs, the old one goes at the end.
func TestSelfCertForcedRotationNeverBreaksTrust(t *testing.T) {
	a := startSCAPI(t)
	in := startSelfCert(t, a)
	first := a.secretData(t)
	a.annotate("rdma-webhook.io/rotate", "ca")
	deadline := time.Now().Add(30 * time.Second)
	sawTwo, handshakes := false, 0
	for time.Now().Before(deadline) {
		bundle, _ := base64.StdEncoding.DecodeString(a.bundles()[0])
		if _, err := scServed(in.addr, bundle); err != nil {
			t.Fatalf("after %d handshakes, one failed against the configurations' caBundle: %v", handshakes, err)
		}
		handshakes++
		d := a.secretData(t)
		n := pemCount(d["ca.crt"])
		if n == 2 {
			sawTwo = true
		}
		if sawTwo && n == 1 && string(d["signer.crt"]) != string(first["signer.crt"]) &&
			a.bundles()[0] == base64.StdEncoding.EncodeToString(d["ca.crt"]) {
			leaf, err := scServed(in.addr, d["ca.crt"])
			if err != nil {
				t.Fatalf("the rotated pair does not verify against the new CA alone: %v", err)
			}
			blk, _ := pem.Decode(first["signer.crt"])
			old, err := x509.ParseCertificate(blk.Bytes)
			if err != nil || leaf.CheckSignatureFrom(old) == nil {
				t.Fatalf("the served certificate is still the old CA's (%v)", err)
			}
			t.Logf("rotated with %d handshakes, none failed", handshakes)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no complete rotation within 30 s (saw two CAs: %v)", sawTwo)
}

// manifests/components/self-signed: the Deployment runs with --cert-secret
// naming the Secret its Role grants, --webhook-configs naming the two
// configurations rendered and granted, and writes the pair into an emptyDir
// instead of mounting a Secret; every object passes the schemas.
func TestSelfSignedComponent(t *testing.T) {
	objs := krustyWithComponent(t, filepath.Join(manifestsDir, "components", "self-signed"))
	checkSchemas(t, namedObjects("components/self-signed: ", objs))
	dep := findObject(t, objs, "Deployment", webhookName)
	c := path(dep, "spec", "template", "spec", "containers").([]interface{})[0]
	var args []string
	for _, a := range path(c, "args").([]interface{}) {
		args = append(args, a.(string))
	}
	flag := func(name string) string {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
		}
		t.Fatalf("no %s in %v", name, args)
		return ""
	}
	secret := flag("--cert-secret")
	configs := flag("--webhook-configs")
	mwc, _ := pathStr(findObjects(objs, "MutatingWebhookConfiguration")[0], "metadata", "name")
	vwc, _ := pathStr(findObjects(objs, "ValidatingWebhookConfiguration")[0], "metadata", "name")
	if configs != mwc+","+vwc {
		t.Errorf("--webhook-configs %q, the rendered configurations are %s and %s", configs, mwc, vwc)
	}
	vols := path(dep, "spec", "template", "spec", "volumes").([]interface{})
	if path(vols[0], "emptyDir") == nil || path(vols[0], "secret") != nil {
		t.Errorf("the tls volume should be an emptyDir: %v", vols[0])
	}
	if ro := path(c, "volumeMounts").([]interface{})[0].(map[string]interface{})["readOnly"]; ro != false {
		t.Errorf("the tls mount must be writable, readOnly %v", ro)
	}
	granted := func(kind, resource, name string, verbs ...string) {
		for _, o := range findObjects(objs, kind) {
			for _, r := range path(o, "rules").([]interface{}) {
				rm := r.(map[string]interface{})
				if !strings.Contains(fmt.Sprint(rm["resources"]), resource) || !strings.Contains(fmt.Sprint(rm["resourceNames"]), name) {
					continue
				}
				if got := fmt.Sprint(rm["verbs"]); got == fmt.Sprint(verbs) {
					return
				}
			}
		}
		t.Errorf("no %s grants %v on %s %s", kind, verbs, resource, name)
	}
	granted("Role", "secrets", filepath.Base(secret), "get", "update")
	granted("ClusterRole", "mutatingwebhookconfigurations", mwc, "get", "update")
	granted("ClusterRole", "validatingwebhookconfigurations", vwc, "get", "update")
	if ns := strings.SplitN(secret, "/", 2)[0]; ns != webhookNamespace {
		t.Errorf("--cert-secret in namespace %s, want %s", ns, webhookNamespace)
	}
}

// rdma-webhook.io/rotate=leaf: a new serving certificate from the same CA,
// served, with the caBundle unchanged; and a caBundle blanked by a
// re-applied manifest is written again.
func TestSelfCertLeafRenewalAndMendedBundle(t *testing.T) {
	a := startSCAPI(t)
	in := startSelfCert(t, a)
	first := a.secretData(t)
	bundle := a.bundles()[0]
	a.annotate("rdma-webhook.io/rotate", "leaf")
	waitSC(t, "a new serving certificate served", func() bool {
		d := a.secretData(t)
		if string(d["tls.crt"]) == string(first["tls.crt"]) {
			return false
		}
		leaf, err := scServed(in.addr, first["ca.crt"])
		blk, _ := pem.Decode(d["tls.crt"])
		return err == nil && string(leaf.Raw) == string(blk.Bytes)
	})
	if got := a.bundles()[0]; got != bundle {
		t.Fatal("a serving certificate's renewal changed the caBundle")
	}
	if d := a.secretData(t); string(d["ca.crt"]) != string(first["ca.crt"]) {
		t.Fatal("a serving certificate's renewal changed ca.crt")
	}

	a.mu.Lock()
	a.objs[a.mwcPath()]["webhooks"].([]any)[0].(map[string]any)["clientConfig"] = map[string]any{}
	a.rv++
	a.objs[a.mwcPath()]["metadata"].(map[string]any)["resourceVersion"] = strconv.Itoa(a.rv)
	a.mu.Unlock()
	waitSC(t, "the blanked caBundle written again", func() bool { return a.bundles()[0] == bundle })
}

func waitSC(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not within 15 s: %s", what)
}

// The flags' checks: exit 2 with what to do, before anything starts.
func TestSelfCertFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cert-secret", "no-slash"}, "--cert-secret takes NAMESPACE/NAME"},
		{[]string{"--cert-secret", "a/b", "--no-kube-api"}, "--cert-secret needs the API"},
		{[]string{"--cert-secret", "a/b", "--webhook-configs", "one"}, "--webhook-configs takes MUTATING,VALIDATING"},
		{[]string{"--cert-secret", "a/b", "--cert-service", "Not_A_Label"}, "--cert-service takes a Service name"},
		{[]string{"--cert-secret", "a/b", "--ca-days", "30", "--cert-days", "30"}, "--ca-days must be more than --cert-days"},
		{[]string{"--cert-sync-seconds", "0"}, "cert-sync-seconds"},
	} {
		cmd := exec.Command(binaryPath(), append([]string{"serve"}, c.args...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("serve %v: %v, %q; want exit 2 and %q", c.args, err, out, c.want)
		}
	}
}

// A pair that cannot be written (where the Secret used to be mounted
// read-only; here a directory that does not exist) stops the start, after
// its 30 s of tries, with what to do.
func TestSelfCertUnwritablePairSaysWhy(t *testing.T) {
	t.Parallel() // 30 s of waiting, overlapped with the other tests
	a := startSCAPI(t)
	dir := filepath.Join(t.TempDir(), "missing")
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--profiles", profilesPath,
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key")},
		a.flags()...)
	out, err := exec.Command(binaryPath(), args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "must be in a writable directory") {
		t.Fatalf("serve with an unwritable pair: %v\n%s", err, out)
	}
}
