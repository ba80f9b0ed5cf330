package e2e

// The webhook's Kubernetes API client against the fake apiserver
// (fakeapi_test.go; docs/operations.md "The Kubernetes API"): profiles from a ConfigMap by list + watch,
// Node labels for pods with spec.nodeName, of ConfigMap
// keys (envFrom), the token file, and the lookup budget. Every test runs
// its own webhook and its own fake.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestKubeAPIProfilesDownAtStart: with the API unreachable the webhook is
// alive but not ready (/readyz 503 on both ports, /mutate 503) and says so
// in its log; once the API answers it is ready within a few seconds and
// mutates with the ConfigMap's profiles.
func TestKubeAPIProfilesDownAtStart(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	doc, want := profilesWithHCA(t, "mlx5_11", "mlx5_12")
	a.putConfigMap(profNS, profName, profilesData(doc))
	a.stop()

	in := startConfigMapInstance(t, a)
	for _, plain := range []bool{false, true} {
		if st := in.readyz(t, plain); st != http.StatusServiceUnavailable {
			t.Errorf("/readyz (plain port %v) with the API down: expected 503, got %d", plain, st)
		}
	}
	rep := in.do(t, http.MethodPost, in.url("/mutate"), mustMarshal(gpu8Review(t).body()))
	if rep.status != http.StatusServiceUnavailable {
		t.Errorf("POST /mutate with no profiles yet: expected 503, got %d %q", rep.status, cut(rep.body))
	}
	in.waitLog(t, 0, 3*time.Second, "at level warn or error while the API is unreachable", levelIs("warn", "error"))
	time.Sleep(time.Second) // a few retries
	if st := in.readyz(t, false); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz still with the API down: expected 503, got %d", st)
	}

	a.start(t)
	for _, plain := range []bool{false, true} {
		plain := plain
		took := waitStatus(t, readyAfterUp, fmt.Sprintf("/readyz (plain port %v) after the API came up", plain),
			http.StatusOK, func() int { return in.readyz(t, plain) })
		t.Logf("/readyz (plain %v) 200 %v after the API came up", plain, took.Round(time.Millisecond))
	}
	in.requireHCA(t, want, "after the API came up (the ConfigMap's hca list)")
	in.waitLog(t, 0, pickUpWithin, `"profiles loaded" generation 1 from the ConfigMap`,
		msgIs("profiles loaded", "generation", "1", "source", profSource))
	if got := in.metric(t, "rdma_webhook_profiles_generation"); got != "1" {
		t.Errorf("rdma_webhook_profiles_generation: expected 1, got %q", got)
	}
	if n := a.count(0, isKind("list")); n < 1 {
		t.Errorf("expected a list of the ConfigMap, got none:\n%s", a.logSince(0))
	}
}

// TestKubeAPIProfilesEdited: each edit of the ConfigMap is used by the next
// admission within 1 s of its watch event, and logged as a new generation
// from the ConfigMap.
func TestKubeAPIProfilesEdited(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	in.requireHCA(t, shippedHCA(t), "at start")
	for i, hca := range [][]string{{"mlx5_21"}, {"mlx5_22", "mlx5_23"}, {"mlx5_24", "mlx5_25", "mlx5_26"}} {
		gen := i + 2
		doc, want := profilesWithHCA(t, hca...)
		mark := in.logMark()
		in.editProfiles(t, a, doc, want, fmt.Sprintf("edit %d", i+1))
		in.waitLog(t, mark, pickUpWithin, fmt.Sprintf(`"profiles loaded" generation %d`, gen),
			msgIs("profiles loaded", "generation", strconv.Itoa(gen), "source", profSource))
	}
	if got := in.metric(t, "rdma_webhook_profiles_generation"); got != "4" {
		t.Errorf("rdma_webhook_profiles_generation after 3 edits: expected 4, got %q", got)
	}
	if n := a.count(0, isKind("list")); n != 1 {
		t.Errorf("edits arrive by the watch: expected 1 list, got %d:\n%s", n, a.logSince(0))
	}
}

// TestKubeAPIProfilesRejected: invalid JSON, a document that fails
// validation, and a ConfigMap without the key are each rejected with an
// error line and a problem line, while the previous version keeps serving
// and the webhook stays ready; a valid version then is picked up.
func TestKubeAPIProfilesRejected(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	old := shippedHCA(t)
	in.requireHCA(t, old, "at start")

	cases := []struct {
		name    string
		data    map[string]string
		problem string // what a "profiles problem" line must name
	}{
		{"invalid JSON", profilesData([]byte(`{"profiles": [{"name": "roce-8card", `)), ""},
		{"NCCL_IB_TIMEOUT 40", profilesData(profilesBadTimeout(t)), "NCCL_IB_TIMEOUT"},
		{"key missing", map[string]string{"profile.json": string(shippedProfiles(t))}, profKey},
	}
	rejected := 0
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			mark := in.logMark()
			rv := a.putConfigMap(profNS, profName, c.data)
			a.waitDelivered(t, rv, 3*time.Second)
			line, _ := in.waitLog(t, mark, pickUpWithin, `"profiles rejected"`, msgStarts("profiles rejected"))
			if line["level"] != "error" {
				t.Errorf("rejection line: expected level error, got %v (%s)", line["level"], compact(line))
			}
			if src, _ := pathStr(line, "source"); src != profSource {
				t.Errorf("rejection line: expected source %q, got %q", profSource, src)
			}
			problem := msgIs("profiles problem")
			if c.problem != "" {
				// A "profiles problem" line naming it, or the rejection line
				// itself naming it in "problem" or "key".
				problem = func(o obj) bool {
					if problemContains(c.problem)(o) {
						return true
					}
					p, _ := pathStr(o, "problem")
					k, _ := pathStr(o, "key")
					return msgStarts("profiles rejected")(o) && (strings.Contains(p, c.problem) || k == c.problem)
				}
			}
			in.waitLog(t, mark, pickUpWithin, `"profiles problem" naming `+c.problem, problem)
			if got := in.metric(t, `rdma_webhook_profile_reloads_total{result="rejected"}`); got != strconv.Itoa(rejected+1) {
				t.Errorf(`rdma_webhook_profile_reloads_total{result="rejected"}: expected %d, got %q`, rejected+1, got)
			}
			rejected++
			in.holdHCA(t, old, 700*time.Millisecond, c.name+" in the ConfigMap")
			if st := in.readyz(t, false); st != http.StatusOK {
				t.Errorf("/readyz with a rejected version: expected 200 (the old one serves), got %d", st)
			}
		})
	}
	if got := in.metric(t, "rdma_webhook_profiles_generation"); got != "1" {
		t.Errorf("rdma_webhook_profiles_generation after rejected versions: expected 1, got %q", got)
	}
	doc, want := profilesWithHCA(t, "mlx5_31")
	mark := in.logMark()
	in.editProfiles(t, a, doc, want, "a valid version after rejected ones")
	in.waitLog(t, mark, pickUpWithin, `"profiles loaded" generation 2`,
		msgIs("profiles loaded", "generation", "2", "source", profSource))
}

