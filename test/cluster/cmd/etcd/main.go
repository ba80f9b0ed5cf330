// Command etcd is a single-member etcd for the local test control plane
// (test/cluster/up.sh).  It embeds go.etcd.io/etcd/server/v3/embed at the
// version k8s.io/kubernetes itself requires, so the storage backend the
// apiserver is tested against upstream is the one we run, and no separate
// etcd download is needed.
//
// Only loopback URLs are accepted: this is a throwaway, unauthenticated,
// plain-HTTP etcd and must never be reachable from outside the machine.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	var (
		name       = flag.String("name", "local", "member name")
		dataDir    = flag.String("data-dir", "", "directory for the member's data (required)")
		clientURL  = flag.String("listen-client-url", "http://127.0.0.1:2379", "client URL (loopback only); also advertised")
		peerURL    = flag.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL (loopback only); also advertised")
		logLevel   = flag.String("log-level", "warn", "debug, info, warn, error")
		noFsync    = flag.Bool("unsafe-no-fsync", true, "skip fsync: much faster on CI disks; data is disposable anyway")
		readyLimit = flag.Duration("ready-timeout", 60*time.Second, "give up if the server is not ready within this time")
	)
	flag.Parse()
	if *dataDir == "" {
		fatalf("--data-dir is required")
	}

	cfg := embed.NewConfig()
	cfg.Name = *name
	cfg.Dir = *dataDir
	cfg.LogLevel = *logLevel
	cfg.UnsafeNoFsync = *noFsync
	cu := loopbackURL("listen-client-url", *clientURL)
	pu := loopbackURL("listen-peer-url", *peerURL)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	// NewConfig computed the initial cluster from the default peer URL;
	// recompute it now that the peer URL is ours, or bootstrap fails with
	// "couldn't find local name in the initial cluster configuration".
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fatalf("start: %v", err)
	}

	// Register for signals before waiting for readiness so a SIGTERM from
	// down.sh during start-up still ends in a clean Close().
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)

	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcd: ready, serving clients on %s\n", cu.String())
	case err := <-e.Err():
		e.Close()
		fatalf("failed before becoming ready: %v", err)
	case s := <-sig:
		e.Close()
		fmt.Fprintf(os.Stderr, "etcd: %v before ready, stopped\n", s)
		return
	case <-time.After(*readyLimit):
		e.Server.Stop()
		e.Close()
		fatalf("not ready after %v", *readyLimit)
	}

	select {
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: %v, shutting down\n", s)
		e.Close()
	case err := <-e.Err():
		e.Close()
		fatalf("server error: %v", err)
	}
}

// loopbackURL parses u and insists on http://<loopback IP>:<port>.
func loopbackURL(flagName, u string) url.URL {
	p, err := url.Parse(u)
	if err != nil {
		fatalf("--%s: %v", flagName, err)
	}
	ip := net.ParseIP(p.Hostname())
	if p.Scheme != "http" || ip == nil || !ip.IsLoopback() || p.Port() == "" {
		fatalf("--%s=%q: want http://127.0.0.1:PORT (loopback IP, explicit port)", flagName, u)
	}
	return *p
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "etcd: "+format+"\n", args...)
	os.Exit(1)
}
