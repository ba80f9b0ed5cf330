package e2e

// Benchmarks of the API lookups under attack (issue 28, items 1 and 2):
// figures for bench/LOOKUPS.md, never asserted. Run one at a time, e.g.
//
//	cd test/e2e && RDMA_WEBHOOK_BIN=$PWD/../../build/rdma-webhook \
//	    go test -count=1 -run '^$' -bench 'BenchmarkLookups' -benchtime 1x .

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// benchPost posts pod (in namespace ns) with client: the time it took and
// whether a 200 came.
func benchPost(in *instance, client *http.Client, ns string, pod obj) (time.Duration, bool) {
	body := mustMarshal(podCreate(ns, pod).body())
	start := time.Now()
	resp, err := client.Post(in.url("/mutate"), "application/json", bytes.NewReader(body))
	if err != nil {
		return time.Since(start), false
	}
	readAll(resp)
	return time.Since(start), resp.StatusCode == http.StatusOK
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(q*float64(len(d)-1))]
}

// BenchmarkLookupsHungNamespace: 16 clients post pods of one namespace as
// fast as they are answered for 20 s, on a 2-thread webhook with the
// default 2 s budget, while the apiserver's Namespace GET hangs.
func BenchmarkLookupsHungNamespace(b *testing.B) {
	const ns, clients, runFor = "hung-bench", 16, 20 * time.Second
	a := startFakeAPI(b)
	a.putNamespace(ns, nil)
	a.setDelay("/api/v1/namespaces/"+ns, time.Hour)
	in := startLookupInstance(b, a, "--threads", "2")
	mark := a.requestMark()
	var mu sync.Mutex
	var took []time.Duration
	failed := 0
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		client := in.newClient(30 * time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < runFor {
				d, ok := benchPost(in, client, ns, trainingPod(8))
				mu.Lock()
				if ok {
					took = append(took, d)
				} else {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	within5s := 0
	for _, d := range took {
		if d <= 5*time.Second {
			within5s++
		}
	}
	rate := float64(len(took)) / elapsed.Seconds()
	b.ReportMetric(rate, "admissions/s")
	b.ReportMetric(quantile(took, 0.5).Seconds(), "p50_s")
	b.ReportMetric(quantile(took, 0.99).Seconds(), "p99_s")
	b.ReportMetric(float64(procStatusKiB(b, in.cmd.Process.Pid, "VmHWM"))/1024, "peakRSS_MiB")
	b.Logf("%d answered in %v (%d failed): %.1f/s, p50 %v, p99 %v, max %v, %d within 5 s; %d Namespace GETs; peak RSS %d KiB",
		len(took), elapsed.Round(time.Millisecond), failed, rate, quantile(took, 0.5), quantile(took, 0.99),
		quantile(took, 1), within5s, a.count(mark, isKind("get-namespace")), procStatusKiB(b, in.cmd.Process.Pid, "VmHWM"))
}

// tenantConfigMap is a ConfigMap GET's body with keys keys of 4 bytes and
// one-byte values: 90,000 of them are about 990 KB, within the apiserver's
// 1 MiB.
func tenantConfigMap(ns, name string, keys int) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{`, name, ns)
	for i := 0; i < keys; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		k := strconv.FormatInt(int64(i)+36*36*36, 36) // 4 characters from 1000 (base 36)
		fmt.Fprintf(&buf, `%q:"x"`, k)
	}
	buf.WriteString(`,"NCCL_IB_HCA":"=mlx5_0"}}`)
	return buf.Bytes()
}

// BenchmarkLookupsTenantConfigMap: a tenant's ConfigMap of 90,000 keys
// (990 KB) and a pod of 64 containers × 64 envFrom sources naming it: the
// pod's admission (cold, then cached), another pod's, posted while the
// first is being admitted; then 100 such ConfigMaps referenced by 5 pods
// (20 each) and the webhook's peak RSS.
func BenchmarkLookupsTenantConfigMap(b *testing.B) {
	const ns = jobNS
	a := startFakeAPI(b)
	body := tenantConfigMap(ns, "huge", 90000)
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("huge-%d", i)
		a.setRawGet("/api/v1/namespaces/"+ns+"/configmaps/"+names[i], body)
	}
	in := startLookupInstance(b, a, "--threads", "2")
	big := envFromPodOf(64, 64, names[:1])
	other := trainingPod(8)
	c1, c2 := in.newClient(60*time.Second), in.newClient(60*time.Second)
	for round, what := range []string{"cold", "cached"} {
		var bigTook, otherTook time.Duration
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); bigTook, _ = benchPost(in, c1, ns, big) }()
		time.Sleep(300 * time.Millisecond) // the big pod's admission under way
		otherTook, _ = benchPost(in, c2, ns, other)
		wg.Wait()
		b.Logf("%s: the 64 × 64 pod took %v; another pod posted 300 ms after it took %v", what, bigTook, otherTook)
		if round == 0 {
			b.ReportMetric(bigTook.Seconds(), "bigpod_cold_s")
			b.ReportMetric(otherTook.Seconds(), "otherpod_s")
		}
	}
	for p := 0; p < 5; p++ {
		d, ok := benchPost(in, c1, ns, envFromPodOf(64, 20, names[20*p:20*p+20]))
		b.Logf("pod %d (20 ConfigMaps of its own): %v, ok %v, peak RSS %d KiB", p, d, ok,
			procStatusKiB(b, in.cmd.Process.Pid, "VmHWM"))
	}
	peak := procStatusKiB(b, in.cmd.Process.Pid, "VmHWM")
	b.ReportMetric(float64(peak)/1024, "peakRSS_MiB")
	b.Logf("100 ConfigMaps of 990 KB, 5 pods: peak RSS %d KiB, RSS now %d KiB; /metrics cache bytes %s",
		peak, in.rssKiB(b), in.metric(b, "rdma_webhook_lookup_configmap_cache_bytes"))
}