// TestKubeAPIProfilesDeleted: a deleted ConfigMap is logged as an error and
// the previous version keeps serving (ready); the re-created ConfigMap (a
// new object: new uid) is picked up.
func TestKubeAPIProfilesDeleted(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	old := shippedHCA(t)
	mark := in.logMark()
	rv := a.deleteConfigMap(profNS, profName)
	a.waitDelivered(t, rv, 3*time.Second)
	line, _ := in.waitLog(t, mark, pickUpWithin, `"profiles ConfigMap deleted; the previous version keeps serving"`,
		msgIs("profiles ConfigMap deleted; the previous version keeps serving"))
	if line["level"] != "error" {
		t.Errorf("deletion line: expected level error, got %v (%s)", line["level"], compact(line))
	}
	in.holdHCA(t, old, time.Second, "ConfigMap deleted")
	for _, plain := range []bool{false, true} {
		if st := in.readyz(t, plain); st != http.StatusOK {
			t.Errorf("/readyz (plain port %v) with the ConfigMap deleted: expected 200, got %d", plain, st)
		}
	}
	doc, want := profilesWithHCA(t, "mlx5_32", "mlx5_33")
	mark = in.logMark()
	in.editProfiles(t, a, doc, want, "re-created ConfigMap")
	in.waitLog(t, mark, pickUpWithin, `"profiles loaded" generation 2`,
		msgIs("profiles loaded", "generation", "2", "source", profSource))
}

// TestKubeAPIWatchExpired: the watch's resourceVersion is compacted away
// while a new version is written. The reconnecting watch is answered 410
// Gone, as an HTTP status or as a 200 stream whose first event is an ERROR
// with the 410 Status; either way the webhook lists again, serves the new
// version, and watches on from the new list's resourceVersion.
func TestKubeAPIWatchExpired(t *testing.T) {
	t.Parallel()
	for _, asEvent := range []bool{false, true} {
		asEvent := asEvent
		name := map[bool]string{false: "HTTP 410", true: "ERROR event"}[asEvent]
		t.Run(name, func(t *testing.T) {
			a := startFakeAPI(t)
			a.setExpiredAsEvent(asEvent)
			in := readyConfigMapInstance(t, a, shippedProfiles(t))
			// The webhook's first write of its last-good copy moves the
			// resourceVersion too; on a loaded machine it can land after
			// the edit below and make the list's version another.
			waitCopy(t, a, shippedProfiles(t), "the last-good copy written at start")
			a.waitRequest(t, 0, 3*time.Second, "a watch", isKind("watch"))
			waitFor(t, 3*time.Second, "the webhook's watch to be open", func() bool { return a.openWatches() == 1 })

			doc, want := profilesWithHCA(t, "mlx5_34")
			mark := a.requestMark()
			var editRV int64
			expired := time.Now()
			a.expire(func(l *fakeAPI) { editRV = l.putLocked(profNS, profName, profilesData(doc), nil, nil) })

			_, i := a.waitRequest(t, mark, 3*time.Second, "a watch answered 410", func(r apiRequest) bool {
				return r.Kind == "watch" && r.Expired
			})
			_, j := a.waitRequest(t, i+1, 3*time.Second, "a list after the 410", isKind("list"))
			took := in.waitHCAAfter(t, want, expired, 3*time.Second, "after the relist")
			t.Logf("%s: new version served %v after the watch ended", name, took.Round(time.Millisecond))
			a.waitRequest(t, j+1, 3*time.Second, fmt.Sprintf("a watch from the list's resourceVersion %d", editRV),
				func(r apiRequest) bool {
					return r.Kind == "watch" && r.Query.Get("resourceVersion") == strconv.FormatInt(editRV, 10)
				})
			if n := a.count(mark, func(r apiRequest) bool { return r.Expired }); n != 1 {
				t.Errorf("expected exactly one expired watch (then a list), got %d:\n%s", n, a.logSince(mark))
			}
			// Watching again: edits arrive as events.
			doc, want = profilesWithHCA(t, "mlx5_35")
			in.editProfiles(t, a, doc, want, "an edit after the relist")
		})
	}
}

