package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

const (
	admissionV1      = "admission.k8s.io/v1"
	admissionV1beta1 = "admission.k8s.io/v1beta1"
	warningPrefix    = "rdma-webhook: "
	maxWarningBytes  = 120
)

// reviewRequest describes one admission request, as the kube-apiserver
// builds it for a mutating webhook.
type reviewRequest struct {
	apiVersion string
	uid        string
	operation  string
	group      string
	version    string
	kind       string
	resource   string
	namespace  string
	name       string
	object     interface{}
	oldObject  interface{}
	dryRun     bool
}

func newUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// podCreate is the request the apiserver sends when a pod is created.
func podCreate(namespace string, pod obj) reviewRequest {
	name, _ := pathStr(pod, "metadata", "name")
	return reviewRequest{apiVersion: admissionV1, uid: newUID(), operation: "CREATE",
		version: "v1", kind: "Pod", resource: "pods",
		namespace: namespace, name: name, object: pod}
}

func (r reviewRequest) operationOptions() interface{} {
	kinds := map[string]string{"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
	k, ok := kinds[r.operation]
	if !ok {
		return nil
	}
	return obj{"kind": k, "apiVersion": "meta.k8s.io/v1"}
}

// body renders the AdmissionReview exactly as the apiserver serialises it
// (name is omitted when empty, as for generateName pods).
func (r reviewRequest) body() obj {
	gvk := obj{"group": r.group, "version": r.version, "kind": r.kind}
	gvr := obj{"group": r.group, "version": r.version, "resource": r.resource}
	req := obj{
		"uid": r.uid, "kind": gvk, "resource": gvr,
		"requestKind": gvk, "requestResource": gvr,
		"namespace": r.namespace, "operation": r.operation,
		"userInfo": obj{
			"username": "system:serviceaccount:kubeflow:training-operator",
			"uid":      "6d1f6b2c-3f55-4d7e-a3a4-0a9c5a0f7c11",
			"groups": []interface{}{"system:serviceaccounts", "system:serviceaccounts:kubeflow",
				"system:authenticated"},
		},
		"object": r.object, "oldObject": r.oldObject,
		"dryRun": r.dryRun, "options": r.operationOptions(),
	}
	if r.name != "" {
		req["name"] = r.name
	}
	return obj{"kind": "AdmissionReview", "apiVersion": r.apiVersion, "request": req}
}

// reviewResponse is the webhook's answer, checked for the invariants that
// hold for every review (docs/reference.md "HTTP statuses", CONTRACT "Response").
type reviewResponse struct {
	raw       obj
	response  obj
	patch     []byte // decoded RFC 6902 patch, nil when absent
	warnings  []string
	auditProf string
}

// review posts r to /mutate and checks the generic response properties.
func (s *server) review(t testing.TB, r reviewRequest) reviewResponse {
	t.Helper()
	rep := s.post(t, "/mutate", "application/json", mustMarshal(r.body()))
	if rep.status != http.StatusOK {
		t.Fatalf("POST /mutate (%s %s/%s): expected 200, got %d: %s", r.operation, r.kind, r.name, rep.status, rep.body)
	}
	return parseReview(t, rep.body, r)
}

func parseReview(t testing.TB, body []byte, r reviewRequest) reviewResponse {
	t.Helper()
	raw, err := decodeObject(body)
	if err != nil {
		t.Fatalf("review response is not a JSON object: %v: %s", err, body)
	}
	rr := reviewResponse{raw: raw, response: pathObj(raw, "response")}
	checkEnvelope(t, rr, r)
	rr.patch = decodePatchField(t, rr.response)
	rr.warnings = warningList(t, rr.response)
	rr.auditProf, _ = pathStr(rr.response, "auditAnnotations", "profile")
	return rr
}

func checkEnvelope(t testing.TB, rr reviewResponse, r reviewRequest) {
	t.Helper()
	if got := rr.raw["apiVersion"]; got != r.apiVersion {
		t.Errorf("response apiVersion: expected %q, got %v", r.apiVersion, got)
	}
	if got := rr.raw["kind"]; got != "AdmissionReview" {
		t.Errorf("response kind: expected AdmissionReview, got %v", got)
	}
	if rr.response == nil {
		t.Fatalf("response: expected an object, got %s", compact(rr.raw))
	}
	if got := rr.response["uid"]; got != r.uid {
		t.Errorf("response uid: expected %q, got %v", r.uid, got)
	}
	if got := rr.response["allowed"]; got != true {
		t.Errorf("response allowed: expected true, got %v (response %s)", got, compact(rr.response))
	}
}

// decodePatchField checks that patch and patchType come together and
// returns the decoded patch.
func decodePatchField(t testing.TB, resp obj) []byte {
	t.Helper()
	p, hasPatch := resp["patch"]
	pt, hasType := resp["patchType"]
	if hasPatch != hasType {
		t.Errorf("patch and patchType must come together: patch present %v, patchType present %v", hasPatch, hasType)
	}
	if hasType && pt != "JSONPatch" {
		t.Errorf("patchType: expected \"JSONPatch\", got %v", pt)
	}
	if !hasPatch {
		return nil
	}
	s, ok := p.(string)
	if !ok {
		t.Fatalf("patch: expected a base64 string, got %v", compact(p))
	}
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("patch is not standard base64: %v", err)
	}
	if ops, err := decodeJSON(data); err != nil {
		t.Fatalf("decoded patch is not JSON: %v: %s", err, data)
	} else if list, ok := ops.([]interface{}); !ok || len(list) == 0 {
		t.Errorf("decoded patch: expected a non-empty JSON array of operations, got %s", data)
	}
	return data
}

