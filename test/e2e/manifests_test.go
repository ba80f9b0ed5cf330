package e2e

// The deployment manifests: what kustomize renders of `manifests/` and
// `certs/cert-manager/` is valid, wires the pieces
// together, is as hardened as the issue asks, and the
// MutatingWebhookConfiguration's selectors send the apiserver's calls for the
// right pods only.

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The Deployment's container arguments: the Dockerfile's CMD (docs/install.md) with
// the profiles read through the API instead of a file (so that a restart can
// serve the last good copy), and the image of the detection init container,
// which only the Deployment can name (its own, read through the API).
var wantDeploymentArgs = append(append([]string{}, wantServeArgs[:len(wantServeArgs)-2]...),
	"--profiles-configmap", webhookNamespace+"/"+profilesCMName,
	"--profiles-last-good", lastGoodCMName,
	"--detect-image-from-deployment", webhookNamespace+"/"+webhookName)

// The Dockerfile's CMD.
var wantServeArgs = []string{
	"serve",
	"--listen", ":8443",
	"--metrics-listen", ":9090",
	"--tls-cert-file", "/etc/rdma-webhook/tls/tls.crt",
	"--tls-private-key-file", "/etc/rdma-webhook/tls/tls.key",
	"--profiles", "/etc/rdma-webhook/profiles/profiles.json",
}

// The kinds `kubectl apply -k manifests/` must install, with how many of each.
var wantBaseKinds = map[string]int{
	"Namespace": 1, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1, "ClusterRole": 2,
	"ClusterRoleBinding": 1, "ConfigMap": 1, "Service": 1, "Deployment": 1,
	"PodDisruptionBudget": 1, "NetworkPolicy": 1, "MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1,
}

// The kinds the cert-manager overlay adds.
var wantCertManagerKinds = map[string]int{"Issuer": 2, "Certificate": 2}

func countKinds(objs []obj) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		k, _ := pathStr(o, "kind")
		out[k]++
	}
	return out
}

func checkKinds(t *testing.T, what string, objs []obj, want map[string]int) {
	t.Helper()
	got := countKinds(objs)
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: expected %d %s, rendered %d", what, n, k, got[k])
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected %d %s", what, n, k)
		}
	}
}

func TestManifestsRenderAndValidate(t *testing.T) {
	t.Parallel()
	base := kustomize(t, manifestsDir)
	checkKinds(t, "manifests/", base, wantBaseKinds)
	overlay := kustomize(t, certManagerDir)
	want := map[string]int{}
	for k, n := range wantBaseKinds {
		want[k] = n
	}
	for k, n := range wantCertManagerKinds {
		want[k] = n
	}
	checkKinds(t, "certs/cert-manager/", overlay, want)

	// Every object against the Kubernetes (and cert-manager) schemas.
	objects := append(namedObjects("manifests/: ", base), namedObjects("certs/cert-manager/: ", overlay)...)
	checkSchemas(t, objects)

	// Namespaced objects live in the webhook's namespace; cluster-scoped ones
	// carry none.
	clusterScoped := map[string]bool{"Namespace": true, "ClusterRole": true,
		"ClusterRoleBinding": true, "MutatingWebhookConfiguration": true,
		"ValidatingWebhookConfiguration": true}
	for _, o := range overlay {
		kind, _ := pathStr(o, "kind")
		ns, hasNS := pathStr(o, "metadata", "namespace")
		switch {
		case clusterScoped[kind] && hasNS:
			t.Errorf("%s: cluster-scoped but has a namespace", objKey(o))
		case !clusterScoped[kind] && ns != webhookNamespace:
			t.Errorf("%s: expected namespace %s", objKey(o), webhookNamespace)
		}
		if l, _ := pathStr(o, "metadata", "labels", "app.kubernetes.io/name"); l != "rdma-webhook" && kind != "ConfigMap" {
			t.Errorf("%s: expected label app.kubernetes.io/name=rdma-webhook", objKey(o))
		}
	}
}

// The overlay is the base plus cert-manager's objects, with only the two
// webhook configurations changed (the CA injection annotation).
func TestCertManagerOverlayKeepsTheBase(t *testing.T) {
	t.Parallel()
	base := kustomize(t, manifestsDir)
	overlay := kustomize(t, certManagerDir)
	byKey := map[string]obj{}
	for _, o := range overlay {
		byKey[objKey(o)] = o
	}
	for _, o := range base {
		got, ok := byKey[objKey(o)]
		if !ok {
			t.Errorf("certs/cert-manager/ lacks %s", objKey(o))
			continue
		}
		if k, _ := pathStr(o, "kind"); k == "MutatingWebhookConfiguration" || k == "ValidatingWebhookConfiguration" {
			got = copyObject(got)
			anns := pathObj(got, "metadata", "annotations")
			delete(anns, "cert-manager.io/inject-ca-from")
			if len(anns) == 0 {
				delete(pathObj(got, "metadata"), "annotations")
			}
		}
		if !jsonEqual(o, got) {
			t.Errorf("certs/cert-manager/ changes %s:\n%s", objKey(o), jsonDiff(o, got))
		}
	}
}