// TestKubeAPIWatchErrorEvent: an ERROR event that is not 410 (a 500
// Status: etcd timed out) ends the stream; the webhook watches again from
// the resourceVersion it had (no relist needed), keeps serving, and later
// edits arrive.
func TestKubeAPIWatchErrorEvent(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	waitFor(t, 3*time.Second, "the webhook's watch to be open", func() bool { return a.openWatches() == 1 })
	// The profiles ConfigMap's last event: the webhook's own writes (the
	// last good copy) move the apiserver's resourceVersion past it, but its
	// watch, selecting the profiles ConfigMap by name, never sees them.
	_, _, _, had := a.configMap(profNS, profName)
	mark := a.requestMark()
	a.watchError(500)
	r, _ := a.waitRequest(t, mark, 3*time.Second, "a watch after the ERROR event", isKind("watch"))
	if got := r.Query.Get("resourceVersion"); got != strconv.FormatInt(had, 10) {
		t.Errorf("watch after a 500 ERROR event: expected resourceVersion %d, got %q", had, got)
	}
	in.requireHCA(t, shippedHCA(t), "after the ERROR event")
	doc, want := profilesWithHCA(t, "mlx5_52")
	in.editProfiles(t, a, doc, want, "an edit after the ERROR event")
}

// TestKubeAPIShutdownWhileAPIHangs: SIGTERM while the profiles list hangs
// (the API takes 20 s to answer): serve still exits 0 within 3 s (it is
// killed after 5 s, to keep the suite short).
func TestKubeAPIShutdownWhileAPIHangs(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putConfigMap(profNS, profName, profilesData(shippedProfiles(t)))
	a.setDelay("/api/v1/namespaces/"+profNS+"/configmaps", 20*time.Second)
	in := startConfigMapInstance(t, a)
	waitFor(t, 3*time.Second, "the webhook's list to arrive", func() bool { return a.count(0, isKind("list")) == 1 })
	time.Sleep(200 * time.Millisecond)
	took, err := func() (time.Duration, error) {
		in.signal(syscall.SIGTERM)
		return in.waitExit(5 * time.Second)
	}()
	if err != nil {
		t.Fatalf("SIGTERM during a hanging list: %v%s", err, in.state())
	}
	if in.waitErr != nil {
		t.Errorf("SIGTERM during a hanging list: exit %v, expected 0%s", in.waitErr, in.state())
	}
	if took > 3*time.Second {
		t.Errorf("SIGTERM during a hanging list: serve took %v to exit, expected under 3 s", took.Round(time.Millisecond))
	} else {
		t.Logf("exited %v after SIGTERM", took.Round(time.Millisecond))
	}
}

// TestKubeAPIWatchCutMidEvent: the stream breaks after half of a MODIFIED
// event (HTTP/1.1: connection closed without the terminating chunk; h2:
// the stream reset). The webhook must not take the half line for anything,
// must reconnect from the last complete resourceVersion and so receive the
// event again, and go on with later edits.
func TestKubeAPIWatchCutMidEvent(t *testing.T) {
	t.Parallel()
	for _, h2 := range []bool{false, true} {
		h2 := h2
		t.Run(map[bool]string{false: "HTTP/1.1", true: "h2"}[h2], func(t *testing.T) {
			var opts []func(*fakeAPI)
			if h2 {
				opts = append(opts, withHTTP2)
			}
			a := startFakeAPI(t, opts...)
			in := readyConfigMapInstance(t, a, shippedProfiles(t))
			waitFor(t, 3*time.Second, "the webhook's watch to be open", func() bool { return a.openWatches() == 1 })
			_, _, _, had := a.configMap(profNS, profName) // not the copy's writes (see above)
			mark, logMark := a.requestMark(), in.logMark()

			a.cutNextEvent()
			doc, want := profilesWithHCA(t, "mlx5_36")
			cutAt := time.Now()
			rv := a.putConfigMap(profNS, profName, profilesData(doc))
			r, _ := a.waitRequest(t, mark, 3*time.Second, "a new list or watch after the cut", func(r apiRequest) bool {
				return r.Kind == "watch" || r.Kind == "list"
			})
			if r.Kind == "watch" {
				if got := r.Query.Get("resourceVersion"); got != strconv.FormatInt(had, 10) {
					t.Errorf("watch after the cut: expected resourceVersion %d (the last complete event), got %q", had, got)
				}
			}
			took := in.waitHCAAfter(t, want, cutAt, 3*time.Second, "the cut event, after the reconnect")
			t.Logf("cut event served %v after the edit (reconnect: %s)", took.Round(time.Millisecond), r)
			if got := in.linesSince(logMark, msgStarts("profiles rejected")); len(got) > 0 {
				t.Errorf("the half event was published: %s", compact(got[0]))
			}
			a.waitDelivered(t, rv, time.Second) // whole, on the new watch
			doc, want = profilesWithHCA(t, "mlx5_37")
			in.editProfiles(t, a, doc, want, "an edit after the reconnect")
		})
	}
}

// TestKubeAPIWatchSplitChunks: every watch write is split into 5 chunks
// 30 ms apart, so events arrive in pieces and chunk boundaries fall inside
// lines; two events also come in one write, the boundary between them
// inside a chunk. Each is parsed whole: no rejection, no error line, the
// last version serves.
func TestKubeAPIWatchSplitChunks(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.setSplit(5, 30*time.Millisecond)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	mark := in.logMark()
	doc, want := profilesWithHCA(t, "mlx5_38", "mlx5_39")
	in.editProfiles(t, a, doc, want, "an event in 5 chunks")

	doc1, _ := profilesWithHCA(t, "mlx5_40")
	doc2, want2 := profilesWithHCA(t, "mlx5_41", "mlx5_42")
	rv := a.putConfigMaps(profNS, profName, profilesData(doc1), profilesData(doc2))
	sent := a.waitDelivered(t, rv, 3*time.Second)
	took := in.waitHCAAfter(t, want2, sent, afterEvent, "two events in one split write")
	t.Logf("two events in one write: the second served %v after it was sent", took.Round(time.Millisecond))
	if bad := in.linesSince(mark, levelIs("error")); len(bad) > 0 {
		t.Errorf("error lines while reading split events, first: %s", compact(bad[0]))
	}
}