func warningList(t testing.TB, resp obj) []string {
	t.Helper()
	raw, present := resp["warnings"]
	if !present {
		return nil
	}
	list, ok := raw.([]interface{})
	if !ok {
		t.Fatalf("warnings: expected an array, got %v", compact(raw))
	}
	out := make([]string, 0, len(list))
	for i, w := range list {
		s, ok := w.(string)
		if !ok {
			t.Errorf("warnings[%d]: expected a string, got %v", i, compact(w))
			continue
		}
		checkWarningForm(t, i, s)
		out = append(out, s)
	}
	return out
}

func checkWarningForm(t testing.TB, i int, w string) {
	t.Helper()
	if !strings.HasPrefix(w, warningPrefix) {
		t.Errorf("warnings[%d]: expected prefix %q, got %q", i, warningPrefix, w)
	}
	if len(w) >= maxWarningBytes {
		t.Errorf("warnings[%d]: expected under %d bytes, got %d: %q", i, maxWarningBytes, len(w), w)
	}
}

// applyPatch applies an RFC 6902 patch to a pod with evanphx/json-patch
// (gopkg.in/evanphx/json-patch.v4, the library and version the
// kube-apiserver uses for webhook patches), and checks the result decodes
// strictly as a k8s.io/api/core/v1 Pod (checkPatchedPod).
func applyPatch(t testing.TB, original obj, patch []byte) obj {
	t.Helper()
	if patch == nil {
		return copyObject(original)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("jsonpatch.DecodePatch: %v\npatch: %s", err, patch)
	}
	doc := mustMarshal(original)
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("jsonpatch Apply to the original object: %v\npatch: %s", err, patch)
	}
	o, err := decodeObject(out)
	if err != nil {
		t.Fatalf("patched document: %v", err)
	}
	if err := checkPatchedPod(doc, out); err != nil {
		t.Errorf("%v\npatch: %s", err, patch)
	}
	return o
}

func samePatch(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, errA := decodeJSON(a)
	vb, errB := decodeJSON(b)
	return errA == nil && errB == nil && jsonEqual(va, vb)
}
