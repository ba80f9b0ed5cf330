package e2e

// The Dockerfile, checked without a container engine: the runtime stage
// installs every Debian package the binary's shared libraries come from, the
// build stage builds as CI does, the image runs as the Deployment expects,
// and .dockerignore keeps what the Dockerfile copies.

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// dockerStages returns the build stage (the first) and the runtime stage
// (the last).
func dockerStages(t *testing.T) (build, runtime dockerStage) {
	t.Helper()
	stages := parseDockerfile(t, dockerfilePath)
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: expected a multi-stage build, got %d stage(s)", len(stages))
	}
	return stages[0], stages[len(stages)-1]
}

// TestDockerfileRuntimeLibraries: every library `ldd build/rdma-webhook`
// lists comes from a package that the runtime stage's `apt-get install`
// names, or that one of those depends on (dpkg's Depends, recursively), or
// from libc6 (in every Debian image).
func TestDockerfileRuntimeLibraries(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(releaseBinary); err != nil {
		t.Skipf("the Dockerfile ships `make build`'s %s, which is not built: %v", releaseBinary, err)
	}
	_, runtime := dockerStages(t)
	if !strings.HasPrefix(runtime.from, "debian:12") {
		t.Errorf("runtime stage FROM %s, expected debian:12-slim (the libraries' Debian release)", runtime.from)
	}
	installed := runtime.aptInstalled()
	if len(installed) == 0 {
		t.Fatal("the runtime stage installs no packages with apt-get install")
	}
	for _, p := range installed {
		if strings.HasSuffix(p, "-dev") || p == "gcc" || p == "make" || p == "build-essential" {
			t.Errorf("the runtime stage installs the build package %s", p)
		}
	}
	provided := dependencyClosure(t, installed)

	needed := map[string][]string{} // package -> libraries
	for _, lib := range lddLibraries(t, releaseBinary) {
		pkg := packageOfFile(t, lib)
		needed[pkg] = append(needed[pkg], filepath.Base(lib))
	}
	var names []string
	for pkg := range needed {
		names = append(names, pkg)
	}
	sort.Strings(names)
	for _, pkg := range names {
		if pkg == "libc6" {
			continue
		}
		if !provided[pkg] {
			t.Errorf("%s (for %s) is neither installed by the runtime stage (%s) nor a dependency of those",
				pkg, strings.Join(needed[pkg], ", "), strings.Join(installed, " "))
		}
	}
	t.Logf("libraries from %v; runtime stage installs %v", names, installed)
}

