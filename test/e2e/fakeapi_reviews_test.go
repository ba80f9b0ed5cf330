package e2e

// The fake apiserver's TokenReview (authentication.k8s.io/v1) and
// SubjectAccessReview (authorization.k8s.io/v1), for --metrics-auth
// kubernetes: a TokenReview authenticates the tokens a test registered
// (addReviewToken) and no other, answering 201 as the apiserver does; a
// SubjectAccessReview allows get on the non-resource URL /metrics to the
// users a test made readers (allowMetrics) and nothing else. Both check the
// request as the apiserver would (apiVersion, kind, spec), so a malformed
// review the webhook sends fails the test's expectation instead of passing.

import (
	"encoding/json"
	"net/http"
)

type fakeUser struct {
	Username string   `json:"username"`
	UID      string   `json:"uid,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

// addReviewToken makes token one a TokenReview authenticates as user.
func (a *fakeAPI) addReviewToken(token string, user fakeUser) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reviewUsers == nil {
		a.reviewUsers = map[string]fakeUser{}
	}
	a.reviewUsers[token] = user
}

// allowMetrics lets username get /metrics (a ClusterRoleBinding to the
// reader role, in a real cluster).
func (a *fakeAPI) allowMetrics(username string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.metricsReaders == nil {
		a.metricsReaders = map[string]bool{}
	}
	a.metricsReaders[username] = true
}

func (a *fakeAPI) tokenReview(w http.ResponseWriter, rec *apiRequest) {
	var tr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Token string `json:"token"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rec.Body, &tr); err != nil || tr.APIVersion != "authentication.k8s.io/v1" ||
		tr.Kind != "TokenReview" || tr.Spec.Token == "" {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "not a TokenReview with spec.token", nil)
		return
	}
	a.mu.Lock()
	user, ok := a.reviewUsers[tr.Spec.Token]
	a.mu.Unlock()
	status := obj{}
	if ok {
		status = obj{"authenticated": true, "user": user}
	} else {
		status = obj{"error": "invalid bearer token"}
	}
	writeJSON(w, http.StatusCreated, obj{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
		"metadata": obj{"creationTimestamp": nil}, "spec": obj{"token": tr.Spec.Token}, "status": status})
}

func (a *fakeAPI) subjectAccessReview(w http.ResponseWriter, rec *apiRequest) {
	var sar struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			User           string              `json:"user"`
			Groups         []string            `json:"groups"`
			Extra          map[string][]string `json:"extra"`
			NonResourceAtt *struct {
				Path string `json:"path"`
				Verb string `json:"verb"`
			} `json:"nonResourceAttributes"`
			ResourceAtt interface{} `json:"resourceAttributes"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rec.Body, &sar); err != nil || sar.APIVersion != "authorization.k8s.io/v1" ||
		sar.Kind != "SubjectAccessReview" || sar.Spec.User == "" || sar.Spec.NonResourceAtt == nil ||
		sar.Spec.ResourceAtt != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest",
			"not a SubjectAccessReview with spec.user and nonResourceAttributes only", nil)
		return
	}
	a.mu.Lock()
	allowed := a.metricsReaders[sar.Spec.User] && sar.Spec.NonResourceAtt.Path == "/metrics" &&
		sar.Spec.NonResourceAtt.Verb == "get"
	a.mu.Unlock()
	status := obj{"allowed": allowed}
	if allowed {
		status["reason"] = `RBAC: allowed by ClusterRoleBinding "prometheus"`
	}
	writeJSON(w, http.StatusCreated, obj{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
		"metadata": obj{"creationTimestamp": nil}, "spec": json.RawMessage(mustJSON(sar.Spec)), "status": status})
}

func mustJSON(v interface{}) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
