package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// runReport reads a run's results (r<ROUND>-<CONFIG>-<PHASE>.json) and
// writes CLUSTER-RESULTS.md and the plot. It exits non-zero, after writing
// both, when a check failed: a failed create, a pod that did not come back
// as its configuration should make it, or a webhook called for pods no
// configuration selects.
func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	in := fs.String("in", "", "directory of the results")
	machine := fs.String("machine", "", "Markdown list describing the machine")
	command := fs.String("command", "", "the command line that made the run")
	configs := fs.String("configs", "floor rdma-webhook go-webhook policy", "configurations, floor first")
	clients := fs.String("clients", "1 8 32", "client counts of the create phases")
	profiles := fs.String("profiles", "", "directory of run.sh's profiling pass (optional)")
	out := fs.String("out", "", "Markdown file to write")
	png := fs.String("png", "", "PNG plot to write")
	fs.Parse(args)
	if *in == "" || *out == "" || *png == "" {
		return fmt.Errorf("-in, -out and -png are required")
	}
	rs, err := loadResults(*in)
	if err != nil {
		return err
	}
	rep := &report{res: rs, configs: strings.Fields(*configs), clients: strings.Fields(*clients)}
	rep.rounds = rs.rounds()
	rep.profiles = *profiles
	rep.check()
	text := rep.markdown(readOr(*machine), readOr(*command), filepath.Base(*png))
	if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
		return err
	}
	if err := rep.plot(*png); err != nil {
		return err
	}
	if len(rep.failures) > 0 {
		return fmt.Errorf("%d checks failed (listed in %s)", len(rep.failures), *out)
	}
	return nil
}

func readOr(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(b), "\n")
}

// results indexes the phase results by config, phase and round.
type results map[string]*Result

func key(config, phase string, round int) string {
	return fmt.Sprintf("%s/%s/%d", config, phase, round)
}

func loadResults(dir string) (results, error) {
	files, err := filepath.Glob(filepath.Join(dir, "r*-*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no results in %s", dir)
	}
	rs := results{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		rs[key(r.Config, r.Phase, r.Round)] = &r
	}
	return rs, nil
}

func (rs results) rounds() []int {
	seen := map[int]bool{}
	for _, r := range rs {
		seen[r.Round] = true
	}
	var out []int
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// stat is the median and range of one figure over the rounds.
type stat struct {
	med, lo, hi float64
	n           int
}

func newStat(vs []float64) stat {
	if len(vs) == 0 {
		return stat{}
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{med: med, lo: s[0], hi: s[len(s)-1], n: len(s)}
}

func (s stat) fmt(prec int) string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, s.med)
}

func (s stat) rng(prec int) string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f to %.*f", prec, s.lo, prec, s.hi)
}

type report struct {
	res      results
	configs  []string
	clients  []string
	rounds   []int
	profiles string
	failures []string
}

// over collects f of a phase's result in each round where it exists.
func (p *report) over(config, phase string, f func(*Result) float64) stat {
	var vs []float64
	for _, n := range p.rounds {
		if r := p.res[key(config, phase, n)]; r != nil {
			vs = append(vs, f(r))
		}
	}
	return newStat(vs)
}

// added is f(config) - f(floor), round by round, so that a round's load
// (the rounds differ) is in both terms.
func (p *report) added(config, phase string, f func(*Result) float64) stat {
	var vs []float64
	for _, n := range p.rounds {
		c, fl := p.res[key(config, phase, n)], p.res[key("floor", phase, n)]
		if c != nil && fl != nil {
			vs = append(vs, f(c)-f(fl))
		}
	}
	return newStat(vs)
}

// cpuPer1000 is the CPU seconds of proc per 1,000 pods of the phase.
func cpuPer1000(proc string) func(*Result) float64 {
	return func(r *Result) float64 { return r.CPU[proc] * 1000 / float64(r.Count) }
}

func p50(r *Result) float64     { return r.P50ms }
func p99(r *Result) float64     { return r.P99ms }
func perSec(r *Result) float64  { return r.PerSecond }
func allPods(r *Result) float64 { return r.AllPodsSeconds }

// serverOf names the process that does a configuration's mutation outside
// the apiserver, if any.
func serverOf(config string) string {
	switch config {
	case "rdma-webhook", "go-webhook":
		return config
	}
	return ""
}

