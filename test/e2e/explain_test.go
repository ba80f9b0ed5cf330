package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// `rdma-webhook mutate --explain`, through the real binary, on the issue's
// mixed H100/A100 cluster (manifests/examples/profiles-mixed.json).

// explainRun runs mutate --explain with the mixed profiles on input.
func explainRun(t *testing.T, input []byte, args ...string) cmdResult {
	t.Helper()
	file := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(file, input, 0o644); err != nil {
		t.Fatal(err)
	}
	return runBinary(t, nil, append(append([]string{"mutate", "--explain", "--profiles", mixedProfilesPath}, args...), file)...)
}

// explainSections splits the explanation at its titles (unindented lines
// ending in ':'), keyed by title, each the text of its indented lines.
func explainSections(t *testing.T, out []byte) (titles []string, sections map[string]string) {
	t.Helper()
	sections = map[string]string{}
	cur := ""
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case line == "":
		case !strings.HasPrefix(line, " "):
			if !strings.HasSuffix(line, ":") {
				t.Fatalf("unindented line that is no title: %q\n%s", line, out)
			}
			cur = strings.TrimSuffix(line, ":")
			if _, dup := sections[cur]; dup {
				t.Fatalf("title %q twice:\n%s", cur, out)
			}
			titles = append(titles, cur)
			sections[cur] = ""
		case cur == "":
			t.Fatalf("indented line before any title: %q", line)
		default:
			sections[cur] += strings.TrimLeft(line, " ") + "\n"
		}
	}
	return titles, sections
}

func named(pod obj, name string) obj {
	pod["metadata"].(obj)["name"] = name
	return pod
}

func withAnnotation(pod obj, k, v string) obj {
	meta := pod["metadata"].(obj)
	ann, _ := meta["annotations"].(obj)
	if ann == nil {
		ann = obj{}
		meta["annotations"] = ann
	}
	ann[k] = v
	return pod
}

// A multi-document YAML stream of JSON documents (JSON is YAML; the
// leading "---" makes the input YAML, not one JSON value).
func yamlStream(pods ...obj) []byte {
	var b bytes.Buffer
	for _, p := range pods {
		b.WriteString("---\n")
		b.Write(mustMarshal(p))
		b.WriteString("\n")
	}
	return b.Bytes()
}

type explainCase struct {
	pod     obj
	profile string   // "" : none
	rule    string   // the "chosen by rule" word, or "none", "unknown-name"
	pinned  bool     //
	lines   []string // whole lines the section must have
}

const (
	h100Labels = "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3, node-pool=train"
	a100Labels = "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB, node-pool=train"
)

