#!/bin/sh
# build.sh OUTDIR -- build the local control plane's binaries into OUTDIR:
#   kube-apiserver kube-controller-manager kubectl etcd   (module ./)
#   training-operator                                     (module ./operator)
#   jobset-controller trainer-controller-manager          (module ./jobs)
#   mpi-operator                                          (module ./mpi)
#   helm helm3                                            (modules ./helm, ./helm3)
#
# build.sh OUTDIR helm -- only the two Helms (the e2e chart tests need them,
# not the control plane): copied from the binary cache when a full build
# filled it, else built when missing (and not stored there).
#
# Only missing binaries are built (delete one, or set CLUSTER_REBUILD=1, to
# rebuild).  The caller's Go caches are used as they are: GOCACHE and
# GOMODCACHE are not touched, so CI can point them at a restored cache.
#
# Built binaries are also kept beside Go's own caches, in
# ${CLUSTER_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdma-webhook/cluster-bin}/KEY,
# where KEY hashes everything that decides them (the four modules' go.mod and
# go.sum, the etcd command, this script, the Go version and platform).  A
# fresh clone on a machine that built them once copies them from there
# instead of linking five ~100 MB binaries again (about 2 minutes on 2
# cores, even with a warm GOCACHE).  CLUSTER_BIN_CACHE=off turns it off; the
# two newest keys are kept.
#
# Downloads and compiles are timed separately, because on a cold cache both
# matter for CI's time budget.
set -eu

here=$(cd "$(dirname "$0")" && pwd -P)

[ $# -eq 1 ] || { [ $# -eq 2 ] && [ "$2" = helm ]; } || {
	echo "usage: $0 OUTDIR [helm]" >&2
	exit 2
}
mkdir -p "$1"
out=$(cd "$1" && pwd -P)

# These two modules need module mode whatever the caller's environment says,
# and must not pick up a go.work from above.
GO111MODULE=on
GOWORK=off
# Static binaries without cgo, as upstream releases them: nothing to link
# against at run time, and no C compiler in the loop.  A caller may override.
CGO_ENABLED=${CGO_ENABLED:-0}
export GO111MODULE GOWORK CGO_ENABLED

# -s -w: no symbol table / DWARF.  Cuts link time and the size of the four
# ~100 MB binaries noticeably; these are test fixtures, never debugged.
ldflags=${CLUSTER_LDFLAGS:--s -w}

# timed LABEL CMD...: run CMD, then report how long it took (and keep its
# exit status).
timed() {
	label=$1
	shift
	t0=$(date +%s)
	rc=0
	"$@" || rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "build.sh: $label: $(($(date +%s) - t0))s"
	else
		echo "build.sh: $label: FAILED (exit $rc) after $(($(date +%s) - t0))s" >&2
	fi
	return "$rc"
}

missing() {
	[ "${CLUSTER_REBUILD:-0}" = 1 ] || [ ! -x "$out/$1" ]
}

all_bins="kube-apiserver kube-controller-manager kubectl etcd training-operator jobset-controller trainer-controller-manager mpi-operator helm helm3"

# Helm (charts/rdma-webhook's tests: helm lint/template in test/e2e, helm
# install/upgrade/uninstall in realcluster), from its Go module pinned in
# ./helm/go.mod. The version is stamped as Helm's Makefile does (a plain
# build reports v4.3, without the patch). About 100 s cold on 2 cores.
build_helm() {
	cd "$here/helm"
	hv=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
	timed "go build helm" go build -ldflags="$ldflags -X helm.sh/helm/v4/internal/version.version=$hv" \
		-o "$out/helm" helm.sh/helm/v4/cmd/helm
}
# Helm 3, the same way (the chart is for both); about 110 s cold.
build_helm3() {
	cd "$here/helm3"
	hv=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
	timed "go build helm3" go build -ldflags="$ldflags -X helm.sh/helm/v3/internal/version.version=$hv" \
		-o "$out/helm3" helm.sh/helm/v3/cmd/helm
}

# The binary cache (see the header).
cache_root=${CLUSTER_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdma-webhook/cluster-bin}
cache_key() {
	{
		cat "$here/go.mod" "$here/go.sum" "$here/operator/go.mod" "$here/operator/go.sum" \
			"$here/jobs/go.mod" "$here/jobs/go.sum" "$here/mpi/go.mod" "$here/mpi/go.sum" \
			"$here/helm/go.mod" "$here/helm/go.sum" "$here/helm3/go.mod" "$here/helm3/go.sum" \
			"$here/cmd/etcd/main.go" "$here/build.sh"
		go env GOVERSION GOOS GOARCH CGO_ENABLED
		echo "$ldflags"
	} | sha256sum | cut -c1-16
}
cache_dir=""
if [ "$cache_root" != off ] && [ "${CLUSTER_REBUILD:-0}" != 1 ]; then
	cache_dir=$cache_root/$(cache_key)
