package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// seriesMatching sums the series of a family whose labels include all of
// want (each `name="value"`).
func seriesMatching(r *Result, family string, want ...string) Series {
	var s Series
	for k, v := range r.Admission {
		if !strings.HasPrefix(k, family+"{") {
			continue
		}
		ok := true
		for _, l := range want {
			ok = ok && strings.Contains(k, l)
		}
		if ok {
			s.Count += v.Count
			s.Sum += v.Sum
		}
	}
	return s
}

const (
	famWebhook    = "apiserver_admission_webhook_admission_duration_seconds"
	famStep       = "apiserver_admission_step_admission_duration_seconds"
	famController = "apiserver_admission_controller_admission_duration_seconds"
	famPolicy     = "apiserver_mutating_admission_policy_check_duration_seconds"
	admitCreate   = `operation="CREATE"`
)

// webhookCalls counts the mutating webhook calls the apiserver made.
func webhookCalls(r *Result) float64 {
	return seriesMatching(r, famWebhook, `type="admit"`).Count
}

// meanMs of a series, per pod of the phase (a call the apiserver did not
// make counts as zero time, so configurations compare per pod).
func meanPerPodMs(s Series, pods int) float64 {
	return s.Sum * 1000 / float64(pods)
}

func (p *report) apiserverTable(w func(string, ...interface{})) {
	w("## Inside the apiserver (create-8)\n\n")
	w("From the apiserver's own histograms over the create-8 phase: ")
	w("`apiserver_admission_webhook_admission_duration_seconds` (the call as the apiserver times it), ")
	w("`apiserver_admission_controller_admission_duration_seconds` for the MutatingAdmissionWebhook and ")
	w("MutatingAdmissionPolicy plugins, `apiserver_mutating_admission_policy_check_duration_seconds`, and ")
	w("`apiserver_admission_step_admission_duration_seconds` (the whole mutating step). Their buckets start at ")
	w("5 ms, too coarse here, so the table gives sum/count: mean ms per created pod.\n\n")
	w("| configuration | webhook calls/pod | webhook call ms | webhook plugin ms | policy plugin ms | policy check ms | mutating step ms |\n")
	w("|---|---:|---:|---:|---:|---:|---:|\n")
	ph := "create-8"
	for _, cfg := range p.configs {
		per := func(f func(*Result) Series) stat {
			return p.over(cfg, ph, func(r *Result) float64 { return meanPerPodMs(f(r), r.Count) })
		}
		calls := p.over(cfg, ph, func(r *Result) float64 { return webhookCalls(r) / float64(r.Count) })
		hook := per(func(r *Result) Series { return seriesMatching(r, famWebhook, `type="admit"`) })
		plugW := per(func(r *Result) Series {
			return seriesMatching(r, famController, `name="MutatingAdmissionWebhook"`, admitCreate)
		})
		plugP := per(func(r *Result) Series {
			return seriesMatching(r, famController, `name="MutatingAdmissionPolicy"`, admitCreate)
		})
		check := per(func(r *Result) Series { return seriesMatching(r, famPolicy) })
		step := per(func(r *Result) Series { return seriesMatching(r, famStep, `type="admit"`, admitCreate) })
		w("| %s | %s | %s | %s | %s | %s | %s |\n", cfg, calls.fmt(2), hook.fmt(3), plugW.fmt(3),
			plugP.fmt(3), check.fmt(3), step.fmt(3))
	}
	w("\n")
}

