# The job controllers of issue 24, started by up.sh when CLUSTER_JOBS=1:
#
#   jobset-controller           sigs.k8s.io/jobset v0.12.0 (module ./jobs)
#   trainer-controller-manager  github.com/kubeflow/trainer/v2 v2.3.0 (./jobs)
#   mpi-operator                github.com/kubeflow/mpi-operator v0.7.0 (./mpi)
#
# Sourced by up.sh after the training-operator is ready; uses its helpers
# (start, wait_for, kc, http_ok, fail, is_listening) and variables (DIR, BIN,
# the *_PORT ports). jobs_up does it all: the CRDs from the modules' own
# manifests, the three controllers on the host with the admin kubeconfig,
# the JobSet and Trainer admission webhooks (certificates from
# `rdma-webhook gen-certs`, URL clientConfig to 127.0.0.1, the controllers'
# own certificate rotation off), and Trainer's `torch-distributed`
# ClusterTrainingRuntime. docs/development.md says what it costs.
# shellcheck shell=sh

# jobs_module_dir SUBDIR MODULE: where MODULE (the version SUBDIR/go.mod
# pins) is in the module cache, downloading it if it is not there yet.
jobs_module_dir() {
	_d=$(cd "$here/$1" && GO111MODULE=on GOWORK=off GOFLAGS=-mod=readonly \
		go mod download -json "$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -n "$_d" ] && [ -d "$_d" ] || fail "cannot locate $2 in the module cache (from $here/$1/go.mod)"
	echo "$_d"
}

# jobs_crds: every CRD the three controllers watch, server-side (the
# JobSet and TrainingRuntime CRDs are over the 256 kB a client-side apply's
# last-applied annotation may hold), then waits until they are served.
jobs_crds() {
	current=kube-apiserver
	for _f in "$JOBSET_MOD/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml" \
		"$TRAINER_MOD/manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml" \
		"$TRAINER_MOD/manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml" \
		"$TRAINER_MOD/manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml" \
		"$MPI_MOD/manifests/base/kubeflow.org_mpijobs.yaml"; do
		[ -r "$_f" ] || fail "$_f: not readable"
		kc apply --server-side --force-conflicts -f "$_f" >/dev/null
	done
	wait_for "CRDs jobsets, trainjobs, (cluster)trainingruntimes, mpijobs Established" \
		kc wait --for=condition=Established --timeout=5s crd/jobsets.jobset.x-k8s.io \
		crd/trainjobs.trainer.kubeflow.org crd/trainingruntimes.trainer.kubeflow.org \
		crd/clustertrainingruntimes.trainer.kubeflow.org crd/mpijobs.kubeflow.org
	# The namespaces the upstream manifests install into (the webhook
	# certificates name them) and mpi-operator's leader-election Lease.
	for _ns in jobset-system kubeflow-system mpi-operator; do
		kc create namespace "$_ns" --dry-run=client -o yaml | kc apply -f - >/dev/null
	done
}

# jobs_certs NAME SERVICE NAMESPACE OUTDIR: a CA and a serving certificate
# for 127.0.0.1 (and the Service names upstream uses), by the project's own
# gen-certs, as certs/install-dev-certs.sh makes the webhook's.
jobs_certs() {
	mkdir -p "$4"
	"$RDMA_WEBHOOK_BIN" gen-certs --out-dir "$4" --service "$2" --namespace "$3" --days 30 --force \
		>>"$DIR/logs/$1.log" 2>&1 || fail "rdma-webhook gen-certs for $1 failed (see $DIR/logs/$1.log)"
}

# jobs_webhooks NAME PORT CA FILE: applies the webhook configurations of the
# upstream manifest FILE (kustomize's output: every clientConfig.service
# block is name/namespace/path[/port], keys sorted) with each
# clientConfig.service replaced by url https://127.0.0.1:PORT/PATH and the
# caBundle of CA, and each configuration renamed NAME-KIND. The Service in
# FILE is dropped: nothing routes to a Service here (no kube-proxy).
jobs_webhooks() {
	_ca=$(b64 "$3")
	awk -v port="$2" -v ca="$_ca" -v prefix="$1" '
		function flush() { if (doc != "" && keep) printf "---\n%s", doc; doc = ""; keep = 0 }
		/^---/ { flush(); next }
		/^kind: (Mutating|Validating)WebhookConfiguration$/ { keep = 1; kind = tolower($2) }
		skip != "" {
			if (index($0, skip) == 1 && substr($0, length(skip) + 1, 1) == " ") {
				if ($1 == "path:") path = $2
				next
			}
			doc = doc skip "url: https://127.0.0.1:" port path "\n" skip "caBundle: " ca "\n"
			skip = ""
		}
		/^[[:space:]]+service:$/ { skip = substr($0, 1, index($0, "s") - 1); path = ""; next }
		/^  name: / && !named && keep { $0 = "  name: " prefix "-" kind; named = 1 }
		/^metadata:$/ { named = 0 }
		{ doc = doc $0 "\n" }
		END { flush() }' "$4" >"$DIR/$1/webhooks.yaml"
	grep -q 'url: https://127.0.0.1:' "$DIR/$1/webhooks.yaml" || fail "$4: found no webhook to install"
	! grep -q 'service:' "$DIR/$1/webhooks.yaml" || fail "$4: a clientConfig.service was left in $DIR/$1/webhooks.yaml"
	kc apply -f "$DIR/$1/webhooks.yaml" >/dev/null
}

# jobs_jobset: the JobSet controller, its config file in DIR/jobset: no
# leader election, metrics off, health on a free port, the webhook server on
# 127.0.0.1 with gen-certs' pair (internalCertManagement off, so it does not
# wait for a Secret and a Service to rotate certificates for).
jobs_jobset() {
	mkdir -p "$DIR/jobset"
	jobs_certs jobset-controller jobset-webhook-service jobset-system "$DIR/jobset/certs"
	cat >"$DIR/jobset/config.yaml" <<EOF
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: $JOBSET_WEBHOOK_PORT
  certDir: $DIR/jobset/certs
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:$JOBSET_HEALTH_PORT
EOF
	start jobset-controller env KUBECONFIG="$DIR/kubeconfig" "$BIN/jobset-controller" \
		--config="$DIR/jobset/config.yaml" --metrics-bind-address=0
	wait_for "jobset-controller /readyz" http_ok "http://127.0.0.1:$JOBSET_HEALTH_PORT" /readyz
	kc kustomize "$JOBSET_MOD/config/components/webhook" >"$DIR/jobset/upstream-webhooks.yaml"
	jobs_webhooks jobset "$JOBSET_WEBHOOK_PORT" "$DIR/jobset/certs/ca.crt" "$DIR/jobset/upstream-webhooks.yaml"
}

# jobs_trainer: the Trainer controller manager, alike. It has no certDir
# setting: controller-runtime's default, $TMPDIR/k8s-webhook-server/
# serving-certs, is made this cluster's own by TMPDIR=DIR/trainer.
jobs_trainer() {
	mkdir -p "$DIR/trainer"
	jobs_certs trainer-controller-manager kubeflow-trainer-controller-manager kubeflow-system \
		"$DIR/trainer/k8s-webhook-server/serving-certs"
	cat >"$DIR/trainer/config.yaml" <<EOF
apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health:
  healthProbeBindAddress: 127.0.0.1:$TRAINER_HEALTH_PORT
  readinessEndpointName: readyz
  livenessEndpointName: healthz
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: $TRAINER_WEBHOOK_PORT
leaderElection:
  leaderElect: false
certManagement:
  enable: false
EOF
	start trainer-controller-manager env KUBECONFIG="$DIR/kubeconfig" TMPDIR="$DIR/trainer" \
		"$BIN/trainer-controller-manager" --config="$DIR/trainer/config.yaml"
	wait_for "trainer-controller-manager /readyz" http_ok "http://127.0.0.1:$TRAINER_HEALTH_PORT" /readyz
	kc kustomize "$TRAINER_MOD/manifests/base/webhook" >"$DIR/trainer/upstream-webhooks.yaml"
	jobs_webhooks trainer "$TRAINER_WEBHOOK_PORT" \
		"$DIR/trainer/k8s-webhook-server/serving-certs/ca.crt" "$DIR/trainer/upstream-webhooks.yaml"
	# Through the validating webhook just installed: it must answer.
	current=trainer-controller-manager
	kc apply --server-side -f "$TRAINER_MOD/manifests/base/runtimes/torch_distributed.yaml" >/dev/null
}

# jobs_mpi: mpi-operator. It has no admission webhook and always elects a
# leader (a Lease in --lock-namespace: it is ready once it holds it). Its
# health check's port, a constant *:8080 upstream, is 0 in the binary
# build.sh makes, so clusters side by side do not fight over it.
jobs_mpi() {
	start mpi-operator "$BIN/mpi-operator" --kubeConfig="$DIR/kubeconfig" --lock-namespace=mpi-operator \
		--monitoring-port=0
	wait_for "mpi-operator holds its Lease" sh -c \
		"\"\$0\" --kubeconfig=\"\$1\" -n mpi-operator get lease mpi-operator -o jsonpath='{.spec.holderIdentity}' | grep -q ." \
		"$KUBECTL" "$DIR/kubeconfig"
}

jobs_up() {
	for _b in jobset-controller trainer-controller-manager mpi-operator; do
		[ -x "$BIN/$_b" ] || fail "$BIN/$_b missing (CLUSTER_JOBS=1): run $here/build.sh $BIN"
	done
	RDMA_WEBHOOK_BIN=${RDMA_WEBHOOK_BIN:-$here/../../build/rdma-webhook}
	[ -x "$RDMA_WEBHOOK_BIN" ] || fail "$RDMA_WEBHOOK_BIN missing (CLUSTER_JOBS=1 makes certificates with it): make build"
	JOBSET_MOD=$(jobs_module_dir jobs sigs.k8s.io/jobset)
	TRAINER_MOD=$(jobs_module_dir jobs github.com/kubeflow/trainer/v2)
	MPI_MOD=$(jobs_module_dir mpi github.com/kubeflow/mpi-operator)
	jobs_crds
	jobs_jobset
	jobs_trainer
	jobs_mpi
}
