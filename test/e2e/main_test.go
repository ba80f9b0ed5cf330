package e2e

import (
	"fmt"
	"os"
	"testing"
)

// Paths are relative to test/e2e, where `go test` runs.
const (
	defaultBinary   = "../../build/rdma-webhook"
	profilesPath    = "../../manifests/profiles.json"
	localPodsGlob   = "../pods/*.json"
	validatorDir    = "../validate"
	validatorScript = "../validate/validate.mjs"
)

// srv is the webhook under test, started once for the whole suite.
var srv *server

func binaryPath() string {
	if p := os.Getenv("RDMA_WEBHOOK_BIN"); p != "" {
		return p
	}
	return defaultBinary
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := checkPrerequisites(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "rdma-webhook-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if certSetsDir, err = os.MkdirTemp(dir, "cert-sets-"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}

	srv, err = startServer(binaryPath(), dir, profilesPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the webhook: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := srv.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: the webhook server: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// checkPrerequisites fails early, with what to do, when a part is missing.
func checkPrerequisites() error {
	if _, err := os.Stat(binaryPath()); err != nil {
		return fmt.Errorf("no webhook binary at %s (run `make build`, or set RDMA_WEBHOOK_BIN): %v",
			binaryPath(), err)
	}
	if _, err := os.Stat(validatorDir + "/node_modules/kubernetes-models"); err != nil {
		return fmt.Errorf("the schema validator is not installed (run `npm ci` in test/validate): %v", err)
	}
	return nil
}
