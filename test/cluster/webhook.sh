#!/bin/sh
# Runs the webhook binary on the host the way manifests/deployment.yaml runs it
# in a pod, against the local control plane in DIR:
#
#   test/cluster/webhook.sh start DIR [EXTRA SERVE FLAGS...]
#   test/cluster/webhook.sh stop DIR
#   test/cluster/webhook.sh restart DIR [EXTRA SERVE FLAGS...]   # stop, then start
#   test/cluster/webhook.sh configmap DIR   # prints the watched ConfigMap's NS/NAME
#
# The flags are the Deployment's own, read back from the apiserver, with the
# pod's paths and ports mapped to the host:
#   --listen :8443 / --metrics-listen :9090   127.0.0.1:WEBHOOK_PORT / _METRICS_PORT
#   /etc/rdma-webhook/tls/                    DIR/certs/ (install-dev-certs.sh)
# (the profiles come through the API, --profiles-configmap, as in the pod)
# plus what a pod gets from its service account: the API's address and CA,
# and a token of the service account rdma-webhook made by TokenRequest
# (`kubectl create token`), so the webhook has exactly the RBAC of manifests/.
# And --client-ca with the CA of the apiserver's webhook client certificate
# (up.sh, write_admission_config): the webhook serves the apiserver only, as
# docs/install.md sets it up ("Require the apiserver's client certificate").
#
# Env: WEBHOOK_PORT (default 18443), WEBHOOK_METRICS_PORT (default 19090),
# RDMA_WEBHOOK_BIN (default build/rdma-webhook). The log is DIR/logs/webhook.log,
# the pid DIR/pids/webhook.pid.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ns=rdma-webhook
die() {
    echo "webhook.sh: $*" >&2
    exit 1
}
[ $# -ge 2 ] || die "usage: $0 start|stop|restart|configmap DIR [serve flags...]"
cmd=$1
dir=$(cd "$2" && pwd) || die "no directory $2"
shift 2
pidfile=$dir/pids/webhook.pid
log=$dir/logs/webhook.log

running() {
    [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

stop() {
    running || { rm -f "$pidfile"; return 0; }
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || true
    # --shutdown-grace is 10 s by default; the binary exits at once when idle.
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 150 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

# deployment_args: the container's args, one a line, as the apiserver has them.
deployment_args() {
    "$KUBECTL" -n "$ns" get deployment rdma-webhook \
        -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}'
}

# profiles_configmap: the NS/NAME after --profiles-configmap in the args.
profiles_configmap() {
    deployment_args | sed -n '/^--profiles-configmap$/{n;p;q}'
}

start() {
    running && die "the webhook already runs (pid $(cat "$pidfile")); stop it first"
    bin=${RDMA_WEBHOOK_BIN:-$root/build/rdma-webhook}
    [ -x "$bin" ] || die "no $bin: run \`make build\`"
    port=${WEBHOOK_PORT:-18443}
    mport=${WEBHOOK_METRICS_PORT:-19090}
    cm=$(profiles_configmap)
    [ -n "$cm" ] || die "the Deployment passes no --profiles-configmap: is manifests/ applied?"
    "$KUBECTL" -n "$ns" create token rdma-webhook --duration=24h >"$dir/webhook.token" ||
        die "TokenRequest for serviceaccount $ns/rdma-webhook failed"
    args=$(deployment_args) || die "cannot read deployment $ns/rdma-webhook"
    [ -n "$args" ] || die "deployment $ns/rdma-webhook has no args"

    # Rebuild the argument list with the host's paths, one Deployment arg at
    # a time (none of them has a space), then the API's, then the caller's
    # extra flags (simple words too), last so that they win.
    extra=$*
    set --
    for a in $args; do
        case $a in
        :8443) a=127.0.0.1:$port ;;
        :9090) a=127.0.0.1:$mport ;;
        /etc/rdma-webhook/tls/*) a=$dir/certs/${a#/etc/rdma-webhook/tls/} ;;
        esac
        set -- "$@" "$a"
    done
    # shellcheck disable=SC2086
    set -- "$@" --kube-api "$APISERVER" --kube-ca "$CLUSTER_CA_CERT" \
        --kube-token-file "$dir/webhook.token"
    [ -z "${WEBHOOK_CLIENT_CA:-}" ] || set -- "$@" --client-ca "$WEBHOOK_CLIENT_CA"
    # shellcheck disable=SC2086
    set -- "$@" $extra
    echo "$bin $*" >"$dir/webhook.cmdline"
    # Appended, so a restart keeps the earlier lines (the suite reads them).
    setsid "$bin" "$@" >>"$log" 2>&1 </dev/null &
    echo $! >"$pidfile"

    # Ready once the profiles came through the API: /readyz is 200 then,
    # over HTTPS with the serving certificate (--metrics-auth kubernetes, the
    # default with the API) or plain HTTP (--metrics-auth none).
    i=0
    until curl -fsS --cacert "$dir/certs/ca.crt" --resolve "localhost:$mport:127.0.0.1" \
        -o /dev/null "https://localhost:$mport/readyz" 2>/dev/null ||
        curl -fsS -o /dev/null "http://127.0.0.1:$mport/readyz" 2>/dev/null; do
        running || { tail -20 "$log" >&2; die "the webhook exited at start (log: $log)"; }
        [ $i -lt 300 ] || { tail -20 "$log" >&2; stop; die "the webhook was not ready within 30 s"; }
        sleep 0.1
        i=$((i + 1))
    done
}

# shellcheck disable=SC1091
. "$dir/env"
export KUBECONFIG
mkdir -p "$dir/pids" "$dir/logs"
case $cmd in
start) start "$@" ;;
stop) stop ;;
restart)
    stop
    start "$@"
    ;;
configmap) profiles_configmap ;;
*) die "unknown command $cmd: start, stop, restart or configmap" ;;
esac
