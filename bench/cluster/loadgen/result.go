package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Result is what one measured phase writes: one configuration (floor,
// rdma-webhook, ...), one phase (create-8, job, ...), one round.
type Result struct {
	Config string `json:"config"`
	Phase  string `json:"phase"`
	Round  int    `json:"round"`

	Clients    int    `json:"clients,omitempty"`
	Count      int    `json:"count"` // pods created (create) or wanted (submit)
	Failed     int    `json:"failed"`
	FirstError string `json:"first_error,omitempty"`
	Mutated    int    `json:"mutated"`  // pods that came back with the profile's mutation
	Expect     string `json:"expect"`   // "mutated" or "unchanged"
	Warnings   int    `json:"warnings"` // answers with a Warning header

	WallSeconds float64 `json:"wall_seconds"`
	PerSecond   float64 `json:"per_second"`
	P50ms       float64 `json:"p50_ms,omitempty"`
	P99ms       float64 `json:"p99_ms,omitempty"`
	MeanMs      float64 `json:"mean_ms,omitempty"`
	MaxMs       float64 `json:"max_ms,omitempty"`

	FirstPodSeconds float64 `json:"first_pod_seconds,omitempty"`
	AllPodsSeconds  float64 `json:"all_pods_seconds,omitempty"`
	// The -part pods (a job's workers): the first and the last one.
	PartFirstSeconds float64 `json:"part_first_seconds,omitempty"`
	PartAllSeconds   float64 `json:"part_all_seconds,omitempty"`

	// CPU seconds each named process used over the phase.
	CPU map[string]float64 `json:"cpu_seconds"`
	// The apiserver's admission histograms over the phase (deltas).
	Admission map[string]Series `json:"admission"`
	// rdma-webhook's own latency histogram over the phase (delta), when
	// -webhook-metrics is given.
	Webhook map[string]Series `json:"webhook,omitempty"`
	// The servers' TCP connections (-conn-ports).
	Conns map[string]Conns `json:"connections,omitempty"`
}

// phaseFlags are the labels and probes every measuring subcommand takes.
type phaseFlags struct {
	config, phase, expect, out, pids string
	round                            int
	server                           serverFlags
}

func (p *phaseFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.config, "config", "", "configuration name, for the report")
	fs.StringVar(&p.phase, "phase", "", "phase name, for the report")
	fs.IntVar(&p.round, "round", 1, "round number, for the report")
	fs.StringVar(&p.expect, "expect", "mutated", "mutated or unchanged: what the pods should come back as")
	fs.StringVar(&p.out, "out", "", "result file (JSON)")
	fs.StringVar(&p.pids, "pids", "", "NAME=PID,... processes whose CPU seconds to record")
	p.server.register(fs)
}

func (p *phaseFlags) check() error {
	if p.out == "" || p.config == "" || p.phase == "" {
		return fmt.Errorf("-out, -config and -phase are required")
	}
	if p.expect != "mutated" && p.expect != "unchanged" {
		return fmt.Errorf("-expect %q: mutated or unchanged", p.expect)
	}
	return nil
}

// probe is the state of the apiserver's metrics and the processes' CPU at
// one moment; two probes give a phase's deltas.
type probe struct {
	cpu     map[string]float64
	metrics map[string]Series
	webhook map[string]Series
	conns   map[string]Conns
}

func takeProbe(c *apiClient, p *phaseFlags) (*probe, error) {
	var pr probe
	var err error
	if pr.metrics, err = scrapeAdmission(c); err != nil {
		return nil, err
	}
	if pr.webhook, err = scrapeWebhook(&p.server); err != nil {
		return nil, err
	}
	if pr.conns, err = countConns(p.server.ports); err != nil {
		return nil, err
	}
	if pr.cpu, err = cpuSeconds(p.pids); err != nil {
		return nil, err
	}
	return &pr, nil
}

func (r *Result) fill(p *phaseFlags, before, after *probe) {
	r.Config, r.Phase, r.Round, r.Expect = p.config, p.phase, p.round, p.expect
	r.CPU = map[string]float64{}
	for k, v := range after.cpu {
		r.CPU[k] = v - before.cpu[k]
	}
	r.Admission = diffSeries(before.metrics, after.metrics)
	r.Webhook = diffSeries(before.webhook, after.webhook)
	r.Conns = diffConns(before.conns, after.conns)
}

func (r *Result) write(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// cpuSeconds reads utime+stime of each NAME=PID from /proc/PID/stat
// (fields 14 and 15 after the parenthesised command name, in clock ticks:
// USER_HZ is 100 on every Linux ABI).
func cpuSeconds(spec string) (map[string]float64, error) {
	out := map[string]float64{}
	if spec == "" {
		return out, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		name, pid, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("-pids %q: NAME=PID,...", spec)
		}
		data, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return nil, fmt.Errorf("%s (pid %s): %v", name, pid, err)
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			return nil, fmt.Errorf("/proc/%s/stat: too few fields", pid)
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		out[name] = (ut + st) / 100
	}
	return out, nil
}

// percentile of sorted values (nearest rank).
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func latencyStats(r *Result, ms []float64) {
	sort.Float64s(ms)
	if len(ms) == 0 {
		return
	}
	sum := 0.0
	for _, v := range ms {
		sum += v
	}
	r.P50ms = percentile(ms, 0.50)
	r.P99ms = percentile(ms, 0.99)
	r.MeanMs = sum / float64(len(ms))
	r.MaxMs = ms[len(ms)-1]
}