// TestKubeAPITokenRotation: the token file is replaced (with a trailing
// newline, as `echo` writes it); the fake accepts only the new token. The
// next watch (the current one ends) and a Node lookup use it; nothing
// arriving after the rotation carries the old one; no token ever appears in
// the log.
func TestKubeAPITokenRotation(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNode("node-rot", map[string]string{"nvidia.com/gpu.count": "4"})
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	a.waitRequest(t, 0, 3*time.Second, "a watch with the first token", func(r apiRequest) bool {
		return r.Kind == "watch" && r.Token == "fake-token-1" && r.Status == 200
	})
	waitFor(t, 3*time.Second, "the webhook's watch to be open", func() bool { return a.openWatches() == 1 })

	const next = "fake-token-rotated-2"
	rotated := time.Now()
	a.setToken(t, next+"\n")
	mark := a.requestMark()
	a.endWatches()
	a.waitRequest(t, mark, 3*time.Second, "a watch with the new token", func(r apiRequest) bool {
		return r.Kind == "watch" && r.Token == next && r.Status == 200
	})
	ad := in.admit(t, nodePod(8, "node-rot"))
	if ad.rr.auditProf != "roce-4card" {
		t.Errorf("pod on node-rot (gpu.count=4) after the rotation: expected roce-4card, got %q (warnings %q)",
			ad.rr.auditProf, ad.rr.warnings)
	}
	a.waitRequest(t, mark, time.Second, "a Node GET with the new token", func(r apiRequest) bool {
		return r.Kind == "get-node" && r.Token == next && r.Status == 200
	})
	doc, want := profilesWithHCA(t, "mlx5_43")
	in.editProfiles(t, a, doc, want, "an edit after the rotation")
	for _, r := range a.requests()[mark:] {
		if r.At.After(rotated.Add(100*time.Millisecond)) && r.Token != next {
			t.Errorf("request after the rotation with token %q (status %d): %s", r.Token, r.Status, r)
		}
	}
	for _, line := range in.logText() {
		if strings.Contains(line, "fake-token") {
			t.Errorf("a token is in the log: %s", line)
		}
	}
}

// TestKubeAPIBookmarks: a BOOKMARK (the resourceVersion moved on through
// other objects) is not a new version; when the watch ends (as at its
// timeoutSeconds) the next watch resumes from the bookmark's
// resourceVersion, so a compaction below it costs no 410 and no relist;
// edits keep arriving. The watch carries --watch-timeout-seconds.
func TestKubeAPIBookmarks(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t), "--watch-timeout-seconds", "10")
	waitFor(t, 3*time.Second, "the webhook's watch to be open", func() bool { return a.openWatches() == 1 })
	// The webhook's first write of its last-good copy moves the
	// resourceVersion: landing after the bookmark (a loaded machine), it
	// made the compaction below cut the bookmark's version off.
	waitCopy(t, a, shippedProfiles(t), "the last-good copy written at start")
	mark, logMark := a.requestMark(), in.logMark()

	a.bumpRV(37)
	bm, n := a.bookmark()
	if n != 1 {
		t.Fatalf("the bookmark went to %d watches; expected the webhook's (allowWatchBookmarks=true):\n%s", n, a.logSince(0))
	}
	a.waitDelivered(t, bm, time.Second)
	in.holdHCA(t, shippedHCA(t), 300*time.Millisecond, "after a bookmark")
	if got := in.linesSince(logMark, msgIs("profiles loaded")); len(got) > 0 {
		t.Errorf("a bookmark was loaded as a new version: %s", compact(got[0]))
	}
	a.compact() // everything below the bookmark is gone
	a.endWatches()
	r, _ := a.waitRequest(t, mark, 3*time.Second, "the next watch", isKind("watch"))
	if got := r.Query.Get("resourceVersion"); got != strconv.FormatInt(bm, 10) {
		t.Errorf("watch after the stream ended: expected resourceVersion %d (the bookmark's), got %q", bm, got)
	}
	doc, want := profilesWithHCA(t, "mlx5_44")
	in.editProfiles(t, a, doc, want, "an edit after the bookmark")
	if n := a.count(mark, func(r apiRequest) bool { return r.Expired || r.Kind == "list" }); n != 0 {
		t.Errorf("expected no 410 and no relist after the bookmark, got:\n%s", a.logSince(mark))
	}
}

// TestKubeAPIWatchBackoff: while every list and watch fails (500), the
// webhook retries with capped exponential backoff (200 ms doubling, +-20%),
// not at a fixed pace: at most 6 attempts in 3 s (a fixed 200 ms pace makes
// about 15). When the API recovers, an edit made meanwhile is served.
func TestKubeAPIWatchBackoff(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	waitFor(t, 3*time.Second, "the webhook's watch to be open", func() bool { return a.openWatches() == 1 })

	a.setFailure("/api/v1/namespaces/"+profNS+"/configmaps", 500)
	mark := a.requestMark()
	a.endWatches()
	time.Sleep(3 * time.Second)
	attempts := a.count(mark, func(r apiRequest) bool { return r.Kind == "watch" || r.Kind == "list" })
	if attempts > 6 {
		t.Errorf("%d list/watch attempts in 3 s while the API answers 500; expected backoff (200 ms, 400, 800, 1600: at most 6):\n%s",
			attempts, a.logSince(mark))
	} else {
		t.Logf("%d attempts in 3 s", attempts)
	}
	doc, want := profilesWithHCA(t, "mlx5_46")
	a.putConfigMap(profNS, profName, profilesData(doc))
	a.setFailure("/api/v1/namespaces/"+profNS+"/configmaps", 0)
	recovered := time.Now()
	took := in.waitHCAAfter(t, want, recovered, 12*time.Second, "the edit made during the outage, after the API recovered")
	t.Logf("served %v after the API recovered", took.Round(time.Millisecond))
	if st := in.readyz(t, false); st != http.StatusOK {
		t.Errorf("/readyz during and after the outage: expected 200, got %d", st)
	}
}

