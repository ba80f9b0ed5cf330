package e2e

import (
	"strconv"
	"strings"
	"testing"
)

// The issue-14 cluster, through the real binary: 8-GPU H100 nodes
// (mlx5_1..mlx5_8; mlx5_0 is the management NIC on eth0) and 4-GPU A100 nodes (mlx5_1..mlx5_4), both in node-pool
// train, profiles with "pin": true (manifests/examples/profiles-mixed.json).
const (
	mixedProfilesPath = "../../manifests/examples/profiles-mixed.json"
	productKey        = "nvidia.com/gpu.product"
	h100Product       = "NVIDIA-H100-80GB-HBM3"
	a100Product       = "NVIDIA-A100-SXM4-80GB"
	annSelectedBy     = "rdma-webhook.io/selected-by"
	annInjected       = "rdma-webhook.io/injected"
	h100HCA           = "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8"
	a100HCA           = "=mlx5_1,mlx5_2,mlx5_3,mlx5_4"
)

// selectionCase is one pod and what the webhook must make of it.
type selectionCase struct {
	name       string
	pod        obj
	profile    string            // "" : no profile
	selectedBy string            // the annotation and auditAnnotations value
	selector   map[string]string // spec.nodeSelector after the patch; nil: none
	warnings   []string          // phrases, one per warning
	hca        string            // the pytorch container's NCCL_IB_HCA; "" : absent
}

func withNodeSelector(pod obj, sel map[string]string) obj {
	o := obj{}
	for k, v := range sel {
		o[k] = v
	}
	pod["spec"].(obj)["nodeSelector"] = o
	return pod
}

func withProductIn(pod obj, products ...string) obj {
	values := make([]interface{}, len(products))
	for i, p := range products {
		values[i] = p
	}
	pod["spec"].(obj)["affinity"] = obj{"nodeAffinity": obj{
		"requiredDuringSchedulingIgnoredDuringExecution": obj{"nodeSelectorTerms": []interface{}{
			obj{"matchExpressions": []interface{}{
				obj{"key": productKey, "operator": "In", "values": values},
			}},
		}},
	}}
	return pod
}

func withEnv(pod obj, name, value string) obj {
	c := pathArr(pod, "spec", "containers")[0].(obj)
	c["env"] = append(c["env"].([]interface{}), obj{"name": name, "value": value})
	return pod
}

func mixedCases() []selectionCase {
	pinA100 := map[string]string{productKey: a100Product, "node-pool": "train"}
	pinH100 := map[string]string{productKey: h100Product, "node-pool": "train"}
	return []selectionCase{
		{name: "4 GPUs, no node constraint: A100 by GPU count, pinned",
			pod: trainingPod(4), profile: "a100-4card", selectedBy: "gpus", selector: pinA100,
			warnings: []string{"pinned"}, hca: a100HCA},
		// The pod chose both types itself: no profile, nothing pinned over
		// its choice, one warning (not "none chosen" beside "pinned").
		{name: "In [H100, A100], 4 GPUs: the pod's own choice of both types, no profile, not pinned",
			pod:      withProductIn(trainingPod(4), h100Product, a100Product),
			profile:  "",
			warnings: []string{"ambiguous node constraints fit h100-8card, a100-4card; none chosen"}},
		{name: "In [H100, A100], 8 GPUs: no profile, not pinned",
			pod:      withProductIn(trainingPod(8), h100Product, a100Product),
			profile:  "",
			warnings: []string{"ambiguous node constraints fit h100-8card, a100-4card; none chosen"}},
		{name: "only the shared label: H100 by GPU count, the other key pinned, no ambiguity warning",
			pod:     withNodeSelector(trainingPod(8), map[string]string{"node-pool": "train"}),
			profile: "h100-8card", selectedBy: "gpus", selector: pinH100,
			warnings: []string{"pinned"}, hca: h100HCA},
		{name: "1 GPU: the gpus list", pod: trainingPod(1), profile: "a100-4card",
			selectedBy: "gpus", selector: pinA100, warnings: []string{"pinned"}, hca: a100HCA},
		{name: "2 GPUs: the gpus list", pod: trainingPod(2), profile: "a100-4card",
			selectedBy: "gpus", selector: pinA100, warnings: []string{"pinned"}, hca: a100HCA},
		{name: "demands A100 with 8 GPUs: A100 by node labels, never H100 by count",
			pod:     withNodeSelector(trainingPod(8), map[string]string{productKey: a100Product}),
			profile: "a100-4card", selectedBy: "node-labels",
			selector: map[string]string{productKey: a100Product}, warnings: []string{}, hca: a100HCA},
		{name: "demands neither type: nothing",
			pod:     withNodeSelector(trainingPod(8), map[string]string{productKey: "NVIDIA-L40S"}),
			profile: "", selector: map[string]string{productKey: "NVIDIA-L40S"},
			warnings: []string{"add a profile for"}},
		{name: "3 GPUs: no profile takes 3", pod: trainingPod(3), profile: "",
			warnings: []string{"add a profile for"}},
		{name: "NCCL_IB_DISABLE=1: TCP, still pinned and given /dev/shm",
			pod:     withEnv(trainingPod(4), "NCCL_IB_DISABLE", "1"),
			profile: "a100-4card", selectedBy: "gpus", selector: pinA100,
			warnings: []string{"pinned", "NCCL_IB_DISABLE=1"}, hca: ""},
	}
}

