package e2e

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	profNS   = "rdma-webhook"
	profName = "rdma-webhook-profiles"
	profKey  = "profiles.json"
	// profSource is the "source" of the webhook's profile log lines.
	profSource = "configmap " + profNS + "/" + profName
	jobNS      = "kubeflow"
	// afterEvent: a changed ConfigMap is used by the next admission within
	// this long after its watch event was sent.
	afterEvent = time.Second
	// readyAfterUp: how soon the webhook is ready once the API answers.
	readyAfterUp = 5 * time.Second
)

func profilesData(doc []byte) map[string]string { return map[string]string{profKey: string(doc)} }

// startConfigMapInstance serves profiles from the fake's ConfigMap
// profNS/profName (--profiles-configmap), with extra flags. At the end of
// the test every list and watch it made is checked for the parameters the
// API concepts and the RBAC need.
func startConfigMapInstance(t *testing.T, a *fakeAPI, extra ...string) *instance {
	t.Helper()
	args := append([]string{"--profiles-configmap", profNS + "/" + profName}, a.kubeFlags()...)
	in := startOwn(t, instanceOptions{args: append(args, extra...)})
	timeout := "300"
	for i := 0; i+1 < len(extra); i++ {
		if extra[i] == "--watch-timeout-seconds" {
			timeout = extra[i+1]
		}
	}
	t.Cleanup(func() { checkProfileQueries(t, a, timeout) })
	return in
}

// readyConfigMapInstance puts doc in the ConfigMap, starts the webhook on
// it and waits until it is ready with generation 1.
func readyConfigMapInstance(t *testing.T, a *fakeAPI, doc []byte, extra ...string) *instance {
	t.Helper()
	a.putConfigMap(profNS, profName, profilesData(doc))
	in := startConfigMapInstance(t, a, extra...)
	waitStatus(t, readyAfterUp, "/readyz with the ConfigMap served", http.StatusOK,
		func() int { return in.readyz(t, false) })
	in.waitLog(t, 0, pickUpWithin, `"profiles loaded" generation 1 from the ConfigMap`,
		msgIs("profiles loaded", "generation", "1", "source", profSource))
	return in
}

// startLookupInstance serves the shipped profiles file and uses the fake
// for Node and envFrom lookups.
func startLookupInstance(t testing.TB, a *fakeAPI, extra ...string) *instance {
	t.Helper()
	flags := a.kubeFlags()
	if underValgrind() && !hasFlag(extra, "--api-budget-ms") {
		// Under memcheck a lookup (a TLS handshake with the fake first)
		// can take longer than the default 2 s budget, and the admission
		// then goes on without the answer: these tests compare what serve
		// does with the API's answer, not how long it may take.
		flags = append(flags, "--api-budget-ms", "30000")
	}
	return startInstance(t, profilesPath, append(flags, extra...)...)
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag {
			return true
		}
	}
	return false
}

// checkProfileQueries: every list and watch of the profiles ConfigMap
// selects it by name (the Role allows nothing else); watches ask for
// bookmarks, carry the --watch-timeout-seconds and resume from a
// resourceVersion (never "" or "0", which would replay the object).
func checkProfileQueries(t *testing.T, a *fakeAPI, timeout string) {
	t.Helper()
	for i, r := range a.requests() {
		if r.Kind != "list" && r.Kind != "watch" {
			continue
		}
		bad := []string{}
		if r.Path != "/api/v1/namespaces/"+profNS+"/configmaps" {
			bad = append(bad, "path")
		}
		if name, ok := fieldName(r.Query.Get("fieldSelector")); !ok || name != profName {
			bad = append(bad, "fieldSelector metadata.name="+profName)
		}
		if r.Kind == "watch" {
			if r.Query.Get("allowWatchBookmarks") != "true" {
				bad = append(bad, "allowWatchBookmarks=true")
			}
			if r.Query.Get("timeoutSeconds") != timeout {
				bad = append(bad, "timeoutSeconds="+timeout)
			}
			if rv := r.Query.Get("resourceVersion"); rv == "" || rv == "0" {
				bad = append(bad, "resourceVersion from the list or the last event")
			}
		}
		if len(bad) > 0 {
			t.Errorf("fake apiserver request #%d %s: expected %s", i, r, strings.Join(bad, ", "))
		}
	}
}