// TestKubeAPIProfilesOverHTTP2: the real apiserver offers h2; the list,
// the watch and an edit work over whatever the client negotiates.
func TestKubeAPIProfilesOverHTTP2(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t, withHTTP2)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	doc, want := profilesWithHCA(t, "mlx5_45")
	in.editProfiles(t, a, doc, want, "an edit (h2 offered)")
	reqs := a.requests()
	t.Logf("the webhook spoke %s to an apiserver offering h2", reqs[len(reqs)-1].Proto)
}

// TestKubeAPIProfilesCreatedLater: the API answers but the ConfigMap does
// not exist yet: not ready (503) and an error line; once it is created the
// ADDED event makes the webhook ready within 1 s.
func TestKubeAPIProfilesCreatedLater(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := startConfigMapInstance(t, a)
	a.waitRequest(t, 0, 3*time.Second, "a watch (after the empty list)", isKind("watch"))
	in.waitLog(t, 0, pickUpWithin, "at level error about the missing ConfigMap", levelIs("error"))
	if st := in.readyz(t, true); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz without the ConfigMap: expected 503, got %d", st)
	}
	doc, want := profilesWithHCA(t, "mlx5_47")
	rv := a.putConfigMap(profNS, profName, profilesData(doc))
	sent := a.waitDelivered(t, rv, 3*time.Second)
	waitStatus(t, afterEvent, "/readyz after the ConfigMap was created", http.StatusOK,
		func() int { return in.readyz(t, true) })
	t.Logf("ready %v after the ADDED event", time.Since(sent).Round(time.Millisecond))
	in.waitHCAAfter(t, want, sent, afterEvent, "the created ConfigMap")
}

// TestKubeAPIProfilesInvalidAtStart: the ConfigMap exists but fails
// validation: rejected, not ready, /mutate 503; fixed, ready within 1 s of
// the event.
func TestKubeAPIProfilesInvalidAtStart(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putConfigMap(profNS, profName, profilesData(profilesBadTimeout(t)))
	in := startConfigMapInstance(t, a)
	in.waitLog(t, 0, pickUpWithin, `"profiles problem" naming NCCL_IB_TIMEOUT`, problemContains("NCCL_IB_TIMEOUT"))
	for _, plain := range []bool{false, true} {
		if st := in.readyz(t, plain); st != http.StatusServiceUnavailable {
			t.Errorf("/readyz (plain port %v) with only an invalid version: expected 503, got %d", plain, st)
		}
	}
	rep := in.do(t, http.MethodPost, in.url("/mutate"), mustMarshal(gpu8Review(t).body()))
	if rep.status != http.StatusServiceUnavailable {
		t.Errorf("POST /mutate with only an invalid version: expected 503, got %d %q", rep.status, cut(rep.body))
	}
	doc, want := profilesWithHCA(t, "mlx5_51")
	rv := a.putConfigMap(profNS, profName, profilesData(doc))
	sent := a.waitDelivered(t, rv, 3*time.Second)
	waitStatus(t, afterEvent, "/readyz after the ConfigMap was fixed", http.StatusOK,
		func() int { return in.readyz(t, false) })
	in.waitHCAAfter(t, want, sent, afterEvent, "the fixed ConfigMap")
}

// TestKubeAPIFlagErrors: --profiles and --profiles-configmap together, a
// malformed NS/NAME, and --profiles-configmap outside a cluster without
// --kube-api are start-up errors (a prompt non-zero exit with a message
// naming the flag), not a server that never becomes ready.
func TestKubeAPIFlagErrors(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	dir := t.TempDir()
	if err := copyCerts(dir); err != nil {
		t.Fatal(err)
	}
	base := []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "",
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key")}
	cases := []struct {
		name  string
		args  []string
		words []string // the message names these
	}{
		{"both sources", append([]string{"--profiles", profilesPath, "--profiles-configmap", profNS + "/" + profName}, a.kubeFlags()...),
			[]string{"--profiles", "--profiles-configmap"}},
		{"not NS/NAME", append([]string{"--profiles-configmap", "just-a-name"}, a.kubeFlags()...), []string{"--profiles-configmap"}},
		{"invalid name", append([]string{"--profiles-configmap", "Bad_NS/x"}, a.kubeFlags()...), []string{"--profiles-configmap"}},
		{"outside a cluster", []string{"--profiles-configmap", profNS + "/" + profName}, []string{"--kube-api"}},
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBERNETES_SERVICE_") {
			env = append(env, e)
		}
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			res, exited := runBinaryWithin(t, env, 5*time.Second,
				append(append([]string{}, base...), c.args...)...)
			if !exited {
				t.Errorf("serve kept running with %v; stderr:\n%s", c.args, res.stderr)
				return
			}
			if res.exitCode != 1 && res.exitCode != 2 {
				t.Errorf("expected exit status 1 or 2, got %d; stderr:\n%s", res.exitCode, res.stderr)
			}
			t.Logf("exit %d: %s", res.exitCode, strings.TrimSpace(string(res.stderr)))
			for _, w := range c.words {
				if !strings.Contains(string(res.stderr), w) {
					t.Errorf("expected the message to name %s, got:\n%s", w, res.stderr)
				}
			}
		})
	}
}

