package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// changeAllowed lists the only user values the webhook may change.
func changeAllowed(ptr string, original interface{}) bool {
	return ptr == "/spec/schedulerName" && original == "default-scheduler"
}

// lostValues walks original and reports, by JSON Pointer, every place where
// mutated does not keep the user's value: object keys keep their values,
// arrays keep their elements at the same index and may only grow at the end.
func lostValues(ptr string, original, mutated interface{}) []string {
	if changeAllowed(ptr, original) {
		return nil
	}
	switch o := original.(type) {
	case obj:
		return lostInObject(ptr, o, mutated)
	case []interface{}:
		return lostInArray(ptr, o, mutated)
	default:
		if !jsonEqual(original, mutated) {
			return []string{fmt.Sprintf("%s: expected %s, got %s", ptrOrRoot(ptr), compact(original), compact(mutated))}
		}
	}
	return nil
}

func lostInObject(ptr string, o obj, mutated interface{}) []string {
	m, ok := mutated.(obj)
	if !ok {
		return []string{fmt.Sprintf("%s: expected an object, got %s", ptrOrRoot(ptr), compact(mutated))}
	}
	var out []string
	for k, v := range o {
		mv, present := m[k]
		child := ptr + "/" + escapeToken(k)
		if !present {
			out = append(out, fmt.Sprintf("%s: removed (was %s)", child, compact(v)))
			continue
		}
		out = append(out, lostValues(child, v, mv)...)
	}
	return out
}

func lostInArray(ptr string, o []interface{}, mutated interface{}) []string {
	m, ok := mutated.([]interface{})
	if !ok {
		return []string{fmt.Sprintf("%s: expected an array, got %s", ptrOrRoot(ptr), compact(mutated))}
	}
	if len(m) < len(o) {
		return []string{fmt.Sprintf("%s: array shrank from %d to %d elements", ptrOrRoot(ptr), len(o), len(m))}
	}
	var out []string
	for i := range o {
		out = append(out, lostValues(ptr+"/"+strconv.Itoa(i), o[i], m[i])...)
	}
	return out
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func ptrOrRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// checkNothingLost fails for every user value the mutation changed or lost.
func checkNothingLost(t testing.TB, original, mutated obj) {
	t.Helper()
	for _, msg := range lostValues("", original, mutated) {
		t.Errorf("user value not preserved: %s", msg)
	}
}

// checkUntouchedContainers: init containers, and regular containers that
// are not targets, must come out exactly as they went in.
func checkUntouchedContainers(t testing.TB, original, mutated obj, targets []string) {
	t.Helper()
	if o, m := path(original, "spec", "initContainers"), path(mutated, "spec", "initContainers"); !jsonEqual(o, m) {
		t.Errorf("initContainers changed:\n%s", jsonDiff(o, m))
	}
	for _, c := range pathArr(original, "spec", "containers") {
		name, _ := pathStr(c, "name")
		if contains(targets, name) {
			continue
		}
		if m := containerByName(mutated, name); !jsonEqual(c, m) {
			t.Errorf("container %q is not a target but changed:\n%s", name, jsonDiff(c, m))
		}
	}
}

// checkApiserverRules checks what the apiserver's pod validation would
// reject in the webhook's additions: duplicate volume names, duplicate
// mount paths, mounts of missing volumes, env names declared twice.
func checkApiserverRules(t testing.TB, original, mutated obj) {
	t.Helper()
	volumes := map[string]int{}
	for _, v := range pathArr(mutated, "spec", "volumes") {
		n, _ := pathStr(v, "name")
		volumes[n]++
	}
	for n, count := range volumes {
		if count > 1 {
			t.Errorf("volume name %q appears %d times in the mutated pod", n, count)
		}
	}
	for _, c := range pathArr(mutated, "spec", "containers") {
		name, _ := pathStr(c, "name")
		checkContainerRules(t, name, containerByName(original, name), c, volumes)
	}
}

func checkContainerRules(t testing.TB, name string, original obj, mutated interface{}, volumes map[string]int) {
	t.Helper()
	paths := map[string]int{}
	for _, m := range pathArr(mutated, "volumeMounts") {
		p, _ := pathStr(m, "mountPath")
		paths[p]++
		if vn, _ := pathStr(m, "name"); volumes[vn] == 0 {
			t.Errorf("container %q mounts %q at %s, but the pod has no such volume", name, vn, p)
		}
	}
	for p, count := range paths {
		if count > 1 {
			t.Errorf("container %q: mountPath %s appears %d times", name, p, count)
		}
	}
	for _, n := range addedDuplicates(nameCounts(pathArr(original, "env")), nameCounts(pathArr(mutated, "env"))) {
		t.Errorf("container %q: the webhook added env %s that the container already declares", name, n)
	}
	for _, n := range addedDuplicates(valueCounts(pathArr(original, "securityContext", "capabilities", "add")),
		valueCounts(pathArr(mutated, "securityContext", "capabilities", "add"))) {
		t.Errorf("container %q: capability %s added twice", name, n)
	}
}

func nameCounts(list []interface{}) map[string]int {
	out := map[string]int{}
	for _, e := range list {
		n, _ := pathStr(e, "name")
		out[n]++
	}
	return out
}

func valueCounts(list []interface{}) map[string]int {
	out := map[string]int{}
	for _, e := range list {
		s, _ := e.(string)
		out[s]++
	}
	return out
}

// addedDuplicates lists names that appear more than once after mutation
// and more often than before it.
func addedDuplicates(before, after map[string]int) []string {
	var out []string
	for n, count := range after {
		if count > 1 && count > before[n] {
			out = append(out, n)
		}
	}
	return out
}
