package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMutateOfflineMatchesServe: `mutate --patched` on a bare Pod gives the
// pod the served patch makes (docs/reference.md "mutate").
func TestMutateOfflineMatchesServe(t *testing.T) {
	t.Parallel()
	for _, f := range valgrindSample(loadFixtures(t), 4) {
		f := f
		t.Run(f.name, func(t *testing.T) {
			served := applyPatch(t, f.object, srv.review(t, podCreate(f.namespace, copyObject(f.object))).patch)
			file := writeTemp(t, "pod.json", f.object)
			offline := mustSucceed(t, nil, "mutate", "--profiles", profilesPath, "--patched", file)
			if !jsonEqual(offline, served) {
				t.Errorf("mutate --patched differs from the served patch applied (expected = served):\n%s", jsonDiff(served, offline))
			}
		})
	}
}

// TestMutateOfflineStdin: "-" reads the object from stdin.
func TestMutateOfflineStdin(t *testing.T) {
	t.Parallel()
	pod := trainingPod(8)
	served := applyPatch(t, pod, srv.review(t, podCreate("kubeflow", copyObject(pod))).patch)
	offline := mustSucceed(t, mustMarshal(pod), "mutate", "--profiles", profilesPath, "--patched", "-")
	if !jsonEqual(offline, served) {
		t.Errorf("mutate --patched - differs from serve (expected = served):\n%s", jsonDiff(served, offline))
	}
}

// TestMutateOfflineReview: an AdmissionReview in, the review response out,
// with the patch serve gives.
func TestMutateOfflineReview(t *testing.T) {
	t.Parallel()
	for _, version := range []string{admissionV1, admissionV1beta1} {
		version := version
		t.Run(version, func(t *testing.T) {
			r := withVersion(podCreate("kubeflow", trainingPod(4)), version)
			served := srv.review(t, r)
			out := mustSucceed(t, nil, "mutate", "--profiles", profilesPath, writeTemp(t, "review.json", r.body()))
			offline := parseReview(t, mustMarshal(out), r)
			if offline.patch == nil || !samePatch(offline.patch, served.patch) {
				t.Errorf("offline review patch differs from serve\nexpected %s\ngot      %s", served.patch, offline.patch)
			}
		})
	}
}

// TestMutateOfflinePyTorchJob: the cloud guide's Swin job gets the 8-card HCA list
// in every replica template, and keeps what the user wrote.
func TestMutateOfflinePyTorchJob(t *testing.T) {
	t.Parallel()
	const file = "testdata/pytorchjob-swin.json"
	job, err := readJSONFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := mustSucceed(t, nil, "mutate", "--profiles", profilesPath, "--patched", file)
	checkNothingLost(t, job, out)
	templates := replicaTemplates(out)
	if len(templates) != 2 {
		t.Fatalf("expected the Master and Worker templates, got %d: %s", len(templates), compact(out))
	}
	var pods []namedObject
	for name, tmpl := range templates {
		checkSwinTemplate(t, name, tmpl)
		pods = append(pods, namedObject{"PyTorchJob " + name + " template", templateAsPod(tmpl)})
	}
	checkSchemas(t, pods)
}

func checkSwinTemplate(t *testing.T, replica string, tmpl obj) {
	t.Helper()
	c := containerByName(tmpl, "pytorch")
	want := map[string]string{
		"NCCL_IB_HCA": "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8",
		"NCCL_DEBUG":  "INFO", "NCCL_IB_DISABLE": "0",
		"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_TIMEOUT": "22", "NCCL_IB_QPS_PER_CONNECTION": "8",
	}
	for v, val := range want {
		checkEnvValue(t, replica+"/pytorch", v, &val, envEntries(c, v))
	}
	if got := addedTemplateRdma(tmpl); got != 0 {
		t.Errorf("%s: the user asks for rdma/hca already; expected no other rdma/ resource added, got %d", replica, got)
	}
}

// addedTemplateRdma counts rdma/ limits beyond the user's rdma/hca.
func addedTemplateRdma(tmpl obj) int {
	n := 0
	for _, c := range pathArr(tmpl, "spec", "containers") {
		for res := range pathObj(c, "resources", "limits") {
			if strings.HasPrefix(res, "rdma/") && res != "rdma/hca" {
				n++
			}
		}
	}
	return n
}

// TestCheckProfiles: the shipped profiles pass; each bad file fails with a
// message that names the profile and the field.
func TestCheckProfiles(t *testing.T) {
	t.Parallel()
	if res := runBinary(t, nil, "check-profiles", profilesPath); res.exitCode != 0 {
		t.Errorf("check-profiles %s: expected exit 0, got %d\n%s%s", profilesPath, res.exitCode, res.stdout, res.stderr)
	}
	bad := map[string][]string{
		"profiles-duplicate-name.json": {"roce-8card", "name"},
		"profiles-ib-timeout-40.json":  {"roce-4card", "NCCL_IB_TIMEOUT"},
		"profiles-env-name-1bad.json":  {"roce-4card", "1BAD"},
		"profiles-quantity-abc.json":   {"roce-4card", "rdma/hca"},
	}
	for file, words := range bad {
		file, words := file, words
		t.Run(file, func(t *testing.T) {
			res := runBinary(t, nil, "check-profiles", filepath.Join("testdata", file))
			msg := string(res.stdout) + string(res.stderr)
			if res.exitCode == 0 {
				t.Errorf("expected a non-zero exit, got 0: %q", msg)
			}
			for _, w := range words {
				if !strings.Contains(msg, w) {
					t.Errorf("expected the message to name %q, got %q", w, msg)
				}
			}
		})
	}
}