// TestKubeAPIProfilesAPIRestart: the whole API goes away while the webhook
// serves (connections dropped, port closed) and the ConfigMap changes
// meanwhile; the old version keeps serving and the webhook stays ready;
// when the API is back, the change is served within a few seconds.
func TestKubeAPIProfilesAPIRestart(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	waitFor(t, 3*time.Second, "the webhook's watch to be open", func() bool { return a.openWatches() == 1 })
	a.stop()
	doc, want := profilesWithHCA(t, "mlx5_48")
	a.putConfigMap(profNS, profName, profilesData(doc)) // no watcher sees it
	in.holdHCA(t, shippedHCA(t), 1500*time.Millisecond, "the API down")
	if st := in.readyz(t, false); st != http.StatusOK {
		t.Errorf("/readyz with the API down after a version loaded: expected 200, got %d", st)
	}
	a.start(t)
	up := time.Now()
	took := in.waitHCAAfter(t, want, up, readyAfterUp, "the change made while the API was down")
	t.Logf("served %v after the API came back", took.Round(time.Millisecond))
}

// TestKubeAPILargeConfigMap: a ConfigMap near the 1 MiB limit (profiles
// plus 900 KiB of notes, and kubectl's last-applied annotation repeating
// it all: a 2 MB watch line in many TLS records) is read whole.
func TestKubeAPILargeConfigMap(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	in := readyConfigMapInstance(t, a, shippedProfiles(t))
	notes := strings.Repeat("RoCE \"notes\" for the admins, line after line.\n", 900*1024/48)
	doc, want := profilesWithHCA(t, "mlx5_49")
	rv := a.putConfigMap(profNS, profName, map[string]string{profKey: string(doc), "NOTES.md": notes})
	sent := a.waitDelivered(t, rv, 3*time.Second)
	took := in.waitHCAAfter(t, want, sent, afterEvent, "a 2 MB watch event")
	t.Logf("served %v after the event", took.Round(time.Millisecond))
	// And through a relist.
	doc, want = profilesWithHCA(t, "mlx5_50")
	a.expire(func(l *fakeAPI) {
		l.putLocked(profNS, profName, map[string]string{profKey: string(doc), "NOTES.md": notes}, nil, nil)
	})
	in.waitHCAAfter(t, want, time.Now(), 3*time.Second, "a 2 MB list after a 410")
}

// TestKubeAPINodeLabels: a pod already bound to a node (spec.nodeName) is
// matched by the Node's labels before its GPU count, and the GPU count never
// picks a profile the Node's labels exclude; lookups are cached; an unknown
// node or an API error falls back to the GPU count, with a warning.
func TestKubeAPINodeLabels(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNode("gpu-node-4", map[string]string{"nvidia.com/gpu.count": "4"})
	a.putNode("gpu-node-4b", map[string]string{"nvidia.com/gpu.count": "4"})
	a.putNode("gpu-node-8", map[string]string{"nvidia.com/gpu.count": "8"})
	a.putNode("cpu-node", nil)
	in := startLookupInstance(t, a)
	hca4, hca8 := hcaOf(t, "roce-4card"), hcaOf(t, "roce-8card")

	t.Run("labels before GPU count", func(t *testing.T) {
		ad := in.admit(t, nodePod(8, "gpu-node-4"))
		if ad.rr.auditProf != "roce-4card" {
			t.Errorf("8 GPUs on gpu-node-4 (gpu.count=4): expected roce-4card, got %q (warnings %q)", ad.rr.auditProf, ad.rr.warnings)
		}
		if got := ad.envValues("NCCL_IB_HCA"); len(got) != 1 || got[0] != hca4 {
			t.Errorf("NCCL_IB_HCA: expected [%q], got %q", hca4, got)
		}
		if w := ad.warningWith("node"); w != "" {
			t.Errorf("unexpected warning: %q", w)
		}
		ad = in.admit(t, nodePod(4, "gpu-node-8"))
		if ad.rr.auditProf != "roce-8card" {
			t.Errorf("4 GPUs on gpu-node-8: expected roce-8card, got %q", ad.rr.auditProf)
		}
	})
	t.Run("node without a matching label", func(t *testing.T) {
		// cpu-node is neither profile's node type: the 4 GPUs must not
		// choose roce-4card for it.
		ad := in.admit(t, nodePod(4, "cpu-node"))
		if ad.rr.auditProf != "" || mutatedBeyondWarnings(t, ad.rr.patch) {
			t.Errorf("4 GPUs on cpu-node (no gpu.count label): expected no profile, got %q", ad.rr.auditProf)
		}
		if w := ad.warningWith("add a profile for"); w == "" {
			t.Errorf("expected the no-profile warning, got %q", ad.rr.warnings)
		}
		if w := ad.warningWith("check the webhook can read nodes"); w != "" {
			t.Errorf("the node was read: unexpected warning %q", w)
		}
	})
	t.Run("cached", func(t *testing.T) {
		mark := a.requestMark()
		for i := 0; i < 5; i++ {
			if ad := in.admit(t, nodePod(8, "gpu-node-4b")); ad.rr.auditProf != "roce-4card" {
				t.Errorf("pod %d on gpu-node-4b: expected roce-4card, got %q", i, ad.rr.auditProf)
			}
		}
		if n := a.count(mark, isKind("get-node")); n != 1 {
			t.Errorf("5 pods on one node: expected 1 Node GET, got %d:\n%s", n, a.logSince(mark))
		}
	})
	t.Run("no nodeName, no lookup", func(t *testing.T) {
		mark := a.requestMark()
		if ad := in.admit(t, trainingPod(8)); ad.rr.auditProf != "roce-8card" {
			t.Errorf("unbound 8-GPU pod: expected roce-8card, got %q", ad.rr.auditProf)
		}
		// Events are posted by a queue, after the admission that caused
		// them: the cpu-node pod's Event may arrive after the mark. This
		// pod has no warnings, so any other request is a lookup it caused.
		lookup := func(r apiRequest) bool { return r.Kind != "create-event" && r.Kind != "patch-event" }
		if n := a.count(mark, lookup); n != 0 {
			t.Errorf("a pod without nodeName or envFrom: expected no API lookup, got:\n%s", a.logSince(mark))
		}
	})
	for _, c := range []struct {
		name, node string
		status     int
	}{{"unknown node (404)", "no-such-node", 0}, {"API error (500)", "gpu-node-err", 500}, {"API 503", "gpu-node-unavail", 503}} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			if c.status != 0 {
				a.putNode(c.node, map[string]string{"nvidia.com/gpu.count": "4"})
				a.setFailure("/api/v1/nodes/"+c.node, c.status)
			}
			ad := in.admit(t, nodePod(8, c.node))
			if ad.rr.auditProf != "roce-8card" {
				t.Errorf("8 GPUs on %s: expected roce-8card by GPU count, got %q", c.node, ad.rr.auditProf)
			}
			if got := ad.envValues("NCCL_IB_HCA"); len(got) != 1 || got[0] != hca8 {
				t.Errorf("NCCL_IB_HCA: expected [%q], got %q", hca8, got)
			}
			if w := ad.warningWith("check the webhook can read nodes"); w == "" {
				t.Errorf("expected a warning containing %q, got %q", "check the webhook can read nodes", ad.rr.warnings)
			}
		})
	}
}