func TestCertManagerOverlay(t *testing.T) {
	t.Parallel()
	objs := kustomize(t, certManagerDir)
	issuers := map[string]obj{}
	for _, o := range findObjects(objs, "Issuer") {
		n, _ := pathStr(o, "metadata", "name")
		issuers[n] = o
	}
	certs := map[string]obj{}
	for _, o := range findObjects(objs, "Certificate") {
		n, _ := pathStr(o, "metadata", "name")
		certs[n] = o
	}
	svc := findObject(t, objs, "Service", webhookName)
	svcName, _ := pathStr(svc, "metadata", "name")
	svcNS, _ := pathStr(svc, "metadata", "namespace")

	// The serving certificate: the Secret the pods mount, the Service's names.
	var serving, ca obj
	for _, c := range certs {
		if path(c, "spec", "isCA") == true {
			ca = c
		} else {
			serving = c
		}
	}
	if serving == nil || ca == nil {
		t.Fatalf("expected a CA Certificate and a serving Certificate, got %d certificates", len(certs))
	}
	if s, _ := pathStr(serving, "spec", "secretName"); s != tlsSecretName {
		t.Errorf("serving Certificate: secretName %q, expected %q", s, tlsSecretName)
	}
	dns := stringsOf(path(serving, "spec", "dnsNames"))
	for _, n := range []string{svcName + "." + svcNS + ".svc", svcName + "." + svcNS, svcName} {
		if !contains(dns, n) {
			t.Errorf("serving Certificate: dnsNames %v lack %s", dns, n)
		}
	}
	for name, c := range map[string]obj{"serving": serving, "CA": ca} {
		alg, _ := pathStr(c, "spec", "privateKey", "algorithm")
		size, _ := intOf(path(c, "spec", "privateKey", "size"))
		if alg != "ECDSA" || size != 256 {
			t.Errorf("%s Certificate: privateKey %s, expected ECDSA 256", name, compact(path(c, "spec", "privateKey")))
		}
	}
	// The chain: self-signed Issuer -> CA Certificate -> CA Issuer -> serving.
	issuerOf := func(c obj) obj {
		kind, _ := pathStr(c, "spec", "issuerRef", "kind")
		name, _ := pathStr(c, "spec", "issuerRef", "name")
		if kind != "Issuer" || issuers[name] == nil {
			t.Fatalf("%s: issuerRef %s is not an Issuer of the overlay", objKey(c), compact(path(c, "spec", "issuerRef")))
		}
		return issuers[name]
	}
	if pathObj(issuerOf(ca), "spec", "selfSigned") == nil {
		t.Errorf("the CA Certificate's Issuer is not selfSigned")
	}
	caSecret, _ := pathStr(ca, "spec", "secretName")
	if s, _ := pathStr(issuerOf(serving), "spec", "ca", "secretName"); s == "" || s != caSecret {
		t.Errorf("the serving Certificate's Issuer signs with Secret %q, expected the CA's %q", s, caSecret)
	}

	// cainjector fills the caBundle from the serving Certificate.
	mwc := findObject(t, objs, "MutatingWebhookConfiguration", webhookName)
	servingName, _ := pathStr(serving, "metadata", "name")
	want := webhookNamespace + "/" + servingName
	if got, _ := pathStr(mwc, "metadata", "annotations", "cert-manager.io/inject-ca-from"); got != want {
		t.Errorf("MutatingWebhookConfiguration: cert-manager.io/inject-ca-from %q, expected %q", got, want)
	}
}

// serveHelpDefault reads a flag's default from `rdma-webhook serve --help`.
func serveHelp(t *testing.T) string {
	t.Helper()
	res := runBinary(t, nil, "serve", "--help")
	if res.exitCode != 0 {
		t.Fatalf("serve --help: exit %d: %s", res.exitCode, res.stderr)
	}
	return string(res.stdout) + string(res.stderr)
}

func TestDeploymentManifest(t *testing.T) {
	t.Parallel()
	objs := kustomize(t, manifestsDir)
	dep := findObject(t, objs, "Deployment", webhookName)
	spec := pathObj(dep, "spec", "template", "spec")
	podLabels := stringMap(path(dep, "spec", "template", "metadata", "labels"))

	if n, _ := intOf(path(dep, "spec", "replicas")); n < 2 {
		t.Errorf("replicas %d, expected at least 2", n)
	}
	sel, err := parseSelector(path(dep, "spec", "selector"))
	if err != nil || sel == nil || !sel.matches(podLabels) {
		t.Errorf("the Deployment's selector does not match its pod labels (%v)", err)
	}

	// Spread over nodes (preferred: a one-node cluster still runs both).
	checkAntiAffinity(t, spec, podLabels)

	// PodDisruptionBudget minAvailable 1 over the same pods.
	pdb := findObject(t, objs, "PodDisruptionBudget", "")
	if n, ok := intOf(path(pdb, "spec", "minAvailable")); !ok || n != 1 {
		t.Errorf("PodDisruptionBudget: minAvailable %v, expected 1", path(pdb, "spec", "minAvailable"))
	}
	if s, err := parseSelector(path(pdb, "spec", "selector")); err != nil || s == nil || !s.matches(podLabels) {
		t.Errorf("PodDisruptionBudget: selector does not match the webhook's pods (%v)", err)
	}

	containers := pathArr(spec, "containers")
	if len(containers) != 1 {
		t.Fatalf("expected one container, got %d", len(containers))
	}
	c := containers[0].(obj)
	if args := stringsOf(c["args"]); !sameStrings(args, wantDeploymentArgs) {
		t.Errorf("container args %q, expected %q", args, wantDeploymentArgs)
	}
	help := serveHelp(t)
	for _, a := range wantDeploymentArgs {
		if strings.HasPrefix(a, "--") && !strings.Contains(help, a+" ") {
			t.Errorf("serve --help does not know flag %s", a)
		}
	}
	if sa, _ := pathStr(spec, "serviceAccountName"); sa != webhookName {
		t.Errorf("serviceAccountName %q, expected %q", sa, webhookName)
	}
	findObject(t, objs, "ServiceAccount", webhookName)
	// The Events' reportingInstance: the pod's name, from the downward API.
	wantEnv := []interface{}{obj{"name": "POD_NAME", "valueFrom": obj{"fieldRef": obj{"fieldPath": "metadata.name"}}}}
	if !jsonEqual(normalize(c["env"]), normalize(wantEnv)) {
		t.Errorf("container env %s, expected %s", compact(c["env"]), compact(wantEnv))
	}

	ports := containerPorts(c)
	if ports["https"] != 8443 || ports["metrics"] != 9090 {
		t.Errorf("container ports %v, expected https 8443 and metrics 9090", ports)
	}
	checkProbes(t, c, ports)
	checkSecurity(t, spec, c)
	checkResources(t, c)
	checkGrace(t, spec, c, help)
	checkMounts(t, spec, c)
	checkProfilesSource(t, objs, c)
	checkService(t, objs, podLabels, ports)
}

