package e2e

import (
	"testing"
)

// TestFixtures sends every fixture pod through /mutate as the apiserver
// would and checks the result (test/CONTRACT.md).
func TestFixtures(t *testing.T) {
	t.Parallel()
	ps := loadProfiles(t)
	var schemaSet []namedObject
	for _, f := range loadFixtures(t) {
		f := f
		schemaSet = append(schemaSet, namedObject{f.name + " (original fixture)", f.object})
		t.Run(f.name, func(t *testing.T) {
			if mutated := checkFixture(t, ps, f); mutated != nil {
				schemaSet = append(schemaSet, namedObject{f.name + " (after mutation)", mutated})
			}
		})
	}
	t.Run("kubernetes-schema", func(t *testing.T) { checkSchemas(t, schemaSet) })
}

// checkFixture runs one fixture and returns the pod after the patch.
func checkFixture(t *testing.T, ps profileSet, f fixture) obj {
	req := podCreate(f.namespace, copyObject(f.object))
	rr := srv.review(t, req)
	mutated := applyPatch(t, f.object, rr.patch)
	checkNothingLost(t, f.object, mutated)
	checkApiserverRules(t, f.object, mutated)
	checkExpectation(t, ps, f.expect, outcome{original: f.object, mutated: mutated, resp: rr})
	checkReinvocation(t, f, mutated)
	checkSamePatch(t, "v1beta1", withVersion(podCreate(f.namespace, copyObject(f.object)), admissionV1beta1), rr.patch)
	checkSamePatch(t, "dryRun", withDryRun(podCreate(f.namespace, copyObject(f.object))), rr.patch)
	return mutated
}

func withVersion(r reviewRequest, apiVersion string) reviewRequest {
	r.apiVersion = apiVersion
	return r
}

func withDryRun(r reviewRequest) reviewRequest {
	r.dryRun = true
	return r
}

// checkReinvocation: the mutated pod, sent again, needs no patch.
func checkReinvocation(t *testing.T, f fixture, mutated obj) {
	t.Helper()
	if rr := srv.review(t, podCreate(f.namespace, mutated)); rr.patch != nil {
		t.Errorf("reinvocation on the mutated pod: expected no patch, got %s", rr.patch)
	}
}

// checkSamePatch: the variant request must yield the same patch.
func checkSamePatch(t *testing.T, what string, r reviewRequest, want []byte) {
	t.Helper()
	if got := srv.review(t, r).patch; !samePatch(got, want) {
		t.Errorf("%s request: expected the same patch as the v1 request\nexpected %s\ngot      %s", what, want, got)
	}
}

// TestValidatorRejectsBrokenPods proves the schema check can fail.
func TestValidatorRejectsBrokenPods(t *testing.T) {
	t.Parallel()
	good := trainingPod(8)
	broken := map[string]func(obj){
		"containers is a string": func(p obj) { p["spec"].(obj)["containers"] = "x" },
		"capabilities.add is a string": func(p obj) {
			containerByName(p, "pytorch")["securityContext"] = obj{"capabilities": obj{"add": "IPC_LOCK"}}
		},
		"bad quantity": func(p obj) {
			containerByName(p, "pytorch")["resources"] = obj{"limits": obj{"rdma/hca": "1x"}}
		},
		"env value is a number": func(p obj) {
			c := containerByName(p, "pytorch")
			c["env"] = []interface{}{obj{"name": "NCCL_IB_TIMEOUT", "value": 22}}
		},
	}
	objects := []interface{}{good}
	var names []string
	for name, breakIt := range broken {
		p := copyObject(good)
		breakIt(p)
		objects = append(objects, p)
		names = append(names, name)
	}
	results := validateSchemas(t, objects)
	if !results[0].OK {
		t.Errorf("a valid pod: expected ok, got %s", results[0].message())
	}
	for i, name := range names {
		if results[i+1].OK {
			t.Errorf("broken pod (%s): expected a schema error, got ok", name)
		}
	}
}