func explainCases() map[string]explainCase {
	return map[string]explainCase{
		"by-gpus": {pod: trainingPod(4), profile: "a100-4card", rule: "gpus", pinned: true, lines: []string{
			`profile "a100-4card": chosen by rule gpus`,
			`profile "h100-8card": node-labels: the pod has no node constraints; gpus: match.gpus [8] vs the pod's 4 GPUs`,
			`profile "a100-4card": node-labels: the pod has no node constraints; chosen by gpus: match.gpus [1, 2, 4] has the pod's 4 GPUs`,
			`pin: pinned: the nodeSelector gets ` + a100Labels + ` (the profile's nodeLabels)`,
			`container "pytorch": a target: asks for nvidia.com/gpu`,
			`NCCL_IB_HCA="` + a100HCA + `": added`,
			`IPC_LOCK: added to securityContext.capabilities.add`,
			`/dev/shm: added, a mount of volume "rdma-webhook-shm" (emptyDir, medium Memory)`,
			`resource rdma/hca=1: added to container "pytorch"'s limits and requests`,
			`schedulerName: volcano: replaces default-scheduler`,
			`annotation rdma-webhook.io/injected: a100-4card`,
			`annotation rdma-webhook.io/selected-by: gpus`,
			`warning: rdma-webhook: pinned to profile "a100-4card" nodes: nodeSelector ` + a100Labels,
		}},
		"ambiguous": {pod: withProductIn(trainingPod(4), h100Product, a100Product), rule: "none", lines: []string{
			`node constraints: nodeSelector none; required node affinity term 1: nvidia.com/gpu.product In [` + h100Product + `, ` + a100Product + `]`,
			`no profile: the pod's node constraints allow several node types, and the GPU count or a default does not choose one for it (rule none; nothing is added)`,
			`profile "h100-8card": node-labels: tied with a100-4card at node-labels (the constraints allow several node types, which they tell apart by a label; none chosen, and no later rule chooses for them)`,
			`profile "a100-4card": node-labels: tied with h100-8card at node-labels (the constraints allow several node types, which they tell apart by a label; none chosen, and no later rule chooses for them)`,
			`warning: rdma-webhook: set rdma-webhook.io/profile: ambiguous node constraints fit h100-8card, a100-4card; none chosen`,
		}},
		"shared-label": {pod: withNodeSelector(trainingPod(4), map[string]string{"node-pool": "train"}), profile: "a100-4card", rule: "gpus", pinned: true, lines: []string{
			`profile "a100-4card": node-labels: tied with h100-8card at node-labels (the constraints fit several; none chosen); chosen by gpus: match.gpus [1, 2, 4] has the pod's 4 GPUs`,
			`pin: pinned: the nodeSelector gets nvidia.com/gpu.product=` + a100Product + ` (the profile's nodeLabels)`,
			`warning: rdma-webhook: pinned to profile "a100-4card" nodes: nodeSelector nvidia.com/gpu.product=` + a100Product,
		}},
		"demanded": {pod: withNodeSelector(trainingPod(8), map[string]string{productKey: a100Product}), profile: "a100-4card", rule: "node-labels", lines: []string{
			`profile "h100-8card": excluded by the pod's node constraints: nodeLabels nvidia.com/gpu.product=` + h100Product + ` inconsistent with the pod's nodeSelector nvidia.com/gpu.product=` + a100Product,
			`profile "a100-4card": chosen by node-labels: the only profile with nodeLabels (` + a100Labels + `) the constraints fit, and they require one of its keys`,
			`pin: not pinned: only a profile chosen by gpus or as the default is pinned`,
		}},
		"neither": {pod: withNodeSelector(trainingPod(8), map[string]string{productKey: "NVIDIA-L40S"}), rule: "none", lines: []string{
			`no profile: no rule chose one (rule none; nothing is added)`,
			`profile "a100-4card": excluded by the pod's node constraints: nodeLabels nvidia.com/gpu.product=` + a100Product + ` inconsistent with the pod's nodeSelector nvidia.com/gpu.product=NVIDIA-L40S`,
			`result: skipped (no-profile); the patch sets only rdma-webhook.io/warnings`,
		}},
		"unknown": {pod: withAnnotation(trainingPod(8), "rdma-webhook.io/profile", "b200-8card"), rule: "unknown-name", lines: []string{
			`no profile: the annotation rdma-webhook.io/profile names "b200-8card", which is no profile (rule unknown-name; nothing is added)`,
			`profile "h100-8card": the annotation names another profile`,
			`profile "a100-4card": the annotation names another profile`,
			`result: skipped (unknown-profile); the patch sets only rdma-webhook.io/warnings`,
			`warning: rdma-webhook: set rdma-webhook.io/profile to one of h100-8card, a100-4card ("b200-8card" is unknown)`,
		}},
		"ib-disabled": {pod: withEnv(trainingPod(4), "NCCL_IB_DISABLE", "1"), profile: "a100-4card", rule: "gpus", pinned: true, lines: []string{
			`InfiniBand off: NCCL reads its NCCL_IB_DISABLE=1 as non-zero (TCP): no NCCL_IB_* variable, no IPC_LOCK, no RDMA device`,
			`NCCL_IB_DISABLE: kept the container's: it turns InfiniBand off`,
			`NCCL_IB_TIMEOUT="22": left out: NCCL_IB_DISABLE turns InfiniBand off`,
			`NCCL_IB_HCA="` + a100HCA + `": left out: NCCL_IB_DISABLE turns InfiniBand off`,
			`NCCL_SOCKET_IFNAME="eth0": added`,
			`IPC_LOCK: not added: InfiniBand is off`,
			`resources: none added: every target container has InfiniBand off`,
			`warning: rdma-webhook: drop NCCL_IB_DISABLE=1 in container "pytorch" for RDMA; it has TCP, no RDMA device`,
		}},
		"user-hca": {pod: withEnv(trainingPod(8), "NCCL_IB_HCA", "=mlx5_0,mlx5_1"), profile: "h100-8card", rule: "gpus", pinned: true, lines: []string{
			`NCCL_IB_HCA: kept the container's "=mlx5_0,mlx5_1" (env) over the profile's "` + h100HCA + `"`,
			`NCCL_IB_TIMEOUT="22": added`,
			`warning: rdma-webhook: drop NCCL_IB_HCA in container "pytorch" to get the profile's ` + h100HCA,
		}},
	}
}

