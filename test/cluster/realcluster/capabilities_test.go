package realcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// noCapsMessage is the refusal of the policy below, as Kyverno's
// disallow-capabilities words its own.
const noCapsMessage = "adding capabilities is not allowed"

// noCapsPolicy stands for Kyverno's disallow-capabilities or a Gatekeeper
// constraint: a ValidatingAdmissionPolicy that refuses pods whose
// containers add any capability, bound with validationActions [Deny] to
// the namespaces labelled selectorKey=true.
func noCapsPolicy(name, selectorKey string) string {
	return `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: ` + name + `
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["pods"]
  validations:
  - expression: "object.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || size(c.securityContext.capabilities.add) == 0)"
    message: "` + noCapsMessage + `"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: ` + name + `
spec:
  policyName: ` + name + `
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        ` + selectorKey + `: "true"
`
}

// TestCapabilityPolicyAndIPCLockLabel (issue 22, item 2): beside a policy
// that refuses added capabilities, the IPC_LOCK the webhook adds stops a
// whole PyTorchJob: the training-operator's creates are refused
// (FailedCreatePod with the policy's message on the job) and no pod
// exists. With the namespace label rdma-webhook.io/ipc-lock=false the
// same job's pods are created and stored with the NCCL environment,
// /dev/shm and the scheduler, without IPC_LOCK and without a warning.
func TestCapabilityPolicyAndIPCLockLabel(t *testing.T) {
	const key = "rdma-webhook-test/no-capabilities"
	const name = "rc-no-added-capabilities"
	mustKubectl(t, noCapsPolicy(name, key), "apply", "-f", "-")
	t.Cleanup(func() {
		if _, stderr, err := kubectl("", "delete", "--ignore-not-found", "validatingadmissionpolicybinding/"+name,
			"validatingadmissionpolicy/"+name); err != nil {
			t.Errorf("delete the policy: %v\n%s", err, stderr)
		}
	})
	refused := newNamespace(t, map[string]string{key: "true"})
	switched := newNamespace(t, map[string]string{key: "true", "rdma-webhook.io/ipc-lock": "false"})

	// The apiserver loads a policy a moment after it is created: wait until
	// it refuses a pod that declares a capability itself (the webhook keeps it).
	capPod := gpuPod("probe", 8)
	capPod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_NICE"}}}
	waitFor(t, 30*time.Second, "the policy in force", func() (bool, string) {
		_, stderr, err := kubectl(toJSON(t, capPod), "create", "-n", refused, "--dry-run=server", "-f", "-")
		return err != nil && strings.Contains(stderr, noCapsMessage), stderr
	})

	t.Run("without the switch the job gets no pod", func(t *testing.T) {
		mustKubectl(t, jobYAML("caps-job", 8, ""), "apply", "-n", refused, "-f", "-")
		var note string
		waitFor(t, 30*time.Second, "FailedCreatePod on the job", func() (bool, string) {
			evs, err := clientset.CoreV1().Events(refused).List(context.Background(), metav1.ListOptions{
				FieldSelector: "involvedObject.name=caps-job,reason=FailedCreatePod"})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if strings.Contains(e.Message, noCapsMessage) {
					note = e.Message
					return true, ""
				}
			}
			return false, "events: " + toJSON(t, evs.Items)
		})
		t.Logf("the job's event: %s", note)
		time.Sleep(3 * time.Second)
		pods, err := clientset.CoreV1().Pods(refused).List(context.Background(), metav1.ListOptions{
			LabelSelector: "training.kubeflow.org/job-name=caps-job"})
		if err != nil || len(pods.Items) != 0 {
			t.Errorf("pods of caps-job under the policy: %v, %d; want none", err, len(pods.Items))
		}
	})
	t.Run("with rdma-webhook.io/ipc-lock=false the pods are created", func(t *testing.T) {
		mustKubectl(t, jobYAML("caps-job", 8, ""), "apply", "-n", switched, "-f", "-")
		requireJobAdmitted(t, switched, jobYAMLShape("caps-job"), false, "")
		for _, pods := range jobPods(t, switched, jobYAMLShape("caps-job")) {
			for i := range pods {
				if s := pods[i].Spec.SchedulerName; s != "volcano" {
					t.Errorf("%s: schedulerName %q, want volcano", pods[i].Name, s)
				}
			}
		}
	})
}