// TestKubeAPINodeCacheExpiry: --node-cache-seconds 1: a second pod on the
// node 1.5 s later reads the Node again (and sees its new labels).
func TestKubeAPINodeCacheExpiry(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNode("gpu-node", map[string]string{"nvidia.com/gpu.count": "4"})
	in := startLookupInstance(t, a, "--node-cache-seconds", "1")
	if ad := in.admit(t, nodePod(8, "gpu-node")); ad.rr.auditProf != "roce-4card" {
		t.Fatalf("expected roce-4card, got %q", ad.rr.auditProf)
	}
	a.putNode("gpu-node", map[string]string{"nvidia.com/gpu.count": "8"})
	if ad := in.admit(t, nodePod(4, "gpu-node")); ad.rr.auditProf != "roce-4card" {
		t.Errorf("within the cache time: expected the cached labels (roce-4card), got %q", ad.rr.auditProf)
	}
	time.Sleep(1500 * time.Millisecond)
	if ad := in.admit(t, nodePod(4, "gpu-node")); ad.rr.auditProf != "roce-8card" {
		t.Errorf("after the cache time: expected the new labels (roce-8card), got %q", ad.rr.auditProf)
	}
	if n := a.count(0, isKind("get-node")); n != 2 {
		t.Errorf("expected 2 Node GETs, got %d:\n%s", n, a.logSince(0))
	}
}

// TestKubeAPIEnvFrom: the keys of an of ConfigMap (with its prefix)
// count as declared: the profile's NCCL_IB_HCA is not appended over them.
// A ConfigMap that was read earns no warning; a missing one declares
// nothing; an unreadable one declares nothing and is warned about.
func TestKubeAPIEnvFrom(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putConfigMap(jobNS, "nccl-env", map[string]string{"NCCL_IB_HCA": "=mlx5_5", "NCCL_DEBUG": "INFO"})
	a.putConfigMap(jobNS, "nccl-short", map[string]string{"IB_HCA": "=mlx5_6"})
	a.putConfigMap(jobNS, "other-prefix", map[string]string{"NCCL_IB_HCA": "=mlx5_7"})
	a.putConfigMapFull(jobNS, "binary-only", map[string]string{"README": "x"},
		map[string][]byte{"NCCL_IB_HCA": []byte("=mlx5_8")})
	a.putConfigMap("other-ns", "nccl-env-elsewhere", map[string]string{"NCCL_IB_HCA": "=mlx5_9"})
	a.putConfigMap(jobNS, "broken", map[string]string{"NCCL_IB_HCA": "=mlx5_9"})
	a.setFailure("/api/v1/namespaces/"+jobNS+"/configmaps/broken", 500)
	in := startLookupInstance(t, a)
	hca8 := hcaOf(t, "roce-8card")

	cases := []struct {
		name     string
		source   obj
		declared bool // NCCL_IB_HCA is the ConfigMap's: not appended
		warn     bool // the "of ConfigMap" warning
	}{
		{"key declared", configMapRef("nccl-env", ""), true, false},
		{"key declared through the prefix", configMapRef("nccl-short", "NCCL_"), true, false},
		{"prefix makes another name", configMapRef("other-prefix", "MY_"), false, false},
		{"key only in binaryData", configMapRef("binary-only", ""), false, false},
		{"ConfigMap in another namespace", configMapRef("nccl-env-elsewhere", ""), false, false},
		{"missing ConfigMap", configMapRef("absent", ""), false, false},
		{"missing optional ConfigMap", obj{"configMapRef": obj{"name": "absent-optional", "optional": true}}, false, false},
		{"API error", configMapRef("broken", ""), false, true},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			ad := in.admit(t, envFromPod(c.source))
			if ad.rr.auditProf != "roce-8card" {
				t.Fatalf("expected roce-8card, got %q (warnings %q)", ad.rr.auditProf, ad.rr.warnings)
			}
			got := ad.envValues("NCCL_IB_HCA")
			if c.declared && len(got) != 0 {
				t.Errorf("NCCL_IB_HCA comes from the ConfigMap: expected it not appended, got %q", got)
			}
			if !c.declared && (len(got) != 1 || got[0] != hca8) {
				t.Errorf("NCCL_IB_HCA: expected the profile's [%q] appended, got %q", hca8, got)
			}
			if v := ad.envValues("NCCL_SOCKET_IFNAME"); len(v) != 1 {
				t.Errorf("NCCL_SOCKET_IFNAME (not in the ConfigMap): expected it appended, got %q", v)
			}
			w := ad.warningWith("of ConfigMap")
			if c.warn && w == "" {
				t.Errorf("expected an %q warning, got %q", "of ConfigMap", ad.rr.warnings)
			}
			if !c.warn && w != "" {
				t.Errorf("the ConfigMap was read: unexpected warning %q", w)
			}
		})
	}
	t.Run("cached", func(t *testing.T) {
		mark := a.requestMark()
		for i := 0; i < 3; i++ {
			if got := in.admit(t, envFromPod(configMapRef("nccl-env", ""))).envValues("NCCL_IB_HCA"); len(got) != 0 {
				t.Errorf("pod %d: NCCL_IB_HCA appended over the ConfigMap's: %q", i, got)
			}
		}
		if n := a.count(mark, isKind("get-configmap")); n != 0 {
			t.Errorf("within --configmap-cache-seconds: expected no new ConfigMap GET, got:\n%s", a.logSince(mark))
		}
	})
}