var (
	chosenRule = regexp.MustCompile(`(?m)^profile "([^"]+)": chosen by (?:rule|annotation) (\S+)$`)
	addedVar   = regexp.MustCompile(`(?m)^(NCCL_[A-Z_]+)="([^"]*)": added`)
)

// TestMutateExplainMixedCluster: one multi-document YAML of the mixed
// cluster's cases; each pod's explanation has its lines, and agrees with
// what the same run without --explain does to the pod: the profile and rule
// in its annotations, the pinning, each variable said to be added.
func TestMutateExplainMixedCluster(t *testing.T) {
	t.Parallel()
	cases := explainCases()
	var names []string
	var pods []obj
	for name, c := range cases {
		names = append(names, name)
		pods = append(pods, named(c.pod, name))
	}
	input := yamlStream(pods...)
	res := explainRun(t, input)
	if res.exitCode != 0 {
		t.Fatalf("expected exit 0, got %d: %s", res.exitCode, res.stderr)
	}
	if len(res.stderr) != 0 {
		t.Errorf("--explain: warnings belong in the explanation, stderr has %s", res.stderr)
	}
	titles, sections := explainSections(t, res.stdout)
	if len(titles) != len(names) {
		t.Fatalf("expected %d sections, got %d: %v", len(names), len(titles), titles)
	}
	patched := runBinary(t, input, "mutate", "--profiles", mixedProfilesPath, "--patched", "-o", "json", "-")
	if patched.exitCode != 0 {
		t.Fatalf("--patched: exit %d: %s", patched.exitCode, patched.stderr)
	}
	outs := jsonValues(t, patched.stdout)
	for i, name := range names {
		c := cases[name]
		title := "document " + strconv.Itoa(i+1) + ": Pod kubeflow/" + name
		text, ok := sections[title]
		if !ok || titles[i] != title {
			t.Errorf("%s: expected section %q in order, got titles %v", name, title, titles)
			continue
		}
		for _, l := range c.lines {
			if !strings.Contains("\n"+text, "\n"+l+"\n") {
				t.Errorf("%s: expected the line\n  %s\nin\n%s", name, l, text)
			}
		}
		checkExplainAgrees(t, name, c, text, pods[i], outs[i].(obj))
	}
}

