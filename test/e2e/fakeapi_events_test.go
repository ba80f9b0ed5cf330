package e2e

// The fake apiserver's events.k8s.io/v1 Events: create and merge-patch,
// validated as the kube-apiserver validates them
// (k8s.io/kubernetes/pkg/apis/core/validation/events.go, for a request in
// events.k8s.io/v1), stored, and read back by the tests.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// microTime is the layout of an events.k8s.io MicroTime.
const microTime = "2006-01-02T15:04:05.000000Z07:00"

var (
	dnsSubdomain  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	qualifiedName = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
)

// validateEventCreate lists what the apiserver would refuse in a new Event
// created in namespace ns.
func validateEventCreate(ev obj, ns string) []string {
	var bad []string
	str := func(keys ...string) string { s, _ := pathStr(ev, keys...); return s }
	if str("apiVersion") != "events.k8s.io/v1" || str("kind") != "Event" {
		bad = append(bad, "apiVersion/kind: want events.k8s.io/v1 Event")
	}
	if n := str("metadata", "name"); len(n) > 253 || !dnsSubdomain.MatchString(n) {
		bad = append(bad, fmt.Sprintf("metadata.name %q: not a DNS subdomain", n))
	}
	if m := str("metadata", "namespace"); m != "" && m != ns {
		bad = append(bad, "metadata.namespace does not match the request's namespace")
	}
	if _, err := time.Parse(microTime, str("eventTime")); err != nil {
		bad = append(bad, fmt.Sprintf("eventTime %q: %v", str("eventTime"), err))
	}
	if t := str("type"); t != "Normal" && t != "Warning" {
		bad = append(bad, fmt.Sprintf("type %q: has invalid value", t))
	}
	if rc := str("reportingController"); rc == "" || !qualifiedName.MatchString(rc) {
		bad = append(bad, fmt.Sprintf("reportingController %q: required, a qualified name", rc))
	}
	for _, f := range []struct {
		key string
		max int
	}{{"reportingInstance", 128}, {"action", 128}, {"reason", 128}} {
		if v := str(f.key); v == "" || len(v) > f.max {
			bad = append(bad, fmt.Sprintf("%s: required, at most %d characters", f.key, f.max))
		}
	}
	if len(str("note")) > 1024 {
		bad = append(bad, "note: can have at most 1024 characters")
	}
	if str("regarding", "namespace") == "" && ns != "default" && ns != "kube-system" {
		bad = append(bad, "regarding.namespace: does not match event.namespace")
	}
	for _, dep := range []string{"deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"} {
		if _, ok := ev[dep]; ok {
			bad = append(bad, dep+": needs to be unset")
		}
	}
	if series, ok := ev["series"]; ok {
		if n, _ := intOf(path(series, "count")); n < 2 {
			bad = append(bad, "series.count: should be at least 2")
		}
		if _, err := time.Parse(microTime, fmt.Sprint(path(series, "lastObservedTime"))); err != nil {
			bad = append(bad, "series.lastObservedTime: required")
		}
	}
	return bad
}

func (a *fakeAPI) createEvent(w http.ResponseWriter, rec *apiRequest, ns string) {
	if !strings.HasPrefix(rec.ContentType, "application/json") {
		writeStatus(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", "the body of the request was in an unknown format", nil)
		return
	}
	ev, err := decodeObject(rec.Body)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "cannot decode the Event: "+err.Error(), nil)
		return
	}
	name, _ := pathStr(ev, "metadata", "name")
	if bad := validateEventCreate(ev, ns); len(bad) > 0 {
		writeStatus(w, http.StatusUnprocessableEntity, "Invalid",
			fmt.Sprintf("Event.events.k8s.io %q is invalid: %s", name, strings.Join(bad, ", ")), nil)
		return
	}
	a.mu.Lock()
	key := ns + "/" + name
	if _, exists := a.events[key]; exists {
		a.mu.Unlock()
		writeStatus(w, http.StatusConflict, "AlreadyExists", fmt.Sprintf("events.events.k8s.io %q already exists", name), nil)
		return
	}
	a.rv++
	meta := pathObj(ev, "metadata")
	meta["namespace"], meta["uid"], meta["resourceVersion"] = ns, a.newUID(), strconv.FormatInt(a.rv, 10)
	meta["creationTimestamp"] = *kubeTime(time.Now())
	a.events[key] = ev
	body := mustMarshal(ev)
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, json.RawMessage(body))
}

