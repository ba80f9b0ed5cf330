// Package realcluster drives rdma-webhook through a real control plane: an
// embedded etcd, kube-apiserver and kube-controller-manager built from
// k8s.io/kubernetes, the Kubeflow training-operator v1, and the JobSet,
// Kubeflow Trainer v2 and mpi-operator controllers, all on 127.0.0.1
// (test/cluster/up.sh with CLUSTER_JOBS=1). The webhook is installed from manifests/
// with kubectl exactly as an admin installs it (install-webhook.sh) and runs
// on the host with the Deployment's flags and its service account's token.
//
// No kubelet and no scheduler: pods stay Pending, after admission, where the
// webhook's work is done. Every assertion is on what the apiserver stored.
//
// TestMain starts the whole cluster in build/cluster-test and stops every
// process it started when the tests end, pass or fail; `make test` also
// runs test/cluster/down.sh after it, for a test binary that was killed.
package realcluster

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The cluster every test shares, set up by TestMain.
var (
	root       string // the repository
	clusterDir string // build/cluster-test: env, logs, pids, certs
	kubectlBin string
	kubeconfig string
	clientset  *kubernetes.Clientset
	webhookLog string // the webhook's stderr: one JSON line per admission
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	var err error
	if root, err = filepath.Abs("../../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	clusterDir = filepath.Join(root, "build", "cluster-test")
	if v := os.Getenv("RDMA_CLUSTER_TEST_DIR"); v != "" {
		clusterDir = v
	}
	// A run that was killed may have left its cluster behind.
	_ = script("down.sh", nil, clusterDir)
	if err := os.RemoveAll(clusterDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.MkdirAll(clusterDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stopOnSignal()
	defer func() {
		if err := script("down.sh", nil, clusterDir); err != nil {
			fmt.Fprintln(os.Stderr, "down.sh:", err)
		}
	}()
	if err := startCluster(); err != nil {
		fmt.Fprintln(os.Stderr, "real-cluster suite: cannot start the control plane:", err)
		return 1
	}
	rc := m.Run()
	// The webhook's exit, like a rollout's SIGTERM, must be clean: with the
	// ASan build, leaks and errors are in its log.
	if err := script("webhook.sh", webhookEnv, "stop", clusterDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if report := sanitizerReport(webhookLog); report != "" {
		fmt.Fprintln(os.Stderr, "real-cluster suite: the webhook's sanitizer report:\n"+report)
		return 1
	}
	return rc
}

// sanitizerReport returns the ASan/UBSan/LSan lines of the webhook's log.
func sanitizerReport(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "cannot read " + path + ": " + err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "Sanitizer") || strings.Contains(l, "runtime error:") || strings.HasPrefix(l, "    #") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// stopOnSignal stops the cluster when the test binary is interrupted
// (go test's own timeout sends SIGQUIT, which is caught too).
func stopOnSignal() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT)
	go func() {
		s := <-c
		_ = script("down.sh", nil, clusterDir)
		fmt.Fprintln(os.Stderr, "real-cluster suite: stopped the cluster on", s)
		os.Exit(2)
	}()
}

func startCluster() error {
	// CLUSTER_JOBS=1: JobSet, Kubeflow Trainer v2 and mpi-operator too, for
	// jobkinds_test.go's TrainJobs, JobSets and MPIJobs.
	if err := script("up.sh", []string{"CLUSTER_JOBS=1"}, clusterDir); err != nil {
		return err
	}
	env, err := readEnv(filepath.Join(clusterDir, "env"))
	if err != nil {
		return err
	}
	kubeconfig, kubectlBin = env["KUBECONFIG"], env["KUBECTL"]
	if kubeconfig == "" || kubectlBin == "" {
		return fmt.Errorf("%s/env lacks KUBECONFIG or KUBECTL", clusterDir)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	mport, err := freePort()
	if err != nil {
		return err
	}
	webhookEnv = []string{"WEBHOOK_PORT=" + port, "WEBHOOK_METRICS_PORT=" + mport}
	metricsAddr = "127.0.0.1:" + mport
	if err := script("install-webhook.sh", webhookEnv, clusterDir); err != nil {
		return err
	}
	webhookLog = filepath.Join(clusterDir, "logs", "webhook.log")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	clientset, err = kubernetes.NewForConfig(cfg)
	return err
}

// webhookEnv holds the ports install-webhook.sh was given, for restarts.
var (
	webhookEnv  []string
	metricsAddr string
)

// script runs test/cluster/NAME with args, its output on the test's stderr.
func script(name string, env []string, args ...string) error {
	cmd := exec.Command(filepath.Join(root, "test", "cluster", name), args...)
	cmd.Env = append(os.Environ(), env...)
	if b := os.Getenv("RDMA_WEBHOOK_BIN"); b != "" {
		cmd.Env = append(cmd.Env, "RDMA_WEBHOOK_BIN="+b)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return nil
}

// readEnv reads the KEY=VALUE lines up.sh writes (no quoting).
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = strings.Trim(v, `"'`)
		}
	}
	return env, sc.Err()
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}