// markdown renders the report; check has run, and the profiles' failures
// join its list here, before the checks section.
func (p *report) markdown(machine, command, png string) string {
	var b strings.Builder
	rounds := "rounds"
	if len(p.rounds) == 1 {
		rounds = "round"
	}
	w := func(format string, a ...interface{}) { fmt.Fprintf(&b, format, a...) }
	w("# Cluster benchmark results\n\n")
	w("Written by `make bench-cluster` (bench/cluster/run.sh) on %s, from %d %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), len(p.rounds), rounds)
	w("%s\n", intro)
	p.createTable(w)
	p.ordinaryTable(w)
	p.jobTable(w)
	p.apiserverTable(w)
	p.targetsTable(w)
	p.whereTimeGoes(w, p.profiles)
	w("## Added p99 by configuration and client count\n\n![added p99 per create over the floor](%s)\n\n", png)
	w("Bars: the median over the rounds of (p99 of the configuration) - (p99 of the floor) in the same round; whiskers: the lowest and highest round.\n\n")
	p.checksSection(w)
	w("## Machine\n\n%s\n\n## Command\n\n```sh\n%s\n```\n", machine, command)
	return b.String()
}

const intro = `Each configuration is installed in turn in the same kube-apiserver (test/cluster/up.sh: etcd,
kube-apiserver, kube-controller-manager and the Kubeflow training-operator; no kubelet, so pods stay
Pending after admission). *floor*: no mutation. *rdma-webhook*: installed as manifests/ installs it.
*go-webhook*: bench/gowebhook, the same mutation, registered by the same configuration.
*policy*: bench/cluster/policy.yaml, a MutatingAdmissionPolicy doing as much of it as CEL can.
The pod is the worker of Kubeflow's public pytorch-deepspeed-demo PyTorchJob at 8 GPUs a node, as the
real training-operator made it (bench/cluster/worker-pod.json: as stored, less its ownerReferences and
the service-account volume, which the apiserver adds again). Latency is client-side, per create,
from the request to the whole answer, over one HTTP/2 connection; figures are medians over the rounds,
ranges the lowest and highest round; *added* is the configuration's figure minus the floor's in the
same round. CPU is user+system seconds of the process per 1,000 pods created.
`

func (p *report) createTable(w func(string, ...interface{})) {
	w("## Worker pods created directly\n\n")
	w("| configuration | clients | creates/s | range | p50 ms | p99 ms | p99 range | added p50 | added p99 | added p99 range | webhook CPU s/1k pods | apiserver CPU s/1k pods |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, cfg := range p.configs {
		for _, c := range p.clients {
			ph := "create-" + c
			rate := p.over(cfg, ph, perSec)
			a50, a99 := p.added(cfg, ph, p50), p.added(cfg, ph, p99)
			p99s := p.over(cfg, ph, p99)
			if cfg == "floor" {
				a50, a99 = stat{}, stat{}
			}
			w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", cfg, c,
				rate.fmt(0), rate.rng(0), p.over(cfg, ph, p50).fmt(2), p99s.fmt(2), p99s.rng(2),
				a50.fmt(2), a99.fmt(2), a99.rng(2), p.serverCPU(cfg, ph), p.over(cfg, ph, cpuPer1000("apiserver")).fmt(2))
		}
	}
	w("\n")
}

func (p *report) serverCPU(cfg, phase string) string {
	if s := serverOf(cfg); s != "" {
		return p.over(cfg, phase, cpuPer1000(s)).fmt(3)
	}
	return "-"
}

func (p *report) ordinaryTable(w func(string, ...interface{})) {
	w("## Ordinary pods: no configuration selects them\n\n")
	w("plain-8: a guestbook Deployment's pod (bench/cluster/plain-pod.json) created directly by 8 clients. ")
	w("deploy: a Deployment, from the submit until the controller-manager has made all its pods.\n\n")
	w("| configuration | plain-8 p50 ms | p99 ms | added p99 | webhook calls | deploy: all pods s | range | added s |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, cfg := range p.configs {
		a99, ad := p.added(cfg, "plain-8", p99), p.added(cfg, "deploy", allPods)
		if cfg == "floor" {
			a99, ad = stat{}, stat{}
		}
		d := p.over(cfg, "deploy", allPods)
		calls := p.over(cfg, "plain-8", func(r *Result) float64 { return webhookCalls(r) })
		w("| %s | %s | %s | %s | %s | %s | %s | %s |\n", cfg, p.over(cfg, "plain-8", p50).fmt(2),
			p.over(cfg, "plain-8", p99).fmt(2), a99.fmt(2), calls.fmt(0), d.fmt(2), d.rng(2), ad.fmt(2))
	}
	w("\n")
}

func (p *report) jobTable(w func(string, ...interface{})) {
	w("## A PyTorchJob of 512 pods through the training-operator\n\n")
	w("From the submit until the last of its pods exists. The training-operator's own client is limited to ")
	w("20 requests/s (its `--kube-api-qps` default), and it makes a Service per pod, which sets the floor; ")
	w("the webhook must not slow it further. It creates one replica type's pods, then their Services, then ")
	w("the other type's, in Go's map order: when the Worker type comes first, the master pod waits for 511 ")
	w("Services and *all pods* doubles, whatever the configuration. *Workers* is the time from the first to ")
	w("the last worker pod, which that order does not change.\n\n")
	w("| configuration | all pods s | range | workers s | range | added s | workers/s | webhook CPU s/1k pods |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	span := func(r *Result) float64 { return r.PartAllSeconds - r.PartFirstSeconds }
	for _, cfg := range p.configs {
		all, wk, ad := p.over(cfg, "job", allPods), p.over(cfg, "job", span), p.added(cfg, "job", span)
		if cfg == "floor" {
			ad = stat{}
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s |\n", cfg, all.fmt(2), all.rng(2), wk.fmt(2), wk.rng(2),
			ad.fmt(2), p.over(cfg, "job", func(r *Result) float64 { return float64(r.Count-1) / span(r) }).fmt(1),
			p.serverCPU(cfg, "job"))
	}
	w("\n")
}