// TestGenCerts: ECDSA P-256 serving certificate, signed by the CA, valid
// for the Service's DNS name, localhost and 127.0.0.1.
func TestGenCerts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := genCerts(binaryPath(), dir, "--service", "rdma-webhook", "--namespace", "rdma-system"); err != nil {
		t.Fatal(err)
	}
	cert := readCert(t, filepath.Join(dir, "tls.crt"))
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("serving key: expected ECDSA P-256, got %T", cert.PublicKey)
	}
	pool, err := loadCAPool(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rdma-webhook.rdma-system.svc", "localhost", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("certificate for %q: expected valid, got %v (DNS SANs %v, IP SANs %v)", name, err, cert.DNSNames, cert.IPAddresses)
		}
	}
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", file)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return cert
}

// configMapDoc is an object of a kind the webhook never mutates.
var configMapDoc = obj{"apiVersion": "v1", "kind": "ConfigMap",
	"metadata": obj{"name": "job-script", "namespace": "kubeflow"}, "data": obj{"run.sh": "torchrun x.py\n"}}

// TestMutateOfflineYAMLStream: a YAML stream of every fixture (written by
// kubectl), an empty document and a ConfigMap. --patched gives YAML, which
// kubectl reads as the pods the served patches make, the ConfigMap as it
// was; -o json the same as JSON; without --patched one response per pod,
// each with the served patch. Warnings say which document they are about.
func TestMutateOfflineYAMLStream(t *testing.T) {
	t.Parallel()
	fixtures := loadFixtures(t)
	var stream bytes.Buffer
	stream.WriteString("---\n# an empty document first\n---\n")
	for i, f := range fixtures {
		if i > 0 {
			stream.WriteString("---\n")
		}
		stream.Write(kubectlYAML(t, f.object))
	}
	stream.WriteString("---\n")
	stream.Write(kubectlYAML(t, configMapDoc))
	// The pods as kubectl reads the stream (its YAML leaves managedFields
	// out), and as serve mutates them.
	read := yamlObjects(t, stream.Bytes())
	if len(read) != len(fixtures)+1 {
		t.Fatalf("kubectl reads %d objects in the stream, expected %d", len(read), len(fixtures)+1)
	}
	var served []obj
	for i, f := range fixtures {
		served = append(served, applyPatch(t, read[i], srv.review(t, podCreate(f.namespace, copyObject(read[i]))).patch))
	}
	want := append(append([]obj{}, served...), configMapDoc)

	t.Run("patched, YAML out", func(t *testing.T) {
		res := mutateRun(t, stream.Bytes(), "--patched")
		if res.exitCode != 0 {
			t.Fatalf("expected exit 0, got %d\n%s", res.exitCode, res.stderr)
		}
		if bytes.HasPrefix(bytes.TrimSpace(res.stdout), []byte("{")) {
			t.Fatalf("YAML in, --patched: expected YAML out, got %s", cut(res.stdout))
		}
		if n := bytes.Count(res.stdout, []byte("\n---\n")); n != len(want)-1 {
			t.Errorf("expected %d documents separated by ---, got %d separators", len(want), n)
		}
		checkObjects(t, "kubectl's reading of the YAML", want, yamlObjects(t, res.stdout))
		if !strings.Contains(string(res.stderr), "ConfigMap kubeflow/job-script): left as it is") {
			t.Errorf("stderr does not say the ConfigMap was left as it is:\n%s", res.stderr)
		}
		for i, f := range fixtures {
			if f.name == "local/103-gpu2-no-profile.json" {
				tag := fmt.Sprintf("[document %d, Pod ", i+1)
				if !strings.Contains(string(res.stderr), "no RDMA profile matches this pod (2 GPUs); NCCL settings not injected "+tag) {
					t.Errorf("the no-profile warning does not name document %d:\n%s", i+1, res.stderr)
				}
			}
		}
	})
	t.Run("patched, -o json", func(t *testing.T) {
		res := mutateRun(t, stream.Bytes(), "--patched", "-o", "json")
		if res.exitCode != 0 {
			t.Fatalf("expected exit 0, got %d\n%s", res.exitCode, res.stderr)
		}
		var got []obj
		for _, v := range jsonValues(t, res.stdout) {
			o, _ := v.(obj)
			got = append(got, o)
		}
		checkObjects(t, "-o json", want, got)
	})
	t.Run("responses", func(t *testing.T) {
		res := mutateRun(t, stream.Bytes())
		if res.exitCode != 0 {
			t.Fatalf("expected exit 0, got %d\n%s", res.exitCode, res.stderr)
		}
		got := jsonValues(t, res.stdout)
		if len(got) != len(fixtures) {
			t.Fatalf("expected %d responses (none for the ConfigMap), got %d", len(fixtures), len(got))
		}
		for i, f := range fixtures {
			mutated := applyPatch(t, read[i], offlinePatch(t, got[i]))
			if !jsonEqual(mutated, served[i]) {
				t.Errorf("%s: the offline response's patch differs from serve's:\n%s", f.name, jsonDiff(served[i], mutated))
			}
		}
	})
}

