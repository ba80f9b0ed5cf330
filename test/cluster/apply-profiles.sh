#!/bin/sh
# Applies a profiles file to the local control plane in DIR (make cluster-up),
# as the new version of the ConfigMap the webhook watches:
#
#   test/cluster/apply-profiles.sh FILE [DIR]     # DIR: build/cluster by default
#
# Why not what an admin runs on a real cluster: `kubectl apply -k manifests/`
# would also apply the webhook configurations of manifests/, pointing the
# apiserver back at the Service, which nothing routes here (the cluster's
# overlay, test/cluster/overlay, calls the host instead); and a plain
# `kubectl create configmap --dry-run -o yaml | kubectl apply -f -` is refused
# for lacking the label rdma-webhook.io/profiles=true (an edit dropping it
# would leave later edits unchecked). So this script builds the ConfigMap
# with the label and applies only it, server-side: a version the webhook
# refuses fails with check-profiles' lines and nothing else (client-side
# apply prints the whole patch before them). FILE is checked with
# `rdma-webhook check-profiles` first, so a bad file never reaches the API.
#
# Env: RDMA_WEBHOOK_BIN (default build/rdma-webhook).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
die() {
    echo "apply-profiles: $*" >&2
    exit 1
}
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: $0 FILE [DIR]"
file=$1
dir=${2:-$root/build/cluster}
[ -f "$file" ] || die "no file $file"
[ -f "$dir/env" ] || die "$dir/env is missing: start the control plane first (make cluster-up)"
bin=${RDMA_WEBHOOK_BIN:-$root/build/rdma-webhook}
[ -x "$bin" ] || die "no $bin: run \`make build\`"
# shellcheck disable=SC1091
. "$dir/env"
export KUBECONFIG

"$bin" check-profiles "$file" >&2 || die "$file is not valid (the lines above); nothing applied"
cm=$("$here/webhook.sh" configmap "$dir")
[ -n "$cm" ] || die "cannot tell which ConfigMap the webhook watches"
ns=${cm%%/*}
name=${cm#*/}
# The key the Deployment serves: --profiles-key, profiles.json unless set.
key=$("$KUBECTL" -n rdma-webhook get deployment rdma-webhook \
    -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}' |
    sed -n '/^--profiles-key$/{n;p;q}')
key=${key:-profiles.json}

"$KUBECTL" -n "$ns" create configmap "$name" --from-file="$key=$file" --dry-run=client -o yaml |
    "$KUBECTL" label --local -f - rdma-webhook.io/profiles=true -o yaml |
    "$KUBECTL" apply --server-side --force-conflicts -f -