func (p *report) targetsTable(w func(string, ...interface{})) {
	ours := p.added("rdma-webhook", "create-8", p99)
	policy := p.added("policy", "create-8", p99)
	gow := p.added("go-webhook", "create-8", p99)
	failed := 0
	for _, r := range p.res {
		failed += r.Failed
	}
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	w("## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	w("| rdma-webhook's added p99 at 8 clients <= 1 ms | %s ms | %s |\n", ours.fmt(2), yes(ours.n > 0 && ours.med <= 1))
	w("| ... <= the MutatingAdmissionPolicy's | %s ms vs %s ms | %s |\n", ours.fmt(2), policy.fmt(2),
		yes(ours.n > 0 && policy.n > 0 && ours.med <= policy.med))
	w("| ... <= half the Go webhook's | %s ms vs %s ms | %s |\n", ours.fmt(2), gow.fmt(2),
		yes(ours.n > 0 && gow.n > 0 && ours.med <= gow.med/2))
	w("| no failed creates, in any configuration and phase | %d failed | %s |\n\n", failed, yes(failed == 0))
}

// check records what makes a run wrong rather than slow.
func (p *report) check() {
	for _, r := range p.sorted() {
		id := fmt.Sprintf("round %d, %s, %s", r.Round, r.Config, r.Phase)
		if r.Failed > 0 {
			p.failures = append(p.failures, fmt.Sprintf("%s: %d failed creates (first: %s)", id, r.Failed, r.FirstError))
		}
		want := 0
		if r.Expect == "mutated" {
			want = r.Count - r.Failed
		}
		if r.Mutated != want {
			p.failures = append(p.failures, fmt.Sprintf("%s: %d of %d pods mutated, want %d", id, r.Mutated, r.Count, want))
		}
		if (r.Phase == "plain-8" || r.Phase == "deploy") && webhookCalls(r) > 0 {
			p.failures = append(p.failures, fmt.Sprintf("%s: %v webhook calls for pods nothing selects", id, webhookCalls(r)))
		}
	}
}

func (p *report) sorted() []*Result {
	var out []*Result
	for _, n := range p.rounds {
		for _, cfg := range p.configs {
			for _, r := range p.res {
				if r.Round == n && r.Config == cfg {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

func (p *report) checksSection(w func(string, ...interface{})) {
	w("## Checks\n\n")
	n := len(p.res)
	if len(p.failures) == 0 {
		w("All %d phases: no failed create; every worker pod came back mutated under rdma-webhook, the Go ", n)
		w("webhook and the policy, and unchanged under the floor; no ordinary pod was mutated, and no webhook ")
		w("was called for one.\n\n")
		return
	}
	for _, f := range p.failures {
		w("- FAILED: %s\n", f)
	}
	w("\n")
}

// plot draws the added p99 of each configuration at each client count, as
// clustered bars with the rounds' range, with gnuplot.
func (p *report) plot(png string) error {
	data, err := os.CreateTemp("", "bench-cluster-*.dat")
	if err != nil {
		return err
	}
	defer os.Remove(data.Name())
	var cols []string
	for _, cfg := range p.configs {
		if cfg != "floor" {
			cols = append(cols, cfg)
		}
	}
	for _, c := range p.clients {
		fmt.Fprintf(data, "%s", c)
		for _, cfg := range cols {
			s := p.added(cfg, "create-"+c, p99)
			fmt.Fprintf(data, " %.3f %.3f %.3f", s.med, s.lo, s.hi)
		}
		fmt.Fprintln(data)
	}
	data.Close()
	var plots []string
	for i, cfg := range cols {
		base := 2 + 3*i
		if i == 0 {
			plots = append(plots, fmt.Sprintf("'%s' using %d:%d:%d:xtic(1) title '%s'", data.Name(), base, base+1, base+2, cfg))
		} else {
			plots = append(plots, fmt.Sprintf("'' using %d:%d:%d title '%s'", base, base+1, base+2, cfg))
		}
	}
	script := fmt.Sprintf(`set terminal png size 900,520 font ",11"
set output '%s'
set title 'Added p99 per pod create over no mutation (median of rounds; whiskers: range)'
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set xlabel 'concurrent clients'
set ylabel 'added p99, ms'
set grid ytics
set key top left
set yrange [*:*]
plot %s
`, png, strings.Join(plots, ", "))
	cmd := exec.Command("gnuplot")
	cmd.Stdin = strings.NewReader(script)
	if outp, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gnuplot: %v: %s", err, outp)
	}
	return nil
}