// mergePatch applies an RFC 7386 merge patch to dst.
func mergePatch(dst, patch obj) {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]interface{}:
			d, ok := dst[k].(map[string]interface{})
			if !ok {
				d = obj{}
			}
			mergePatch(d, pv)
			dst[k] = d
		default:
			dst[k] = v
		}
	}
}

func (a *fakeAPI) patchEvent(w http.ResponseWriter, rec *apiRequest, ns, name string) {
	if rec.ContentType != "application/merge-patch+json" {
		writeStatus(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType",
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got %q)", rec.ContentType), nil)
		return
	}
	p, err := decodeObject(rec.Body)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "cannot decode the patch: "+err.Error(), nil)
		return
	}
	code, reason, msg, body := a.applyEventPatch(ns, name, p)
	if code != http.StatusOK {
		var details *kubeStatusDetails
		if code == http.StatusNotFound {
			details = &kubeStatusDetails{Name: name, Kind: "events"}
		}
		writeStatus(w, code, reason, msg, details)
		return
	}
	writeJSON(w, http.StatusOK, json.RawMessage(body))
}

// applyEventPatch patches the stored Event under the lock (the response is
// written after it: the status recorder takes the lock too).
func (a *fakeAPI) applyEventPatch(ns, name string, p obj) (int, string, string, []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ev, ok := a.events[ns+"/"+name]
	if !ok {
		return http.StatusNotFound, "NotFound", fmt.Sprintf("events.events.k8s.io %q not found", name), nil
	}
	for k := range p {
		if k != "series" {
			return http.StatusUnprocessableEntity, "Invalid", fmt.Sprintf("Event.events.k8s.io %q is invalid: %s: field is immutable", name, k), nil
		}
	}
	next := copyObject(ev)
	mergePatch(next, p)
	if bad := validateEventCreate(next, ns); len(bad) > 0 {
		return http.StatusUnprocessableEntity, "Invalid", fmt.Sprintf("Event.events.k8s.io %q is invalid: %s", name, strings.Join(bad, ", ")), nil
	}
	a.rv++
	pathObj(next, "metadata")["resourceVersion"] = strconv.FormatInt(a.rv, 10)
	a.events[ns+"/"+name] = next
	return http.StatusOK, "", "", mustMarshal(next)
}

// storedEvents is a copy of every stored Event, by name.
func (a *fakeAPI) storedEvents() []obj {
	a.mu.Lock()
	defer a.mu.Unlock()
	var keys []string
	for k := range a.events {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]obj, 0, len(keys))
	for _, k := range keys {
		out = append(out, copyObject(a.events[k]))
	}
	return out
}

// deleteEvents forgets every stored Event, as the apiserver's TTL does.
func (a *fakeAPI) deleteEvents() {
	a.mu.Lock()
	a.events = map[string]obj{}
	a.mu.Unlock()
}

// eventsAbout is the stored Events whose regarding object has this kind and name.
func (a *fakeAPI) eventsAbout(kind, name string) []obj {
	var out []obj
	for _, ev := range a.storedEvents() {
		k, _ := pathStr(ev, "regarding", "kind")
		n, _ := pathStr(ev, "regarding", "name")
		if k == kind && n == name {
			out = append(out, ev)
		}
	}
	return out
}

// seriesCount is how many reports an Event counts: its series' count, or 1.
func seriesCount(ev obj) int64 {
	if n, ok := intOf(path(ev, "series", "count")); ok {
		return n
	}
	return 1
}