func checkObjects(t *testing.T, what string, want, got []obj) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: expected %d objects, got %d", what, len(want), len(got))
	}
	for i := range want {
		if !jsonEqual(want[i], got[i]) {
			t.Errorf("%s: object %d (%s) differs (expected = served):\n%s", what, i+1, objKey(want[i]), jsonDiff(want[i], got[i]))
		}
	}
}

// TestMutateOfflineLists: a List (JSON, and YAML as `kubectl get -o yaml`
// prints one) and a v1 PodList whose items name no kind (as the API's list
// gives them): --patched prints the list with every item mutated as serve
// mutates it; without it, one response per item.
func TestMutateOfflineLists(t *testing.T) {
	t.Parallel()
	fixtures := loadFixtures(t)[:6]
	var items, bare, served, servedBare []interface{}
	var yamlList strings.Builder
	yamlList.WriteString("apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n")
	for _, f := range fixtures {
		items = append(items, f.object)
		b := copyObject(f.object)
		delete(b, "kind")
		delete(b, "apiVersion")
		bare = append(bare, b)
		p := servedPod(t, f)
		served = append(served, p)
		pb := copyObject(p)
		delete(pb, "kind")
		delete(pb, "apiVersion")
		servedBare = append(servedBare, pb)
		yamlList.WriteString(yamlListItem(kubectlYAML(t, f.object)))
	}
	// kubectl's YAML leaves managedFields out: the YAML list's pods are
	// the ones kubectl reads back.
	var servedYAML []interface{}
	for i, o := range yamlObjects(t, []byte(yamlList.String())) {
		servedYAML = append(servedYAML, applyPatch(t, o, srv.review(t, podCreate(fixtures[i].namespace, copyObject(o))).patch))
	}
	cases := []struct {
		name  string
		input []byte
		want  obj
	}{
		{"List", mustMarshal(obj{"apiVersion": "v1", "kind": "List", "items": items}),
			obj{"apiVersion": "v1", "kind": "List", "items": served}},
		{"PodList", mustMarshal(obj{"apiVersion": "v1", "kind": "PodList", "metadata": obj{"resourceVersion": "7"}, "items": bare}),
			obj{"apiVersion": "v1", "kind": "PodList", "metadata": obj{"resourceVersion": "7"}, "items": servedBare}},
		{"List in YAML", []byte(yamlList.String()),
			obj{"apiVersion": "v1", "kind": "List", "metadata": obj{"resourceVersion": ""}, "items": servedYAML}},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			res := mutateRun(t, c.input, "--patched", "-o", "json")
			if res.exitCode != 0 {
				t.Fatalf("expected exit 0, got %d\n%s", res.exitCode, res.stderr)
			}
			got, err := decodeObject(res.stdout)
			if err != nil {
				t.Fatalf("expected one JSON object (the list): %v\n%s", err, cut(res.stdout))
			}
			if !jsonEqual(c.want, got) {
				t.Errorf("the mutated list differs (expected = served):\n%s", jsonDiff(c.want, got))
			}
			res = mutateRun(t, c.input)
			if n := len(jsonValues(t, res.stdout)); res.exitCode != 0 || n != len(fixtures) {
				t.Errorf("responses: expected exit 0 and %d responses, got %d and %d\n%s", len(fixtures), res.exitCode, n, res.stderr)
			}
		})
	}
}

