package e2e

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
)

// strictProblems decodes doc into the typed object into (a pointer to a
// k8s.io/api struct) the strict way: keys match the json tags case
// sensitively; a value of the wrong type, or one its type rejects (a
// quantity that does not parse), is a problem; so is each unknown or
// duplicate field. It returns the problems, none for a clean decode.
//
// A type error stops the strict checks (sigs.k8s.io/json reports the
// first one alone), so a document with one shows that one problem only.
func strictProblems(doc []byte, into interface{}) []string {
	strict, err := sigsjson.UnmarshalStrict(doc, into,
		sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	var out []string
	if err != nil {
		out = append(out, err.Error())
	}
	for _, e := range strict {
		out = append(out, e.Error())
	}
	return out
}

// checkPatchedPod decodes a pod after a patch into a k8s.io/api/core/v1
// Pod with unknown fields disallowed, and returns an error naming each
// unknown, duplicate or mistyped field the patch brought in. A problem the
// original pod already had (the bad-input tests send such pods) is the
// sender's, not the patch's, and is not reported again.
func checkPatchedPod(original, patched []byte) error {
	after := strictProblems(patched, &corev1.Pod{})
	if len(after) == 0 {
		return nil
	}
	before := map[string]bool{}
	for _, p := range strictProblems(original, &corev1.Pod{}) {
		before[p] = true
	}
	var added []string
	for _, p := range after {
		if !before[p] {
			added = append(added, p)
		}
	}
	if len(added) == 0 {
		return nil
	}
	msg := fmt.Sprintf("the patched pod does not decode strictly as a k8s.io/api/core/v1 Pod: %s",
		strings.Join(added, "; "))
	if len(before) > 0 {
		msg += fmt.Sprintf(" (the original pod already had: %s)",
			strings.Join(strictProblems(original, &corev1.Pod{}), "; "))
	}
	return fmt.Errorf("%s", msg)
}