func checkAntiAffinity(t *testing.T, spec obj, podLabels map[string]string) {
	t.Helper()
	terms := pathArr(spec, "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
	for _, term := range terms {
		pa := pathObj(term, "podAffinityTerm")
		sel, err := parseSelector(pa["labelSelector"])
		if k, _ := pathStr(pa, "topologyKey"); k == "kubernetes.io/hostname" && err == nil && sel != nil && sel.matches(podLabels) {
			return
		}
	}
	t.Errorf("no preferred pod anti-affinity on kubernetes.io/hostname over the webhook's own pods: %s",
		compact(path(spec, "affinity")))
}

func containerPorts(c obj) map[string]int64 {
	out := map[string]int64{}
	for _, p := range pathArr(c, "ports") {
		name, _ := pathStr(p, "name")
		n, _ := intOf(path(p, "containerPort"))
		out[name] = n
	}
	return out
}

// probePort resolves a probe's httpGet port (a name or a number).
func probePort(p obj, ports map[string]int64) int64 {
	switch v := path(p, "httpGet", "port").(type) {
	case string:
		return ports[v]
	default:
		n, _ := intOf(v)
		return n
	}
}

func checkProbes(t *testing.T, c obj, ports map[string]int64) {
	t.Helper()
	for probe, want := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz", "startupProbe": "/healthz"} {
		p := pathObj(c, probe)
		if p == nil {
			t.Errorf("no %s", probe)
			continue
		}
		if got, _ := pathStr(p, "httpGet", "path"); got != want {
			t.Errorf("%s: path %q, expected %q", probe, got, want)
		}
		// The metrics port, HTTPS (--metrics-auth kubernetes, the default
		// in a cluster); the probes' paths need no token there.
		if port := probePort(p, ports); port != 9090 {
			t.Errorf("%s: port %d, expected the metrics port 9090", probe, port)
		}
		if s, _ := pathStr(p, "httpGet", "scheme"); s != "HTTPS" {
			t.Errorf("%s: scheme %q, expected HTTPS (the metrics port speaks TLS)", probe, s)
		}
	}
}

// securityValue reads a field from the container's securityContext, else
// the pod's.
func securityValue(spec, c obj, key string) interface{} {
	if v := path(c, "securityContext", key); v != nil {
		return v
	}
	return path(spec, "securityContext", key)
}

func checkSecurity(t *testing.T, spec, c obj) {
	t.Helper()
	if securityValue(spec, c, "runAsNonRoot") != true {
		t.Errorf("runAsNonRoot is not true")
	}
	if uid, ok := intOf(securityValue(spec, c, "runAsUser")); !ok || uid != 65532 {
		t.Errorf("runAsUser %v, expected the numeric user 65532", securityValue(spec, c, "runAsUser"))
	}
	if path(c, "securityContext", "readOnlyRootFilesystem") != true {
		t.Errorf("readOnlyRootFilesystem is not true")
	}
	if path(c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Errorf("allowPrivilegeEscalation is not false")
	}
	if drop := stringsOf(path(c, "securityContext", "capabilities", "drop")); !contains(drop, "ALL") {
		t.Errorf("capabilities.drop %v lacks ALL", drop)
	}
	if add := path(c, "securityContext", "capabilities", "add"); add != nil {
		t.Errorf("capabilities.add %v: the webhook needs none", compact(add))
	}
	if p := path(c, "securityContext", "privileged"); p == true {
		t.Errorf("privileged container")
	}
	if s, _ := pathStr(securityValue(spec, c, "seccompProfile"), "type"); s != "RuntimeDefault" {
		t.Errorf("seccompProfile %v, expected RuntimeDefault", compact(securityValue(spec, c, "seccompProfile")))
	}
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if spec[f] == true {
			t.Errorf("%s is set", f)
		}
	}
}

// quantityBytes parses the memory quantities used here (Ki/Mi/Gi or plain).
func quantityBytes(t *testing.T, q string) int64 {
	t.Helper()
	mult := map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "": 1}
	m := regexp.MustCompile(`^(\d+)(Ki|Mi|Gi)?$`).FindStringSubmatch(q)
	if m == nil {
		t.Fatalf("memory quantity %q: expected N, NKi, NMi or NGi", q)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n * mult[m[2]]
}

// milliCPU parses "100m" or "1".
func milliCPU(t *testing.T, q string) int64 {
	t.Helper()
	if strings.HasSuffix(q, "m") {
		n, err := strconv.ParseInt(strings.TrimSuffix(q, "m"), 10, 64)
		if err != nil {
			t.Fatalf("cpu quantity %q: %v", q, err)
		}
		return n
	}
	n, err := strconv.ParseFloat(q, 64)
	if err != nil {
		t.Fatalf("cpu quantity %q: %v", q, err)
	}
	return int64(n * 1000)
}

func checkResources(t *testing.T, c obj) {
	t.Helper()
	get := func(kind, res string) string {
		v, _ := scalarString(path(c, "resources", kind, res))
		return v
	}
	for _, kind := range []string{"requests", "limits"} {
		for _, res := range []string{"cpu", "memory"} {
			if get(kind, res) == "" {
				t.Errorf("resources.%s.%s is not set", kind, res)
			}
		}
	}
	if t.Failed() {
		return
	}
	if quantityBytes(t, get("requests", "memory")) > quantityBytes(t, get("limits", "memory")) {
		t.Errorf("memory request above the limit")
	}
	if milliCPU(t, get("requests", "cpu")) > milliCPU(t, get("limits", "cpu")) {
		t.Errorf("cpu request above the limit")
	}
	// The measured idle RSS is ~9 MiB and ~50 KiB per open TLS connection
	// (comment in manifests/deployment.yaml); the limit must hold the idle
	// process with room for connections.
	if quantityBytes(t, get("limits", "memory")) < 64<<20 {
		t.Errorf("memory limit %s: below 64Mi leaves no room above the measured idle RSS", get("limits", "memory"))
	}
}

var graceDefault = regexp.MustCompile(`--shutdown-grace SECONDS[^\n]*\(default (\d+)\)`)