// TestMixedClusterSelection sends each case through /mutate, applies the
// patch with evanphx/json-patch (the result decoding strictly as a
// k8s.io/api Pod), checks the choice, the annotations, the pinning and the
// warnings, that a second call adds nothing, and that the mutated pods pass
// the Kubernetes schema.
func TestMixedClusterSelection(t *testing.T) {
	t.Parallel()
	if res := runBinary(t, nil, "check-profiles", mixedProfilesPath); res.exitCode != 0 {
		t.Fatalf("check-profiles %s: expected exit 0, got %d: %s", mixedProfilesPath, res.exitCode, res.stderr)
	}
	in := startInstance(t, mixedProfilesPath)
	var schemaSet []namedObject
	for _, c := range mixedCases() {
		c := c
		t.Run(c.name, func(t *testing.T) {
			mutated := checkSelectionCase(t, in, c)
			schemaSet = append(schemaSet, namedObject{c.name, mutated})
		})
	}
	t.Run("kubernetes-schema", func(t *testing.T) { checkSchemas(t, schemaSet) })
	t.Run("pinned pods counted", func(t *testing.T) {
		pinned := 0
		for _, c := range mixedCases() {
			if c.selectedBy == "gpus" || c.selectedBy == "default" {
				pinned++
			}
		}
		if got := in.metric(t, "rdma_webhook_pinned_pods_total"); got != strconv.Itoa(pinned) {
			t.Errorf("rdma_webhook_pinned_pods_total: expected %d, got %q", pinned, got)
		}
	})
	t.Run("log line says which rule chose", func(t *testing.T) {
		in.waitLog(t, 0, pickUpWithin, `an admission line with "selected_by":"node-labels"`,
			msgIs("admission", "profile", "a100-4card", "selected_by", "node-labels"))
		in.waitLog(t, 0, pickUpWithin, `an admission line with "selected_by":"gpus"`,
			msgIs("admission", "profile", "h100-8card", "selected_by", "gpus"))
	})
}

func checkSelectionCase(t *testing.T, in *instance, c selectionCase) obj {
	t.Helper()
	original := copyObject(c.pod)
	rr := in.review(t, podCreate(jobNS, copyObject(c.pod)))
	mutated := applyPatch(t, original, rr.patch)
	checkNothingLost(t, original, mutated)
	checkApiserverRules(t, original, mutated)
	checkWarnings(t, c.warnings, rr.warnings)
	if rr.auditProf != c.profile {
		t.Errorf("auditAnnotations.profile: expected %q, got %q", c.profile, rr.auditProf)
	}
	audit, _ := pathStr(rr.response, "auditAnnotations", "selected-by")
	injected, _ := pathStr(mutated, "metadata", "annotations", annInjected)
	by, _ := pathStr(mutated, "metadata", "annotations", annSelectedBy)
	if c.profile != "" && (injected != c.profile || by != c.selectedBy || audit != c.selectedBy) {
		t.Errorf("annotations: expected %s=%q and %s=%q (auditAnnotations too), got %q, %q (audit %q)",
			annInjected, c.profile, annSelectedBy, c.selectedBy, injected, by, audit)
	}
	checkSelector(t, c.selector, mutated)
	if c.profile != "" {
		checkHCA(t, c.hca, mutated)
	}
	if again := in.review(t, podCreate(jobNS, copyObject(mutated))); again.patch != nil {
		t.Errorf("second call on the mutated pod: expected no patch, got %s", again.patch)
	}
	return mutated
}

func checkSelector(t *testing.T, want map[string]string, pod obj) {
	t.Helper()
	got := pathObj(pod, "spec", "nodeSelector")
	if want == nil {
		if got != nil {
			t.Errorf("spec.nodeSelector: expected none, got %v", got)
		}
		return
	}
	if len(got) != len(want) {
		t.Errorf("spec.nodeSelector: expected %v, got %v", want, got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("spec.nodeSelector[%q]: expected %q, got %v", k, v, got[k])
		}
	}
}

