package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMutateOfflineMatchesServe: `mutate --patched` on a bare Pod gives the
// pod the served patch makes (brief part e).
func TestMutateOfflineMatchesServe(t *testing.T) {
	for _, f := range loadFixtures(t) {
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

// TestMutateOfflinePyTorchJob: the seed's Swin job gets the 8-card HCA list
// in every replica template, and keeps what the user wrote.
func TestMutateOfflinePyTorchJob(t *testing.T) {
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