// checkGrace: the kubelet's grace period covers the preStop sleep and the
// server's own drain (--shutdown-grace).
func checkGrace(t *testing.T, spec, c obj, help string) {
	t.Helper()
	shutdown := int64(-1)
	args := stringsOf(c["args"])
	for i, a := range args {
		if a == "--shutdown-grace" && i+1 < len(args) {
			shutdown, _ = strconv.ParseInt(args[i+1], 10, 64)
		} else if strings.HasPrefix(a, "--shutdown-grace=") {
			shutdown, _ = strconv.ParseInt(strings.TrimPrefix(a, "--shutdown-grace="), 10, 64)
		}
	}
	if shutdown < 0 {
		m := graceDefault.FindStringSubmatch(help)
		if m == nil {
			t.Fatalf("serve --help does not say the --shutdown-grace default")
		}
		shutdown, _ = strconv.ParseInt(m[1], 10, 64)
	}
	preStop := int64(0)
	if cmd := stringsOf(path(c, "lifecycle", "preStop", "exec", "command")); len(cmd) == 2 && strings.HasSuffix(cmd[0], "sleep") {
		preStop, _ = strconv.ParseInt(cmd[1], 10, 64)
	}
	grace, ok := intOf(spec["terminationGracePeriodSeconds"])
	if !ok {
		grace = 30 // the Kubernetes default
	}
	if grace <= preStop+shutdown {
		t.Errorf("terminationGracePeriodSeconds %d must exceed preStop %d s + --shutdown-grace %d s", grace, preStop, shutdown)
	}
}

// checkMounts: the certificate and key paths in the args lie in a directory
// mount (no subPath: those never update) of the TLS Secret, the only volume:
// the profiles come through the API (checkProfilesSource).
func checkMounts(t *testing.T, spec, c obj) {
	t.Helper()
	volumes := map[string]obj{}
	for _, v := range pathArr(spec, "volumes") {
		n, _ := pathStr(v, "name")
		volumes[n] = v.(obj)
	}
	args := stringsOf(c["args"])
	flag := func(name string) string { return argAfter(args, name) }
	// volumeFor finds the mount holding file and returns its volume and the
	// file's key inside it.
	volumeFor := func(file string) (obj, string) {
		for _, m := range pathArr(c, "volumeMounts") {
			mp, _ := pathStr(m, "mountPath")
			if !strings.HasPrefix(file, strings.TrimSuffix(mp, "/")+"/") {
				continue
			}
			if sp, _ := pathStr(m, "subPath"); sp != "" {
				t.Errorf("mount %s uses subPath %q: a subPath mount never sees Secret/ConfigMap updates", mp, sp)
			}
			if m.(obj)["readOnly"] != true {
				t.Errorf("mount %s is not readOnly", mp)
			}
			n, _ := pathStr(m, "name")
			return volumes[n], strings.TrimPrefix(file, strings.TrimSuffix(mp, "/")+"/")
		}
		t.Errorf("no volume mount holds %s", file)
		return nil, ""
	}
	for _, f := range []string{"--tls-cert-file", "--tls-private-key-file"} {
		v, key := volumeFor(flag(f))
		if s, _ := pathStr(v, "secret", "secretName"); v != nil && s != tlsSecretName {
			t.Errorf("%s %s: volume is not Secret %s: %s", f, flag(f), tlsSecretName, compact(v))
		}
		if key != "tls.crt" && key != "tls.key" {
			t.Errorf("%s: key %q in the Secret, expected tls.crt/tls.key", f, key)
		}
	}
	if len(volumes) != 1 {
		t.Errorf("volumes %s: expected the TLS Secret only", compact(spec["volumes"]))
	}
}

