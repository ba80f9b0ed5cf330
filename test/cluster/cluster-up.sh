#!/bin/sh
# `make cluster-up`: a local control plane with rdma-webhook installed, for
# trying the product without a cluster.
#
#   test/cluster/cluster-up.sh DIR BINDIR
#
# Starts etcd, kube-apiserver, kube-controller-manager and the Kubeflow
# training-operator from BINDIR (test/cluster/up.sh), installs manifests/ and
# runs the webhook on the host (install-webhook.sh), then adds to DIR/env
# what a user needs and prints how to use it. Returns once a PyTorchJob can
# be submitted. CLUSTER_JOBS=1 (passed on to up.sh) also starts the JobSet,
# Trainer v2 and mpi-operator controllers (test/cluster/jobs.sh). `make cluster-down` (test/cluster/down.sh DIR) stops it all.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
die() {
    echo "cluster-up: $*" >&2
    exit 1
}
[ $# -eq 2 ] || die "usage: $0 DIR BINDIR"
dir=$1
bindir=$2
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# A second cluster-up while one runs: say so, and how to use or stop it.
for pidfile in "$dir"/pids/*.pid; do
    [ -f "$pidfile" ] || continue
    if kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        echo "cluster-up: a cluster already runs in $dir ($(basename "$pidfile" .pid) is pid $(cat "$pidfile"))."
        echo "Use it with: set -a; . $dir/env; set +a    Stop it with: make cluster-down"
        exit 0
    fi
done

"$here/up.sh" "$dir" "$bindir"
if ! "$here/install-webhook.sh" "$dir"; then
    "$here/down.sh" "$dir" || true
    die "installing the webhook failed; the control plane is stopped again (logs: $dir/logs)"
fi

cm=$("$here/webhook.sh" configmap "$dir")
{
    echo "PROFILES_CONFIGMAP=$cm"
    echo "WEBHOOK_LOG=$dir/logs/webhook.log"
} >>"$dir/env"

cat <<EOF

The control plane runs (no kubelet, no scheduler: pods stay Pending, after
admission), with rdma-webhook installed from manifests/ and serving on the host.

  set -a; . $dir/env; set +a    # KUBECONFIG, KUBECTL, PROFILES_CONFIGMAP, WEBHOOK_LOG
  \$KUBECTL apply -f manifests/examples/pytorchjob-8gpu.yaml
  \$KUBECTL get pods -l training.kubeflow.org/job-name=nccl-allreduce-8gpu \\
      -o jsonpath='{range .items[*]}{.metadata.name}: {.metadata.annotations.rdma-webhook\.io/injected}{"\n"}{end}'
  \$KUBECTL get pod nccl-allreduce-8gpu-master-0 -o yaml
  \$KUBECTL -n rdma-webhook edit configmap "\${PROFILES_CONFIGMAP#*/}"   # picked up at once
  test/cluster/apply-profiles.sh FILE $dir   # a profiles file, checked, with its label
  test/cluster/webhook.sh restart $dir       # e.g. after make build
  tail -f "\$WEBHOOK_LOG"     # one JSON line per admission

  make cluster-down        # stops every process cluster-up started
EOF
if [ "${CLUSTER_JOBS:-0}" = 1 ]; then
    cat <<EOF

With CLUSTER_JOBS=1: JobSet, Kubeflow Trainer v2 (ClusterTrainingRuntime torch-distributed) and
mpi-operator run too (docs/development.md, "The job controllers"):

  \$KUBECTL apply -f my-trainjob.yaml     # e.g. spec.runtimeRef.name: torch-distributed
  \$KUBECTL get pods -l jobset.sigs.k8s.io/jobset-name=NAME    # a TrainJob's or JobSet's pods
  \$KUBECTL get pods -l training.kubeflow.org/job-name=NAME    # an MPIJob's
EOF
fi
