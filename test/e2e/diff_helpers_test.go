package e2e

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

const maxDiffs = 12

// jsonDiff lists, by JSON Pointer, where got differs from want.
func jsonDiff(want, got interface{}) string {
	var out []string
	diffValues("", normalize(want), normalize(got), &out)
	if len(out) > maxDiffs {
		out = append(out[:maxDiffs], fmt.Sprintf("... and %d more", len(out)-maxDiffs))
	}
	return strings.Join(out, "\n")
}

func diffValues(ptr string, want, got interface{}, out *[]string) {
	w, wok := want.(obj)
	g, gok := got.(obj)
	if wok && gok {
		diffObjects(ptr, w, g, out)
		return
	}
	wa, waok := want.([]interface{})
	ga, gaok := got.([]interface{})
	if waok && gaok {
		diffArrays(ptr, wa, ga, out)
		return
	}
	if !jsonEqual(want, got) {
		*out = append(*out, fmt.Sprintf("%s: expected %s, got %s", ptrOrRoot(ptr), compact(want), compact(got)))
	}
}

func diffObjects(ptr string, want, got obj, out *[]string) {
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		child := ptr + "/" + escapeToken(k)
		wv, win := want[k]
		gv, gin := got[k]
		switch {
		case !gin:
			*out = append(*out, fmt.Sprintf("%s: missing (expected %s)", child, compact(wv)))
		case !win:
			*out = append(*out, fmt.Sprintf("%s: unexpected %s", child, compact(gv)))
		default:
			diffValues(child, wv, gv, out)
		}
	}
}

func diffArrays(ptr string, want, got []interface{}, out *[]string) {
	n := len(want)
	if len(got) > n {
		n = len(got)
	}
	for i := 0; i < n; i++ {
		child := ptr + "/" + strconv.Itoa(i)
		switch {
		case i >= len(got):
			*out = append(*out, fmt.Sprintf("%s: missing (expected %s)", child, compact(want[i])))
		case i >= len(want):
			*out = append(*out, fmt.Sprintf("%s: unexpected %s", child, compact(got[i])))
		default:
			diffValues(child, want[i], got[i], out)
		}
	}
}
