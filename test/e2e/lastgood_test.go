package e2e

// The last good profiles (issue 16): with --profiles-configmap the webhook
// keeps the newest valid version in ConfigMap NAME-last-good, which it
// writes itself, and a start that finds the ConfigMap invalid serves that
// copy, is ready, and says it serves an old version to the admin: an error
// line repeated every --stale-log-seconds, rdma_webhook_profiles_stale 1,
// and a Warning Event on the profiles ConfigMap; never to the job's author
// on the admissions or the pods (issue 22, item 7). A valid version clears
// all of it.

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	copyName = profName + "-last-good"
	// staleEventReason: the Event on the profiles ConfigMap while stale.
	staleEventReason = "ServingOldProfiles"
	// savedWithin: how soon a loaded version is in the copy.
	savedWithin = 3 * time.Second
)

// waitCopy waits until the copy holds doc and returns its annotations.
func waitCopy(t testing.TB, a *fakeAPI, doc []byte, what string) (map[string]string, map[string]string, int64) {
	t.Helper()
	var labels, ann map[string]string
	var rv int64
	waitFor(t, savedWithin, what, func() bool {
		var data map[string]string
		data, labels, ann, rv = a.configMap(profNS, copyName)
		return data[profKey] == string(doc)
	})
	return labels, ann, rv
}

func isCopyWrite(r apiRequest) bool {
	return r.Kind == "create-configmap" || r.Kind == "update-configmap"
}

// sourceRV is the profiles ConfigMap's resourceVersion now.
func sourceRV(a *fakeAPI) string {
	_, _, _, rv := a.configMap(profNS, profName)
	return strconv.FormatInt(rv, 10)
}

// noStaleWarning: while stale or not, neither the admission's warnings nor
// the pod's rdma-webhook.io/warnings speak of the profiles: the job's
// author cannot fix them.
func noStaleWarning(t testing.TB, ad admission, what string) {
	t.Helper()
	if w := ad.warningWith("serving old profiles"); w != "" {
		t.Errorf("%s: a stale warning for the job's author: %q", what, w)
	}
	if ad.patched != nil {
		for _, w := range podWarnings(t, ad.patched) {
			if strings.Contains(w, "serving old profiles") {
				t.Errorf("%s: the pod's rdma-webhook.io/warnings has a stale warning: %q", what, w)
			}
		}
	}
}

// waitStaleEvent waits for the Warning Event on the profiles ConfigMap
// (regarding v1 ConfigMap profNS/profName) and returns it.
func waitStaleEvent(t testing.TB, a *fakeAPI) obj {
	t.Helper()
	var ev obj
	waitFor(t, eventWithin, "an Event "+staleEventReason+" on ConfigMap "+profName, func() bool {
		for _, e := range a.eventsAbout("ConfigMap", profName) {
			if r, _ := pathStr(e, "reason"); r == staleEventReason {
				ev = e
				return true
			}
		}
		return false
	})
	for key, want := range map[string]string{"type": "Warning", "regarding.apiVersion": "v1",
		"regarding.namespace": profNS, "metadata.namespace": profNS,
		"reportingController": "rdma-webhook.io/webhook"} {
		if got, _ := pathStr(ev, strings.Split(key, ".")...); got != want {
			t.Errorf("stale Event %s: %q, expected %q", key, got, want)
		}
	}
	if note, _ := pathStr(ev, "note"); !strings.HasPrefix(note, "serving old profiles") {
		t.Errorf("stale Event note %q: expected it to start \"serving old profiles\"", note)
	}
	return ev
}

// podWarnings is the pod's rdma-webhook.io/warnings annotation, decoded.
func podWarnings(t testing.TB, pod obj) []string {
	t.Helper()
	s, _ := pathStr(pod, "metadata", "annotations", "rdma-webhook.io/warnings")
	var out []string
	if s != "" {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatalf("rdma-webhook.io/warnings is not a JSON array of strings: %q", s)
		}
	}
	return out
}

