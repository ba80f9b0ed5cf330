package e2e

import (
	"strings"
	"testing"
)

// profileSet is manifests/profiles.json as the tests read it.
type profileSet struct {
	doc          obj
	gpuResources []string
	rdmaPrefix   string
}

func loadProfiles(t testing.TB) profileSet {
	t.Helper()
	doc, err := readJSONFile(profilesPath)
	if err != nil {
		t.Fatalf("profiles: %v", err)
	}
	ps := profileSet{doc: doc, rdmaPrefix: "rdma/"}
	for _, r := range pathArr(doc, "gpuResources") {
		if s, ok := r.(string); ok {
			ps.gpuResources = append(ps.gpuResources, s)
		}
	}
	if p, ok := pathStr(doc, "rdmaResourcePrefix"); ok {
		ps.rdmaPrefix = p
	}
	return ps
}

func (ps profileSet) profile(name string) obj {
	for _, p := range pathArr(ps.doc, "profiles") {
		if n, _ := pathStr(p, "name"); n == name {
			return p.(obj)
		}
	}
	return nil
}

// envFor is every variable the profile injects (CONTRACT "Default
// profiles"): defaults.env, the profile's env, NCCL_IB_HCA from its hca
// list; for hostNetwork pods the hostNetworkEnv overrides, and without one
// no NCCL_SOCKET_IFNAME.
func (ps profileSet) envFor(t testing.TB, name string, hostNetwork bool) map[string]string {
	t.Helper()
	p := ps.profile(name)
	if p == nil {
		t.Fatalf("profile %q is not in %s", name, profilesPath)
	}
	env := map[string]string{}
	mergeStrings(env, pathObj(ps.doc, "defaults", "env"))
	mergeStrings(env, pathObj(p, "env"))
	if hca := hcaValue(pathArr(p, "hca")); hca != "" {
		env["NCCL_IB_HCA"] = hca
	}
	if hostNetwork {
		hn := pathObj(p, "hostNetworkEnv")
		if _, has := hn["NCCL_SOCKET_IFNAME"]; !has {
			delete(env, "NCCL_SOCKET_IFNAME")
		}
		mergeStrings(env, hn)
	}
	return env
}

func mergeStrings(dst map[string]string, src obj) {
	for k, v := range src {
		if s, ok := v.(string); ok {
			dst[k] = s
		}
	}
}

// hcaValue is NCCL's exact-match form "=mlx5_1,mlx5_2,...".
func hcaValue(list []interface{}) string {
	var names []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "=" + strings.Join(names, ",")
}

// asksFor reports whether a container requests (limits or requests) a GPU
// resource or any resource under the RDMA prefix.
func (ps profileSet) asksFor(container interface{}) bool {
	for _, section := range []string{"limits", "requests"} {
		for res := range pathObj(container, "resources", section) {
			if strings.HasPrefix(res, ps.rdmaPrefix) || contains(ps.gpuResources, res) {
				return true
			}
		}
	}
	return false
}

// derivedTargets applies the CONTRACT's container rule: containers asking
// for a GPU or rdma/ resource, else the one named pytorch.
func (ps profileSet) derivedTargets(pod obj) []string {
	var out []string
	for _, c := range pathArr(pod, "spec", "containers") {
		if ps.asksFor(c) {
			n, _ := pathStr(c, "name")
			out = append(out, n)
		}
	}
	if len(out) == 0 && containerByName(pod, "pytorch") != nil {
		out = []string{"pytorch"}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// containerByName finds a regular container of the pod.
func containerByName(pod interface{}, name string) obj {
	for _, c := range pathArr(pod, "spec", "containers") {
		if n, _ := pathStr(c, "name"); n == name {
			return c.(obj)
		}
	}
	return nil
}

// envEntries returns the container's env entries with the given name.
func envEntries(container interface{}, name string) []obj {
	var out []obj
	for _, e := range pathArr(container, "env") {
		if n, _ := pathStr(e, "name"); n == name {
			out = append(out, e.(obj))
		}
	}
	return out
}