// checkExplainAgrees: what the explanation says against what was done.
func checkExplainAgrees(t *testing.T, name string, c explainCase, text string, in, out obj) {
	t.Helper()
	m := chosenRule.FindStringSubmatch(text)
	gotProfile, gotRule := "", c.rule
	if m != nil {
		gotProfile, gotRule = m[1], m[2]
		if gotRule == "rdma-webhook.io/profile" {
			gotRule = "annotation"
		}
	}
	injected, _ := pathStr(out, "metadata", "annotations", annInjected)
	by, _ := pathStr(out, "metadata", "annotations", annSelectedBy)
	if gotProfile != c.profile || injected != c.profile || (c.profile != "" && (gotRule != c.rule || by != c.rule)) {
		t.Errorf("%s: explained %q by %q, the pod got %q by %q; expected %q by %q", name, gotProfile, gotRule, injected, by, c.profile, c.rule)
	}
	_, hadSel := pathStr(in, "spec", "nodeSelector", productKey)
	_, hasSel := pathStr(out, "spec", "nodeSelector", productKey)
	if said := strings.Contains(text, "\npin: pinned:") || strings.HasPrefix(text, "pin: pinned:"); said != c.pinned || (hasSel && !hadSel) != c.pinned {
		t.Errorf("%s: pinned: explained %v, done %v, expected %v", name, said, hasSel && !hadSel, c.pinned)
	}
	added := map[string]string{}
	for _, m := range addedVar.FindAllStringSubmatch(text, -1) {
		added[m[1]] = m[2]
	}
	before := map[string]bool{}
	for _, e := range pathArr(pathArr(in, "spec", "containers")[0], "env") {
		before[e.(obj)["name"].(string)] = true
	}
	got := map[string]string{}
	for _, e := range pathArr(pathArr(out, "spec", "containers")[0], "env") {
		n := e.(obj)["name"].(string)
		if !before[n] && strings.HasPrefix(n, "NCCL_") {
			got[n], _ = e.(obj)["value"].(string)
		}
	}
	if len(got) != len(added) {
		t.Errorf("%s: explained as added %v, the pod got %v", name, added, got)
	}
	for k, v := range got {
		if added[k] != v {
			t.Errorf("%s: %s=%q added, the explanation says %q", name, k, v, added[k])
		}
	}
}

// TestMutateExplainPyTorchJob: each replica template of the example job is
// explained as the pods it creates, and the ConfigMap next to it is said
// to be left alone.
func TestMutateExplainPyTorchJob(t *testing.T) {
	t.Parallel()
	res := explainRun(t, readFile(t, filepath.Join(repoRoot, "manifests", "examples", "pytorchjob-8gpu.yaml")))
	if res.exitCode != 0 {
		t.Fatalf("expected exit 0, got %d: %s", res.exitCode, res.stderr)
	}
	titles, sections := explainSections(t, res.stdout)
	want := []string{
		"document 1: PyTorchJob default/nccl-allreduce-8gpu, replica Master (spec.pytorchReplicaSpecs.Master.template)",
		"document 1: PyTorchJob default/nccl-allreduce-8gpu, replica Worker (spec.pytorchReplicaSpecs.Worker.template)",
		"document 2: ConfigMap default/nccl-allreduce-script",
	}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Fatalf("titles: expected %q, got %q", want, titles)
	}
	for _, title := range want[:2] {
		for _, l := range []string{
			"pod: a target: a job's replica template",
			`profile "h100-8card": chosen by rule gpus`,
			"pin: pinned: the nodeSelector gets " + h100Labels + " (the profile's nodeLabels)",
			`profile "a100-4card": node-labels: the pod has no node constraints; gpus: match.gpus [1, 2, 4] vs the pod's 8 GPUs`,
		} {
			if !strings.Contains(sections[title], l+"\n") {
				t.Errorf("%s: expected %q in\n%s", title, l, sections[title])
			}
		}
	}
	if !strings.Contains(sections[want[2]], "left as it is") {
		t.Errorf("the ConfigMap: expected \"left as it is\", got %q", sections[want[2]])
	}
}

// TestMutateExplainList: each item of a List is explained on its own, its
// title saying which.
func TestMutateExplainList(t *testing.T) {
	t.Parallel()
	list := obj{"apiVersion": "v1", "kind": "PodList", "items": []interface{}{
		named(trainingPod(8), "a"), named(withEnv(trainingPod(4), "NCCL_IB_DISABLE", "1"), "b")}}
	res := explainRun(t, mustMarshal(list))
	titles, s := explainSections(t, res.stdout)
	want := []string{"document 1, item 1: Pod kubeflow/a", "document 1, item 2: Pod kubeflow/b"}
	if res.exitCode != 0 || strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Fatalf("expected exit 0 and titles %q, got %d, %q: %s", want, res.exitCode, titles, res.stderr)
	}
	if !strings.Contains(s[want[0]], `profile "h100-8card": chosen by rule gpus`+"\n") ||
		!strings.Contains(s[want[1]], `profile "a100-4card": chosen by rule gpus`+"\n") ||
		!strings.Contains(s[want[1]], "IPC_LOCK: not added: InfiniBand is off\n") ||
		strings.Contains(s[want[0]], "InfiniBand is off") {
		t.Errorf("each item explained as itself expected, got\n%s", res.stdout)
	}
}

