package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// profile is what run.sh's profiling pass left for one configuration.
type profile struct {
	load      *Result
	seconds   float64  // the apiserver profile's duration
	pluginCPU float64  // CPU seconds in the mutating admission plugins
	frames    []string // admission frames of `go tool pprof -top -cum`
	perf      []string // perf's top symbols of the webhook process
}

var (
	pprofDuration = regexp.MustCompile(`Duration: ([0-9.]+)s`)
	// The MutatingAdmissionWebhook and MutatingAdmissionPolicy plugins'
	// entry points (k8s.io/apiserver/pkg/admission/plugin/{webhook,policy}/mutating).
	pluginAdmit = regexp.MustCompile(`plugin/(webhook|policy)/mutating\.\(\*Plugin\)\.Admit$`)
	framesShown = regexp.MustCompile(`admission|json-patch|jsonpatch|cel-go|/cel\.`)
)

func loadProfile(dir, config string) (*profile, error) {
	base := filepath.Join(dir, config)
	data, err := os.ReadFile(base + "-load.json")
	if err != nil {
		return nil, err
	}
	p := &profile{load: &Result{}}
	if err := json.Unmarshal(data, p.load); err != nil {
		return nil, err
	}
	top, err := os.ReadFile(base + "-apiserver.txt")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(top), "\n") {
		if m := pprofDuration.FindStringSubmatch(line); m != nil {
			p.seconds, _ = strconv.ParseFloat(m[1], 64)
		}
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[3], "s") {
			continue
		}
		name := strings.Join(f[5:], " ")
		if pluginAdmit.MatchString(name) {
			p.pluginCPU += pprofSeconds(f[3])
		}
		if framesShown.MatchString(name) && len(p.frames) < 20 {
			p.frames = append(p.frames, line)
		}
	}
	if perf, err := os.ReadFile(base + "-perf.txt"); err == nil {
		p.perf = strings.Split(strings.TrimRight(string(perf), "\n"), "\n")
	}
	return p, nil
}

// pprofSeconds reads pprof's "1.23s" or "450ms".
func pprofSeconds(s string) float64 {
	if strings.HasSuffix(s, "ms") {
		v, _ := strconv.ParseFloat(strings.TrimSuffix(s, "ms"), 64)
		return v / 1000
	}
	v, _ := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64)
	return v
}

func (p *report) whereTimeGoes(w func(string, ...interface{}), dir string) {
	w("## Where the time goes\n\n")
	p.webhookSideTable(w)
	if dir == "" {
		return
	}
	w("From the profiling pass (run.sh): worker pods created by 8 clients while the apiserver's CPU profile ")
	w("(/debug/pprof/profile) and perf's samples of the webhook were taken. *Plugin CPU* is the cumulative CPU ")
	w("the apiserver spent in the MutatingAdmissionWebhook or MutatingAdmissionPolicy plugin (encoding the ")
	w("review, the call, applying the patch, decoding the result; or evaluating the policy), per pod created ")
	w("in the profile's window.\n\n")
	w("| configuration | creates/s | apiserver CPU in the mutating plugin, ms/pod | webhook CPU ms/pod |\n|---|---:|---:|---:|\n")
	var shown []*profile
	var names []string
	for _, cfg := range p.configs {
		if cfg == "floor" {
			continue
		}
		pr, err := loadProfile(dir, cfg)
		if err != nil {
			p.failures = append(p.failures, fmt.Sprintf("profile of %s: %v", cfg, err))
			continue
		}
		pods := pr.load.PerSecond * pr.seconds
		hook := "-"
		if s := serverOf(cfg); s != "" {
			hook = fmt.Sprintf("%.3f", pr.load.CPU[s]*1000/float64(pr.load.Count))
		}
		w("| %s | %.0f | %.3f | %s |\n", cfg, pr.load.PerSecond, pr.pluginCPU*1000/pods, hook)
		shown = append(shown, pr)
		names = append(names, cfg)
	}
	w("\n")
	p.boundNote(w, shown, names)
	for i, pr := range shown {
		w("<details><summary>%s: the apiserver's admission frames (pprof -top -cum)</summary>\n\n```\n%s\n```\n", names[i],
			strings.Join(pr.frames, "\n"))
		if len(pr.perf) > 0 {
			w("\nThe webhook process (perf report, self time):\n\n```\n%s\n```\n", strings.Join(pr.perf, "\n"))
		}
		w("</details>\n\n")
	}
}