// TestMutateOfflineGarbage: input that is not one JSON value or a YAML
// stream is an error (exit 1) naming where, and nothing is printed; a
// document that cannot be processed is exit 1 too, while the others are
// still printed. Usage errors are exit 2.
func TestMutateOfflineGarbage(t *testing.T) {
	t.Parallel()
	pod := mustMarshal(trainingPod(8))
	podYAML := kubectlYAML(t, trainingPod(8))
	cases := []struct {
		name  string
		input []byte
		words []string
		read  bool // it was read: --patched prints it as it was
	}{
		{"text after the JSON value", append(append([]byte{}, pod...), " trailing"...), []string{"not valid JSON: more text after the value at line 1, column"}, false},
		{"two JSON values", append(append(append([]byte{}, pod...), '\n'), pod...), []string{"not valid JSON", "line 2, column 1"}, false},
		{"JSON cut short", pod[:len(pod)/2], []string{"not valid JSON: the text ends inside a value"}, false},
		{"YAML then garbage", append(append([]byte{}, podYAML...), "}}} not yaml\n"...), []string{"not valid YAML at line"}, false},
		{"YAML garbage in the second document", append(append([]byte{}, podYAML...), "---\nkind: Pod\n  bad: indent\n"...), []string{"not valid YAML at line"}, false},
		{"a tab for indentation", []byte("kind: Pod\nspec:\n\tcontainers: []\n"), []string{"not valid YAML at line 3, column 1"}, false},
		{"an alias to nothing", []byte("kind: Pod\nmetadata: *meta\n"), []string{"alias *meta names no anchor before it at line 2, column 11"}, false},
		{"a YAML string, not an object", []byte("just some words\n"), []string{"not an object"}, true},
		{"no kind", []byte("metadata:\n  name: x\n"), []string{"no kind"}, true},
		{"empty", []byte(""), []string{"no object in the input"}, false},
		{"only comments", []byte("# nothing\n---\n"), []string{"no object in the input"}, false},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			for _, patched := range []bool{false, true} {
				args := []string{}
				if patched {
					args = append(args, "--patched")
				}
				res := mutateRun(t, c.input, args...)
				if res.exitCode != 1 {
					t.Errorf("%v: expected exit 1, got %d\nstdout %s\nstderr %s", args, res.exitCode, cut(res.stdout), res.stderr)
				}
				if printed := len(res.stdout) != 0; printed != (patched && c.read) {
					t.Errorf("%v: expected stdout printed %v, got %s", args, patched && c.read, cut(res.stdout))
				}
				for _, w := range c.words {
					if !strings.Contains(string(res.stderr), w) {
						t.Errorf("%v: expected stderr to say %q, got %q", args, w, res.stderr)
					}
				}
			}
		})
	}
	t.Run("one bad document among good ones", func(t *testing.T) {
		input := append(append(append([]byte{}, podYAML...), "---\nmetadata: {name: kindless}\n---\n"...), podYAML...)
		res := mutateRun(t, input, "--patched")
		if res.exitCode != 1 {
			t.Errorf("expected exit 1, got %d\n%s", res.exitCode, res.stderr)
		}
		objs := yamlObjectsLenient(t, res.stdout)
		if len(objs) != 3 {
			t.Fatalf("expected the 3 documents printed (the bad one as it was), got %d:\n%s", len(objs), cut(res.stdout))
		}
		if !strings.Contains(string(res.stderr), "document 2 (no kind kindless): no kind") {
			t.Errorf("the error does not name document 2: %s", res.stderr)
		}
		for _, i := range []int{0, 2} {
			if by, _ := pathStr(objs[i], "metadata", "annotations", annSelectedBy); by != "gpus" {
				t.Errorf("document %d: expected it mutated (selected-by gpus), got %q", i+1, by)
			}
		}
	})
	usage := []struct {
		name string
		args []string
		word string
	}{
		{"-o xml", []string{"-o", "xml"}, `-o takes json or yaml, not "xml"`},
		{"a label without =", []string{"--node-labels", "gpu"}, `--node-labels: "gpu" is not KEY=VALUE`},
		{"a bad label key", []string{"--namespace-labels", "-x=1"}, `--namespace-labels: "-x" is not a label key`},
		{"a bad label value", []string{"--node-labels", "a=b c"}, `--node-labels: "b c" is not a label value`},
		{"a key twice", []string{"--node-labels", "a=1,a=2"}, `the key "a" is given twice`},
		{"an unknown flag", []string{"--frobnicate"}, "Usage: rdma-webhook mutate"},
		{"two files", []string{"a.json"}, "Usage: rdma-webhook mutate"},
	}
	for _, u := range usage {
		res := mutateRun(t, pod, u.args...)
		if res.exitCode != 2 || !strings.Contains(string(res.stderr), u.word) {
			t.Errorf("%s: expected exit 2 saying %q, got %d: %s", u.name, u.word, res.exitCode, res.stderr)
		}
	}
}

// yamlObjectsLenient is yamlObjects for a stream with a document kubectl
// refuses (no kind): each document read on its own, that one by hand.
func yamlObjectsLenient(t *testing.T, data []byte) []obj {
	t.Helper()
	var out []obj
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if strings.Contains(doc, "kind:") {
			out = append(out, yamlObjects(t, []byte(doc))...)
		} else {
			out = append(out, obj{"raw": doc})
		}
	}
	return out
}