func TestDockerfileStages(t *testing.T) {
	t.Parallel()
	build, runtime := dockerStages(t)
	if !strings.HasPrefix(build.from, "debian:12") || build.name == "" {
		t.Errorf("build stage: FROM %s AS %q, expected a named debian:12 stage", build.from, build.name)
	}
	if !strings.HasSuffix(runtime.from, "-slim") {
		t.Errorf("runtime stage FROM %s, expected a -slim image", runtime.from)
	}
	// The build stage installs with CI's script and builds with CI's command.
	var runs []string
	for _, in := range build.instrsOf("RUN") {
		runs = append(runs, in.args)
	}
	all := strings.Join(runs, " && ")
	if !strings.Contains(all, ".ci/deps build") {
		t.Errorf("build stage: does not install the build packages with `.ci/deps build` as CI does: %s", all)
	}
	if !strings.Contains(all, "make build") {
		t.Errorf("build stage: does not run `make build`: %s", all)
	}

	// The runtime stage copies the binary from the build stage.
	copied := false
	for _, in := range runtime.instrsOf("COPY") {
		f := strings.Fields(in.args)
		if len(f) == 3 && f[0] == "--from="+build.name && strings.HasSuffix(f[1], "build/rdma-webhook") &&
			f[2] == "/usr/local/bin/rdma-webhook" {
			copied = true
		}
	}
	if !copied {
		t.Errorf("runtime stage: no COPY --from=%s .../build/rdma-webhook /usr/local/bin/rdma-webhook", build.name)
	}
	users := runtime.instrsOf("USER")
	if len(users) == 0 || users[len(users)-1].args != "65532:65532" {
		t.Errorf("runtime stage: expected USER 65532:65532 (numeric, as the Deployment's runAsUser), got %v", users)
	}
	eps := runtime.instrsOf("ENTRYPOINT")
	if len(eps) != 1 || !sameStrings(execForm(t, eps[0]), []string{"/usr/local/bin/rdma-webhook"}) {
		t.Errorf("runtime stage: expected ENTRYPOINT [\"/usr/local/bin/rdma-webhook\"], got %v", eps)
	}
	cmds := runtime.instrsOf("CMD")
	if len(cmds) != 1 {
		t.Fatalf("runtime stage: expected one CMD, got %d", len(cmds))
	}
	if got := execForm(t, cmds[0]); !sameStrings(got, wantServeArgs) {
		t.Errorf("CMD %q, expected the serve args %q", got, wantServeArgs)
	}
	// The Deployment relies on the image for the preStop sleep.
	dep := findObject(t, kustomize(t, manifestsDir), "Deployment", webhookName)
	for _, c := range pathArr(dep, "spec", "template", "spec", "containers") {
		if cmd := stringsOf(path(c, "lifecycle", "preStop", "exec", "command")); len(cmd) > 0 {
			if _, err := os.Stat(cmd[0]); err != nil || !strings.HasPrefix(cmd[0], "/bin/") {
				t.Errorf("preStop runs %s, which a Debian image does not have at that path", cmd[0])
			}
		}
	}
}

// copySources returns the build-context paths the Dockerfile's COPY
// instructions read (COPY --from=... reads a stage, not the context).
func copySources(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, st := range parseDockerfile(t, dockerfilePath) {
		for _, in := range st.instrsOf("COPY") {
			f := strings.Fields(in.args)
			var args []string
			fromStage := false
			for _, a := range f {
				if strings.HasPrefix(a, "--") {
					if strings.HasPrefix(a, "--from=") {
						fromStage = true
					}
					continue
				}
				args = append(args, a)
			}
			if fromStage || len(args) < 2 {
				continue
			}
			out = append(out, args[:len(args)-1]...)
		}
	}
	return out
}

func TestDockerignoreKeepsWhatTheDockerfileCopies(t *testing.T) {
	t.Parallel()
	patterns := readDockerignore(t, dockerignorePath)
	sources := copySources(t)
	if len(sources) == 0 {
		t.Fatal("the Dockerfile copies nothing from the build context")
	}
	files := 0
	for _, src := range sources {
		root := filepath.Join(repoRoot, filepath.Clean(src))
		err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if info.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			files++
			if ignored(patterns, filepath.ToSlash(rel)) {
				t.Errorf(".dockerignore leaves out %s, which `COPY %s` needs", rel, src)
			}
			return nil
		})
		if err != nil {
			t.Errorf("COPY %s: %v", src, err)
		}
	}
	// And it keeps out what has no place in an image.
	for _, p := range []string{"build/rdma-webhook", "build-asan/rdma-webhook", "certs/dev/tls.key",
		"test/validate/node_modules/kubernetes-models/package.json", ".git/HEAD"} {
		if !ignored(patterns, p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	t.Logf("%d files copied from the context by %v", files, sources)
}

func TestDockerignoreMatching(t *testing.T) {
	t.Parallel()
	patterns := []ignorePattern{{false, "*"}, {true, "webhook"}, {true, ".ci/deps"}, {false, "webhook/*.o"}}
	for p, want := range map[string]bool{
		"Makefile": true, "webhook/cmd/main.c": false, "webhook/main.o": true, ".ci/deps": false,
		".ci/run": true, "build/x": true,
	} {
		if got := ignored(patterns, p); got != want {
			t.Errorf("ignored(%s) = %v, expected %v", p, got, want)
		}
	}
}