// argAfter: the argument after flag name in args, or "".
func argAfter(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// checkProfilesSource: --profiles-configmap names the rendered profiles
// ConfigMap, by its fixed name (a hash suffix would change with every edit,
// which the flag cannot follow), whose profiles.json is the very file
// `make run` serves and whose label has its edits validated; the Role grants
// that ConfigMap and the --profiles-last-good copy by those names.
func checkProfilesSource(t *testing.T, objs []obj, c obj) {
	t.Helper()
	args := stringsOf(c["args"])
	flag := func(name string) string { return argAfter(args, name) }
	ns, cmName, _ := strings.Cut(flag("--profiles-configmap"), "/")
	if ns != webhookNamespace || cmName != profilesCMName {
		t.Fatalf("--profiles-configmap %q, expected %s/%s", flag("--profiles-configmap"), webhookNamespace, profilesCMName)
	}
	cm := findObject(t, objs, "ConfigMap", cmName)
	want, err := os.ReadFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := pathStr(cm, "data", "profiles.json"); got != string(want) {
		t.Errorf("ConfigMap %s key profiles.json differs from %s", cmName, profilesPath)
	}
	if l := stringMap(path(cm, "metadata", "labels")); l["rdma-webhook.io/profiles"] != "true" {
		t.Errorf("ConfigMap %s: labels %v, expected rdma-webhook.io/profiles=true (its edits are validated)", cmName, l)
	}
	role := findObject(t, objs, "Role", "")
	granted := map[string]bool{}
	for _, r := range pathArr(role, "rules") {
		if contains(stringsOf(path(r, "resources")), "configmaps") {
			for _, n := range stringsOf(path(r, "resourceNames")) {
				granted[n] = true
			}
		}
	}
	for _, n := range []string{cmName, flag("--profiles-last-good")} {
		if !granted[n] {
			t.Errorf("Role: no configmaps rule restricted to resourceNames [%s]: %s", n, compact(role["rules"]))
		}
	}
}

func checkService(t *testing.T, objs []obj, podLabels map[string]string, ports map[string]int64) {
	t.Helper()
	svc := findObject(t, objs, "Service", webhookName)
	sel := stringMap(path(svc, "spec", "selector"))
	if len(sel) == 0 || !(&labelSelector{MatchLabels: sel}).matches(podLabels) {
		t.Errorf("Service selector %v does not match the webhook's pods %v", sel, podLabels)
	}
	got := map[int64]int64{}
	for _, p := range pathArr(svc, "spec", "ports") {
		port, _ := intOf(path(p, "port"))
		switch tp := path(p, "targetPort").(type) {
		case string:
			got[port] = ports[tp]
		default:
			n, _ := intOf(tp)
			got[port] = n
		}
	}
	if got[443] != 8443 || got[9090] != 9090 {
		t.Errorf("Service ports %v, expected 443 -> 8443 and 9090 -> 9090", got)
	}
}

func TestRBACLeastPrivilege(t *testing.T) {
	t.Parallel()
	objs := kustomize(t, manifestsDir)
	type rule struct{ groups, resources, verbs, names []string }
	rulesOf := func(o obj) []rule {
		var out []rule
		for _, r := range pathArr(o, "rules") {
			out = append(out, rule{
				stringsOf(path(r, "apiGroups")), sortedCopy(stringsOf(path(r, "resources"))),
				sortedCopy(stringsOf(path(r, "verbs"))), stringsOf(path(r, "resourceNames")),
			})
		}
		return out
	}
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, o := range findObjects(objs, kind) {
			for _, r := range rulesOf(o) {
				for _, list := range [][]string{r.groups, r.resources, r.verbs} {
					if contains(list, "*") {
						t.Errorf("%s: wildcard in %v", objKey(o), r)
					}
				}
				// The writes: Events (events.k8s.io), create and patch; and
				// in the Role, the last good copy of the profiles (checked
				// below).
				events := sameStrings(r.groups, []string{"events.k8s.io"}) && sameStrings(r.resources, []string{"events"})
				// And the reviews behind --metrics-auth: create, which
				// stores nothing.
				review := kind == "ClusterRole" && len(r.resources) == 1 &&
					((sameStrings(r.groups, []string{"authentication.k8s.io"}) && r.resources[0] == "tokenreviews") ||
						(sameStrings(r.groups, []string{"authorization.k8s.io"}) && r.resources[0] == "subjectaccessreviews"))
				copyRule := kind == "Role" && sameStrings(r.resources, []string{"configmaps"}) &&
					(sameStrings(r.names, []string{lastGoodCMName}) || len(r.names) == 0)
				for _, v := range r.verbs {
					if v != "get" && v != "list" && v != "watch" && !(events && (v == "create" || v == "patch")) &&
						!(copyRule && (v == "update" || (v == "create" && len(r.names) == 0))) &&
						!(review && v == "create") {
						t.Errorf("%s: write verb %q in %+v", objKey(o), v, r)
					}
				}
				if events && !sameStrings(r.verbs, []string{"create", "patch"}) {
					t.Errorf("%s: Events need exactly create and patch, got %v", objKey(o), r.verbs)
				}
				if contains(r.resources, "secrets") {
					t.Errorf("%s: grants secrets", objKey(o))
				}
			}
		}
	}
	// The profiles ConfigMap; its last good copy, get and update by name
	// and create (which resourceNames cannot restrict); and the webhook's
	// own Deployment (its image, for --detect-image-from-deployment).
	role := findObject(t, objs, "Role", "")
	if rs := rulesOf(role); len(rs) != 4 || !sameStrings(rs[0].resources, []string{"configmaps"}) ||
		!sameStrings(rs[0].verbs, []string{"get", "list", "watch"}) || len(rs[0].names) != 1 ||
		!sameStrings(rs[1].resources, []string{"configmaps"}) || !sameStrings(rs[1].verbs, []string{"get", "update"}) ||
		!sameStrings(rs[1].names, []string{lastGoodCMName}) ||
		!sameStrings(rs[2].resources, []string{"configmaps"}) || !sameStrings(rs[2].verbs, []string{"create"}) ||
		len(rs[2].names) != 0 ||
		!sameStrings(rs[3].groups, []string{"apps"}) || !sameStrings(rs[3].resources, []string{"deployments"}) ||
		!sameStrings(rs[3].verbs, []string{"get"}) || !sameStrings(rs[3].names, []string{webhookName}) {
		t.Errorf("Role: expected get/list/watch of configmaps by one resourceName, get/update of %s, create of "+
			"configmaps, and get of deployment %s; got %+v", lastGoodCMName, webhookName, rs)
	}
	cr := findObject(t, objs, "ClusterRole", webhookName)
	// The JobSet a pod names and the TrainJob controlling it (issue 24's
	// jobset_owner lookup): get only, like the other lookups.
	want := map[string][]string{"/nodes": {"get"}, "/namespaces": {"get"}, "/configmaps": {"get"},
		"jobset.x-k8s.io/jobsets": {"get"}, "trainer.kubeflow.org/trainjobs": {"get"},
		"events.k8s.io/events":               {"create", "patch"},
		"authentication.k8s.io/tokenreviews": {"create"}, "authorization.k8s.io/subjectaccessreviews": {"create"}}
	got := map[string][]string{}
	for _, r := range rulesOf(cr) {
		if len(r.names) != 0 {
			continue
		}
		for _, g := range r.groups {
			for _, res := range r.resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.verbs...)
			}
		}
	}
	if !jsonEqual(normalize(want), normalize(got)) {
		t.Errorf("ClusterRole: grants %v, expected %v", got, want)
	}
	// The metrics reader, for a Prometheus to bind: get on /metrics, a
	// non-resource URL, and nothing else; nothing in the manifests binds it.
	reader := findObject(t, objs, "ClusterRole", "rdma-webhook-metrics-reader")
	if rs := pathArr(reader, "rules"); len(rs) != 1 || !sameStrings(stringsOf(path(rs[0], "nonResourceURLs")), []string{"/metrics"}) ||
		!sameStrings(stringsOf(path(rs[0], "verbs")), []string{"get"}) || path(rs[0], "resources") != nil ||
		path(rs[0], "apiGroups") != nil {
		t.Errorf("ClusterRole rdma-webhook-metrics-reader: expected only get on nonResourceURLs [/metrics], got %s", compact(rs))
	}
	// Each role of the webhook is bound to its ServiceAccount.
	for _, pair := range [][3]string{{"RoleBinding", "Role", ""}, {"ClusterRoleBinding", "ClusterRole", webhookName}} {
		b := findObject(t, objs, pair[0], "")
		roleName, _ := pathStr(findObject(t, objs, pair[1], pair[2]), "metadata", "name")
		if k, _ := pathStr(b, "roleRef", "kind"); k != pair[1] {
			t.Errorf("%s: roleRef kind %q, expected %s", objKey(b), k, pair[1])
		}
		if n, _ := pathStr(b, "roleRef", "name"); n != roleName {
			t.Errorf("%s: roleRef name %q, expected %q", objKey(b), n, roleName)
		}
		subjects := pathArr(b, "subjects")
		if len(subjects) != 1 || !jsonEqual(subjects[0], obj{"kind": "ServiceAccount", "name": webhookName, "namespace": webhookNamespace}) {
			t.Errorf("%s: subjects %s, expected only ServiceAccount %s/%s", objKey(b), compact(subjects), webhookNamespace, webhookName)
		}
	}
}

