#!/bin/bash
# `make bench-cluster`: the time rdma-webhook adds to pod creation, through
# the real kube-apiserver of the local control plane (test/cluster/up.sh),
# beside the alternatives a cluster admin would weigh, each installed in turn
# in the same apiserver:
#
#   floor         no mutation at all
#   rdma-webhook  installed as manifests/ installs it (test/cluster/
#                 install-webhook.sh: its MutatingWebhookConfiguration, its
#                 RBAC and API lookups, the apiserver's client certificate)
#   go-webhook    bench/gowebhook, the same mutation, registered by a copy of
#                 rdma-webhook's configuration that only changes names and URL
#   policy        bench/cluster/policy.yaml, a MutatingAdmissionPolicy doing
#                 as much of the same mutation as CEL can
#
# Each round takes every configuration once, in an order that rotates by
# round, in a fresh namespace, through these phases (loadgen, a client that
# talks HTTP/2 to the apiserver as client-go does):
#
#   create-C   BENCH_CLUSTER_PODS worker pods (worker-pod.json) created
#              directly by C concurrent clients, for each C in
#              BENCH_CLUSTER_CLIENTS
#   plain-8    as many ordinary pods (plain-pod.json: the Deployment's pod,
#              labelled app=guestbook-direct so that its ReplicaSet does not
#              adopt them) by 8 clients: no configuration selects them, so
#              none may add time
#   deploy     a Deployment of BENCH_CLUSTER_DEPLOY replicas: time from the
#              submit until the controller-manager has made all its pods
#   job        a PyTorchJob of 1 master and BENCH_CLUSTER_WORKERS workers
#              (pytorchjob.yaml): time until the training-operator has made
#              all its pods
#
# then a profiling pass for each configuration that mutates (the apiserver's
# CPU profile, perf on the webhook), and loadgen report writes
# bench/CLUSTER-RESULTS.md and the plot bench/cluster-p99.png (gnuplot). Not
# part of `make test`.
#
# Env: BENCH_CLUSTER_ROUNDS (3), BENCH_CLUSTER_PODS (1500: a p99 of the 15
# slowest, not of 4), BENCH_CLUSTER_CLIENTS ("1 8 32"), BENCH_CLUSTER_DEPLOY (100),
# BENCH_CLUSTER_WORKERS (511), BENCH_CLUSTER_CONFIGS (all four, in the order
# of round 1), BENCH_CLUSTER_PROFILE_PODS (4000) and _SECONDS (5) for the
# profiles, BENCH_CLUSTER_OUT (directory of the results; default bench/),
# CLUSTER_BIN (build/cluster-bin), RDMA_WEBHOOK_BIN (build/rdma-webhook).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
rounds=${BENCH_CLUSTER_ROUNDS:-3}
pods=${BENCH_CLUSTER_PODS:-1500}
clients=${BENCH_CLUSTER_CLIENTS:-1 8 32}
deploy=${BENCH_CLUSTER_DEPLOY:-100}
workers=${BENCH_CLUSTER_WORKERS:-511}
configs=${BENCH_CLUSTER_CONFIGS:-floor rdma-webhook go-webhook policy}
out=${BENCH_CLUSTER_OUT:-$repo/bench}
bin=${CLUSTER_BIN:-$repo/build/cluster-bin}
webhook_bin=${RDMA_WEBHOOK_BIN:-$repo/build/rdma-webhook}
loadgen=$repo/build/bench/loadgen
gowebhook=$repo/build/bench/gowebhook

die() {
    echo "bench-cluster: $*" >&2
    exit 1
}
for f in "$webhook_bin" "$loadgen" "$gowebhook" "$bin/kube-apiserver"; do
    [ -x "$f" ] || die "$f is missing: run \`make bench-cluster\` (it builds everything first)"
done
command -v gnuplot >/dev/null || die "gnuplot is missing: .ci/deps bench installs it"
for c in $configs; do
    case $c in floor | rdma-webhook | go-webhook | policy) ;; *) die "BENCH_CLUSTER_CONFIGS: unknown $c" ;; esac
done