// checkHCA: the pytorch container's NCCL_IB_HCA; with hca "" (InfiniBand
// off) also no RDMA device and no IPC_LOCK, but /dev/shm.
func checkHCA(t *testing.T, hca string, pod obj) {
	t.Helper()
	c := containerByName(pod, "pytorch")
	var got []string
	for _, e := range envEntries(c, "NCCL_IB_HCA") {
		v, _ := pathStr(e, "value")
		got = append(got, v)
	}
	if hca != "" {
		if len(got) != 1 || got[0] != hca {
			t.Errorf("NCCL_IB_HCA: expected [%q], got %q", hca, got)
		}
		return
	}
	if len(got) != 0 {
		t.Errorf("NCCL_IB_HCA: expected none (InfiniBand off), got %q", got)
	}
	if caps := path(c, "securityContext", "capabilities", "add"); caps != nil {
		t.Errorf("securityContext.capabilities.add: expected none (InfiniBand off), got %v", caps)
	}
	if r := path(c, "resources", "limits", "rdma/hca"); r != nil {
		t.Errorf("resources.limits[rdma/hca]: expected none (InfiniBand off), got %v", r)
	}
	if !hasMountAt(c, "/dev/shm") {
		t.Errorf("expected a /dev/shm mount with InfiniBand off too")
	}
	if s, _ := pathStr(pod, "spec", "schedulerName"); s != "volcano" {
		t.Errorf("schedulerName: expected volcano with InfiniBand off too, got %q", s)
	}
}

// TestCheckProfilesRefusesRulesThatCannotWin: match rules no pod could ever
// be chosen by are refused offline and on load, naming both profiles.
func TestCheckProfilesRefusesRulesThatCannotWin(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		profiles []interface{}
		words    []string
	}{
		"identical match rules": {
			profiles: []interface{}{
				obj{"name": "a", "match": obj{"gpus": 8, "nodeLabels": obj{"t": "x"}}},
				obj{"name": "b", "match": obj{"gpus": []interface{}{8}, "nodeLabels": obj{"t": "x"}}},
			},
			words: []string{`"a"`, `"b"`, "same match rules"}},
		"nodeLabels within another profile's": {
			profiles: []interface{}{
				obj{"name": "train", "match": obj{"nodeLabels": obj{"pool": "train"}}},
				obj{"name": "h100", "match": obj{"nodeLabels": obj{"pool": "train", productKey: "H100"}}},
			},
			words: []string{`profile "h100": match.nodeLabels can never win`, `"train"`}},
		"a GPU count a label-less profile also takes": {
			profiles: []interface{}{
				obj{"name": "any8", "match": obj{"gpus": 8}},
				obj{"name": "h100", "match": obj{"gpus": []interface{}{4, 8}, "nodeLabels": obj{productKey: "H100"}}},
			},
			words: []string{`profile "h100": match.gpus 8 can never win`, `"any8"`}},
		"pin without nodeLabels": {
			profiles: []interface{}{obj{"name": "p", "pin": true, "match": obj{"gpus": 8}}},
			words:    []string{`profile "p"`, "pin"}},
	}
	for name, c := range cases {
		name, c := name, c
		t.Run(name, func(t *testing.T) {
			file := writeTemp(t, "profiles.json", obj{"profiles": c.profiles})
			res := runBinary(t, nil, "check-profiles", file)
			msg := string(res.stdout) + string(res.stderr)
			if res.exitCode != 1 {
				t.Errorf("expected exit 1, got %d: %q", res.exitCode, msg)
			}
			for _, w := range c.words {
				if !strings.Contains(msg, w) {
					t.Errorf("expected the message to contain %q, got %q", w, msg)
				}
			}
		})
	}
	t.Run("refused on load too", func(t *testing.T) {
		file := writeTemp(t, "profiles.json", obj{"profiles": cases["identical match rules"].profiles})
		in := startInstance(t, file)
		in.waitLog(t, 0, pickUpWithin, "the profiles rejected, naming both", func(l obj) bool {
			return l != nil && strings.Contains(string(mustMarshal(l)), "same match rules")
		})
		if code := in.readyz(t, false); code == 200 {
			t.Errorf("/readyz with only refused profiles: expected not ready, got %d", code)
		}
	})
}

// TestEnvFromConfigMapTurnsIBOff: NCCL_IB_DISABLE=1 from an envFrom
// ConfigMap the webhook can read (with its prefix) is respected like one in
// env; a Secret after it might set it again, so there it is not.
func TestEnvFromConfigMapTurnsIBOff(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putConfigMap(jobNS, "tcp-only", map[string]string{"IB_DISABLE": "1"})
	in := startLookupInstance(t, a)

	ad := in.admit(t, envFromPod(configMapRef("tcp-only", "NCCL_")))
	checkHCA(t, "", ad.patched)
	if w := ad.warningWith("NCCL_IB_DISABLE=1"); w == "" {
		t.Errorf("expected the NCCL_IB_DISABLE warning, got %q", ad.rr.warnings)
	}
	if got := ad.envValues("NCCL_IB_DISABLE"); len(got) != 0 {
		t.Errorf("NCCL_IB_DISABLE: the ConfigMap's value must stay in charge, got env %q", got)
	}

	ad = in.admit(t, envFromPod(configMapRef("tcp-only", "NCCL_"), obj{"secretRef": obj{"name": "s"}}))
	if got := ad.envValues("NCCL_IB_HCA"); len(got) != 1 {
		t.Errorf("a Secret after the ConfigMap: expected the profile's NCCL_IB_HCA, got %q", got)
	}
	if w := ad.warningWith("NCCL_IB_DISABLE="); w != "" {
		t.Errorf("a Secret after the ConfigMap: unexpected warning %q", w)
	}
}