// TestMutateOfflineOutputFormat: --patched prints the input's format,
// responses are JSON, and -o chooses either way.
func TestMutateOfflineOutputFormat(t *testing.T) {
	t.Parallel()
	pod := trainingPod(8)
	served := applyPatch(t, pod, srv.review(t, podCreate("kubeflow", copyObject(pod))).patch)
	inputs := map[string][]byte{"json": mustMarshal(pod), "yaml": kubectlYAML(t, pod)}
	for in, data := range inputs {
		for _, o := range []string{"", "json", "yaml"} {
			for _, patched := range []bool{false, true} {
				args := []string{}
				if patched {
					args = append(args, "--patched")
				}
				if o != "" {
					args = append(args, "--output="+o)
				}
				want := o
				if want == "" {
					want = "json"
					if patched {
						want = in
					}
				}
				name := fmt.Sprintf("%s in, %v", in, args)
				res := mutateRun(t, data, args...)
				if res.exitCode != 0 {
					t.Errorf("%s: expected exit 0, got %d: %s", name, res.exitCode, res.stderr)
					continue
				}
				isJSON := bytes.HasPrefix(bytes.TrimSpace(res.stdout), []byte("{"))
				if isJSON != (want == "json") {
					t.Errorf("%s: expected %s out, got %s", name, want, cut(res.stdout))
					continue
				}
				objs := yamlObjects(t, res.stdout) // kubectl reads both
				if len(objs) != 1 {
					t.Errorf("%s: expected one object, got %d", name, len(objs))
					continue
				}
				if patched && !jsonEqual(objs[0], served) {
					t.Errorf("%s: differs from serve:\n%s", name, jsonDiff(served, objs[0]))
				}
				if !patched && !jsonEqual(applyPatch(t, pod, offlinePatch(t, objs[0])), served) {
					t.Errorf("%s: the response's patch differs from serve's", name)
				}
			}
		}
	}
}

// TestMutateOfflineYAMLScalars: YAML scalars become the JSON types kubectl
// gives them (an object of a kind the webhook leaves alone comes out as
// read, so its JSON is the conversion itself).
func TestMutateOfflineYAMLScalars(t *testing.T) {
	t.Parallel()
	doc := []byte(`apiVersion: example.com/v1
kind: Thing
metadata:
  name: scalars
spec:
  bools: [yes, "yes", y, n, On, off, TRUE, 'false']
  nulls: [~, null, NULL, "null"]
  numbers: [0x10, 0777, 09, 1_000, +12, -0, 0o17, 0b101, .5, 1e3, 1.0, -.5e-3, 1e400]
  strings: [2024-01-01, "2024-01-01", 1:20, 0x, abc, !!str 5, !custom tagged]
  tagged: [!!int "5", !!float 3, !!bool "yes", !!null ""]
  blocks:
    literal: |
      two
      lines
    folded: >-
      one
      line
  keys: {1: a, 0x10: b, yes: c, n: d, "2": e}
  anchored: &a {x: [1, 2]}
  aliased: *a
`)
	res := mutateRun(t, doc, "--patched", "-o", "json")
	if res.exitCode != 0 {
		t.Fatalf("expected exit 0, got %d: %s", res.exitCode, res.stderr)
	}
	got, err := decodeObject(res.stdout)
	if err != nil {
		t.Fatal(err)
	}
	want := yamlObjects(t, doc)[0]
	if !jsonEqual(want, got) {
		t.Errorf("the conversion differs from kubectl's (expected = kubectl):\n%s", jsonDiff(want, got))
	}
	// What kubectl reads and this tool refuses, saying so.
	for _, c := range []struct{ yaml, word string }{
		{"kind: Thing\nspec: {a: 1, a: 2}\n", `key "a" twice`},
		{"kind: Thing\nbase: &b {x: 1}\nspec:\n  <<: *b\n", "merge keys (<<) are not supported"},
		{"kind: Thing\nspec: {1.5: x}\n", "a number key (quote it)"},
		{"kind: Thing\nspec: {v: .inf}\n", "JSON cannot hold"},
	} {
		res := mutateRun(t, []byte(c.yaml), "--patched")
		if res.exitCode != 1 || !strings.Contains(string(res.stderr), c.word) {
			t.Errorf("%q: expected exit 1 saying %q, got %d: %s", c.yaml, c.word, res.exitCode, res.stderr)
		}
	}
}

// TestMutateOfflineNodeLabels: --node-labels makes the offline result what
// serve gives a pod bound to a node with those labels (the Node read from a
// fake apiserver), for the bound pod and for the same pod before it is
// bound; the output keeps no node name of its own.
func TestMutateOfflineNodeLabels(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNode("gpu-node-4", map[string]string{"nvidia.com/gpu.count": "4"})
	in := startLookupInstance(t, a)
	bound := nodePod(8, "gpu-node-4")
	ad := in.admit(t, bound)
	if ad.rr.auditProf != "roce-4card" {
		t.Fatalf("serve: 8 GPUs on gpu-node-4: expected roce-4card, got %q", ad.rr.auditProf)
	}
	unbound := trainingPod(8)
	for name, pod := range map[string]obj{"bound": bound, "unbound": unbound} {
		res := mutateRun(t, mustMarshal(pod), "--node-labels", "nvidia.com/gpu.count=4")
		if res.exitCode != 0 {
			t.Fatalf("%s: expected exit 0, got %d: %s", name, res.exitCode, res.stderr)
		}
		vals := jsonValues(t, res.stdout)
		if len(vals) != 1 || !samePatch(offlinePatch(t, vals[0]), ad.rr.patch) {
			t.Errorf("%s: the offline patch differs from serve's for the bound pod", name)
		}
		res = mutateRun(t, mustMarshal(pod), "--patched", "--node-labels", "nvidia.com/gpu.count=4")
		got, err := decodeObject(res.stdout)
		if err != nil || res.exitCode != 0 {
			t.Fatalf("%s --patched: exit %d, %v: %s", name, res.exitCode, err, res.stderr)
		}
		if by, _ := pathStr(got, "metadata", "annotations", annSelectedBy); by != "node" {
			t.Errorf("%s: selected-by %q, expected node", name, by)
		}
		node, has := pathStr(got, "spec", "nodeName")
		if wantNode, _ := pathStr(pod, "spec", "nodeName"); node != wantNode || (wantNode == "") == has {
			t.Errorf("%s: spec.nodeName %q (present %v), expected the pod's own %q", name, node, has, wantNode)
		}
	}
	// Without the flag the unbound pod is chosen by its GPU count.
	res := mutateRun(t, mustMarshal(unbound), "--patched")
	got, _ := decodeObject(res.stdout)
	if p, _ := pathStr(got, "metadata", "annotations", annInjected); p != "roce-8card" {
		t.Errorf("without --node-labels: expected roce-8card by GPU count, got %q", p)
	}
}

