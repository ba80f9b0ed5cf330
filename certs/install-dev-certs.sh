#!/bin/sh
# Makes the webhook's serving certificate with `rdma-webhook gen-certs` and
# installs it: the TLS Secret rdma-webhook-tls in the webhook's namespace, and
# the CA in the caBundle of every webhook of the MutatingWebhookConfiguration
# rdma-webhook and of the ValidatingWebhookConfiguration rdma-webhook (which
# checks edits of the profiles ConfigMap). Run it after
# `kubectl apply -k manifests/`, and again to rotate.
#
#   certs/install-dev-certs.sh [--namespace NS] [--service NAME] [--out-dir DIR]
#                              [--days N] [--force] [--print]
#
# --namespace NS  the webhook's namespace, where the Secret goes (default
#                 rdma-webhook)
# --service NAME  the webhook's Service (default rdma-webhook); the
#                 certificate's DNS names are NAME, NAME.NS, NAME.NS.svc and
#                 NAME.NS.svc.cluster.local
# --out-dir DIR   keep ca.crt, ca.key, tls.crt, tls.key in DIR (default: a
#                 temporary directory, removed at exit)
# --days N        validity of the certificates (default 365)
# --force         replace the certificates DIR already holds (without it, a DIR
#                 that holds any is refused and nothing changes)
# --print         change nothing in the cluster: make the certificates in
#                 --out-dir DIR (required) and print the two webhook configurations
#                 of manifests/ with the caBundle filled in (and their Service set
#                 to NAME in NS) as YAML, and, as a comment, the command that makes
#                 the Secret from DIR. The private key is never printed.
#
# Env: KUBECTL (default kubectl), RDMA_WEBHOOK_BIN (default build/rdma-webhook
# of this repository, else rdma-webhook on PATH).
#
# Rotation without a gap: the caBundle is patched first, with the new CA
# followed by the CA it held before, and only then is the Secret replaced (the
# pods reload the mounted files once the kubelet has synced them); so the
# apiserver trusts the serving certificate on both sides of the switch.
set -eu

ns=rdma-webhook
svc=rdma-webhook
secret=rdma-webhook-tls
mwc=rdma-webhook

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# The webhook configurations, kind and manifest; both are named rdma-webhook.
mwc_file=$root/manifests/mutatingwebhookconfiguration.yaml
vwc_file=$root/manifests/validatingwebhookconfiguration.yaml
kubectl=${KUBECTL:-kubectl}

usage() {
    sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0"
}

die() {
    echo "install-dev-certs: $*" >&2
    exit 1
}

print=0
force=
out_dir=
days=365
while [ $# -gt 0 ]; do
    case $1 in
    --print) print=1 ;;
    --force) force=--force ;;
    --namespace)
        [ $# -ge 2 ] || die "--namespace needs a namespace"
        ns=$2
        shift
        ;;
    --namespace=*) ns=${1#--namespace=} ;;
    --service)
        [ $# -ge 2 ] || die "--service needs a Service name"
        svc=$2
        shift
        ;;
    --service=*) svc=${1#--service=} ;;
    --out-dir)
        [ $# -ge 2 ] || die "--out-dir needs a directory"
        out_dir=$2
        shift
        ;;
    --out-dir=*) out_dir=${1#--out-dir=} ;;
    --days)
        [ $# -ge 2 ] || die "--days needs a number"
        days=$2
        shift
        ;;
    --days=*) days=${1#--days=} ;;
    -h | --help)
        usage
        exit 0
        ;;
    *) die "unknown argument: $1 (try --help)" ;;
    esac
    shift
done

if [ -n "${RDMA_WEBHOOK_BIN:-}" ]; then
    bin=$RDMA_WEBHOOK_BIN
elif [ -x "$root/build/rdma-webhook" ]; then
    bin=$root/build/rdma-webhook
elif command -v rdma-webhook >/dev/null 2>&1; then
    bin=rdma-webhook
else
    die "no rdma-webhook binary: run \`make build\` or set RDMA_WEBHOOK_BIN"
fi
command -v "$kubectl" >/dev/null 2>&1 || die "$kubectl not found (set KUBECTL)"

if [ -z "$out_dir" ]; then
    # --print shows no key, so the files must stay where the admin can use them.
    [ "$print" = 0 ] || die "--print needs --out-dir DIR: the private key is written there, never printed"
    out_dir=$(mktemp -d "${TMPDIR:-/tmp}/rdma-webhook-certs.XXXXXX")
    trap 'rm -rf "$out_dir"' EXIT
    trap 'exit 1' HUP INT TERM
fi
# shellcheck disable=SC2086 # $force is empty or one word
"$bin" gen-certs --out-dir "$out_dir" --service "$svc" --namespace "$ns" --days "$days" $force >&2 ||
    die "gen-certs failed (see above)"
for f in ca.crt tls.crt tls.key; do
    [ -s "$out_dir/$f" ] || die "gen-certs wrote no $out_dir/$f"
done

# The Secret, as `kubectl apply` takes it.
secret_yaml() {
    "$kubectl" create secret tls "$secret" --namespace "$ns" \
        --cert "$out_dir/tls.crt" --key "$out_dir/tls.key" \
        --dry-run=client -o yaml
}

# webhook_names KIND FILE: the names of the webhooks, one a line, in order;
# from the manifest file (--print) or from the cluster.
webhook_names() {
    jp='{range .webhooks[*]}{.name}{"\n"}{end}'
    if [ "$print" = 1 ]; then
        "$kubectl" patch --local -f "$2" --type merge -p '{}' -o jsonpath="$jp"
    else
        "$kubectl" get "$1" "$mwc" -o jsonpath="$jp"
    fi
}