// TestLastGoodSavedAndStaleWhileRunning: a valid version loaded is saved in
// the copy (created, then updated with the copy's resourceVersion, with the
// source and its resourceVersion in annotations and without the label that
// sends ConfigMaps to /validate-profiles); an invalid edit while running
// leaves the copy alone and makes the webhook stale (metric, an Event on the
// ConfigMap, no warning on the admissions or pods); putting back the version
// serving clears it.
func TestLastGoodSavedAndStaleWhileRunning(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	labels, ann, rv1 := waitCopy(t, a, shippedProfiles(t), "the copy of the first version")
	if ann["rdma-webhook.io/last-good-source"] != profNS+"/"+profName {
		t.Errorf("copy: source annotation %q, expected %s/%s", ann["rdma-webhook.io/last-good-source"], profNS, profName)
	}
	if got, want := ann["rdma-webhook.io/last-good-source-resource-version"], sourceRV(a); got != want {
		t.Errorf("copy: source resourceVersion %q, expected %q", got, want)
	}
	at, err := time.Parse(time.RFC3339, ann["rdma-webhook.io/last-good-loaded-at"])
	if err != nil || time.Since(at) > time.Minute || time.Until(at) > time.Second {
		t.Errorf("copy: loaded-at %q is not the time of the load (%v)", ann["rdma-webhook.io/last-good-loaded-at"], err)
	}
	if _, ok := labels["rdma-webhook.io/profiles"]; ok {
		t.Errorf("copy carries the label rdma-webhook.io/profiles (%v): /validate-profiles would be sent its writes", labels)
	}
	if a.count(0, isKind("create-configmap")) != 1 {
		t.Errorf("expected one create of the copy:\n%s", a.logSince(0))
	}
	waitFor(t, savedWithin, "written=1", func() bool {
		return in.metric(t, `rdma_webhook_profiles_last_good_writes_total{result="written"}`) == "1"
	})
	if got := in.metric(t, "rdma_webhook_profiles_stale"); got != "0" {
		t.Errorf("rdma_webhook_profiles_stale with the current version serving: %q, expected 0", got)
	}
	noStaleWarning(t, in.admit(t, trainingPod(8)), "the current version serving")
	if evs := a.eventsAbout("ConfigMap", profName); len(evs) != 0 {
		t.Errorf("Events on the ConfigMap with the current version serving: %v", evs)
	}

	// A valid edit: an update carrying the copy's resourceVersion.
	doc, want := profilesWithHCA(t, "mlx5_61")
	mark := a.requestMark()
	in.editProfiles(t, a, doc, want, "a valid edit")
	waitCopy(t, a, doc, "the copy of the edit")
	put, _ := a.waitRequest(t, mark, savedWithin, "update of the copy", isKind("update-configmap"))
	var body kubeConfigMap
	if err := json.Unmarshal(put.Body, &body); err != nil || body.Metadata.ResourceVersion != strconv.FormatInt(rv1, 10) {
		t.Errorf("update of the copy: expected metadata.resourceVersion %d, got %q (%v)", rv1, body.Metadata.ResourceVersion, err)
	}

	// An invalid edit: stale, the copy untouched.
	mark = a.requestMark()
	logMark := in.logMark()
	rv := a.putConfigMap(profNS, profName, profilesData(profilesBadTimeout(t)))
	a.waitDelivered(t, rv, 3*time.Second)
	in.waitLog(t, logMark, pickUpWithin, `"profiles rejected"`, msgStarts("profiles rejected"))
	waitFor(t, pickUpWithin, "rdma_webhook_profiles_stale 1", func() bool {
		return in.metric(t, "rdma_webhook_profiles_stale") == "1"
	})
	waitStaleEvent(t, a)
	for i := 0; i < 2; i++ {
		ad := in.admit(t, trainingPod(8))
		noStaleWarning(t, ad, "admission "+strconv.Itoa(i)+" while stale")
		if got := ad.envValues("NCCL_IB_HCA"); len(got) != 1 || got[0] != want {
			t.Errorf("admission while stale: NCCL_IB_HCA %v, expected the last good %q", got, want)
		}
	}
	data, _, _, _ := a.configMap(profNS, copyName)
	if data[profKey] != string(doc) {
		t.Errorf("the copy changed after an invalid edit")
	}
	if n := a.count(mark, isCopyWrite); n != 0 {
		t.Errorf("writes of the copy after an invalid edit:\n%s", a.logSince(mark))
	}
	// Not a target: neither warned nor changed.
	plain := obj{"apiVersion": "v1", "kind": "Pod", "metadata": obj{"name": "web"},
		"spec": obj{"containers": []interface{}{obj{"name": "c", "image": "nginx"}}}}
	ad := in.admit(t, plain)
	if len(ad.rr.warnings) != 0 || ad.rr.patch != nil {
		t.Errorf("a pod that is not a target while stale: expected no warning and no patch, got %q and %s",
			ad.rr.warnings, ad.rr.patch)
	}

	// The version serving, applied again: no longer stale.
	rv = a.putConfigMap(profNS, profName, profilesData(doc))
	a.waitDelivered(t, rv, 3*time.Second)
	waitFor(t, pickUpWithin, "rdma_webhook_profiles_stale 0", func() bool {
		return in.metric(t, "rdma_webhook_profiles_stale") == "0"
	})
	noStaleWarning(t, in.admit(t, trainingPod(8)), "after the version was fixed")
}

