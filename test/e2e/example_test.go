package e2e

// manifests/examples/pytorchjob-8gpu.yaml, the "Verify" job of docs/install.md:
// valid, and what docs/install.md says the webhook does to it.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestExamplePyTorchJob(t *testing.T) {
	t.Parallel()
	objs := readYAMLObjects(t, examplePyTorchJob)
	job := findObject(t, objs, "PyTorchJob", "")
	if v, _ := pathStr(job, "apiVersion"); v != "kubeflow.org/v1" {
		t.Errorf("apiVersion %q, expected kubeflow.org/v1", v)
	}
	var named []namedObject
	for _, o := range objs {
		if k, _ := pathStr(o, "kind"); k != "PyTorchJob" {
			named = append(named, namedObject{"example: " + objKey(o), o})
		}
	}
	templates := replicaTemplates(job)
	if len(templates) != 2 {
		t.Fatalf("expected Master and Worker templates, got %d", len(templates))
	}
	for name, tmpl := range templates {
		named = append(named, namedObject{"example " + name + " template", templateAsPod(tmpl)})
		// It declares nothing the webhook adds: docs/install.md's checks then
		// show the webhook's work.
		for _, c := range pathArr(tmpl, "spec", "containers") {
			for _, e := range pathArr(c, "env") {
				if n, _ := pathStr(e, "name"); n != "NCCL_DEBUG" && len(n) > 5 && n[:5] == "NCCL_" {
					t.Errorf("%s: the example sets %s itself", name, n)
				}
			}
		}
	}

	// The webhook mutates each template as the pods it creates (profile
	// roce-8card by the 8 GPUs), as docs/install.md "Verify" describes.
	out := mustSucceed(t, nil, "mutate", "--profiles", profilesPath, "--patched",
		writeTemp(t, "pytorchjob.json", job))
	mutated := replicaTemplates(out)
	if len(mutated) != 2 {
		t.Fatalf("mutate --patched: expected Master and Worker templates, got %d", len(mutated))
	}
	for name, tmpl := range mutated {
		if p, _ := pathStr(tmpl, "metadata", "annotations", "rdma-webhook.io/injected"); p != "roce-8card" {
			t.Errorf("%s: annotation rdma-webhook.io/injected %q, expected roce-8card", name, p)
		}
		if s, _ := pathStr(tmpl, "spec", "schedulerName"); s != "volcano" {
			t.Errorf("%s: schedulerName %q, expected volcano", name, s)
		}
		c := pathObj(pathArr(tmpl, "spec", "containers")[0])
		env := map[string]string{}
		for _, e := range pathArr(c, "env") {
			n, _ := pathStr(e, "name")
			env[n], _ = pathStr(e, "value")
		}
		if env["NCCL_IB_HCA"] != "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8" || env["NCCL_DEBUG"] != "INFO" {
			t.Errorf("%s: env %v", name, env)
		}
		if !contains(stringsOf(path(c, "securityContext", "capabilities", "add")), "IPC_LOCK") {
			t.Errorf("%s: no IPC_LOCK", name)
		}
		if !hasMountAt(c, "/dev/shm") {
			t.Errorf("%s: no /dev/shm mount", name)
		}
		named = append(named, namedObject{"example " + name + " template, mutated", templateAsPod(tmpl)})
	}
	checkSchemas(t, named)
}

var readmeJSONPath = regexp.MustCompile(`kubectl get pod "\$P" -o jsonpath='([^']*)'`)

// TestREADMEVerifyCommands runs docs/install.md's "Verify" jsonpath lines on the
// example job's master pod as the webhook mutates it: each prints something,
// and together they show what docs/install.md says they show.
func TestREADMEVerifyCommands(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	matches := readmeJSONPath.FindAllStringSubmatch(string(readme), -1)
	if len(matches) < 5 {
		t.Fatalf("docs/install.md: expected the Verify section's kubectl jsonpath lines, found %d", len(matches))
	}
	job := findObject(t, readYAMLObjects(t, examplePyTorchJob), "PyTorchJob", "")
	out := mustSucceed(t, nil, "mutate", "--profiles", profilesPath, "--patched",
		writeTemp(t, "pytorchjob.json", job))
	master := replicaTemplates(out)["Master"]
	if master == nil {
		t.Fatal("no Master template")
	}
	pod := templateAsPod(master)
	pod["metadata"].(obj)["name"] = "nccl-allreduce-8gpu-master-0"
	podFile := writeTemp(t, "pod.json", pod)
	var all strings.Builder
	for _, m := range matches {
		got := runKubectl(t, nil, "patch", "--local", "-f", podFile, "--type", "merge", "-p", "{}", "-o", "jsonpath="+m[1])
		if strings.TrimSpace(string(got)) == "" {
			t.Errorf("docs/install.md: jsonpath %s prints nothing for the mutated pod", m[1])
		}
		all.Write(got)
	}
	for _, want := range []string{"roce-8card", "NCCL_IB_HCA==mlx5_1,", "NCCL_SOCKET_IFNAME=eth0", `["IPC_LOCK"]`,
		"rdma-webhook-shm", `{"medium":"Memory"}`, "volcano", `"rdma/hca":"1"`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("docs/install.md's Verify lines do not show %s; they print:\n%s", want, all.String())
		}
	}
}