# ns_selector_patch KIND INDEX: the namespaceSelector of manifests/ names the
# webhook's own namespace: the mutating webhooks leave it alone (so the
# webhook never waits on itself), the profiles check selects it. Moved to
# --namespace; the test ops fail loudly if manifests/ change shape.
ns_selector_patch() {
    if [ "$1" = mutatingwebhookconfiguration ]; then
        p=/webhooks/$2/namespaceSelector/matchExpressions/0/values/1
        printf ',{"op":"test","path":"/webhooks/%d/namespaceSelector/matchExpressions/0/key","value":"kubernetes.io/metadata.name"}' "$2"
        printf ',{"op":"test","path":"%s","value":"rdma-webhook"},{"op":"replace","path":"%s","value":"%s"}' "$p" "$p" "$ns"
    else
        p=/webhooks/$2/namespaceSelector/matchLabels/kubernetes.io~1metadata.name
        printf ',{"op":"test","path":"%s","value":"rdma-webhook"},{"op":"replace","path":"%s","value":"%s"}' "$p" "$p" "$ns"
    fi
}

# ca_patch KIND FILE BUNDLE_B64 [service]: a JSON patch setting every
# webhook's caBundle, each guarded by a test of the webhook's name at that
# index; with "service", also its clientConfig.service name and namespace
# and the namespace its namespaceSelector names (--print, where the object
# comes from manifests/ and its default names).
ca_patch() {
    names=$(webhook_names "$1" "$2") || die "cannot read the webhooks of $1 $mwc"
    [ -n "$names" ] || die "$1 $mwc has no webhooks"
    i=0
    sep=
    printf '['
    for name in $names; do
        printf '%s{"op":"test","path":"/webhooks/%d/name","value":"%s"},' "$sep" "$i" "$name"
        printf '{"op":"add","path":"/webhooks/%d/clientConfig/caBundle","value":"%s"}' "$i" "$3"
        if [ "${4:-}" = service ]; then
            printf ',{"op":"replace","path":"/webhooks/%d/clientConfig/service/name","value":"%s"}' "$i" "$svc"
            printf ',{"op":"replace","path":"/webhooks/%d/clientConfig/service/namespace","value":"%s"}' "$i" "$ns"
            ns_selector_patch "$1" "$i"
        fi
        sep=,
        i=$((i + 1))
    done
    printf ']'
}

b64() {
    base64 | tr -d '\n'
}

if [ "$print" = 1 ]; then
    bundle=$(b64 <"$out_dir/ca.crt")
    dir=$(cd "$out_dir" && pwd)
    echo "# Secret $ns/$secret holds the private key, so it is not printed; make it from $dir:"
    echo "#   $kubectl create secret tls $secret --namespace $ns --cert '$dir/tls.crt' --key '$dir/tls.key'"
    echo "# MutatingWebhookConfiguration $mwc with the caBundle (base64 of ca.crt), calling Service $ns/$svc"
    "$kubectl" patch --local -f "$mwc_file" --type json \
        -p "$(ca_patch mutatingwebhookconfiguration "$mwc_file" "$bundle" service)" -o yaml
    echo "---"
    echo "# ValidatingWebhookConfiguration $mwc (checks edits of the profiles ConfigMap), the same"
    "$kubectl" patch --local -f "$vwc_file" --type json \
        -p "$(ca_patch validatingwebhookconfiguration "$vwc_file" "$bundle" service)" -o yaml
    exit 0
fi

"$kubectl" get namespace "$ns" >/dev/null ||
    die "namespace $ns not found: run \`kubectl apply -k manifests/\` first"
"$kubectl" get mutatingwebhookconfiguration "$mwc" >/dev/null ||
    die "MutatingWebhookConfiguration $mwc not found: run \`kubectl apply -k manifests/\` first"

# Trust the new CA and, until the pods serve the new certificate, the previous
# one (the first certificate of the current bundle).
old=$("$kubectl" get mutatingwebhookconfiguration "$mwc" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')
{
    cat "$out_dir/ca.crt"
    if [ -n "$old" ]; then
        printf '%s' "$old" | base64 -d | awk '/-----BEGIN CERTIFICATE-----/ { n++ } n == 1'
    fi
} >"$out_dir/bundle.crt"
"$kubectl" patch mutatingwebhookconfiguration "$mwc" --type json \
    -p "$(ca_patch mutatingwebhookconfiguration "" "$(b64 <"$out_dir/bundle.crt")")"
# An install from before the profiles check has no ValidatingWebhookConfiguration
# yet: `kubectl apply -k manifests/` adds it, and a run after that fills it in.
if "$kubectl" get validatingwebhookconfiguration "$mwc" >/dev/null 2>&1; then
    "$kubectl" patch validatingwebhookconfiguration "$mwc" --type json \
        -p "$(ca_patch validatingwebhookconfiguration "" "$(b64 <"$out_dir/bundle.crt")")"
    also=" and of the profiles check"
else
    echo "install-dev-certs: no ValidatingWebhookConfiguration $mwc (apply manifests/ again to add it)" >&2
    also=
fi
secret_yaml | "$kubectl" apply -f -

echo "installed: Secret $ns/$secret and the caBundle of $mwc$also" >&2
echo "the pods pick the new files up once the kubelet syncs the Secret (about a minute);" >&2
echo "check with: $kubectl -n $ns rollout status deployment/$svc" >&2