// startWithCopy has a first webhook save doc, then stops it and puts
// current in the ConfigMap, as the restart: the copy is the last
// good version, the ConfigMap's is invalid.
func startWithCopy(t *testing.T, a *fakeAPI, doc []byte, current map[string]string, extra ...string) *instance {
	t.Helper()
	first := readyConfigMapInstance(t, a, doc)
	waitCopy(t, a, doc, "the first webhook's copy")
	first.finish(t)
	a.putConfigMap(profNS, profName, current)
	return startConfigMapInstance(t, a, extra...)
}

// TestLastGoodRestartWithInvalidVersion: a start with an invalid ConfigMap
// (invalid profiles, or the key missing) serves the copy: ready, the old
// values, no warning on the admissions, the metrics, an error line repeated
// every --stale-log-seconds and the Event on the ConfigMap counting with it;
// a valid version clears it and is saved.
func TestLastGoodRestartWithInvalidVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data func(t *testing.T) map[string]string
	}{
		{"invalid profiles", func(t *testing.T) map[string]string { return profilesData(profilesBadTimeout(t)) }},
		{"key missing", func(t *testing.T) map[string]string {
			return map[string]string{"profile.json": string(shippedProfiles(t))}
		}},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			a := startFakeAPI(t)
			doc, old := profilesWithHCA(t, "mlx5_71")
			in := startWithCopy(t, a, doc, c.data(t), "--stale-log-seconds", "1")
			_, ann, _ := waitCopy(t, a, doc, "the copy")
			waitStatus(t, readyAfterUp, "/readyz serving the copy", http.StatusOK, func() int { return in.readyz(t, false) })
			_, served := in.waitLog(t, 0, pickUpWithin, `"serving the last good profiles"`, msgStarts("serving the last good profiles"))
			// Before it, the refusal of the source's version is a warning
			// that the copy is tried next: no line claims that /mutate
			// answers 503, which the copy then makes untrue.
			rejected, refusedAt := in.waitLog(t, 0, 0, `"profiles rejected"`, msgStarts("profiles rejected"))
			if m, _ := pathStr(rejected, "msg"); refusedAt > served || rejected["level"] != "warn" ||
				m != "profiles rejected; none loaded yet: trying the last good copy" {
				t.Errorf("the refusal (line %d) before serving the copy (line %d): expected level warn and msg %q, got %v",
					refusedAt, served, "profiles rejected; none loaded yet: trying the last good copy", rejected)
			}
			if lines := in.linesSince(0, func(o obj) bool {
				m, _ := pathStr(o, "msg")
				return strings.Contains(m, "503")
			}); len(lines) != 0 {
				t.Errorf("serving the copy, yet the log says 503: %v", lines)
			}
			for i := 0; i < 3; i++ {
				ad := in.admit(t, trainingPod(8))
				noStaleWarning(t, ad, "admission "+strconv.Itoa(i)+" serving the copy")
				if got := ad.envValues("NCCL_IB_HCA"); len(got) != 1 || got[0] != old {
					t.Errorf("admission serving the copy: NCCL_IB_HCA %v, expected %q", got, old)
				}
			}
			if got := in.metric(t, "rdma_webhook_profiles_stale"); got != "1" {
				t.Errorf("rdma_webhook_profiles_stale serving the copy: %q, expected 1", got)
			}
			at, _ := time.Parse(time.RFC3339, ann["rdma-webhook.io/last-good-loaded-at"])
			if got := in.metric(t, "rdma_webhook_profiles_loaded_timestamp_seconds"); got != strconv.FormatInt(at.Unix(), 10) {
				t.Errorf("rdma_webhook_profiles_loaded_timestamp_seconds %q, expected the copy's loaded-at %d", got, at.Unix())
			}
			// The error line, repeated: once a second here, not per request.
			first, i := in.waitLog(t, 0, 3*time.Second, `"serving old profiles" (1)`, msgStarts("serving old profiles"))
			second, _ := in.waitLog(t, i+1, 3*time.Second, `"serving old profiles" (2)`, msgStarts("serving old profiles"))
			if first["level"] != "error" || second["level"] != "error" {
				t.Errorf("stale lines: expected level error, got %v and %v", first["level"], second["level"])
			}
			if n := len(in.linesSince(0, msgStarts("serving old profiles"))); n > 6 {
				t.Errorf("%d stale lines in a few seconds at --stale-log-seconds 1", n)
			}
			// One Event on the ConfigMap, its series counting as the line repeats.
			ev := waitStaleEvent(t, a)
			waitFor(t, seriesWithin, "the stale Event's series past 1", func() bool {
				evs := a.eventsAbout("ConfigMap", profName)
				return len(evs) == 1 && seriesCount(evs[0]) >= 2
			})
			if n, _ := pathStr(ev, "regarding", "name"); n != profName {
				t.Errorf("stale Event about %q, expected %q", n, profName)
			}

			fixed, want := profilesWithHCA(t, "mlx5_72")
			in.editProfiles(t, a, fixed, want, "a valid version after the restart")
			waitFor(t, pickUpWithin, "rdma_webhook_profiles_stale 0", func() bool {
				return in.metric(t, "rdma_webhook_profiles_stale") == "0"
			})
			noStaleWarning(t, in.admit(t, trainingPod(8)), "after a valid version")
			waitCopy(t, a, fixed, "the copy of the fixed version")
			mark := in.logMark()
			time.Sleep(1500 * time.Millisecond) // two --stale-log-seconds: a line would have come
			if n := len(in.linesSince(mark, msgStarts("serving old profiles"))); n != 0 {
				t.Errorf("%d stale lines after a valid version", n)
			}
		})
	}
}

