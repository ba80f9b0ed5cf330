package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// profilesReview is an AdmissionReview of op on the profiles ConfigMap,
// its profiles.json being text.
func profilesReview(t *testing.T, op, text string) []byte {
	t.Helper()
	object, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "rdma-webhook-profiles", "namespace": "rdma-webhook",
			"labels": map[string]string{"rdma-webhook.io/profiles": "true"}},
		"data": map[string]string{"profiles.json": text},
	})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": newUID(), "operation": op, "namespace": "rdma-webhook", "name": "rdma-webhook-profiles",
			"kind":     map[string]string{"group": "", "version": "v1", "kind": "ConfigMap"},
			"resource": map[string]string{"group": "", "version": "v1", "resource": "configmaps"},
			"object":   json.RawMessage(object),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// validateProfiles posts a review to /validate-profiles over TLS and decodes
// the answer strictly as the apiserver's types.
func validateProfiles(t *testing.T, in *instance, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	r := in.do(t, "POST", in.url("/validate-profiles"), body)
	if r.status != 200 {
		t.Fatalf("/validate-profiles: HTTP %d: %s", r.status, r.body)
	}
	var review admissionv1.AdmissionReview
	if problems := strictProblems(r.body, &review); len(problems) > 0 {
		t.Fatalf("/validate-profiles answer is not a strict AdmissionReview: %v\n%s", problems, r.body)
	}
	if review.Response == nil {
		t.Fatalf("no response in %s", r.body)
	}
	var sent admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	if review.Response.UID != sent.Request.UID {
		t.Errorf("uid %q, want %q", review.Response.UID, sent.Request.UID)
	}
	return review.Response
}

// TestValidateProfiles: the ValidatingWebhook's path allows the shipped
// profiles and refuses a bad version with exactly the lines check-profiles
// prints for it, as kubectl will show them; /mutate keeps working.
func TestValidateProfiles(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath)
	good, err := os.ReadFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	if resp := validateProfiles(t, in, profilesReview(t, "UPDATE", string(good))); !resp.Allowed || resp.Result != nil {
		t.Errorf("the shipped profiles were not allowed: %+v", resp)
	}

	bad := strings.Replace(string(good), `"NCCL_IB_TIMEOUT": "22"`, `"NCCL_IB_TIMEOUT": "40"`, 1)
	if bad == string(good) {
		t.Fatal("the shipped profiles have no NCCL_IB_TIMEOUT 22 to break")
	}
	resp := validateProfiles(t, in, profilesReview(t, "UPDATE", bad))
	if resp.Allowed || resp.Result == nil || resp.Result.Code != 422 {
		t.Fatalf("a bad version was not refused with 422: %+v", resp)
	}
	file := filepath.Join(t.TempDir(), "profiles.json")
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binaryPath(), "check-profiles", file).CombinedOutput()
	if err == nil {
		t.Fatalf("check-profiles accepted the bad version: %s", out)
	}
	// check-profiles: "rdma-webhook: FILE is not valid:\n" then the problems.
	_, problems, found := strings.Cut(string(out), " is not valid:\n")
	if !found {
		t.Fatalf("check-profiles output has no problem list:\n%s", out)
	}
	want := "profiles.json is not valid:\n" + strings.TrimSuffix(problems, "\n")
	if resp.Result.Message != want {
		t.Errorf("refusal message\n%q\nwant check-profiles' lines\n%q", resp.Result.Message, want)
	}
	if got := in.metric(t, `rdma_webhook_profile_reviews_total{result="refused"}`); got != "1" {
		t.Errorf("refused reviews counted %s, want 1", got)
	}
	if got := in.metric(t, `rdma_webhook_profile_reviews_total{result="allowed"}`); got != "1" {
		t.Errorf("allowed reviews counted %s, want 1", got)
	}

	// A GET is told to POST; a body that is not a review is a 400.
	if r := in.do(t, "GET", in.url("/validate-profiles"), nil); r.status != 405 {
		t.Errorf("GET /validate-profiles: HTTP %d, want 405", r.status)
	}
	if r := in.do(t, "POST", in.url("/validate-profiles"), []byte(`{"kind":"ConfigMap"}`)); r.status != 400 {
		t.Errorf("a ConfigMap instead of a review: HTTP %d, want 400", r.status)
	}
}

// TestValidateProfilesNUL: a profiles text with a NUL byte and garbage
// after it is refused by /validate-profiles with check-profiles' own lines
// for the same file (cJSON would have read only the text before the NUL).
func TestValidateProfilesNUL(t *testing.T) {
	t.Parallel()
	in := startInstance(t, profilesPath)
	good, err := os.ReadFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(good) + "\x00garbage"
	file := filepath.Join(t.TempDir(), "profiles.json")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binaryPath(), "check-profiles", file).CombinedOutput()
	_, problems, found := strings.Cut(string(out), " is not valid:\n")
	if err == nil || !found {
		t.Fatalf("check-profiles did not refuse the text with a NUL: %v\n%s", err, out)
	}
	resp := validateProfiles(t, in, profilesReview(t, "UPDATE", text))
	want := "profiles.json is not valid:\n" + strings.TrimSuffix(problems, "\n")
	if resp.Allowed || resp.Result == nil || resp.Result.Message != want {
		t.Errorf("/validate-profiles on the text with a NUL: %+v\nwant refused with\n%q", resp, want)
	}
}
