package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// podSecurityConfig writes an AdmissionConfiguration as an admin gives the
// apiserver (--admission-control-config-file), the PodSecurity plugin's
// configuration inline.
func podSecurityConfig(t *testing.T, defaults, exemptions string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admission.yaml")
	text := "apiVersion: apiserver.config.k8s.io/v1\n" +
		"kind: AdmissionConfiguration\n" +
		"plugins:\n" +
		"- name: PodSecurity\n" +
		"  configuration:\n" +
		"    apiVersion: pod-security.admission.config.k8s.io/v1\n" +
		"    kind: PodSecurityConfiguration\n" +
		"    defaults: " + defaults + "\n" +
		"    exemptions: " + exemptions + "\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ipcAndPodSecurityWarning: whether a review of an 8-GPU training pod in ns
// gives IPC_LOCK, and its Pod Security warning ("" none).
func ipcAndPodSecurityWarning(t *testing.T, in *instance, ns string) (bool, string) {
	t.Helper()
	pod := trainingPod(8)
	rr := in.review(t, podCreate(ns, pod))
	patched := applyPatch(t, pod, rr.patch)
	if s, _ := pathStr(patched, "spec", "schedulerName"); s != "volcano" {
		t.Errorf("%s: not mutated (schedulerName %q; warnings %q)", ns, s, rr.warnings)
	}
	for _, w := range rr.warnings {
		if strings.Contains(w, "Pod Security") {
			return hasIPCLock(patched), w
		}
	}
	return hasIPCLock(patched), ""
}

// TestKubeAPIPodSecurityConfig: serve --pod-security-config reads the
// cluster's PodSecurity configuration: a namespace without the enforce label
// has the configured default level (baseline: no IPC_LOCK, with the
// warning), a label still wins, and a pod Pod Security exempts (its
// namespace, or the requesting user of the AdmissionReview) gets IPC_LOCK
// whatever its namespace's labels, with no warning.
func TestKubeAPIPodSecurityConfig(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNamespace("ps-unlabelled", nil)
	a.putNamespace("ps-privileged", map[string]string{"pod-security.kubernetes.io/enforce": "privileged"})
	a.putNamespace("ps-exempt", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	a.putNamespace("ps-restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})

	t.Run("defaults and namespaces", func(t *testing.T) {
		conf := podSecurityConfig(t, "{enforce: baseline, enforce-version: latest}", "{namespaces: [ps-exempt]}")
		in := startLookupInstance(t, a, "--pod-security-config", conf)
		in.waitLog(t, 0, 5*time.Second, `"Pod Security configuration read"`, msgIs("Pod Security configuration read", "file", conf))
		cases := []struct {
			ns   string
			ipc  bool
			warn string
		}{
			{"ps-unlabelled", false, `no IPC_LOCK under Pod Security baseline`},
			{"ps-privileged", true, ""},
			{"ps-exempt", true, ""},
			{"ps-restricted", false, "no IPC_LOCK under Pod Security restricted"},
		}
		for _, c := range cases {
			ipc, w := ipcAndPodSecurityWarning(t, in, c.ns)
			if ipc != c.ipc || (c.warn == "") != (w == "") || !strings.Contains(w, c.warn) {
				t.Errorf("%s: IPC_LOCK %v, warning %q; want %v, %q", c.ns, ipc, w, c.ipc, c.warn)
			}
		}
	})
	t.Run("usernames", func(t *testing.T) {
		// The user of every review these tests send: the training-operator.
		conf := podSecurityConfig(t, "{}", `{usernames: ["system:serviceaccount:kubeflow:training-operator"]}`)
		in := startLookupInstance(t, a, "--pod-security-config", conf)
		if ipc, w := ipcAndPodSecurityWarning(t, in, "ps-restricted"); !ipc || w != "" {
			t.Errorf("exempt user in ps-restricted: IPC_LOCK %v, warning %q; want true, none", ipc, w)
		}
		conf = podSecurityConfig(t, "{}", `{usernames: ["alice"]}`)
		in = startLookupInstance(t, a, "--pod-security-config", conf)
		if ipc, w := ipcAndPodSecurityWarning(t, in, "ps-restricted"); ipc || w == "" {
			t.Errorf("another user exempt, ps-restricted: IPC_LOCK %v, warning %q; want false, one", ipc, w)
		}
	})
}

// TestPodSecurityConfigRefused: a configuration the apiserver would refuse
// stops serve at start (exit 1), naming the file and the field; a missing
// file too. serve --help lists the flag.
func TestPodSecurityConfigRefused(t *testing.T) {
	t.Parallel()
	bad := podSecurityConfig(t, "{enforce: Baseline}", "{}")
	dup := podSecurityConfig(t, "{}", "{namespaces: [a, a]}")
	for _, c := range []struct{ file, say string }{
		{bad, "defaults.enforce must be one of privileged, baseline, restricted"},
		{dup, `exemptions.namespaces[1]: \"a\" is there twice`}, // in a JSON log line
		{filepath.Join(t.TempDir(), "none.yaml"), "none.yaml"},
	} {
		res, exited := runBinaryWithin(t, nil, 10*time.Second, "serve", "--no-kube-api", "--profiles", profilesPath,
			"--listen", "127.0.0.1:0", "--metrics-listen", "", "--pod-security-config", c.file)
		if !exited || res.exitCode != 1 || !strings.Contains(string(res.stderr), c.say) ||
			!strings.Contains(string(res.stderr), "cannot start") {
			t.Errorf("serve --pod-security-config %s: expected exit 1, \"cannot start\" and %q; got %d (exited %v): %s",
				c.file, c.say, res.exitCode, exited, res.stderr)
		}
	}
	if help := serveHelp(t); !strings.Contains(help, "--pod-security-config FILE") {
		t.Errorf("serve --help lacks --pod-security-config FILE:\n%s", help)
	}
}

// podOf decodes a pod mutate --patched printed.
func podOf(t *testing.T, out []byte) obj {
	t.Helper()
	v, err := decodeJSON(out)
	p, ok := v.(map[string]interface{})
	if err != nil || !ok {
		t.Fatalf("not a JSON object (%v): %s", err, out)
	}
	return p
}

// TestMutateOfflinePodSecurityConfig: mutate --pod-security-config applies
// the same configuration offline: the default level to a namespace's
// labels given with --namespace-labels, an AdmissionReview's user to the
// user exemptions, and --explain names the exemption.
func TestMutateOfflinePodSecurityConfig(t *testing.T) {
	t.Parallel()
	podFile := writeTemp(t, "pod.json", trainingPod(8))
	base := []string{"mutate", "--profiles", profilesPath, "--patched", "--namespace-labels", "team=ml"}

	conf := podSecurityConfig(t, "{enforce: restricted}", "{}")
	res := runBinary(t, nil, append(base, "--pod-security-config", conf, podFile)...)
	if res.exitCode != 0 || !strings.Contains(string(res.stderr), "no IPC_LOCK under Pod Security restricted") {
		t.Errorf("default restricted: expected exit 0 and the warning, got %d: %s", res.exitCode, res.stderr)
	}
	if hasIPCLock(podOf(t, res.stdout)) {
		t.Errorf("default restricted: IPC_LOCK added")
	}
	if !hasIPCLock(podOf(t, runBinary(t, nil, append(base, podFile)...).stdout)) {
		t.Errorf("without --pod-security-config: IPC_LOCK not added")
	}

	r := podCreate("default", trainingPod(8))
	review := writeTemp(t, "review.json", r.body())
	conf = podSecurityConfig(t, "{enforce: restricted}", `{usernames: ["system:serviceaccount:kubeflow:training-operator"]}`)
	res = runBinary(t, nil, "mutate", "--profiles", profilesPath, "--namespace-labels", "team=ml",
		"--pod-security-config", conf, review)
	if res.exitCode != 0 || strings.Contains(string(res.stderr), "Pod Security") {
		t.Errorf("exempt user: expected exit 0 and no Pod Security warning, got %d: %s", res.exitCode, res.stderr)
	}
	if rr := parseReview(t, res.stdout, r); !hasIPCLock(applyPatch(t, trainingPod(8), rr.patch)) {
		t.Errorf("exempt user: no IPC_LOCK in the patch %s", rr.patch)
	}

	// --explain says which exemption applied.
	conf = podSecurityConfig(t, "{}", "{namespaces: [kubeflow]}") // the pod's
	res = runBinary(t, nil, "mutate", "--profiles", profilesPath, "--explain", "--pod-security-config", conf,
		"--namespace-labels", "pod-security.kubernetes.io/enforce=restricted", podFile)
	for _, want := range []string{"Pod Security: the pod is exempt by its namespace (--pod-security-config)",
		"IPC_LOCK: added to securityContext.capabilities.add"} {
		if res.exitCode != 0 || !strings.Contains(string(res.stdout), want) {
			t.Errorf("--explain, exempt namespace: expected exit 0 and %q, got %d:\n%s%s", want, res.exitCode, res.stdout, res.stderr)
		}
	}

	res = runBinary(t, nil, append(base, "--pod-security-config", filepath.Join(t.TempDir(), "none.yaml"), podFile)...)
	if res.exitCode != 1 || !strings.Contains(string(res.stderr), "--pod-security-config") {
		t.Errorf("missing file: expected exit 1 naming the flag, got %d: %s", res.exitCode, res.stderr)
	}
}