// TestMutateOfflineNamespaceLabels: --namespace-labels is accepted and
// handed on; labels no rule reads change nothing (nsmatch_test.go has
// profiles that read them, TestMutateOfflinePodSecurity the Pod Security ones).
func TestMutateOfflineNamespaceLabels(t *testing.T) {
	t.Parallel()
	for _, f := range loadFixtures(t)[:4] {
		data := mustMarshal(f.object)
		plain := mutateRun(t, data, "--patched")
		labelled := mutateRun(t, data, "--patched", "--namespace-labels", "team=ml,kubernetes.io/metadata.name="+f.namespace)
		if plain.exitCode != 0 || labelled.exitCode != 0 || !bytes.Equal(plain.stdout, labelled.stdout) ||
			!bytes.Equal(plain.stderr, labelled.stderr) {
			t.Errorf("%s: --namespace-labels changed the result (exit %d vs %d)\n%s\n%s", f.name, plain.exitCode, labelled.exitCode, plain.stderr, labelled.stderr)
		}
	}
}

// TestMutateOfflinePodSecurity: the example PyTorchJob mutated offline for
// a namespace whose labels say enforce=restricted gets no IPC_LOCK in
// either replica template, and stderr says so for each; without the flag,
// and with enforce=privileged, each gets IPC_LOCK; with warn=baseline too,
// with the warning.
func TestMutateOfflinePodSecurity(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "examples", "pytorchjob-8gpu.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		labels []string
		ipc    bool
		warn   string
	}{
		{nil, true, ""},
		{[]string{"--namespace-labels", "pod-security.kubernetes.io/enforce=privileged"}, true, ""},
		{[]string{"--namespace-labels", "pod-security.kubernetes.io/enforce=restricted"}, false,
			`Warning: rdma-webhook: raise memlock on nodes for container "pytorch": no IPC_LOCK under Pod Security restricted`},
		{[]string{"--namespace-labels", "pod-security.kubernetes.io/enforce=baseline,pod-security.kubernetes.io/warn=restricted"}, false,
			"no IPC_LOCK under Pod Security baseline"},
		{[]string{"--namespace-labels", "pod-security.kubernetes.io/warn=baseline"}, true,
			`Warning: rdma-webhook: ignore Pod Security baseline warning on IPC_LOCK in container "pytorch" (added for RDMA)`},
	} {
		res := mutateRun(t, data, append([]string{"--patched", "-o", "json"}, c.labels...)...)
		if res.exitCode != 0 {
			t.Fatalf("%v: exit %d: %s", c.labels, res.exitCode, res.stderr)
		}
		var job obj
		for _, v := range jsonValues(t, res.stdout) {
			if o, ok := v.(obj); ok && o["kind"] == "PyTorchJob" {
				job = o
			}
		}
		if job == nil {
			t.Fatalf("%v: no PyTorchJob in the output:\n%s", c.labels, res.stdout)
		}
		for _, role := range []string{"Master", "Worker"} {
			pod := pathObj(job, "spec", "pytorchReplicaSpecs", role, "template")
			if pod == nil {
				t.Fatalf("%v: no %s template in %s", c.labels, role, res.stdout)
			}
			if got := hasIPCLock(pod); got != c.ipc {
				t.Errorf("%v: %s: IPC_LOCK %v, want %v\n%s", c.labels, role, got, c.ipc, res.stderr)
			}
		}
		if n := strings.Count(string(res.stderr), "Pod Security"); c.warn == "" && n != 0 {
			t.Errorf("%v: unexpected Pod Security warning:\n%s", c.labels, res.stderr)
		}
		if c.warn != "" && strings.Count(string(res.stderr), c.warn) != 2 {
			t.Errorf("%v: expected %q once for each template:\n%s", c.labels, c.warn, res.stderr)
		}
	}
}