// webhookSideTable sets the apiserver's view of each webhook call beside the
// webhook's own, and the connections it used, at 8 clients.
func (p *report) webhookSideTable(w func(string, ...interface{})) {
	ph := "create-8"
	w("At 8 clients (create-8, medians over the rounds): the webhook call as the apiserver times it, beside the ")
	w("time rdma-webhook itself measures from a request's first byte to its answer ")
	w("(`rdma_webhook_admission_duration_seconds`); the difference is the transport, TLS and waiting for a ")
	w("CPU. *New connections*: connections to the webhook's port established during the phase and still open ")
	w("at its end, of all open then (kept-alive connections are reused, not new).\n\n")
	w("| configuration | call ms (apiserver) | of it in rdma-webhook ms | new / open connections | added apiserver CPU ms/pod | webhook CPU ms/pod |\n")
	w("|---|---:|---:|---:|---:|---:|\n")
	for _, cfg := range []string{"rdma-webhook", "go-webhook"} {
		if p.over(cfg, ph, p50).n == 0 {
			continue
		}
		call := p.over(cfg, ph, func(r *Result) float64 {
			s := seriesMatching(r, famWebhook, `type="admit"`)
			return s.Sum * 1000 / s.Count
		})
		own := "-"
		if cfg == "rdma-webhook" {
			own = p.over(cfg, ph, func(r *Result) float64 {
				s := r.Webhook[webhookLatency+"{}"]
				return s.Sum * 1000 / s.Count
			}).fmt(3)
		}
		nw := p.over(cfg, ph, func(r *Result) float64 { return float64(r.Conns[cfg].New) })
		open := p.over(cfg, ph, func(r *Result) float64 { return float64(r.Conns[cfg].Established) })
		api := p.added(cfg, ph, cpuPer1000("apiserver"))
		hook := p.over(cfg, ph, cpuPer1000(cfg))
		w("| %s | %s | %s | %s / %s | %s | %s |\n", cfg, call.fmt(3), own, nw.fmt(0), open.fmt(0), api.fmt(3), hook.fmt(3))
	}
	w("\n")
}

// boundNote puts the profile's figures into the two webhook targets' terms:
// the CPU the apiserver spends calling any webhook is the same for both, so
// it bounds how far below the Go webhook's added time a webhook can go.
func (p *report) boundNote(w func(string, ...interface{}), shown []*profile, names []string) {
	byName := map[string]*profile{}
	for i, pr := range shown {
		byName[names[i]] = pr
	}
	ours, gow := byName["rdma-webhook"], byName["go-webhook"]
	if ours == nil || gow == nil {
		return
	}
	perPod := func(pr *profile, cfg string) (api, own float64) {
		pods := pr.load.PerSecond * pr.seconds
		return pr.pluginCPU * 1000 / pods, pr.load.CPU[cfg] * 1000 / float64(pr.load.Count)
	}
	oa, oo := perPod(ours, "rdma-webhook")
	ga, go_ := perPod(gow, "go-webhook")
	w("Per pod, the apiserver spends %.2f ms of CPU calling rdma-webhook and %.2f ms calling the Go webhook; ", oa, ga)
	w("the webhooks themselves spend %.2f and %.2f ms. On CPUs that the apiserver, etcd, the clients and the ", oo, go_)
	w("webhook share, added latency follows added CPU: rdma-webhook adds %.2f ms of CPU a pod, %.0f%% of the Go ", oa+oo, 100*(oa+oo)/(ga+go_))
	w("webhook's %.2f ms, and a webhook that cost nothing at all would still add the apiserver's %.2f ms, ", ga+go_, ga)
	w("%.0f%% of the Go webhook's.\n\n", 100*ga/(ga+go_))
}