// webhookEntry is one webhook of the MutatingWebhookConfiguration, its
// selectors parsed.
type webhookEntry struct {
	name         string
	raw          obj
	namespaceSel *labelSelector
	objectSel    *labelSelector
	createsPods  bool
}

func webhookEntries(t *testing.T, mwc obj) []webhookEntry {
	t.Helper()
	var out []webhookEntry
	for _, w := range pathArr(mwc, "webhooks") {
		wo := w.(obj)
		e := webhookEntry{raw: wo}
		e.name, _ = pathStr(wo, "name")
		var err error
		if e.namespaceSel, err = parseSelector(wo["namespaceSelector"]); err != nil {
			t.Fatalf("webhook %s: %v", e.name, err)
		}
		if e.objectSel, err = parseSelector(wo["objectSelector"]); err != nil {
			t.Fatalf("webhook %s: %v", e.name, err)
		}
		for _, r := range pathArr(wo, "rules") {
			if contains(stringsOf(path(r, "apiGroups")), "") && contains(stringsOf(path(r, "resources")), "pods") &&
				contains(stringsOf(path(r, "operations")), "CREATE") {
				e.createsPods = true
			}
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		t.Fatal("the MutatingWebhookConfiguration has no webhooks")
	}
	return out
}

// calledFor reports which webhooks the apiserver calls for a pod CREATE.
func calledFor(entries []webhookEntry, nsLabels, podLabels map[string]string) []string {
	var out []string
	for _, e := range entries {
		if e.createsPods && e.namespaceSel.matches(nsLabels) && e.objectSel.matches(podLabels) {
			out = append(out, e.name)
		}
	}
	return out
}

func TestWebhookConfiguration(t *testing.T) {
	t.Parallel()
	objs := kustomize(t, manifestsDir)
	mwc := findObject(t, objs, "MutatingWebhookConfiguration", webhookName)
	svc := findObject(t, objs, "Service", webhookName)
	names := map[string]bool{}
	for _, e := range webhookEntries(t, mwc) {
		w := e.raw
		if names[e.name] {
			t.Errorf("duplicate webhook name %s", e.name)
		}
		names[e.name] = true
		if strings.Count(e.name, ".") < 2 {
			t.Errorf("webhook name %q: must be fully qualified (three segments)", e.name)
		}
		for field, want := range map[string]interface{}{
			"admissionReviewVersions": []interface{}{"v1"},
			// An Event is written for an admission with warnings, never
			// for a dry run.
			"sideEffects":        "NoneOnDryRun",
			"failurePolicy":      "Ignore",
			"matchPolicy":        "Equivalent",
			"reinvocationPolicy": "IfNeeded",
		} {
			if !jsonEqual(normalize(w[field]), normalize(want)) {
				t.Errorf("webhook %s: %s %s, expected %s", e.name, field, compact(w[field]), compact(want))
			}
		}
		if n, _ := intOf(w["timeoutSeconds"]); n != webhookTimeoutSeconds {
			t.Errorf("webhook %s: timeoutSeconds %v, expected %d", e.name, w["timeoutSeconds"], webhookTimeoutSeconds)
		}
		wantRules := []interface{}{obj{"apiGroups": []interface{}{""}, "apiVersions": []interface{}{"v1"},
			"operations": []interface{}{"CREATE"}, "resources": []interface{}{"pods"}, "scope": "Namespaced"}}
		if !jsonEqual(normalize(w["rules"]), normalize(wantRules)) {
			t.Errorf("webhook %s: rules %s, expected pods CREATE only", e.name, compact(w["rules"]))
		}
		// The Service, on its 443 port, path /mutate.
		svcName, _ := pathStr(svc, "metadata", "name")
		svcNS, _ := pathStr(svc, "metadata", "namespace")
		cc := pathObj(w, "clientConfig")
		if n, _ := pathStr(cc, "service", "name"); n != svcName {
			t.Errorf("webhook %s: service %q, expected %q", e.name, n, svcName)
		}
		if ns, _ := pathStr(cc, "service", "namespace"); ns != svcNS {
			t.Errorf("webhook %s: service namespace %q, expected %q", e.name, ns, svcNS)
		}
		if p, _ := pathStr(cc, "service", "path"); p != "/mutate" {
			t.Errorf("webhook %s: path %q, expected /mutate", e.name, p)
		}
		if port, _ := intOf(path(cc, "service", "port")); port != 443 {
			t.Errorf("webhook %s: port %d, expected 443", e.name, port)
		}
		if cc["url"] != nil {
			t.Errorf("webhook %s: clientConfig.url set", e.name)
		}
		// Filled by certs/install-dev-certs.sh or cert-manager; kept out of
		// the base so that a later `kubectl apply -k` leaves it alone.
		if cc["caBundle"] != nil {
			t.Errorf("webhook %s: caBundle in the base manifests", e.name)
		}
		if e.objectSel == nil || (len(e.objectSel.MatchLabels) == 0 && len(e.objectSel.MatchExpressions) == 0) {
			t.Errorf("webhook %s: no objectSelector: it would be called for every pod", e.name)
		}
		// kube-system and the webhook's namespace excluded by name.
		excluded := false
		for _, r := range e.namespaceSel.MatchExpressions {
			if r.Key == "kubernetes.io/metadata.name" && r.Operator == "NotIn" &&
				contains(r.Values, "kube-system") && contains(r.Values, webhookNamespace) {
				excluded = true
			}
		}
		if !excluded {
			t.Errorf("webhook %s: namespaceSelector does not exclude kube-system and %s by kubernetes.io/metadata.name NotIn",
				e.name, webhookNamespace)
		}
	}
}

// podView is a pod to route: its labels and namespace.
type podView struct {
	name      string
	namespace string
	labels    map[string]string
	anns      map[string]string
	owner     string // kind of the controlling ownerReference
}

func podViews(t *testing.T) []podView {
	t.Helper()
	var out []podView
	for _, f := range loadFixtures(t) {
		p := podView{name: f.name, namespace: f.namespace,
			labels: stringMap(path(f.object, "metadata", "labels")),
			anns:   stringMap(path(f.object, "metadata", "annotations"))}
		if p.namespace == "" {
			p.namespace = "default"
		}
		for _, r := range pathArr(f.object, "metadata", "ownerReferences") {
			if path(r, "controller") == true {
				p.owner, _ = pathStr(r, "kind")
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		t.Fatal("no fixture pods")
	}
	return out
}

// nsLabels are the labels the apiserver gives a namespace (1.21+), plus, for
// the webhook's own namespace, the ones its manifest sets.
func nsLabels(ns string, webhookNS obj) map[string]string {
	labels := map[string]string{}
	if ns == webhookNamespace {
		labels = stringMap(path(webhookNS, "metadata", "labels"))
	}
	labels["kubernetes.io/metadata.name"] = ns
	return labels
}

func TestSelectorSemantics(t *testing.T) {
	t.Parallel()
	l := map[string]string{"a": "1", "b": "2"}
	for _, c := range []struct {
		sel  string
		want bool
	}{
		{`{}`, true},
		{`{"matchLabels": {"a": "1"}}`, true},
		{`{"matchLabels": {"a": "2"}}`, false},
		{`{"matchLabels": {"c": "1"}}`, false},
		{`{"matchExpressions": [{"key": "a", "operator": "In", "values": ["0", "1"]}]}`, true},
		{`{"matchExpressions": [{"key": "c", "operator": "In", "values": ["1"]}]}`, false},
		{`{"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}`, false},
		{`{"matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["1"]}]}`, true},
		{`{"matchExpressions": [{"key": "b", "operator": "Exists"}]}`, true},
		{`{"matchExpressions": [{"key": "c", "operator": "Exists"}]}`, false},
		{`{"matchExpressions": [{"key": "c", "operator": "DoesNotExist"}]}`, true},
		{`{"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}`, false},
		{`{"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "NotIn", "values": ["2"]}]}`, false},
	} {
		v, err := decodeJSON([]byte(c.sel))
		if err != nil {
			t.Fatal(err)
		}
		s, err := parseSelector(v)
		if err != nil {
			t.Fatalf("%s: %v", c.sel, err)
		}
		if got := s.matches(l); got != c.want {
			t.Errorf("%s against %v: got %v, expected %v", c.sel, l, got, c.want)
		}
	}
	var none *labelSelector
	if !none.matches(l) {
		t.Errorf("an absent selector must match everything")
	}
	for _, bad := range []string{
		`{"matchExpressions": [{"key": "a", "operator": "In"}]}`,
		`{"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["1"]}]}`,
		`{"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["1"]}]}`,
		`{"matchLabel": {"a": "1"}}`,
	} {
		v, _ := decodeJSON([]byte(bad))
		if _, err := parseSelector(v); err == nil {
			t.Errorf("%s: expected an invalid selector", bad)
		}
	}
}

// TestWebhookSelectorsRoutePods evaluates the MutatingWebhookConfiguration's
// selectors as the apiserver does against every fixture pod: the apiserver
// must call the webhook for the training-operator's PyTorchJob pods and for
// pods labelled rdma-webhook.io/inject=true, for nothing else, and never in
// kube-system or the webhook's own namespace.
func TestWebhookSelectorsRoutePods(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{manifestsDir, certManagerDir} {
		t.Run(strings.TrimPrefix(dir, "../../"), func(t *testing.T) {
			objs := kustomize(t, dir)
			entries := webhookEntries(t, findObject(t, objs, "MutatingWebhookConfiguration", webhookName))
			webhookNS := findObject(t, objs, "Namespace", webhookNamespace)
			checkRouting(t, entries, webhookNS)
		})
	}
}

// routedKind is the job kind whose shipped entry must send the pod, by its
// labels alone (what an objectSelector sees), or "": a PyTorchJob's
// (operator label), a TrainJob's trainer or launcher (replicated job node
// or launcher), an MPIJob's (mpi-operator's label), a Volcano Job's.
func routedKind(labels map[string]string) string {
	switch {
	case labels[operatorLabel] == "pytorchjob-controller":
		return "PyTorchJob"
	case labels["jobset.sigs.k8s.io/replicatedjob-name"] == "node" ||
		labels["jobset.sigs.k8s.io/replicatedjob-name"] == "launcher":
		return "TrainJob"
	case labels[operatorLabel] == "mpi-operator":
		return "MPIJob"
	}
	if _, ok := labels["volcano.sh/job-name"]; ok {
		return "VolcanoJob"
	}
	return ""
}

func checkRouting(t *testing.T, entries []webhookEntry, webhookNS obj) {
	t.Helper()
	byOperator, byLabel, annotationOnly := 0, 0, 0
	kinds := map[string]int{}
	for _, p := range podViews(t) {
		called := calledFor(entries, nsLabels(p.namespace, webhookNS), p.labels)
		kind := routedKind(p.labels)
		operator := kind != ""
		optIn := p.labels[injectKey] == "true"
		kinds[kind]++
		switch {
		case operator || optIn:
			if len(called) == 0 {
				t.Errorf("%s (ns %s, labels %v): not sent to the webhook", p.name, p.namespace, p.labels)
			}
			if operator {
				byOperator++
			}
			if optIn {
				byLabel++
			}
		default:
			if len(called) != 0 {
				t.Errorf("%s (labels %v): sent to %v, expected no call", p.name, p.labels, called)
			}
		}
		// Pods the training-operator made for a PyTorchJob always carry its
		// label; mpi-operator's for an MPIJob theirs.
		if p.owner == "PyTorchJob" && kind != "PyTorchJob" {
			t.Errorf("%s: a PyTorchJob pod without %s=pytorchjob-controller", p.name, operatorLabel)
		}
		if p.owner == "MPIJob" && kind != "MPIJob" {
			t.Errorf("%s: an MPIJob pod without %s=mpi-operator", p.name, operatorLabel)
		}
		// Pods of other controllers never reach the webhook (a Job's only
		// as a TrainJob's or an MPIJob launcher's, by their labels).
		switch p.owner {
		case "Job", "StatefulSet", "ReplicaSet", "Deployment", "DaemonSet":
			if len(called) != 0 && kind == "" {
				t.Errorf("%s (a %s pod): sent to %v", p.name, p.owner, called)
			}
		}
		// An opt-in by annotation alone is invisible to objectSelector: the
		// docs/install.md tells users to set the label. The same pod with the label is
		// sent.
		if p.anns[injectKey] == "true" && !optIn && !operator {
			annotationOnly++
			labelled := map[string]string{injectKey: "true"}
			for k, v := range p.labels {
				labelled[k] = v
			}
			if got := calledFor(entries, nsLabels(p.namespace, webhookNS), labelled); len(got) == 0 {
				t.Errorf("%s with the label %s=true: not sent to the webhook", p.name, injectKey)
			}
			if len(called) != 0 {
				t.Errorf("%s: the annotation alone unexpectedly selected %v", p.name, called)
			}
		}
		// The same pod in kube-system, in the webhook's own namespace, or in
		// a namespace labelled rdma-webhook.io/inject=false: never.
		for _, ns := range []map[string]string{
			nsLabels("kube-system", webhookNS),
			nsLabels(webhookNamespace, webhookNS),
			{"kubernetes.io/metadata.name": "team-a", injectKey: "false"},
		} {
			withOptIn := map[string]string{injectKey: "true"}
			for k, v := range p.labels {
				withOptIn[k] = v
			}
			if got := calledFor(entries, ns, withOptIn); len(got) != 0 {
				t.Errorf("%s in namespace %v: sent to %v", p.name, ns, got)
			}
		}
	}
	for _, k := range []string{"PyTorchJob", "TrainJob", "MPIJob", "VolcanoJob"} {
		if kinds[k] == 0 {
			t.Errorf("fixtures cover too little: no %s pod", k)
		}
	}
	if byOperator == 0 || byLabel == 0 || annotationOnly == 0 {
		t.Errorf("fixtures cover too little: %d operator-labelled, %d inject-labelled pods, %d annotation-only opt-ins",
			byOperator, byLabel, annotationOnly)
	}
	t.Logf("%d operator-labelled and %d inject-labelled pods sent; %d annotation-only opt-ins need the label",
		byOperator, byLabel, annotationOnly)
}

// TestWebhookSelectorsMatchWhatTheWebhookMutates ties the routing to the
// fixtures' expectations: every pod the webhook is expected to mutate is
// sent to it, except an opt-in by annotation alone.
func TestWebhookSelectorsMatchWhatTheWebhookMutates(t *testing.T) {
	t.Parallel()
	objs := kustomize(t, manifestsDir)
	entries := webhookEntries(t, findObject(t, objs, "MutatingWebhookConfiguration", webhookName))
	webhookNS := findObject(t, objs, "Namespace", webhookNamespace)
	var missed []string
	for _, f := range loadFixtures(t) {
		if f.expect.Mutated == nil || !*f.expect.Mutated {
			continue
		}
		ns := f.namespace
		if ns == "" {
			ns = "default"
		}
		labels := stringMap(path(f.object, "metadata", "labels"))
		if len(calledFor(entries, nsLabels(ns, webhookNS), labels)) == 0 {
			anns := stringMap(path(f.object, "metadata", "annotations"))
			if anns[injectKey] == "true" {
				continue // annotation-only opt-in: needs the label (docs/install.md)
			}
			missed = append(missed, f.name)
		}
	}
	sort.Strings(missed)
	if len(missed) != 0 {
		t.Errorf("pods the webhook mutates but the apiserver would not send to it: %v", missed)
	}
}

// TestNetworkPolicy: the shipped NetworkPolicy selects the webhook's pods
// and admits exactly two things: the HTTPS port from anywhere (the
// apiserver, whose addresses no selector names) and the metrics port, which
// the probes use too, from the namespace monitoring. Ingress only: egress
// (to the apiserver) stays open. Its ports are the container's named ports.
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	objs := kustomize(t, manifestsDir)
	np := findObject(t, objs, "NetworkPolicy", webhookName)
	dep := findObject(t, objs, "Deployment", webhookName)
	sel, err := parseSelector(path(np, "spec", "podSelector"))
	if err != nil || sel == nil || !sel.matches(stringMap(path(dep, "spec", "template", "metadata", "labels"))) {
		t.Errorf("the NetworkPolicy's podSelector does not select the Deployment's pods (%v)", err)
	}
	if got := toJSONText(t, path(np, "spec", "policyTypes")); got != `["Ingress"]` {
		t.Errorf("policyTypes %s, expected [\"Ingress\"] (egress to the apiserver stays open)", got)
	}
	want := `[{"ports":[{"port":"https","protocol":"TCP"}]},` +
		`{"from":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}],` +
		`"ports":[{"port":"metrics","protocol":"TCP"}]}]`
	if got := toJSONText(t, path(np, "spec", "ingress")); got != want {
		t.Errorf("ingress rules:\n %s\nexpected\n %s", got, want)
	}
	ports := map[string]bool{}
	for _, c := range path(dep, "spec", "template", "spec", "containers").([]interface{}) {
		for _, p := range path(c, "ports").([]interface{}) {
			n, _ := pathStr(p, "name")
			ports[n] = true
		}
	}
	for _, p := range []string{"https", "metrics"} {
		if !ports[p] {
			t.Errorf("the NetworkPolicy names port %q, which the Deployment's containers lack", p)
		}
	}
	for _, probe := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
		if p, _ := pathStr(path(dep, "spec", "template", "spec", "containers").([]interface{})[0], probe, "httpGet", "port"); p != "metrics" {
			t.Errorf("%s on port %q: the docs say the probes use the metrics port", probe, p)
		}
	}
}

// toJSONText is v as compact JSON with sorted keys.
func toJSONText(t *testing.T, v interface{}) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