// TestKubeAPIEnvFromBurst: 10 pods of one job created at once, all with the
// same of ConfigMap (its GET takes 200 ms), cause 1 API call and all
// see its keys.
func TestKubeAPIEnvFromBurst(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putConfigMap(jobNS, "job-env", map[string]string{"NCCL_IB_HCA": "=mlx5_3"})
	a.setDelay("/api/v1/namespaces/"+jobNS+"/configmaps/job-env", 200*time.Millisecond)
	in := startLookupInstance(t, a)

	const pods = 10
	var wg sync.WaitGroup
	errs := make(chan string, pods)
	start := make(chan struct{})
	for i := 0; i < pods; i++ {
		i := i
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := in.newClient(10 * time.Second)
			defer client.CloseIdleConnections()
			pod := envFromPod(configMapRef("job-env", ""))
			pod["metadata"].(obj)["name"] = fmt.Sprintf("e2e-job-worker-%d", i)
			r := podCreate(jobNS, pod)
			<-start
			resp, err := in.postReview(client, r)
			if err != nil {
				errs <- fmt.Sprintf("pod %d: %v", i, err)
				return
			}
			if w := fmt.Sprint(path(resp, "response", "warnings")); strings.Contains(w, "of ConfigMap") {
				errs <- fmt.Sprintf("pod %d: warning although the ConfigMap is readable: %s", i, w)
			}
			patch, _ := pathStr(resp, "response", "patch")
			if strings.Contains(decodeB64(patch), `"NCCL_IB_HCA"`) {
				errs <- fmt.Sprintf("pod %d: NCCL_IB_HCA appended over the ConfigMap's", i)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := a.count(0, isKind("get-configmap")); n != 1 {
		t.Errorf("%d concurrent pods with one of ConfigMap: expected 1 ConfigMap GET, got %d:\n%s", pods, n, a.logSince(0))
	}
}

// TestKubeAPISlow: every API call takes 5 s; with --api-budget-ms 300 an
// admission needing a Node and an envFrom lookup still answers within
// about a second, with the fallbacks (GPU count, nothing skipped) and both
// warnings, never an error.
func TestKubeAPISlow(t *testing.T) {
	t.Parallel()
	a := startFakeAPI(t)
	a.putNode("gpu-node-4", map[string]string{"nvidia.com/gpu.count": "4"})
	a.putConfigMap(jobNS, "slow-env", map[string]string{"NCCL_IB_HCA": "=mlx5_2"})
	a.setDelay("/api/", 5*time.Second)
	in := startLookupInstance(t, a, "--api-budget-ms", "300")
	hca8 := hcaOf(t, "roce-8card")

	for i, node := range []string{"gpu-node-4", "gpu-node-4", "other-node"} {
		pod := envFromPod(configMapRef("slow-env", ""), configMapRef(fmt.Sprintf("slow-env-%d", i), ""))
		pod["spec"].(obj)["nodeName"] = node
		ad := in.admit(t, pod)
		t.Logf("admission %d answered in %v", i, ad.took.Round(time.Millisecond))
		if ad.took > time.Second {
			t.Errorf("admission %d: expected an answer within ~1 s (budget 300 ms), took %v", i, ad.took)
		}
		if ad.rr.auditProf != "roce-8card" {
			t.Errorf("admission %d: expected roce-8card by GPU count, got %q (warnings %q)", i, ad.rr.auditProf, ad.rr.warnings)
		}
		if got := ad.envValues("NCCL_IB_HCA"); len(got) != 1 || got[0] != hca8 {
			t.Errorf("admission %d: NCCL_IB_HCA: expected the profile's [%q], got %q", i, hca8, got)
		}
		for _, phrase := range []string{"check the webhook can read nodes", "of ConfigMap"} {
			if ad.warningWith(phrase) == "" {
				t.Errorf("admission %d: expected a warning containing %q, got %q", i, phrase, ad.rr.warnings)
			}
		}
	}
}
