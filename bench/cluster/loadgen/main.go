// loadgen: the client side of `make bench-cluster` (bench/cluster/run.sh).
//
// It talks to kube-apiserver directly over HTTPS with the admin client
// certificate, through one HTTP/2 connection shared by all its clients, as
// client-go's clients do, so that the time it measures is the apiserver's and
// the admission chain's, not a client library's rate limiter.
//
//	loadgen create  ...  N pods from a JSON file by C concurrent clients
//	loadgen submit  ...  one object (a job, a Deployment), then the time until
//	                     the controllers have made its pods
//	loadgen wait    ...  dry-run creates until the admission chain in place
//	                     does (or does not) mutate the pod
//	loadgen report  ...  the phase results of a run as Markdown and a plot
//	loadgen freeport N   N free ports of 127.0.0.1
//
// Each measuring subcommand writes one JSON result (result.go) with the
// apiserver's admission metrics and the CPU seconds of the named processes
// over the phase. Standard library only: a module of its own.
package main

import (
	"fmt"
	"os"
)

func usage() {
	fmt.Fprint(os.Stderr, `usage: loadgen create|submit|wait|report|freeport [flags]   (loadgen CMD -h for the flags)
`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "create":
		err = runCreate(os.Args[2:])
	case "submit":
		err = runSubmit(os.Args[2:])
	case "wait":
		err = runWait(os.Args[2:])
	case "report":
		err = runReport(os.Args[2:])
	case "freeport":
		err = runFreePort(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadgen %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