fi
if [ $# -eq 2 ]; then
	# From the binary cache when a full build left them there (CI restores it).
	for b in helm helm3; do
		if missing "$b" && [ -n "$cache_dir" ] && [ -f "$cache_dir/complete" ]; then
			cp "$cache_dir/$b" "$out/$b.tmp" && mv "$out/$b.tmp" "$out/$b"
		fi
	done
	if missing helm; then
		(cd "$here/helm" && timed "download (helm module graph)" go mod download) || exit 1
		(build_helm) || exit 1
	fi
	if missing helm3; then
		(cd "$here/helm3" && timed "download (helm3 module graph)" go mod download) || exit 1
		(build_helm3) || exit 1
	fi
	echo "build.sh: $out/helm $out/helm3"
	exit 0
fi
if [ -n "$cache_dir" ]; then
	if [ -f "$cache_dir/complete" ]; then
		for b in $all_bins; do
			missing "$b" && cp "$cache_dir/$b" "$out/$b.tmp" && mv "$out/$b.tmp" "$out/$b"
		done
		echo "build.sh: all binaries in $out (copied from $cache_dir)"
		exit 0
	fi
fi

# cache_store: keep what was built for the next clone; the newest two keys stay.
cache_store() {
	[ -n "$cache_dir" ] || return 0
	tmp=$cache_dir.tmp.$$
	rm -rf "$tmp" && mkdir -p "$tmp" || return 0
	for b in $all_bins; do
		cp "$out/$b" "$tmp/$b" || {
			rm -rf "$tmp"
			return 0
		}
	done
	touch "$tmp/complete"
	rm -rf "$cache_dir" && mv "$tmp" "$cache_dir" || rm -rf "$tmp"
	# shellcheck disable=SC2012 # names are our own hex keys
	ls -1td "$cache_root"/*/ 2>/dev/null | tail -n +3 | while read -r old; do rm -rf "$old"; done
	echo "build.sh: kept a copy in $cache_dir"
}

# The four Kubernetes-side binaries come from one module and are built by a
# single `go build`, so the thousands of packages they share are compiled
# once and the compiler keeps both cores busy the whole time.
pkgs=""
names=""
for spec in \
	kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
	kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
	kubectl=k8s.io/kubernetes/cmd/kubectl \
	etcd=rdma-webhook/test/cluster/cmd/etcd; do
	name=${spec%%=*}
	if missing "$name"; then
		pkgs="$pkgs ${spec#*=}"
		names="$names $name"
	fi
done

# Stamp the version as Kubernetes' own build does (hack/lib/version.sh): a
# plain `go build` reports v0.0.0-master+$Format:%H$ from /version and
# `kubectl version`, which clients that parse it choke on.  The values come
# from go.mod's k8s.io/kubernetes version and its module time.
version_ldflags() {
	kv=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
	kt=$(go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes)
	kmajor=${kv#v}
	kmajor=${kmajor%%.*}
	kminor=${kv#v*.}
	kminor=${kminor%%.*}
	for vpkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		printf ' -X %s' "$vpkg.gitVersion=$kv" "$vpkg.gitMajor=$kmajor" "$vpkg.gitMinor=$kminor" \
			"$vpkg.gitCommit=" "$vpkg.gitTreeState=clean" "$vpkg.buildDate=${kt:-1970-01-01T00:00:00Z}"
	done
}

build_kubernetes() {
	cd "$here"
	vflags=$(version_ldflags)
	# shellcheck disable=SC2086 # $pkgs is a list of package paths
	timed "go build$names" go build -ldflags="$ldflags$vflags" -o "$out/" $pkgs
}

build_operator() {
	cd "$here/operator"
	# The main package's directory is training-operator.v1; name the binary
	# without the suffix.
	timed "go build training-operator" go build -ldflags="$ldflags" \
		-o "$out/training-operator" github.com/kubeflow/training-operator/cmd/training-operator.v1
}

# The job controllers of issue 24 (up.sh starts them with CLUSTER_JOBS=1):
# JobSet and Kubeflow Trainer v2 share module ./jobs (Trainer needs that
# JobSet version), mpi-operator is on older libraries in ./mpi.  One
# `go build` per binary, so each one's time is reported on its own.
build_jobset() {
	cd "$here/jobs"
	timed "go build jobset-controller" go build -ldflags="$ldflags" \
		-o "$out/jobset-controller" sigs.k8s.io/jobset
}
build_trainer() {
	cd "$here/jobs"
	timed "go build trainer-controller-manager" go build -ldflags="$ldflags" \
		-o "$out/trainer-controller-manager" github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
}
# mpi-operator v0.7.0 serves its health check on *:8080, a constant, so two
# clusters on one machine (two suites, or a suite beside `make cluster-up`)
# could not both run it, and anything else on 8080 stops it. It is built
# from a copy of the module with that constant 0 (a free port; up.sh reads
# its readiness from its Lease instead): the one change, checked below.
build_mpi() {
	cd "$here/mpi"
	_src=$(go mod download -json github.com/kubeflow/mpi-operator |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -n "$_src" ] || return 1
	_tmp=$(mktemp -d) || return 1
	cp -R "$_src" "$_tmp/mpi-operator" && chmod -R u+w "$_tmp/mpi-operator" || return 1
	_srv=$_tmp/mpi-operator/cmd/mpi-operator/app/server.go
	sed 's/^\([[:space:]]*healthCheckPort[[:space:]]*=[[:space:]]*\)8080$/\10/' "$_srv" >"$_srv.new" &&
		mv "$_srv.new" "$_srv" || return 1
	if [ "$(grep -c 'healthCheckPort *= *0$' "$_srv")" != 1 ]; then
		echo "build.sh: $_srv: found no healthCheckPort = 8080 to change" >&2
		rm -rf "$_tmp"
		return 1
	fi
	cp go.mod go.sum "$_tmp/" &&
		go mod edit -replace "github.com/kubeflow/mpi-operator=$_tmp/mpi-operator" "$_tmp/go.mod" || return 1
	_rc=0
	timed "go build mpi-operator" go build -modfile="$_tmp/go.mod" -ldflags="$ldflags" \
		-o "$out/mpi-operator" github.com/kubeflow/mpi-operator/cmd/mpi-operator || _rc=$?
	rm -rf "$_tmp"
	return "$_rc"
}
# build_jobs: the three, one after the other (JobSet and Trainer share most
# packages, so the second is mostly a link).
build_jobs() {
	if missing jobset-controller; then build_jobset || return 1; fi
	if missing trainer-controller-manager; then build_trainer || return 1; fi
	if missing mpi-operator; then build_mpi || return 1; fi
}
want_jobs=0
for b in jobset-controller trainer-controller-manager mpi-operator; do
	if missing "$b"; then
		want_jobs=1
	fi
done

total0=$(date +%s)

# Downloads first, one after the other: they are network-bound and short,
# and timing them on their own shows what a module-cache restore would save.
# `go build` would fetch the same modules lazily.
want_operator=0
if missing training-operator; then
	want_operator=1
fi
if [ -n "$pkgs" ]; then
	(cd "$here" && timed "download (kubernetes module graph)" go mod download)
fi
if [ "$want_operator" = 1 ]; then
	(cd "$here/operator" && timed "download (training-operator module graph)" go mod download)
fi
if [ "$want_jobs" = 1 ]; then
	(cd "$here/jobs" && timed "download (jobset + trainer module graph)" go mod download)
	(cd "$here/mpi" && timed "download (mpi-operator module graph)" go mod download)
fi
want_helm=0
if missing helm || missing helm3; then
	want_helm=1
	(cd "$here/helm" && timed "download (helm module graph)" go mod download)
	(cd "$here/helm3" && timed "download (helm3 module graph)" go mod download)
fi

# The two modules share no compiled packages (the operator is on older k8s
# libraries), so build them concurrently: the Kubernetes build has long
# stretches where one huge package (generated code, openapi) keeps a single
# core busy, and the operator's compiles fill the other one.
jobs=""
# Asynchronous lists ignore SIGINT in a non-interactive shell: pass an
# interrupt on to the builds instead of leaving them running.
trap 'kill $jobs 2>/dev/null; exit 130' INT
trap 'kill $jobs 2>/dev/null; exit 143' TERM
# The job controllers go after the training-operator, in the same lane: the
# Kubernetes build keeps one core busy on its own, and a third concurrent
# lane would only make the three slower (and need more memory).
if [ "$want_operator" = 1 ] || [ "$want_jobs" = 1 ] || [ "$want_helm" = 1 ]; then
	{
		if [ "$want_operator" = 1 ]; then build_operator || exit 1; fi
		if [ "$want_jobs" = 1 ]; then build_jobs || exit 1; fi
		if [ "$want_helm" = 1 ]; then
			if missing helm; then build_helm || exit 1; fi
			if missing helm3; then build_helm3 || exit 1; fi
		fi
	} &
	op_job=$!
	jobs="$jobs $op_job"
fi
if [ -n "$pkgs" ]; then
	build_kubernetes &
	k8s_job=$!
	jobs="$jobs $k8s_job"
fi
status=0
for j in $jobs; do
	wait "$j" || status=1
done
trap - INT TERM
[ "$status" -eq 0 ] || exit 1

for b in $all_bins; do
	[ -x "$out/$b" ] || {
		echo "build.sh: $out/$b was not built" >&2
		exit 1
	}
done
echo "build.sh: all binaries in $out (total $(($(date +%s) - total0))s)"
cache_store