// TestCheckProfilesShow: --show prints every profile with the defaults
// merged in and NCCL_IB_HCA built; that output loads as profiles, shows the
// same again, and mutates every fixture exactly as the file it came from.
func TestCheckProfilesShow(t *testing.T) {
	t.Parallel()
	res := runBinary(t, nil, "check-profiles", "--show", profilesPath)
	if res.exitCode != 0 {
		t.Fatalf("expected exit 0, got %d: %s", res.exitCode, res.stderr)
	}
	shown, err := decodeObject(res.stdout)
	if err != nil {
		t.Fatalf("--show: not one JSON object: %v\n%s", err, cut(res.stdout))
	}
	if _, has := shown["defaults"]; has {
		t.Errorf("--show: defaults are merged into the profiles, expected no \"defaults\"")
	}
	src, err := readJSONFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	defaults := pathObj(src, "defaults", "env")
	profiles := pathArr(shown, "profiles")
	if len(profiles) != len(pathArr(src, "profiles")) {
		t.Fatalf("--show: %d profiles, the file has %d", len(profiles), len(pathArr(src, "profiles")))
	}
	for _, p := range profiles {
		name, _ := pathStr(p, "name")
		env := pathObj(p, "env")
		for k, v := range defaults {
			if env[k] != v {
				t.Errorf("%s: env %s = %v, expected the default %v", name, k, env[k], v)
			}
		}
		if hca, _ := env["NCCL_IB_HCA"].(string); !strings.HasPrefix(hca, "=mlx5_1,") {
			t.Errorf("%s: NCCL_IB_HCA %q, expected the built =mlx5_1,...", name, hca)
		}
		for _, k := range []string{"default", "pin", "schedulerName", "ipcLock", "shm", "initContainers", "ncclConf", "hostNetworkEnv", "resources"} {
			if _, has := pathObj(p)[k]; !has {
				t.Errorf("%s: --show leaves %q to a default", name, k)
			}
		}
	}
	file := filepath.Join(t.TempDir(), "shown.json")
	if err := os.WriteFile(file, res.stdout, 0o644); err != nil {
		t.Fatal(err)
	}
	again := runBinary(t, nil, "check-profiles", "--show", file)
	if again.exitCode != 0 || !bytes.Equal(again.stdout, res.stdout) {
		t.Errorf("--show of --show's output: expected the same, got exit %d:\n%s%s", again.exitCode, cut(again.stdout), again.stderr)
	}
	for _, f := range valgrindSample(loadFixtures(t), 8) {
		data := mustMarshal(f.object)
		a := mutateRun(t, data, "--patched")
		b := runBinary(t, data, "mutate", "--profiles", file, "--patched", "-")
		if !bytes.Equal(a.stdout, b.stdout) || a.exitCode != b.exitCode {
			t.Errorf("%s: the shown profiles mutate differently from %s", f.name, profilesPath)
		}
	}
}

// TestCheckProfilesMessages: a JSON syntax error is placed by line and
// column; a YAML file is recognised and refused with how to convert it; a
// missing file and a missing argument name check-profiles' own usage.
func TestCheckProfilesMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, file string
		exit       int
		words      []string
	}{
		{"syntax error", write("comma.json", "{\n  \"profiles\": [\n    {\"name\": \"a\",}\n  ]\n}\n"), 1,
			[]string{"not valid JSON: unexpected character '}' at line 3, column 18"}},
		{"YAML", write("profiles.yaml", "defaults:\n  env: {NCCL_DEBUG: INFO}\nprofiles:\n- name: a\n"), 1,
			[]string{"looks like YAML, and profiles are JSON only", "yq -o json", "README"}},
		{"missing file", filepath.Join(dir, "nope.json"), 1,
			[]string{"nope.json", "usage: rdma-webhook check-profiles [--show] FILE"}},
	}
	for _, c := range cases {
		res := runBinary(t, nil, "check-profiles", c.file)
		msg := string(res.stderr)
		if res.exitCode != c.exit {
			t.Errorf("%s: expected exit %d, got %d: %s", c.name, c.exit, res.exitCode, msg)
		}
		for _, w := range c.words {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: expected %q in %q", c.name, w, msg)
			}
		}
		if strings.Contains(msg, "--profiles") {
			t.Errorf("%s: check-profiles has no --profiles flag, yet the message names it: %q", c.name, msg)
		}
	}
	if res := runBinary(t, nil, "check-profiles"); res.exitCode != 2 || !strings.Contains(string(res.stderr), "Usage: rdma-webhook check-profiles [--show] FILE") {
		t.Errorf("no FILE: expected exit 2 and the usage, got %d: %s", res.exitCode, res.stderr)
	}
}