mkdir -p "$out"
run=$(mktemp -d "${TMPDIR:-/tmp}/rdma-bench-cluster.XXXXXX")
dir=$run/cluster
mkdir -p "$run/results" "$run/objects"
go_pid=""
cleanup() {
    [ -z "$go_pid" ] || kill "$go_pid" 2>/dev/null || true
    "$repo/test/cluster/down.sh" "$dir" >/dev/null 2>&1 || true
    echo "bench-cluster: logs and raw results stay in $run"
}
trap cleanup EXIT
trap 'echo "bench-cluster: line $LINENO failed: $BASH_COMMAND" >&2' ERR

log() { echo "bench-cluster $(date -u +%H:%M:%S) $*"; }

# --- the control plane and the three servers ---------------------------------
log "starting the control plane in $dir"
uptime_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$repo/test/cluster/up.sh" "$dir" "$bin" >"$run/up.log" 2>&1 || { tail -30 "$run/up.log"; die "up.sh failed"; }
set -a
# shellcheck disable=SC1091
. "$dir/env"
set +a
read -r port_webhook port_metrics port_go <<<"$("$loadgen" freeport 3 | tr '\n' ' ')"
log "installing rdma-webhook (port $port_webhook) as manifests/ installs it"
WEBHOOK_PORT=$port_webhook WEBHOOK_METRICS_PORT=$port_metrics RDMA_WEBHOOK_BIN=$webhook_bin \
    "$repo/test/cluster/install-webhook.sh" "$dir" >"$run/install.log" 2>&1 ||
    { tail -30 "$run/install.log"; die "install-webhook.sh failed"; }

kc() { "$KUBECTL" "$@"; }
api=(-server "$APISERVER" -ca "$dir/pki/ca.crt" -cert "$dir/pki/admin.crt" -key "$dir/pki/admin.key")

# rdma-webhook's configuration, kept to put back: as the apiserver has it,
# caBundle included, less what the apiserver sets on create.
strip_server_fields() {
    sed -e '/^  resourceVersion:/d' -e '/^  uid:/d' -e '/^  creationTimestamp:/d' -e '/^  generation:/d'
}
kc get mutatingwebhookconfiguration rdma-webhook -o yaml | strip_server_fields >"$run/objects/rdma-webhook.yaml"
kc delete mutatingwebhookconfiguration rdma-webhook >/dev/null
# The Go webhook's: the same entries, selectors and settings; only the names
# and the URL differ.
sed -e "s|https://127.0.0.1:$port_webhook/mutate|https://127.0.0.1:$port_go/mutate|" \
    -e 's|^  name: rdma-webhook$|  name: go-webhook|' \
    -e 's|\.rdma-webhook\.io$|.go-webhook.bench|' \
    "$run/objects/rdma-webhook.yaml" >"$run/objects/go-webhook.yaml"
grep -q "127.0.0.1:$port_go" "$run/objects/go-webhook.yaml" || die "no URL to move in rdma-webhook's configuration"

log "starting the Go webhook (port $port_go)"
setsid "$gowebhook" -listen "127.0.0.1:$port_go" -cert "$dir/certs/tls.crt" -key "$dir/certs/tls.key" \
    >"$dir/logs/go-webhook.log" 2>&1 </dev/null &
go_pid=$!

# A token that may read rdma-webhook's /metrics (--metrics-auth kubernetes,
# as installed): the ClusterRole manifests/ ships for Prometheus.
kc -n rdma-webhook create serviceaccount bench-metrics >/dev/null
kc create clusterrolebinding bench-metrics --clusterrole=rdma-webhook-metrics-reader \
    --serviceaccount=rdma-webhook:bench-metrics >/dev/null
kc -n rdma-webhook create token bench-metrics --duration=24h >"$run/metrics.token"
probes=(-webhook-metrics "https://127.0.0.1:$port_metrics/metrics" -webhook-token "$run/metrics.token"
    -webhook-ca "$dir/certs/ca.crt" -conn-ports "rdma-webhook=$port_webhook,go-webhook=$port_go")

webhook_pid=$(cat "$dir/pids/webhook.pid")
pids="apiserver=$(cat "$dir/pids/kube-apiserver.pid"),etcd=$(cat "$dir/pids/etcd.pid")"
pids="$pids,rdma-webhook=$webhook_pid,go-webhook=$go_pid"

# The objects the submit phases create, as JSON.
kc patch --local -f "$here/deployment.yaml" --type merge -o json \
    -p "{\"spec\":{\"replicas\":$deploy}}" >"$run/objects/deployment.json"
