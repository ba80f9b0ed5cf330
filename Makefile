# rdma-webhook's build and test entry points.
#
#   make run     serve on 127.0.0.1:8443 with the shipped profiles (builds first)
#   make test    the whole suite, through test/suite.sh: the layer and format
#                checks; unit tests natively and under ASan+UBSan; the
#                end-to-end suite over TLS under ASan+UBSan, natively for the
#                tests ASan relaxes, and under valgrind memcheck with the
#                shipped FORTIFY build; the local control plane (built from Go
#                modules) with the ASan binary; a replay of the fuzz corpora.
#                One line per step, a table at the end, logs in build/test-logs.
#   make fuzz    timed fuzzing (FUZZ_SECONDS each); make bench: the server
#                benchmark; make bench-cluster: the time added to pod creation
#                through the local control plane (bench/CLUSTER-RESULTS.md).
#
# `run` and `test` install missing Debian packages first (as root), or say
# which to install. docs/development.md says what each step checks and costs.

CC      ?= cc
# Debian installs clang-format-14 without the unversioned name.
CLANG_FORMAT ?= $(shell command -v clang-format || command -v clang-format-14 || echo clang-format)
PKGS    := libmicrohttpd libcjson openssl gnutls libcurl yaml-0.1
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wvla
BASE    := -std=c11 -D_GNU_SOURCE -pthread $(WARN) -fstack-protector-strong -fPIE
HARDEN  := -D_FORTIFY_SOURCE=2
SAN     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LDFLAGS_ALL := -pie -Wl,-z,relro,-z,now -pthread
# -MMD -MP: each object depends on the headers it includes (build/*.d), not
# on every header.
DEPFLAGS := -MMD -MP

