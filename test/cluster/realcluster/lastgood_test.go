package realcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastGoodName is the copy manifests/deployment.yaml names with
// --profiles-last-good, the one manifests/rbac.yaml grants.
const lastGoodName = "rdma-webhook-profiles-last-good"

// waitLastGood waits until the copy holds text, and returns its metadata's
// labels and annotations.
func waitLastGood(t testing.TB, text string) (map[string]string, map[string]string) {
	t.Helper()
	var labels, ann map[string]string
	waitFor(t, 10*time.Second, "the last good copy", func() (bool, string) {
		cm, err := clientset.CoreV1().ConfigMaps("rdma-webhook").Get(context.Background(), lastGoodName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		labels, ann = cm.Labels, cm.Annotations
		return cm.Data["profiles.json"] == text, "another version"
	})
	return labels, ann
}

// TestProfilesLastGoodAfterRestart: the scenario. With the webhook
// stopped, an invalid profiles version gets through (failurePolicy Ignore
// on the validating webhook); the webhook started then serves the last good
// version from the copy it wrote itself (RBAC of manifests/ only): it is
// ready, pods get the old values and carry the warning (kubectl's stderr and
// the pod's rdma-webhook.io/warnings), the metric is set. A valid apply
// clears it and is saved.
func TestProfilesLastGoodAfterRestart(t *testing.T) {
	ns := newNamespace(t, nil)
	cm := profilesConfigMap(t)
	original := cm.Data["profiles.json"]
	stopped := false
	t.Cleanup(func() {
		if stopped {
			if err := script("webhook.sh", webhookEnv, "start", clusterDir); err != nil {
				t.Fatalf("restart the webhook: %v", err)
			}
		}
		applyProfiles(t, cm, original)
		waitFor(t, 10*time.Second, "the shipped profiles to serve again", shippedServing(t, ns))
	})

	good := withHCA(t, original, []string{"mlx5_41", "mlx5_42"})
	serveProfiles(t, ns, good, func() (bool, string) {
		got := dryRunHCA(t, ns)
		return got == "=mlx5_41,mlx5_42", got
	}, shippedServing(t, ns))
	labels, ann := waitLastGood(t, good)
	if _, ok := labels["rdma-webhook.io/profiles"]; ok {
		t.Errorf("the copy carries rdma-webhook.io/profiles: %v", labels)
	}
	if got := ann["rdma-webhook.io/last-good-source"]; got != "rdma-webhook/"+cm.Name {
		t.Errorf("the copy's source annotation %q, want rdma-webhook/%s", got, cm.Name)
	}

	if err := script("webhook.sh", webhookEnv, "stop", clusterDir); err != nil {
		t.Fatal(err)
	}
	stopped = true
	bad := strings.Replace(good, `"NCCL_IB_TIMEOUT":"22"`, `"NCCL_IB_TIMEOUT":"40"`, 1)
	if bad == good {
		t.Fatal("the shipped profiles have no NCCL_IB_TIMEOUT 22 to break")
	}
	applyProfiles(t, cm, bad) // nothing answers: Ignore lets it through
	if stored := profilesConfigMap(t).Data["profiles.json"]; stored != bad {
		t.Fatal("the invalid version was not stored with the webhook stopped")
	}
	// webhook.sh start returns once /readyz is 200, and fails otherwise.
	if err := script("webhook.sh", webhookEnv, "start", clusterDir); err != nil {
		t.Fatalf("the webhook did not become ready with an invalid current version: %v", err)
	}
	stopped = false

	// The admin's problem reaches the admin (the log, the metric, an Event on
	// the ConfigMap), not the job's author (issue 22, item 7).
	for _, name := range []string{"stale-1", "stale-2"} {
		_, stderr := mustKubectl(t, toJSON(t, gpuPod(name, 8)), "create", "-n", ns, "-f", "-")
		if strings.Contains(stderr, "serving old profiles") {
			t.Errorf("kubectl's stderr for %s has the stale warning:\n%s", name, stderr)
		}
		p := getPod(t, ns, name)
		requireMutated(t, p, "pytorch", want{profile: "roce-8card", hca: "=mlx5_41,mlx5_42"})
		if w := p.Annotations["rdma-webhook.io/warnings"]; strings.Contains(w, "serving old profiles") {
			t.Errorf("%s: rdma-webhook.io/warnings has the stale warning: %q", name, w)
		}
	}
	waitFor(t, 10*time.Second, "an Event ServingOldProfiles on ConfigMap "+cm.Name, func() (bool, string) {
		// The core view of the events.k8s.io Event: as kubectl describe reads it.
		out, _, err := kubectl("", "get", "events", "-n", "rdma-webhook", "--field-selector",
			"involvedObject.kind=ConfigMap,involvedObject.name="+cm.Name+",reason=ServingOldProfiles",
			"-o", "jsonpath={.items[*].message}")
		return err == nil && strings.Contains(out, "serving old profiles"), out
	})
	if got := webhookMetric(t, "rdma_webhook_profiles_stale"); got != "1" {
		t.Errorf("rdma_webhook_profiles_stale serving the copy: %q, want 1", got)
	}
	found := false
	for _, l := range logLines(t) {
		if msg, _ := l["msg"].(string); strings.HasPrefix(msg, "serving the last good profiles") && l["level"] == "error" {
			found = true
		}
	}
	if !found {
		t.Error(`the webhook's log has no error "serving the last good profiles"`)
	}

	fixed := withHCA(t, original, []string{"mlx5_43"})
	applyProfiles(t, cm, fixed)
	waitFor(t, 10*time.Second, "the fixed version to serve", func() (bool, string) {
		got := dryRunHCA(t, ns)
		return got == "=mlx5_43", got
	})
	if got := webhookMetric(t, "rdma_webhook_profiles_stale"); got != "0" {
		t.Errorf("rdma_webhook_profiles_stale after a valid apply: %q, want 0", got)
	}
	_, stderr := mustKubectl(t, toJSON(t, gpuPod("fresh", 8)), "create", "-n", ns, "-f", "-")
	if strings.Contains(stderr, "serving old profiles") {
		t.Errorf("a pod after the valid apply still warned:\n%s", stderr)
	}
	waitLastGood(t, fixed)
}
