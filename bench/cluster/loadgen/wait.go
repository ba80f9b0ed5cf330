package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"time"
)

// runWait: dry-run creates of -pod until the answer is -expect three times
// in a row. A webhook configuration or a policy just created reaches the
// apiserver's admission chain through an informer, a moment later; the
// measured phases must not start before it is in place (or gone).
func runWait(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ExitOnError)
	var api apiFlags
	api.register(fs)
	ns := fs.String("namespace", "", "namespace")
	podFile := fs.String("pod", "", "pod JSON file")
	expect := fs.String("expect", "mutated", "mutated or unchanged")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after")
	fs.Parse(args)
	if *ns == "" || *podFile == "" {
		return fmt.Errorf("-namespace and -pod are required")
	}
	pod, err := readObject(*podFile)
	if err != nil {
		return err
	}
	c, err := newAPIClient(&api, 1)
	if err != nil {
		return err
	}
	body, err := podWithName(pod, "loadgen-wait")
	if err != nil {
		return err
	}
	want := *expect == "mutated"
	deadline := time.Now().Add(*timeout)
	for streak, last := 0, ""; streak < 3; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the pod did not come back %s within %v (last: %s)", *expect, *timeout, last)
		}
		code, data, _, err := c.do("POST", podPath(*ns)+"?dryRun=All", body)
		var got obj
		switch {
		case err != nil:
			last = err.Error()
		case code != 201:
			last = fmt.Sprintf("%d %s", code, firstLine(data))
		case json.Unmarshal(data, &got) != nil:
			last = "an answer that is not JSON"
		default:
			last = fmt.Sprintf("mutated=%v", isMutated(got))
			if isMutated(got) == want {
				streak++
				continue
			}
		}
		streak = 0
	}
	return nil
}
