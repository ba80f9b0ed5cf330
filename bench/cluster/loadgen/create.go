package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"sync"
	"time"
)

// runCreate: -count pods from -pod, named PREFIX-i, created by -clients
// concurrent clients, each waiting for its answer before the next create.
func runCreate(args []string) error {
	fs := flag.NewFlagSet("create", flag.ExitOnError)
	var api apiFlags
	var ph phaseFlags
	api.register(fs)
	ph.register(fs)
	ns := fs.String("namespace", "", "namespace to create the pods in")
	podFile := fs.String("pod", "", "pod JSON file")
	prefix := fs.String("prefix", "pod", "pod name prefix")
	count := fs.Int("count", 100, "pods to create")
	clients := fs.Int("clients", 1, "concurrent clients")
	fs.Parse(args)
	if err := ph.check(); err != nil {
		return err
	}
	if *ns == "" || *podFile == "" || *count < 1 || *clients < 1 {
		return fmt.Errorf("-namespace, -pod, -count >= 1 and -clients >= 1 are required")
	}
	pod, err := readObject(*podFile)
	if err != nil {
		return err
	}
	c, err := newAPIClient(&api, *clients)
	if err != nil {
		return err
	}
	bodies := make([][]byte, *count)
	for i := range bodies {
		if bodies[i], err = podWithName(pod, fmt.Sprintf("%s-%d", *prefix, i)); err != nil {
			return err
		}
	}
	before, err := takeProbe(c, &ph)
	if err != nil {
		return err
	}
	r := createAll(c, podPath(*ns), bodies, *clients)
	after, err := takeProbe(c, &ph)
	if err != nil {
		return err
	}
	r.fill(&ph, before, after)
	return r.write(ph.out)
}

type createOutcome struct {
	ms      float64
	err     string
	mutated bool
	warned  bool
}

// createAll posts every body, clients at a time, and summarises.
func createAll(c *apiClient, path string, bodies [][]byte, clients int) *Result {
	outs := make([]createOutcome, len(bodies))
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				outs[i] = createOne(c, path, bodies[i])
			}
		}()
	}
	for i := range bodies {
		next <- i
	}
	close(next)
	wg.Wait()
	wall := time.Since(start).Seconds()

	r := &Result{Clients: clients, Count: len(bodies), WallSeconds: wall,
		PerSecond: float64(len(bodies)) / wall}
	var ms []float64
	for _, o := range outs {
		if o.err != "" {
			r.Failed++
			if r.FirstError == "" {
				r.FirstError = o.err
			}
			continue
		}
		ms = append(ms, o.ms)
		if o.mutated {
			r.Mutated++
		}
		if o.warned {
			r.Warnings++
		}
	}
	latencyStats(r, ms)
	return r
}

func createOne(c *apiClient, path string, body []byte) createOutcome {
	t0 := time.Now()
	code, data, hdr, err := c.do("POST", path, body)
	o := createOutcome{ms: float64(time.Since(t0).Microseconds()) / 1000}
	switch {
	case err != nil:
		o.err = err.Error()
	case code != 201:
		o.err = fmt.Sprintf("%d %s", code, firstLine(data))
	default:
		var pod obj
		if json.Unmarshal(data, &pod) == nil {
			o.mutated = isMutated(pod)
		}
		o.warned = len(hdr.Values("Warning")) > 0
	}
	return o
}