# The job gets a name of its own: the directly created worker pods carry the
# labels of a job named pytorch-deepspeed-demo, and the training-operator
# would adopt pods that match its job's selector.
kc patch --local -f "$here/pytorchjob.yaml" --type merge -o json \
    -p "{\"metadata\":{\"name\":\"deepspeed-$((workers + 1))\"},\"spec\":{\"pytorchReplicaSpecs\":{\"Worker\":{\"replicas\":$workers}}}}" \
    >"$run/objects/pytorchjob.json"

# --- turning a configuration on and off ----------------------------------------
config_on() {
    case $1 in
    floor) ;;
    rdma-webhook) kc create -f "$run/objects/rdma-webhook.yaml" >/dev/null ;;
    go-webhook) kc create -f "$run/objects/go-webhook.yaml" >/dev/null ;;
    policy) kc apply -f "$here/policy.yaml" >/dev/null ;;
    esac
}
config_off() {
    case $1 in
    floor) ;;
    rdma-webhook) kc delete mutatingwebhookconfiguration rdma-webhook >/dev/null ;;
    go-webhook) kc delete mutatingwebhookconfiguration go-webhook >/dev/null ;;
    policy) kc delete -f "$here/policy.yaml" >/dev/null ;;
    esac
}

# phase CONFIG ROUND NS NAME EXPECT loadgen-subcommand-and-flags...
phase() {
    local config=$1 round=$2 ns=$3 name=$4 expect=$5 cmd=$6
    shift 6
    "$loadgen" "$cmd" "${api[@]}" -namespace "$ns" -config "$config" -round "$round" -phase "$name" \
        -expect "$expect" -pids "$pids" "${probes[@]}" -out "$run/results/r$round-$config-$name.json" "$@"
}

# config_ready CONFIG NS EXPECT WARMUP_OUT: a fresh namespace NS with CONFIG
# on, in the admission chain (pods come back EXPECT) and warmed up.
config_ready() {
    local config=$1 ns=$2 expect=$3
    kc create namespace "$ns" >/dev/null
    # The ServiceAccount admission plugin refuses pods until "default" exists.
    until kc -n "$ns" get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done
    config_on "$config"
    "$loadgen" wait "${api[@]}" -namespace "$ns" -pod "$here/worker-pod.json" -expect "$expect"
    # Warm-up, not reported: connections to the webhook, caches, the
    # policy's compiled CEL.
    "$loadgen" create "${api[@]}" -namespace "$ns" -config "$config" -phase warmup -expect "$expect" \
        -pod "$here/worker-pod.json" -prefix warmup -count 50 -clients 8 -out "$4"
}

measure_config() {
    local config=$1 round=$2 ns=bench-r$2-$1 expect=mutated c
    [ "$config" != floor ] || expect=unchanged
    log "round $round: $config"
    config_ready "$config" "$ns" "$expect" "$run/results/warmup.json"
    for c in $clients; do
        phase "$config" "$round" "$ns" "create-$c" "$expect" create \
            -pod "$here/worker-pod.json" -prefix "c$c" -count "$pods" -clients "$c"
    done
    phase "$config" "$round" "$ns" plain-8 unchanged create \
        -pod "$here/plain-pod.json" -prefix plain -count "$pods" -clients 8
    phase "$config" "$round" "$ns" deploy unchanged submit \
        -object "$run/objects/deployment.json" -path "/apis/apps/v1/namespaces/$ns/deployments" \
        -selector "app=guestbook,tier=frontend" -want "$deploy"
    phase "$config" "$round" "$ns" job "$expect" submit \
        -object "$run/objects/pytorchjob.json" -path "/apis/kubeflow.org/v1/namespaces/$ns/pytorchjobs" \
        -selector "training.kubeflow.org/job-name=deepspeed-$((workers + 1))" -want $((workers + 1)) \
        -part training.kubeflow.org/replica-type=worker -part-want "$workers"
    config_off "$config"
    # The next configuration starts from an apiserver and etcd that hold
    # none of these pods.
    kc delete namespace "$ns" --wait --timeout=600s >/dev/null
}