// TestLastGoodNoValidCopy: a copy that is not valid either (edited by hand)
// or missing leaves the webhook as without it: not ready, with a log line
// that says why.
func TestLastGoodNoValidCopy(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putConfigMap(profNS, copyName, profilesData(profilesBadTimeout(t)))
	a.putConfigMap(profNS, profName, profilesData(profilesBadTimeout(t)))
	in := startConfigMapInstance(t, a)
	line, _ := in.waitLog(t, 0, pickUpWithin, `"the last good profiles are not valid either"`, msgStarts("the last good profiles are not valid either"))
	requireSays503(t, line)
	if st := in.readyz(t, false); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz with an invalid copy: expected 503, got %d", st)
	}

	b := startFakeAPI(t)
	b.putConfigMap(profNS, profName, profilesData(profilesBadTimeout(t)))
	in2 := startConfigMapInstance(t, b)
	line, _ = in2.waitLog(t, 0, pickUpWithin, `"no last good profiles to fall back to"`, msgStarts("no last good profiles to fall back to"))
	requireSays503(t, line)
	if st := in2.readyz(t, false); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz without a copy: expected 503, got %d", st)
	}
}

// requireSays503: with no copy to serve, the fallback's line is the error
// that the source's refusal (a warning, the copy being tried next) did not
// claim yet.
func requireSays503(t *testing.T, line obj) {
	t.Helper()
	if m, _ := pathStr(line, "msg"); line["level"] != "error" || !strings.HasSuffix(m, "; /mutate answers 503 until a valid version loads") {
		t.Errorf("the fallback's failure: expected level error and a msg saying /mutate answers 503, got %v", line)
	}
}

