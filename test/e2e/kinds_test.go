package e2e

import "testing"

// TestOtherOperationsAndKinds: only CREATE of a Pod is mutated (docs/profiles.md).
func TestOtherOperationsAndKinds(t *testing.T) {
	t.Parallel()
	pod := trainingPod(8)
	create := srv.review(t, podCreate("kubeflow", copyObject(pod)))
	if create.patch == nil {
		t.Fatalf("CREATE of an 8-GPU PyTorchJob pod: expected a patch (the control case), got none: %s", compact(create.response))
	}
	cases := []struct {
		name string
		r    reviewRequest
	}{
		{"UPDATE of a pod", podUpdate(pod)},
		{"DELETE of a pod", podDelete(pod)},
		{"CREATE of a ConfigMap", configMapCreate()},
	}
	for _, c := range cases {
		r := c.r
		t.Run(c.name, func(t *testing.T) {
			if rr := srv.review(t, r); rr.patch != nil {
				t.Errorf("expected allowed without a patch, got patch %s", rr.patch)
			}
		})
	}
}

func podUpdate(pod obj) reviewRequest {
	r := podCreate("kubeflow", copyObject(pod))
	r.operation = "UPDATE"
	r.oldObject = copyObject(pod)
	return r
}

func podDelete(pod obj) reviewRequest {
	r := podCreate("kubeflow", nil)
	r.name, _ = pathStr(pod, "metadata", "name")
	r.operation = "DELETE"
	r.object = nil
	r.oldObject = copyObject(pod)
	return r
}

func configMapCreate() reviewRequest {
	cm := configMap()
	return reviewRequest{apiVersion: admissionV1, uid: newUID(), operation: "CREATE",
		version: "v1", kind: "ConfigMap", resource: "configmaps",
		namespace: "kubeflow", name: "e2e-config", object: cm}
}