// TestMutateExplainFlags: --node-labels, --namespace-labels and
// --detect-image are in the explanation as they are in the result.
func TestMutateExplainFlags(t *testing.T) {
	t.Parallel()
	pod := mustMarshal(trainingPod(4))
	res := explainRun(t, pod, "--node-labels", "nvidia.com/gpu.product="+h100Product+",node-pool=train")
	_, s := explainSections(t, res.stdout)
	text := s["Pod kubeflow/e2e-job-master-0"]
	for _, l := range []string{
		`--node-labels: no spec.nodeName, so taken to run on a node "rdma-webhook-offline-node" that has them`,
		`node "rdma-webhook-offline-node" (spec.nodeName) has labels ` + h100Labels,
		`profile "h100-8card": chosen by rule node`,
		`profile "a100-4card": excluded by the pod's node constraints: nodeLabels nvidia.com/gpu.product=` + a100Product + ` inconsistent with node "rdma-webhook-offline-node"'s nvidia.com/gpu.product=` + h100Product,
		`pin: not pinned: only a profile chosen by gpus or as the default is pinned`,
	} {
		if res.exitCode != 0 || !strings.Contains(text, l+"\n") {
			t.Errorf("--node-labels: exit %d, expected %q in\n%s%s", res.exitCode, l, res.stdout, res.stderr)
		}
	}

	plain := explainRun(t, pod)
	labelled := explainRun(t, pod, "--namespace-labels", "team=ml")
	note := "  --namespace-labels: namespace \"kubeflow\" has team=ml (and kubernetes.io/metadata.name=kubeflow), for match.namespaces selectors\n"
	if labelled.exitCode != 0 || !bytes.Contains(labelled.stdout, []byte(note)) ||
		string(bytes.Replace(labelled.stdout, []byte(note), nil, 1)) != string(plain.stdout) {
		t.Errorf("--namespace-labels: expected the explanation with only %q more, got\n%s\nvs\n%s", note, labelled.stdout, plain.stdout)
	}

	profiles := filepath.Join(t.TempDir(), "detect.json")
	if err := os.WriteFile(profiles, []byte(`{"profiles":[{"name":"d","default":true,"detect":true,"hca":["mlx5_0"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		lines []string
	}{
		{nil, []string{`detect: the profile asks for it, but there is no --detect-image: static values`,
			`NCCL_IB_HCA="=mlx5_0": added`,
			`warning: rdma-webhook: give the webhook --detect-image: profile "d" asks for detect; static values used`}},
		{[]string{"--detect-image", "registry.example/rdma-webhook:1"}, []string{
			`NCCL_IB_HCA="=mlx5_0": left out: run-time detection writes it to /run/rdma-webhook/nccl.conf`,
			`NCCL_CONF_FILE="/run/rdma-webhook/nccl.conf": added (run-time detection: NCCL 2.23+ reads the file)`,
			`detect: volume "rdma-webhook-nccl" added (emptyDir, medium Memory, sizeLimit 1Mi)`,
			`detect: init container "rdma-webhook-detect" added (image registry.example/rdma-webhook:1, after the pod's own)`}},
	} {
		r := runBinary(t, pod, append(append([]string{"mutate", "--explain", "--profiles", profiles}, c.args...), "-")...)
		for _, l := range c.lines {
			if r.exitCode != 0 || !strings.Contains(string(r.stdout), "  "+l+"\n") {
				t.Errorf("detect %v: exit %d, expected %q in\n%s%s", c.args, r.exitCode, l, r.stdout, r.stderr)
			}
		}
	}
}

// TestMutateExplainExitCodes: --explain exits as mutate does: 2 for a usage
// error (with -o or --patched too, which print objects), 1 for input it
// cannot read (nothing printed) or an object it cannot process (the others
// still explained), 0 otherwise; a review is explained as the server would
// answer it.
func TestMutateExplainExitCodes(t *testing.T) {
	t.Parallel()
	pod := mustMarshal(trainingPod(4))
	for _, args := range [][]string{{"-o", "json"}, {"-o", "yaml"}, {"--patched"}} {
		res := explainRun(t, pod, args...)
		if res.exitCode != 2 || len(res.stdout) != 0 || !strings.Contains(string(res.stderr), "--explain prints text, not objects: leave out "+args[0]) {
			t.Errorf("--explain %v: expected exit 2 and the reason, got %d: %s%s", args, res.exitCode, res.stdout, res.stderr)
		}
	}
	if res := explainRun(t, []byte("{\"kind\": \"Pod\"} trailing")); res.exitCode != 1 || len(res.stdout) != 0 {
		t.Errorf("garbage: expected exit 1 and nothing printed, got %d: %s", res.exitCode, res.stdout)
	}
	mixed := yamlStream(obj{"apiVersion": "v1", "metadata": obj{"name": "x"}}, trainingPod(4),
		obj{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": obj{"name": "j"}, "spec": obj{}})
	res := explainRun(t, mixed)
	_, s := explainSections(t, res.stdout)
	if res.exitCode != 1 || !strings.Contains(s["document 2: Pod kubeflow/e2e-job-master-0"], "result: mutated") ||
		!strings.Contains(string(res.stderr), "document 1") || !strings.Contains(string(res.stderr), "no spec.pytorchReplicaSpecs") {
		t.Errorf("a document without kind and a job without replicas: expected exit 1, the pod still explained, got %d:\n%s%s", res.exitCode, res.stdout, res.stderr)
	}
	review := func(op string) obj {
		return obj{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": obj{
			"uid": "u1", "kind": obj{"group": "", "version": "v1", "kind": "Pod"},
			"resource":  obj{"group": "", "version": "v1", "resource": "pods"},
			"namespace": "kubeflow", "operation": op, "object": trainingPod(8)}}
	}
	res = explainRun(t, mustMarshal(review("CREATE")))
	if res.exitCode != 0 || !strings.Contains(string(res.stdout), "  profile \"h100-8card\": chosen by rule gpus\n") {
		t.Errorf("a review: expected exit 0 and the pod explained, got %d: %s%s", res.exitCode, res.stdout, res.stderr)
	}
	res = explainRun(t, mustMarshal(review("UPDATE")))
	if res.exitCode != 0 || !strings.Contains(string(res.stdout), "ignored: the webhook mutates only a Pod CREATE") {
		t.Errorf("an UPDATE review: expected exit 0 and \"ignored\", got %d: %s%s", res.exitCode, res.stdout, res.stderr)
	}
	bad := review("CREATE")
	delete(bad["request"].(obj), "uid")
	if res = explainRun(t, mustMarshal(bad)); res.exitCode != 1 || !strings.Contains(string(res.stderr), "HTTP 400") {
		t.Errorf("a review without uid: expected exit 1 and HTTP 400 as without --explain, got %d: %s", res.exitCode, res.stderr)
	}
}

// TestMutateExplainNamespaces: --explain tells the match.namespaces part of
// the selection: a team profile preferred over the cluster-wide one it
// covers, a profile of other namespaces, labels that are unknown, and the
// annotation naming another team's profile.
func TestMutateExplainNamespaces(t *testing.T) {
	t.Parallel()
	run := func(pod obj, args ...string) string {
		t.Helper()
		file := filepath.Join(t.TempDir(), "pod.json")
		if err := os.WriteFile(file, mustMarshal(pod), 0o644); err != nil {
			t.Fatal(err)
		}
		res := runBinary(t, nil, append(append([]string{"mutate", "--explain", "--profiles", teamsProfilesPath}, args...), file)...)
		if res.exitCode != 0 {
			t.Fatalf("mutate --explain %v: exit %d: %s", args, res.exitCode, res.stderr)
		}
		return string(res.stdout)
	}
	expect := func(what, out string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(out, l+"\n") {
				t.Errorf("%s: expected the line %q in\n%s", what, l, out)
			}
		}
	}
	pod := trainingPod(8)
	expect("team namespace", run(pod, "--namespace-labels", "rdma-webhook.io/nccl=2.18"),
		`  profile "nccl218-8card": chosen by rule gpus`,
		`    profile "roce-8card": covered by "nccl218-8card", limited to this namespace (its nodeLabels are within this profile's)`,
		`    profile "research-default": limited by match.namespaces to other namespaces than "kubeflow"`)
	expect("labels unknown", run(pod),
		`  namespace "kubeflow": its labels could not be read, and a profile's match.namespaces selector needs them: no rule from where that profile could have won`,
		`    profile "nccl218-8card": match.namespaces is a selector and the labels of "kubeflow" are unknown (no candidate)`,
		`    profile "roce-8card": node-labels: the pod has no node constraints; gpus: match.gpus [8] has the pod's 8 GPUs, but the rule chose nothing: the namespace's labels are unknown; not the default`)
	pod["metadata"].(obj)["annotations"] = obj{"rdma-webhook.io/profile": "research-default"}
	expect("another team's profile", run(pod, "--namespace-labels", "team=x"),
		`  no profile: the annotation rdma-webhook.io/profile names "research-default", limited by match.namespaces to other namespaces than "kubeflow" (rule other-namespaces; nothing is added)`)
}

// evilPod is a GPU pod of the default profiles whose name, namespace and
// rdma-webhook.io/profile annotation carry ESC, CR, BEL, newlines and a C1
// CSI: text that, echoed raw, would colour a terminal or forge a line.
func evilPod() obj {
	return obj{"apiVersion": "v1", "kind": "Pod",
		"metadata": obj{"name": "evil\x1b[31mRED\x1b[0m\nfake: line\r\a",
			"namespace":   strings.Repeat("é", 40),
			"labels":      obj{"rdma-webhook.io/inject": "true"},
			"annotations": obj{"rdma-webhook.io/profile": "x\x1b[2J\nWarning: forged\u009b31m"}},
		"spec": obj{"containers": []interface{}{obj{"name": "pytorch", "image": "x",
			"resources": obj{"limits": obj{"nvidia.com/gpu": "8"}}}}}}
}

// controlBytes says where text holds a control character other than the
// newlines that end its lines, or a C1 control, or bad UTF-8; "" if none.
func controlBytes(text string) string {
	if !utf8.ValidString(text) {
		return "bad UTF-8"
	}
	for i, r := range text {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return fmt.Sprintf("%U at byte %d", r, i)
		}
	}
	return ""
}

// TestUserTextFoldedEverywhere: a user's text reaches no terminal or log
// raw: --explain's title (cut at 63 bytes between characters), its lines,
// mutate's warnings on stderr, and the AdmissionReview's warnings.
func TestUserTextFoldedEverywhere(t *testing.T) {
	t.Parallel()
	input := mustMarshal(evilPod())
	res := runBinary(t, input, "mutate", "--explain", "--profiles", profilesPath, "-")
	if res.exitCode != 0 {
		t.Fatalf("mutate --explain: exit %d: %s", res.exitCode, res.stderr)
	}
	if where := controlBytes(string(res.stdout)); where != "" {
		t.Errorf("--explain printed %s:\n%q", where, res.stdout)
	}
	title, _, _ := strings.Cut(string(res.stdout), "\n")
	if !strings.HasPrefix(title, "Pod "+strings.Repeat("é", 30)+".../evil?[31mRED?[0m?fake: line??") {
		t.Errorf("title %q: want the namespace cut between characters, the name folded", title)
	}
	if strings.Count(string(res.stdout), "\nfake: line") != 0 {
		t.Errorf("--explain has a forged line:\n%s", res.stdout)
	}
	res = runBinary(t, input, "mutate", "--profiles", profilesPath, "-")
	if where := controlBytes(string(res.stderr)); where != "" || !strings.Contains(string(res.stderr), `("x?[2J?Warning: fo`) {
		t.Errorf("mutate's warnings on stderr: %s, want the annotation folded:\n%q", where, res.stderr)
	}
	rr := srv.review(t, podCreate("kubeflow", evilPod()))
	if len(rr.warnings) == 0 {
		t.Fatal("the unknown profile got no warning")
	}
	for _, w := range rr.warnings {
		if where := controlBytes(w); where != "" || strings.Contains(w, "\n") {
			t.Errorf("AdmissionReview warning with %s or a newline: %q", where, w)
		}
	}
}