// TestLastGoodWriteRaces: replicas write the same copy; losing the race (a
// 409 on the create, AlreadyExists, or on the update, Conflict) reads the
// copy again, finds the version there and writes nothing more.
func TestLastGoodWriteRaces(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.raceNextWrites(1)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	waitFor(t, savedWithin, "unchanged=1 after a lost create", func() bool {
		return in.metric(t, `rdma_webhook_profiles_last_good_writes_total{result="unchanged"}`) == "1"
	})
	if reqs := a.count(0, isKind("create-configmap")); reqs != 1 {
		t.Errorf("creates of the copy: %d, expected 1 (the lost one)", reqs)
	}
	doc, want := profilesWithHCA(t, "mlx5_81")
	a.raceNextWrites(1)
	mark := a.requestMark()
	in.editProfiles(t, a, doc, want, "an edit")
	waitFor(t, savedWithin, "unchanged=2 after a lost update", func() bool {
		return in.metric(t, `rdma_webhook_profiles_last_good_writes_total{result="unchanged"}`) == "2"
	})
	if got := a.count(mark, isKind("update-configmap")); got != 1 {
		t.Errorf("updates of the copy after the edit: %d, expected 1 (the lost one):\n%s", got, a.logSince(mark))
	}
	for _, r := range []string{"written", "failed"} {
		if got := in.metric(t, `rdma_webhook_profiles_last_good_writes_total{result="`+r+`"}`); got != "0" {
			t.Errorf("%s: %q, expected 0", r, got)
		}
	}
	waitCopy(t, a, doc, "the copy the other replica wrote")
}

// TestLastGoodWriteFails: a copy that cannot be written changes nothing for
// admission or readiness; it is logged, counted, and tried again until it
// works.
func TestLastGoodWriteFails(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.setWriteFailure(http.StatusForbidden)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	in.waitLog(t, 0, savedWithin, `"cannot save the last good profiles"`, msgStarts("cannot save the last good profiles"))
	if got := in.metricInt(t, `rdma_webhook_profiles_last_good_writes_total{result="failed"}`); got < 1 {
		t.Errorf("failed writes: %d, expected at least 1", got)
	}
	in.requireHCA(t, shippedHCA(t), "with the copy failing")
	noStaleWarning(t, in.admit(t, trainingPod(8)), "with the copy failing")
	if got := in.metric(t, "rdma_webhook_profiles_stale"); got != "0" {
		t.Errorf("a failed copy made the webhook stale: rdma_webhook_profiles_stale %q", got)
	}
	if st := in.readyz(t, false); st != http.StatusOK {
		t.Errorf("/readyz with the copy failing: %d", st)
	}
	a.setWriteFailure(0)
	waitCopy(t, a, shippedProfiles(t), "the copy once writes work again (backoff 1 s, 2 s, ...)")
}

// TestLastGoodOff: --profiles-last-good "" keeps no copy: nothing is
// written, and a start with an invalid version is not ready, as before.
func TestLastGoodOff(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t), "--profiles-last-good", "")
	in.requireHCA(t, shippedHCA(t), "without a copy")
	time.Sleep(500 * time.Millisecond)
	if n := a.count(0, isCopyWrite); n != 0 {
		t.Errorf("writes of a copy without one:\n%s", a.logSince(0))
	}
	if n := a.count(0, isKind("get-configmap")); n != 0 {
		t.Errorf("reads of a copy without one:\n%s", a.logSince(0))
	}
}

// TestLastGoodFlags: --profiles-last-good is for --profiles-configmap only,
// and takes a ConfigMap name.
func TestLastGoodFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--profiles", profilesPath, "--profiles-last-good", "x"},
		{"--profiles-configmap", "ns/name", "--kube-api", "https://127.0.0.1:1", "--kube-ca", "/x", "--kube-token-file", "/x",
			"--profiles-last-good", "Not_A_Name"},
		{"--profiles", profilesPath, "--stale-log-seconds", "0"},
	} {
		res, exited := runBinaryWithin(t, nil, 5*time.Second, append([]string{"serve"}, args...)...)
		if !exited || res.exitCode != 2 || !strings.Contains(string(res.stderr), args[len(args)-2]) {
			t.Errorf("serve %v: expected exit 2 with a message naming %s, got %d (exited %v): %s",
				args, args[len(args)-2], res.exitCode, exited, res.stderr)
		}
	}
}
