package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// runSubmit: watch the pods of -selector, POST -object to -path, and time
// until -want distinct pods have been created by the controllers (a
// PyTorchJob's through the training-operator, a Deployment's through the
// controller-manager).
func runSubmit(args []string) error {
	fs := flag.NewFlagSet("submit", flag.ExitOnError)
	var api apiFlags
	var ph phaseFlags
	api.register(fs)
	ph.register(fs)
	ns := fs.String("namespace", "", "namespace of the pods")
	objFile := fs.String("object", "", "JSON object to create")
	path := fs.String("path", "", "API path to POST it to")
	selector := fs.String("selector", "", "label selector of its pods")
	want := fs.Int("want", 0, "pods to wait for")
	part := fs.String("part", "", "LABEL=VALUE: also time the pods with this label, apart")
	partWant := fs.Int("part-want", 0, "how many pods -part names")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after")
	fs.Parse(args)
	if err := ph.check(); err != nil {
		return err
	}
	if *ns == "" || *objFile == "" || *path == "" || *selector == "" || *want < 1 {
		return fmt.Errorf("-namespace, -object, -path, -selector and -want are required")
	}
	body, err := os.ReadFile(*objFile)
	if err != nil {
		return err
	}
	c, err := newAPIClient(&api, 2)
	if err != nil {
		return err
	}
	watch, err := startWatch(&api, *ns, *selector)
	if err != nil {
		return err
	}
	before, err := takeProbe(c, &ph)
	if err != nil {
		return err
	}
	start := time.Now()
	code, data, _, err := c.do("POST", *path, body)
	if err != nil {
		return err
	}
	if code != 201 {
		return fmt.Errorf("POST %s: %d %s", *path, code, firstLine(data))
	}
	r := &Result{Count: *want}
	watch.partKey, watch.partValue, _ = strings.Cut(*part, "=")
	watch.partWant = *partWant
	if err := watch.until(r, *want, start, *timeout); err != nil {
		return err
	}
	after, err := takeProbe(c, &ph)
	if err != nil {
		return err
	}
	r.PerSecond = float64(*want) / r.AllPodsSeconds
	r.WallSeconds = r.AllPodsSeconds
	r.fill(&ph, before, after)
	return r.write(ph.out)
}

type podWatch struct {
	dec  *json.Decoder
	done func()
	// The pods of one label (-part), e.g. a PyTorchJob's workers: the
	// training-operator creates a replica type's pods, then their Services,
	// then the next type's, in Go's map order, so whether the one master pod
	// comes first or after 511 worker Services changes "all pods" by half.
	partKey, partValue string
	partWant, parts    int
}

// startWatch lists the selector's pods for a resourceVersion and watches
// from there, so that no pod made after the POST can be missed.
func startWatch(api *apiFlags, ns, selector string) (*podWatch, error) {
	c, err := newAPIClient(api, 1)
	if err != nil {
		return nil, err
	}
	c.http.Timeout = 0 // a watch is a long-lived stream
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []interface{} `json:"items"`
	}
	sel := url.QueryEscape(selector)
	if err := c.getJSON(podPath(ns)+"?labelSelector="+sel, &list); err != nil {
		return nil, err
	}
	if len(list.Items) != 0 {
		return nil, fmt.Errorf("%d pods of %q exist before the submit", len(list.Items), selector)
	}
	resp, err := c.http.Get(c.base + podPath(ns) + "?watch=1&labelSelector=" + sel +
		"&resourceVersion=" + list.Metadata.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return nil, fmt.Errorf("watch: %d", resp.StatusCode)
	}
	return &podWatch{dec: json.NewDecoder(resp.Body), done: func() { resp.Body.Close() }}, nil
}

// until reads ADDED events until want distinct pods, recording the time of
// the first and of the last one after start.
func (w *podWatch) until(r *Result, want int, start time.Time, timeout time.Duration) error {
	defer w.done()
	seen := map[string]bool{}
	timer := time.AfterFunc(timeout, w.done)
	defer timer.Stop()
	for len(seen) < want {
		var ev struct {
			Type   string `json:"type"`
			Object obj    `json:"object"`
		}
		if err := w.dec.Decode(&ev); err != nil {
			return fmt.Errorf("after %d of %d pods in %v: %v", len(seen), want, time.Since(start).Round(time.Second), err)
		}
		if ev.Type != "ADDED" {
			continue
		}
		meta, _ := ev.Object["metadata"].(obj)
		name, _ := meta["name"].(string)
		if seen[name] {
			continue
		}
		seen[name] = true
		if len(seen) == 1 {
			r.FirstPodSeconds = time.Since(start).Seconds()
		}
		if isMutated(ev.Object) {
			r.Mutated++
		}
		w.countPart(r, meta, start)
	}
	r.AllPodsSeconds = time.Since(start).Seconds()
	return nil
}

func (w *podWatch) countPart(r *Result, meta obj, start time.Time) {
	labels, _ := meta["labels"].(obj)
	if w.partKey == "" || labels[w.partKey] != w.partValue {
		return
	}
	w.parts++
	now := time.Since(start).Seconds()
	if w.parts == 1 {
		r.PartFirstSeconds = now
	}
	if w.parts == w.partWant {
		r.PartAllSeconds = now
	}
}