// TestGenCertsForce: gen-certs into a directory that holds certificates
// writes nothing and says which files and --force; with --force it
// replaces them.
func TestGenCertsForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := genCerts(binaryPath(), dir); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, f := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
		before[f] = readFile(t, filepath.Join(dir, f))
	}
	res := runBinary(t, nil, "gen-certs", "--out-dir", dir)
	if res.exitCode != 1 {
		t.Errorf("gen-certs into a full directory: expected exit 1, got %d", res.exitCode)
	}
	for _, w := range []string{dir, "ca.crt, ca.key, tls.crt, tls.key", "--force"} {
		if !strings.Contains(string(res.stderr), w) {
			t.Errorf("expected the error to name %q: %s", w, res.stderr)
		}
	}
	for f, data := range before {
		if !bytes.Equal(readFile(t, filepath.Join(dir, f)), data) {
			t.Errorf("%s changed without --force", f)
		}
	}
	if err := genCerts(binaryPath(), dir, "--force"); err != nil {
		t.Fatal(err)
	}
	for f, data := range before {
		if bytes.Equal(readFile(t, filepath.Join(dir, f)), data) {
			t.Errorf("%s: --force did not replace it", f)
		}
	}
	if help := runBinary(t, nil, "gen-certs", "--help"); !strings.Contains(string(help.stdout), "--force") {
		t.Errorf("gen-certs --help does not list --force")
	}
}

var helpFlag = regexp.MustCompile(`--[a-z][a-z-]*`)

// TestOfflineFlagsDocumented: each flag the offline commands' --help lists
// is in docs/reference.md (certs/README.md for the script), and the flags of
// issue 15 are among them.
func TestOfflineFlagsDocumented(t *testing.T) {
	t.Parallel()
	readme := string(readFile(t, filepath.Join(repoRoot, "docs", "reference.md")))
	certsReadme := string(readFile(t, filepath.Join(repoRoot, "certs", "README.md")))
	script, err := exec.Command("sh", installDevCerts, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("install-dev-certs.sh --help: %v", err)
	}
	cases := []struct {
		name, help, doc string
		must            []string
	}{
		{"mutate", string(runBinary(t, nil, "mutate", "--help").stdout), readme,
			[]string{"--patched", "--output", "--node-labels", "--namespace-labels", "--namespace", "--profiles", "--explain"}},
		{"check-profiles", string(runBinary(t, nil, "check-profiles", "--help").stdout), readme, []string{"--show"}},
		{"gen-certs", string(runBinary(t, nil, "gen-certs", "--help").stdout), readme, []string{"--force"}},
		{"install-dev-certs.sh", string(script), certsReadme,
			[]string{"--namespace", "--service", "--force", "--print", "--out-dir"}},
	}
	for _, c := range cases {
		for _, f := range c.must {
			if !strings.Contains(c.help, f) {
				t.Errorf("%s --help does not list %s", c.name, f)
			}
		}
		for _, f := range helpFlag.FindAllString(c.help, -1) {
			if f != "--help" && !strings.Contains(c.doc, "`"+f) {
				t.Errorf("%s --help lists %s, which its docs page does not document", c.name, f)
			}
		}
	}
}

// TestOfflineNumbersExact: `mutate --patched -o json` writes numbers as
// they read (kubectl keeps YAML integers as int64 or uint64, and DBL_MAX is
// no infinity), from YAML and from JSON input; -o yaml too.
func TestOfflineNumbersExact(t *testing.T) {
	t.Parallel()
	yamlIn := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}\nbinaryData: {}\nx:\n" +
		"  a: 9000000000000001\n  b: 1.7976931348623157e308\n  c: 0x8000000000000000\n" +
		"  d: 18446744073709551615\n  e: -9223372036854775808\n  f: 9007199254740993\n  g: 0.1\n")
	jsonIn := []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}, "binaryData": {}, "x": ` +
		`{"a": 9000000000000001, "b": 1.7976931348623157e308, "c": 9223372036854775808, ` +
		`"d": 18446744073709551615, "e": -9223372036854775808, "f": 9007199254740993, "g": 0.1}}`)
	want := map[string]string{"a": "9000000000000001", "b": "1.7976931348623157e+308",
		"c": "9223372036854775808", "d": "18446744073709551615", "e": "-9223372036854775808",
		"f": "9007199254740993", "g": "0.1"}
	for _, in := range [][]byte{yamlIn, jsonIn} {
		res := mutateRun(t, in, "--patched", "-o", "json")
		if res.exitCode != 0 {
			t.Fatalf("mutate: exit %d: %s", res.exitCode, res.stderr)
		}
		vs := jsonValues(t, res.stdout)
		x, _ := vs[0].(obj)["x"].(obj)
		for k, w := range want {
			n, ok := x[k].(json.Number)
			if !ok || !sameNumber(string(n), w) {
				t.Errorf("x.%s written as %v, want %s (input %.20s...)", k, x[k], w, in)
			}
		}
		res = mutateRun(t, in, "--patched", "-o", "yaml")
		for _, k := range []string{"a", "c", "d", "f"} {
			if !strings.Contains(string(res.stdout), "  "+k+": "+want[k]+"\n") {
				t.Errorf("-o yaml: no %s: %s in\n%s", k, want[k], res.stdout)
			}
		}
	}
}

// sameNumber: two JSON number texts of the same value, exactly.
func sameNumber(a, b string) bool {
	ra, oka := new(big.Rat).SetString(a)
	rb, okb := new(big.Rat).SetString(b)
	return oka && okb && ra.Cmp(rb) == 0
}
