package realcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// otherMutator is a second mutating webhook, served by the test over TLS
// with the dev certificate: it appends OTHER_MUTATOR=1 to the first
// container's env, a change the apiserver sees after rdma-webhook's.
func otherMutator(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		var pod corev1.Pod
		_ = json.Unmarshal(review.Request.Object.Raw, &pod)
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		has := false
		for _, e := range pod.Spec.Containers[0].Env {
			has = has || e.Name == "OTHER_MUTATOR"
		}
		if !has {
			op := map[string]any{"op": "add", "path": "/spec/containers/0/env/-",
				"value": map[string]string{"name": "OTHER_MUTATOR", "value": "1"}}
			if pod.Spec.Containers[0].Env == nil {
				op = map[string]any{"op": "add", "path": "/spec/containers/0/env",
					"value": []map[string]string{{"name": "OTHER_MUTATOR", "value": "1"}}}
			}
			patch, _ := json.Marshal([]any{op})
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = patch, &pt
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(review)
	})
	srv := &http.Server{Handler: mux}
	go func() {
		_ = srv.ServeTLS(l, filepath.Join(clusterDir, "certs", "tls.crt"), filepath.Join(clusterDir, "certs", "tls.key"))
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + l.Addr().String() + "/mutate"
}

// TestReinvocation: a second mutating webhook, ordered after ours (the
// apiserver calls configurations in name order), changes the pod; the
// apiserver calls ours again (reinvocationPolicy IfNeeded), which adds
// nothing; the stored pod has both webhooks' changes and no duplicates.
func TestReinvocation(t *testing.T) {
	ctx := context.Background()
	ca, err := os.ReadFile(filepath.Join(clusterDir, "certs", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, map[string]string{"rc-reinvocation": "yes"})
	none := admissionregistrationv1.SideEffectClassNone
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "zz-rc-other-mutator"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "other.rc.example.com",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(otherMutator(t)), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"pods"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"rc-reinvocation": "yes"}},
		}},
	}
	if _, err := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, mwc.Name, metav1.DeleteOptions{})
	})
	// The apiserver picks a new configuration up from its informer.
	waitFor(t, podsWithin, "the second webhook in the admission chain", func() (bool, string) {
		p := gpuPod("probe", 8)
		out, _, err := kubectl(toJSON(t, p), "create", "-n", ns, "--dry-run=server", "-o", "json", "-f", "-")
		var got corev1.Pod
		if err != nil || json.Unmarshal([]byte(out), &got) != nil {
			return false, out
		}
		return envOf(&got.Spec.Containers[0])["OTHER_MUTATOR"] != nil, "no OTHER_MUTATOR yet"
	})

	if _, err := clientset.CoreV1().Pods(ns).Create(ctx, gpuPod("reinvoked", 8), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored := getPod(t, ns, "reinvoked")
	requireMutated(t, stored, "pytorch", want{profile: "roce-8card", hca: hca8,
		userEnv: map[string]string{"OTHER_MUTATOR": "1"}})
	var lines []map[string]any
	waitFor(t, 5*time.Second, "two log lines for the pod (the call, then the reinvocation)", func() (bool, string) {
		lines = admissionLines(t, ns, "reinvoked")
		return len(lines) >= 2, fmt.Sprint(lines)
	})
	if len(lines) != 2 || lines[1]["ops"] != float64(0) {
		t.Errorf("want two calls, the second adding nothing: %v", lines)
	}
}