# --- the rounds ------------------------------------------------------------------
read -ra order <<<"$configs"
n=${#order[@]}
for ((r = 1; r <= rounds; r++)); do
    for ((i = 0; i < n; i++)); do
        measure_config "${order[$(((i + r - 1) % n))]}" "$r"
    done
done

# --- where the time goes -----------------------------------------------------------
# One more pass for each configuration that mutates, not part of the tables:
# BENCH_CLUSTER_PROFILE_PODS worker pods by 8 clients while the apiserver's
# CPU profile (its /debug/pprof, on by default) and perf's samples of the
# webhook process (where perf works) are taken for BENCH_CLUSTER_PROFILE_SECONDS.
profile_config() {
    local config=$1 ns=bench-profile-$1 out=$run/profiles/$1 curl_pid perf_pid="" pid
    log "profile: $config"
    config_ready "$config" "$ns" mutated "$out-warmup.json"
    curl -sS --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
        -o "$out-apiserver.pprof" "$APISERVER/debug/pprof/profile?seconds=$profile_secs" &
    curl_pid=$!
    pid=""
    case $config in rdma-webhook) pid=$webhook_pid ;; go-webhook) pid=$go_pid ;; esac
    if [ -n "$pid" ] && [ "$perf_ok" = 1 ]; then
        perf record -q -F 499 -g -p "$pid" -o "$out-perf.data" -- sleep "$profile_secs" >/dev/null 2>&1 &
        perf_pid=$!
    fi
    "$loadgen" create "${api[@]}" -namespace "$ns" -config "$config" -phase profile -expect mutated \
        -pod "$here/worker-pod.json" -prefix prof -count "$profile_pods" -clients 8 -pids "$pids" \
        "${probes[@]}" -out "$out-load.json"
    wait "$curl_pid"
    [ -z "$perf_pid" ] || wait "$perf_pid" || true
    go tool pprof -top -cum -nodecount=2000 "$out-apiserver.pprof" >"$out-apiserver.txt" 2>/dev/null
    if [ -s "$out-perf.data" ]; then
        perf report -i "$out-perf.data" --stdio --no-children -g none --sort dso,symbol --percent-limit 1 2>/dev/null |
            grep -v '^#' | grep '%' | sed -e 's/[[:space:]]*-[[:space:]]*-[[:space:]]*$//' -e 's/[[:space:]]*$//' |
            head -25 >"$out-perf.txt" || true
    fi
    config_off "$config"
    kc delete namespace "$ns" --wait --timeout=600s >/dev/null
}
profile_pods=${BENCH_CLUSTER_PROFILE_PODS:-4000}
profile_secs=${BENCH_CLUSTER_PROFILE_SECONDS:-5}
mkdir -p "$run/profiles"
perf_ok=0
perf record -q -o "$run/profiles/probe.data" -- true >/dev/null 2>&1 && perf_ok=1
for c in $configs; do
    [ "$c" = floor ] || profile_config "$c"
done

# --- the report ------------------------------------------------------------------
{
    echo "- CPUs: $(nproc) ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)); the apiserver, etcd, the controllers, the webhooks and the clients share them."
    echo "- Kernel: $(uname -sr); $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "- kube-apiserver $("$bin/kube-apiserver" --version 2>/dev/null | awk '{print $2}'), etcd and kube-controller-manager of the same module (test/cluster/go.mod), training-operator $(sed -n 's/.*kubeflow\/training-operator \(v[^ ]*\).*/\1/p' "$repo/test/cluster/operator/go.mod" | head -1)"
    echo "- rdma-webhook $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown) ($("$webhook_bin" --version | head -1)); $(go version | awk '{print $3}') for the Go webhook and loadgen"
    echo "- Load average before the run: $uptime_before"
} >"$run/machine.md"
cat >"$run/command.md" <<EOF
make bench-cluster    # BENCH_CLUSTER_ROUNDS=$rounds BENCH_CLUSTER_PODS=$pods BENCH_CLUSTER_CLIENTS="$clients" BENCH_CLUSTER_DEPLOY=$deploy BENCH_CLUSTER_WORKERS=$workers
EOF
"$loadgen" report -in "$run/results" -machine "$run/machine.md" -command "$run/command.md" \
    -profiles "$run/profiles" -configs "$configs" -clients "$clients" \
    -out "$out/CLUSTER-RESULTS.md" -png "$out/cluster-p99.png"
log "wrote $out/CLUSTER-RESULTS.md and $out/cluster-p99.png"
