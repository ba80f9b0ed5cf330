#!/bin/sh
# Installs rdma-webhook into the local control plane in DIR (made by up.sh)
# the way an admin installs it, then runs the webhook binary on the host:
#
#   1. `kubectl apply -k` of manifests/ through test/cluster/overlay (the only
#      change: the webhook configuration calls https://127.0.0.1:PORT/mutate);
#   2. certs/install-dev-certs.sh: gen-certs, the TLS Secret and the caBundle;
#   3. test/cluster/webhook.sh start: the binary with the Deployment's flags.
#
#   test/cluster/install-webhook.sh DIR
#
# Env: WEBHOOK_PORT (default 18443) and WEBHOOK_METRICS_PORT (default 19090);
# RDMA_WEBHOOK_BIN (default build/rdma-webhook). With a port other than
# 18443, a kustomize layer in DIR/overlay moves the URL of the committed
# overlay to it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
die() {
    echo "install-webhook: $*" >&2
    exit 1
}
[ $# -eq 1 ] || die "usage: $0 DIR"
dir=$(cd "$1" && pwd) || die "no directory $1"
[ -f "$dir/env" ] || die "$dir/env is missing: start the control plane first (test/cluster/up.sh $dir)"
# shellcheck disable=SC1091
. "$dir/env"
export KUBECONFIG KUBECTL
port=${WEBHOOK_PORT:-18443}
kustomize_dir=$here/overlay

# Another port: a layer on top of the committed overlay that only moves it.
if [ "$port" != 18443 ]; then
    kustomize_dir=$dir/overlay
    mkdir -p "$kustomize_dir"
    # kustomize takes relative paths only.
    base=$(realpath --relative-to="$kustomize_dir" "$here/overlay")
    cat >"$kustomize_dir/kustomization.yaml" <<EOF
# Written by test/cluster/install-webhook.sh: test/cluster/overlay, on port $port.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $base
patches:
- target:
    group: admissionregistration.k8s.io
    kind: MutatingWebhookConfiguration
    name: rdma-webhook
  patch: |-
    - {op: replace, path: /webhooks/0/clientConfig/url, value: "https://127.0.0.1:$port/mutate"}
    - {op: replace, path: /webhooks/1/clientConfig/url, value: "https://127.0.0.1:$port/mutate"}
    - {op: replace, path: /webhooks/2/clientConfig/url, value: "https://127.0.0.1:$port/mutate"}
    - {op: replace, path: /webhooks/3/clientConfig/url, value: "https://127.0.0.1:$port/mutate"}
    - {op: replace, path: /webhooks/4/clientConfig/url, value: "https://127.0.0.1:$port/mutate"}
- target:
    group: admissionregistration.k8s.io
    kind: ValidatingWebhookConfiguration
    name: rdma-webhook
  patch: |-
    - {op: replace, path: /webhooks/0/clientConfig/url, value: "https://127.0.0.1:$port/validate-profiles"}
EOF
fi

"$KUBECTL" apply -k "$kustomize_dir" >"$dir/logs/apply.log" 2>&1 ||
    { cat "$dir/logs/apply.log" >&2; die "kubectl apply -k $kustomize_dir failed"; }
mkdir -p "$dir/certs"
# --force: DIR/certs is this install's own, and a second install rotates it.
RDMA_WEBHOOK_BIN=${RDMA_WEBHOOK_BIN:-$root/build/rdma-webhook} \
    "$root/certs/install-dev-certs.sh" --out-dir "$dir/certs" --force >"$dir/logs/install-dev-certs.log" 2>&1 ||
    { cat "$dir/logs/install-dev-certs.log" >&2; die "certs/install-dev-certs.sh failed"; }
"$here/webhook.sh" start "$dir"