# The version's one source is the file VERSION; `make VERSION=1.2.3` stamps
# another (the Dockerfile passes its VERSION build argument so). The stamp
# file changes only when the version does, so the objects that include
# webhook/base/version.h are rebuilt then and only then.
VERSION ?= $(shell cat VERSION 2>/dev/null)
$(if $(VERSION),,$(error the file VERSION is missing or empty: it holds the version, e.g. 0.1.0))
# It becomes a C string, a metric's label and an image label: no quotes,
# spaces or backslashes.
$(if $(shell printf '%s\n' '$(VERSION)' | grep -Ex '[0-9A-Za-z][0-9A-Za-z.+~_-]*'),,$(error VERSION "$(VERSION)": use letters, digits and . + ~ _ - only))
VERSION_DEF := -DRDMA_WEBHOOK_VERSION='"$(VERSION)"'
VERSION_USERS := $(basename $(notdir $(shell grep -l '"base/version.h"' webhook/*/*.c)))

# One folder per layer (webhook/README.md, "Layers"). Module names are unique
# across folders, so the objects stay flat in build/ and make finds each
# source through vpath; sources include headers by folder ("base/dynbuf.h").
SRCS    := $(wildcard webhook/*/*.c)
vpath %.c $(sort $(dir $(SRCS)))
# The library the unit tests link: every module but the command-line front end.
LIB_SRCS := $(filter-out webhook/cmd/%.c,$(SRCS))
# objs DIR,SOURCES: the objects of SOURCES in DIR.
objs = $(patsubst %.c,$(1)/%.o,$(notdir $(2)))
UNIT_SRCS := $(wildcard test/unit/test_*.c)
# Shared by the unit tests: compiled into each one with its test_*.c.
UNIT_SUPPORT := test/unit/support.c test/unit/support.h test/unit/unit.h

PROFILES ?= manifests/profiles.json
DEV_CERTS := certs/dev
LISTEN  ?= 127.0.0.1:8443
METRICS_LISTEN ?= 127.0.0.1:9090

# The Go tests (test/e2e) and bench/gowebhook are modules of their own,
# built in module mode against the user's module cache, with go.sum as it is
# (readonly) and the Go on PATH (no toolchain switch).
GO_ENV  := GO111MODULE=on GOFLAGS='-mod=readonly -buildvcs=false' GOTOOLCHAIN=local

# go_check DIR: stop with what to install when the Go on PATH is older than
# the go line of DIR/go.mod (an older go cannot even read that go.mod).
go_check = @need=$$(sed -n 's/^go[[:space:]]\{1,\}\([0-9][0-9.]*\).*/\1/p' $(1)/go.mod); \
	have=$$(cd / && GOTOOLCHAIN=local go env GOVERSION 2>/dev/null); \
	hv=$$(echo "$$have" | sed -n 's/^\(devel \)\{0,1\}go\([0-9][0-9.]*\).*/\2/p'); \
	if [ -z "$$hv" ] || [ "$$(printf '%s\n%s\n' "$$need" "$$hv" | sort -V | head -n 1)" != "$$need" ]; then \
	  echo "$(1) needs Go >= $$need (found $${have:-no go on PATH}): install it from https://go.dev/dl or put it first on PATH" >&2; \
	  exit 1; \
	fi

# Objects are kept between runs (no intermediate-file deletion).
.PRECIOUS: build/%.o build-asan/%.o build-fuzz/%.o

.PHONY: all build build-asan deps deps-test certs run test test-build unit-build unit-asan-build \
        unit unit-asan e2e e2e-asan e2e-native fuzz-replay monitoring \
        validator valgrind fuzz fuzz-build format check-format clean bench bench-cluster go-check \
        cluster-bins cluster-up cluster-down realcluster realcluster-asan helm-bin

all: build

build: build/rdma-webhook
build-asan: build-asan/rdma-webhook

deps:
	@.ci/deps build

deps-test:
	@.ci/deps test

build/%.o: %.c | build/
	$(CC) $(BASE) $(HARDEN) $(CFLAGS) $(DEPFLAGS) $(VERSION_DEF) $(PKG_CFLAGS) -Iwebhook -c $< -o $@

build-asan/%.o: %.c | build-asan/
	$(CC) $(BASE) $(SAN) $(DEPFLAGS) $(VERSION_DEF) $(PKG_CFLAGS) -Iwebhook -c $< -o $@

# The version stamp: rewritten only when VERSION differs from the last build's.
build/version.stamp: FORCE | build/
	@v='$(VERSION)'; [ -f $@ ] && [ "$$(cat $@)" = "$$v" ] || echo "$$v" > $@
$(foreach d,build build-asan build-fuzz,$(patsubst %,$(d)/%.o,$(VERSION_USERS))): build/version.stamp

FORCE:

# Dependency files written before the sources moved into folders name
# webhook/X.c, which no longer exists: dropped, so that a warm tree rebuilds
# those objects instead of stopping at "No rule to make target".
STALE_DEPS := $(shell grep -l '^[^ ]*\.o: webhook/[a-z0-9_]*\.c' build/*.d build-asan/*.d build-fuzz/*.d 2>/dev/null)
$(if $(STALE_DEPS),$(shell rm -f $(STALE_DEPS)))
-include $(wildcard build/*.d build-asan/*.d build-fuzz/*.d)

build/rdma-webhook: $(call objs,build,$(SRCS))
	$(CC) $(LDFLAGS_ALL) $^ $(PKG_LIBS) -o $@

build-asan/rdma-webhook: $(call objs,build-asan,$(SRCS))
	$(CC) $(LDFLAGS_ALL) $(SAN) $^ $(PKG_LIBS) -o $@

build/ build-asan/:
	@mkdir -p $@

build/unit/%: test/unit/%.c $(UNIT_SUPPORT) $(call objs,build,$(LIB_SRCS)) | build/
	@mkdir -p build/unit
	$(CC) $(BASE) $(CFLAGS) $(PKG_CFLAGS) -Iwebhook $(filter-out %.h,$^) $(PKG_LIBS) -lcmocka $(LDFLAGS_ALL) -o $@

build-asan/unit/%: test/unit/%.c $(UNIT_SUPPORT) $(call objs,build-asan,$(LIB_SRCS)) | build-asan/
	@mkdir -p build-asan/unit
	$(CC) $(BASE) $(SAN) $(PKG_CFLAGS) -Iwebhook $(filter-out %.h,$^) $(PKG_LIBS) -lcmocka $(LDFLAGS_ALL) -o $@

$(DEV_CERTS)/tls.crt: | build/rdma-webhook
	build/rdma-webhook gen-certs --out-dir $(DEV_CERTS)

certs: $(DEV_CERTS)/tls.crt

run: deps
	@$(MAKE) --no-print-directory build certs
	build/rdma-webhook serve --listen $(LISTEN) --metrics-listen $(METRICS_LISTEN) \
	  --tls-cert-file $(DEV_CERTS)/tls.crt --tls-private-key-file $(DEV_CERTS)/tls.key \
	  --profiles $(PROFILES)

# test_ncdetect runs `nccl-detect` itself, for its exit status and its file.
build/unit/test_ncdetect: build/cmd_nccl_detect.o
build-asan/unit/test_ncdetect: build-asan/cmd_nccl_detect.o

# The C unit tests, then the cluster bench's loadgen (its metrics parser, the
# report's checks): a few seconds, so that `make bench-cluster` is not the
# first place a broken parser shows.
unit: $(patsubst test/unit/%.c,build/unit/%,$(UNIT_SRCS))
	@set -e; for t in $^; do echo "== $$t"; $$t; done
	$(call go_check,bench/cluster/loadgen)
	cd bench/cluster/loadgen && $(GO_ENV) go vet . && $(GO_ENV) go test -count=1 .

unit-asan: $(patsubst test/unit/%.c,build-asan/unit/%,$(UNIT_SRCS))
	@set -e; for t in $^; do echo "== $$t (asan)"; ASAN_OPTIONS=detect_leaks=1 $$t; done

validator: test/validate/node_modules/.package-lock.json

test/validate/node_modules/.package-lock.json: test/validate/package.json test/validate/package-lock.json
	cd test/validate && npm ci --no-audit --no-fund --loglevel=error

go-check:
	$(call go_check,test/e2e)

# Helm 4 and 3 for the chart's e2e tests (test/e2e/helm_test.go), from the modules
# test/cluster/helm and helm3 pin; a directory of its own, so that e2e and the
# suite's cluster-bins (which builds it into build/cluster-bin for
# realcluster) never write one file at once. ~210 s cold, then nothing.
helm-bin:
	$(call go_check,test/cluster/helm)
	$(call go_check,test/cluster/helm3)
	test/cluster/build.sh build/helm-bin helm

e2e: build/rdma-webhook validator go-check helm-bin
	cd test/e2e && $(GO_ENV) RDMA_WEBHOOK_BIN=$(CURDIR)/build/rdma-webhook go test -count=1 -parallel 16 .

# The tests whose checks ASan relaxes (RSS budgets, allocation failure,
# timing): the suite runs them against the native build too; the rest of
# e2e runs under ASan+UBSan (e2e-asan) and valgrind.
E2E_NATIVE_TESTS := ^(TestCertificateReloadOnlyOnChange|TestYAMLAliasBombsRefused|TestRequestBodyBudget|TestRequestBodyOutOfMemory|TestSlowClientDeadlines|TestSlowClientsCannotHoldEveryConnection)$$

e2e-native: build/rdma-webhook validator go-check
	cd test/e2e && $(GO_ENV) RDMA_WEBHOOK_BIN=$(CURDIR)/build/rdma-webhook go test -count=1 -run '$(E2E_NATIVE_TESTS)' .

# The monitoring components' tests alone (test/e2e/monitoring_test.go:
# promtool on the alerts, the queries against /metrics, the runbook); the
# e2e steps run them too.
monitoring: build/rdma-webhook validator go-check
	cd test/e2e && $(GO_ENV) RDMA_WEBHOOK_BIN=$(CURDIR)/build/rdma-webhook go test -count=1 -run '^TestMonitoring' .

e2e-asan: build-asan/rdma-webhook validator go-check helm-bin
	cd test/e2e && $(GO_ENV) RDMA_WEBHOOK_BIN=$(CURDIR)/build-asan/rdma-webhook \
	  ASAN_OPTIONS=detect_leaks=1 go test -count=1 -parallel 16 .

# The integration tests that drive the server's main paths, with the binary
# under valgrind memcheck (errors or leaks make it exit non-zero, which the
# suite reports). Timing-sensitive tests stay with the native builds.
VALGRIND_TESTS := TestFixtures|TestHTTPErrors|TestHealthEndpoints|TestOtherOperationsAndKinds|TestUnprocessablePods|TestPodObjectNull|TestConcurrentReviews|TestKeepAlive|TestMetricsCount|TestReloadConfigMapSwap|TestSIGTERMDrainsInFlight|TestCertificateRotationUnderLoad|TestMutateOffline|TestCheckProfiles
# A scale guard among them (90,000 ConfigMaps: seconds natively, many minutes
# under memcheck on a loaded machine) is judged by the native and ASan runs.
VALGRIND_SKIP := ^TestMutateOfflineManyConfigMapsIsLinear$$

valgrind: build/rdma-webhook build/unit/test_arena validator go-check
	@# The normal build's arena (no ASan poisoning) under memcheck: it must not leak.
	valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 \
	  build/unit/test_arena
	cd test/e2e && $(GO_ENV) RDMA_WEBHOOK_BIN=$(CURDIR)/test/valgrind-wrap.sh \
	  go test -count=1 -parallel 4 -run '$(VALGRIND_TESTS)' -skip '$(VALGRIND_SKIP)' .

# The whole suite (test/suite.sh says how it is laid out and run).
test: deps-test
	@test/suite.sh

# Everything the suite's steps run, built in one step before they start.
test-build: build build-asan unit-build unit-asan-build fuzz-build validator go-check helm-bin
unit-build: $(patsubst test/unit/%.c,build/unit/%,$(UNIT_SRCS))
unit-asan-build: $(patsubst test/unit/%.c,build-asan/unit/%,$(UNIT_SRCS))

# The local control plane (test/cluster/): an embedded etcd, kube-apiserver
# and kube-controller-manager built from k8s.io/kubernetes, and the Kubeflow
# training-operator, at the versions pinned in test/cluster/go.mod and
# test/cluster/operator/go.mod. Binaries are cached in build/cluster-bin;
# the module and build caches are Go's own.
CLUSTER_BIN := build/cluster-bin
CLUSTER_DIR := build/cluster
CLUSTER_TEST_DIR := build/cluster-test

cluster-bins:
	$(call go_check,test/cluster)
	test/cluster/build.sh $(CLUSTER_BIN)

# `make cluster-up`: the control plane, manifests/ applied with kubectl, the
# webhook on the host; returns once a PyTorchJob can be submitted.
cluster-up: deps
	@$(MAKE) --no-print-directory build cluster-bins
	test/cluster/cluster-up.sh $(CLUSTER_DIR) $(CLUSTER_BIN)

cluster-down:
	test/cluster/down.sh $(CLUSTER_DIR)

# The real-cluster suite starts its own control plane in build/cluster-test
# and stops it; down.sh runs again after it for a test binary that was killed.
# bench_test.go runs the Go webhook of the cluster bench (build/bench/gowebhook).
realcluster realcluster-asan: realcluster%: build%/rdma-webhook build/bench/gowebhook cluster-bins
	cd test/cluster && $(GO_ENV) RDMA_WEBHOOK_BIN=$(CURDIR)/build$*/rdma-webhook \
	  ASAN_OPTIONS=detect_leaks=1 go test -count=1 -v -timeout 20m ./realcluster; \
	  rc=$$?; ./down.sh $(CURDIR)/$(CLUSTER_TEST_DIR) >/dev/null 2>&1; exit $$rc

# libFuzzer targets (clang-14, ASan+UBSan): `make fuzz` runs each for
# FUZZ_SECONDS; `make test` runs them for 30 s each.
FUZZ_CC      ?= clang-14
FUZZ_SECONDS ?= 300
FUZZ_FLAGS   := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
                -fno-sanitize-recover=all
FUZZ_TARGETS := build-fuzz/fuzz_review build-fuzz/fuzz_profiles build-fuzz/fuzz_docs \
                build-fuzz/fuzz_ncdetect

build-fuzz/%.o: %.c
	@mkdir -p build-fuzz build
	$(FUZZ_CC) $(BASE) $(FUZZ_FLAGS) $(DEPFLAGS) $(VERSION_DEF) -fsanitize=fuzzer-no-link $(PKG_CFLAGS) -Iwebhook -c $< -o $@

build-fuzz/fuzz_%: test/fuzz/fuzz_%.c $(call objs,build-fuzz,$(LIB_SRCS))
	$(FUZZ_CC) $(BASE) $(FUZZ_FLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -Iwebhook $^ $(PKG_LIBS) -o $@

FUZZ_YAML_SEEDS := $(wildcard manifests/*.yaml manifests/examples/*.yaml)

build-fuzz/corpus/.seeded: test/fuzz/make-seeds.mjs $(wildcard test/pods/*.json) $(PROFILES) $(FUZZ_YAML_SEEDS) \
                          test/e2e/testdata/show_gids-seed-8card.txt
	node test/fuzz/make-seeds.mjs build-fuzz/corpus test/pods $(PROFILES) $(FUZZ_YAML_SEEDS)
	@touch $@

fuzz-build: $(FUZZ_TARGETS) build-fuzz/corpus/.seeded

# `make test` replays the corpora (test/fuzz/corpus, the seeds, and what
# earlier runs here found) through each target once: every input must pass
# the target's checks again. No new inputs are made.
fuzz-replay: fuzz-build
	@set -e; for t in review profiles docs ncdetect; do \
	  mkdir -p build-fuzz/found/$$t; \
	  if ! build-fuzz/fuzz_$$t -runs=0 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	       -artifact_prefix=build-fuzz/ test/fuzz/corpus/$$t build-fuzz/corpus/$$t build-fuzz/found/$$t \
	       > build-fuzz/replay-$$t.log 2>&1; then \
	    tail -60 build-fuzz/replay-$$t.log; echo "fuzz_$$t: an input of the corpus fails: see build-fuzz/"; exit 1; \
	  fi; \
	  echo "fuzz_$$t: $$(grep -m1 -o 'INITED.*' build-fuzz/replay-$$t.log)"; \
	done

# Each run starts from the seeds plus what earlier runs found; a crash, leak,
# sanitizer report or broken property stops it with a non-zero status.
fuzz: fuzz-build
	@set -e; for t in review profiles docs ncdetect; do \
	  mkdir -p build-fuzz/found/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  if ! build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=build-fuzz/ \
	       build-fuzz/found/$$t build-fuzz/corpus/$$t > build-fuzz/$$t.log 2>&1; then \
	    tail -60 build-fuzz/$$t.log; echo "fuzz_$$t found a problem: see build-fuzz/"; exit 1; \
	  fi; \
	  grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' build-fuzz/$$t.log; \
	done

# `make bench`: rdma-webhook against nginx, a bare libmicrohttpd responder and
# a Go webhook, beside the parse-only and library-memory floors (bench/run.sh;
# results in bench/RESULTS.md). Not part of `make test`.
BENCH_BIN  := build/bench/mhd_responder build/bench/ready_probe build/bench/lib_floor \
              build/bench/gowebhook

# The bench programs are built as the webhook is (BASE, HARDEN, CFLAGS), so a
# yardstick differs from it in what it does, not in how it was compiled.
# mhd_responder takes the daemon settings from server.h.
build/bench/mhd_responder: bench/mhd_responder.c build/arena.o webhook/server/server.h webhook/base/arena.h | build/
	@mkdir -p build/bench
	$(CC) $(BASE) $(HARDEN) $(CFLAGS) $(PKG_CFLAGS) -Iwebhook $(filter-out %.h,$^) $(PKG_LIBS) $(LDFLAGS_ALL) -o $@

build/bench/lib_floor: bench/lib_floor.c | build/
	@mkdir -p build/bench
	$(CC) $(BASE) $(HARDEN) $(CFLAGS) $(PKG_CFLAGS) $< $(PKG_LIBS) $(LDFLAGS_ALL) -o $@

build/bench/ready_probe: bench/ready_probe.c | build/
	@mkdir -p build/bench
	$(CC) $(BASE) $(HARDEN) $(CFLAGS) $< $(LDFLAGS_ALL) -o $@

build/bench/gowebhook: bench/gowebhook/main.go bench/gowebhook/go.mod | build/
	$(call go_check,bench/gowebhook)
	@mkdir -p build/bench
	cd bench/gowebhook && $(GO_ENV) go build -o $(CURDIR)/$@ .

bench:
	@.ci/deps bench
	@$(MAKE) --no-print-directory build certs $(BENCH_BIN)
	bench/run.sh

# `make bench-cluster`: the time the webhook adds to pod creation through the
# local control plane's kube-apiserver, beside no mutation, the Go webhook and
# a MutatingAdmissionPolicy (bench/cluster/run.sh; results in
# bench/CLUSTER-RESULTS.md and bench/cluster-p99.png). Not part of `make test`.
build/bench/loadgen: $(wildcard bench/cluster/loadgen/*.go) bench/cluster/loadgen/go.mod | build/
	$(call go_check,bench/cluster/loadgen)
	@mkdir -p build/bench
	cd bench/cluster/loadgen && $(GO_ENV) go build -o $(CURDIR)/$@ .

bench-cluster:
	@.ci/deps bench
	@$(MAKE) --no-print-directory build cluster-bins build/bench/gowebhook build/bench/loadgen
	bench/cluster/run.sh

format:
	$(CLANG_FORMAT) -i webhook/*/*.c webhook/*/*.h test/unit/*.c test/unit/*.h

check-format:
	$(CLANG_FORMAT) --dry-run --Werror webhook/*/*.c webhook/*/*.h test/unit/*.c test/unit/*.h

clean:
	rm -rf build build-asan build-fuzz