// waitHCAAfter polls with reviews until the 8-GPU pod gets want, and fails
// unless that happens within d of since (when the watch event went out).
func (in *instance) waitHCAAfter(t testing.TB, want string, since time.Time, d time.Duration, what string) time.Duration {
	t.Helper()
	deadline := since.Add(d)
	for {
		last := in.hca(t)
		if last == want {
			return time.Since(since)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: expected NCCL_IB_HCA %q within %v, still %q after %v%s",
				what, want, d, last, time.Since(since).Round(time.Millisecond), in.state())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// editProfiles puts doc in the ConfigMap and waits until the webhook
// serves want: within afterEvent of the MODIFIED event reaching its watch.
func (in *instance) editProfiles(t testing.TB, a *fakeAPI, doc []byte, want, what string) {
	t.Helper()
	rv := a.putConfigMap(profNS, profName, profilesData(doc))
	sent := a.waitDelivered(t, rv, 3*time.Second)
	took := in.waitHCAAfter(t, want, sent, afterEvent, what)
	t.Logf("%s: served %v after the watch event", what, took.Round(time.Millisecond))
}

// linesSince is the decoded log from mark on that match.
func (in *instance) linesSince(mark int, match func(obj) bool) []obj {
	var out []obj
	lines := in.logLines()
	for i := mark; i < len(lines); i++ {
		if lines[i] != nil && match(lines[i]) {
			out = append(out, lines[i])
		}
	}
	return out
}

func levelIs(levels ...string) func(obj) bool {
	return func(o obj) bool {
		l, _ := pathStr(o, "level")
		return contains(levels, l)
	}
}

// problemContains matches "profiles problem" lines whose problem names s.
func problemContains(s string) func(obj) bool {
	return func(o obj) bool {
		p, _ := pathStr(o, "problem")
		return msgIs("profiles problem")(o) && strings.Contains(p, s)
	}
}

// nodePod is the 8-GPU training pod already bound to node (spec.nodeName
// set, as for a pod created by a controller that schedules itself or a
// static assignment).
func nodePod(gpus int, node string) obj {
	pod := trainingPod(gpus)
	pod["spec"].(obj)["nodeName"] = node
	return pod
}

// envFromPod is the 8-GPU training pod whose container has these envFrom
// sources.
func envFromPod(sources ...obj) obj {
	pod := trainingPod(8)
	list := make([]interface{}, len(sources))
	for i, s := range sources {
		list[i] = s
	}
	pathArr(pod, "spec", "containers")[0].(obj)["envFrom"] = list
	return pod
}

func configMapRef(name, prefix string) obj {
	src := obj{"configMapRef": obj{"name": name}}
	if prefix != "" {
		src["prefix"] = prefix
	}
	return src
}

// envFromPodOf is a pod of containers containers of 8 GPUs, each with
// refs envFrom sources naming the ConfigMaps names (repeated to refs), and
// profile roce-8card by name.
func envFromPodOf(containers, refs int, names []string) obj {
	pod := trainingPod(8)
	first := pathArr(pod, "spec", "containers")[0].(obj)
	sources := make([]interface{}, refs)
	for j := range sources {
		sources[j] = configMapRef(names[j%len(names)], "")
	}
	list := make([]interface{}, containers)
	for i := range list {
		c := obj{}
		for k, v := range first {
			c[k] = v
		}
		c["name"] = fmt.Sprintf("worker-%d", i)
		c["envFrom"] = sources
		list[i] = c
	}
	pathObj(pod, "spec")["containers"] = list
	// 8 GPUs in each container: the profile by name.
	pathObj(pod, "metadata")["annotations"] = obj{"rdma-webhook.io/profile": "roce-8card"}
	return pod
}

// admission is one review's outcome, as the tests read it.
type admission struct {
	rr      reviewResponse
	patched obj
	took    time.Duration
}

func (in *instance) admit(t testing.TB, pod obj) admission {
	t.Helper()
	r := podCreate(jobNS, pod)
	start := time.Now()
	rr := in.review(t, r)
	took := time.Since(start)
	return admission{rr: rr, patched: applyPatch(t, pod, rr.patch), took: took}
}

// envValues is every value the pytorch container's env gives name.
func (ad admission) envValues(name string) []string {
	var out []string
	for _, e := range envEntries(containerByName(ad.patched, "pytorch"), name) {
		v, _ := pathStr(e, "value")
		out = append(out, v)
	}
	return out
}

// warningWith is the first warning containing phrase, "" when none.
func (ad admission) warningWith(phrase string) string {
	for _, w := range ad.rr.warnings {
		if strings.Contains(w, phrase) {
			return w
		}
	}
	return ""
}

func hcaOf(t testing.TB, profile string) string {
	t.Helper()
	return loadProfiles(t).envFor(t, profile, false)["NCCL_IB_HCA"]
}

// postReview posts r with client (for concurrent reviews: no t.Fatal).
func (in *instance) postReview(client *http.Client, r reviewRequest) (obj, error) {
	req, err := http.NewRequest(http.MethodPost, in.url("/mutate"), strings.NewReader(string(mustMarshal(r.body()))))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	body := readAll(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return decodeObject(body)
}

// decodeB64 is the text of a base64 patch ("" when it is not base64).
func decodeB64(s string) string {
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return ""
	}
	return string(data)
}
