package e2e

// One version (issue 26): the top-level VERSION file is its only source.
// The binary the Makefile built reports it (--version, build_info), the
// Dockerfile's VERSION build argument defaults to it and stamps both the
// binary and the image's org.opencontainers.image.version label, and the
// shipped manifests install the image of that tag.

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// versionFile is the content of VERSION: one line, a version.
func versionFile(t *testing.T) string {
	t.Helper()
	raw := string(readFile(t, filepath.Join(repoRoot, "VERSION")))
	v := strings.TrimSuffix(raw, "\n")
	if !regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+~_-]*$`).MatchString(v) {
		t.Fatalf("VERSION holds %q: expected one line with the version, e.g. 0.1.0", raw)
	}
	return v
}

// TestVersionIsOneValue: --version, the build_info metric, the Dockerfile's
// build argument (its default, the build stage's make and check, the
// runtime stage's label) and the manifests' image tag all say VERSION, and
// webhook/base/version.h holds no second copy of the number.
func TestVersionIsOneValue(t *testing.T) {
	t.Parallel()
	want := versionFile(t)

	res := runBinary(t, nil, "--version")
	if got := strings.TrimSpace(string(res.stdout)); got != "rdma-webhook "+want {
		t.Errorf("--version: expected %q, got %q (built with another VERSION?)", "rdma-webhook "+want, got)
	}
	sample := fmt.Sprintf("rdma_webhook_build_info{version=%q}", want)
	if v, ok := scrape(t)[sample]; !ok || v != 1 {
		t.Errorf("/metrics: expected %s 1, got %v (present %v)", sample, v, ok)
	}

	hdr := string(readFile(t, filepath.Join(repoRoot, "webhook/base/version.h")))
	if m := regexp.MustCompile(`#define RDMA_WEBHOOK_VERSION\s+"`).FindString(hdr); m != "" {
		t.Errorf("webhook/base/version.h defines the version itself (%s...): the VERSION file is its one source", m)
	}

	// The Dockerfile: the global ARG's default, then each stage's use.
	docker := string(readFile(t, dockerfilePath))
	head := docker
	if i := regexp.MustCompile(`(?m)^FROM `).FindStringIndex(docker); i != nil {
		head = docker[:i[0]]
	}
	m := regexp.MustCompile(`(?m)^ARG VERSION=(\S+)\s*$`).FindStringSubmatch(head)
	if m == nil || m[1] != want {
		t.Errorf("Dockerfile: expected `ARG VERSION=%s` before the first FROM (the VERSION file's value), got %v", want, m)
	}
	build, runtime := dockerStages(t)
	for _, st := range []struct {
		name  string
		stage dockerStage
	}{{"build", build}, {"runtime", runtime}} {
		found := false
		for _, in := range st.stage.instrsOf("ARG") {
			found = found || in.args == "VERSION"
		}
		if !found {
			t.Errorf("Dockerfile %s stage: no `ARG VERSION` (the global default is not seen inside a stage without it)", st.name)
		}
	}
	var runs []string
	for _, in := range build.instrsOf("RUN") {
		runs = append(runs, in.args)
	}
	all := strings.Join(runs, " && ")
	for _, w := range []string{`make build VERSION="$VERSION"`, `= "rdma-webhook $VERSION"`} {
		if !strings.Contains(all, w) {
			t.Errorf("Dockerfile build stage: no %s in its RUN lines: %s", w, all)
		}
	}
	copiesVersion := false
	for _, src := range copySources(t) {
		copiesVersion = copiesVersion || src == "VERSION"
	}
	if !copiesVersion {
		t.Errorf("Dockerfile: the build stage does not COPY the VERSION file, which make reads")
	}
	labelled := false
	for _, in := range runtime.instrsOf("LABEL") {
		labelled = labelled || strings.Contains(in.args, `org.opencontainers.image.version="$VERSION"`)
	}
	if !labelled {
		t.Errorf("Dockerfile runtime stage: no LABEL org.opencontainers.image.version=\"$VERSION\"")
	}

	// The image manifests/ installs is the tag of this version.
	dep := findObject(t, kustomize(t, manifestsDir), "Deployment", webhookName)
	for _, c := range pathArr(dep, "spec", "template", "spec", "containers") {
		img, _ := pathStr(c, "image")
		if !strings.HasSuffix(img, ":"+want) {
			t.Errorf("manifests/ install the image %s: expected the tag %s (manifests/kustomization.yaml, images:)", img, want)
		}
	}
}
