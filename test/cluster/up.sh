#!/bin/sh
# up.sh DIR [BINDIR] -- start a local Kubernetes control plane in DIR.
#
#   etcd (embedded, cmd/etcd), kube-apiserver, kube-controller-manager and the
#   Kubeflow training-operator (PyTorchJob only), all on 127.0.0.1.  No
#   kubelet and no scheduler: Pods are admitted and stored but stay Pending.
#   With CLUSTER_JOBS=1 also the JobSet controller, Kubeflow Trainer v2 and
#   mpi-operator, with their CRDs and admission webhooks (jobs.sh).
#
# BINDIR holds the binaries from build.sh; default $CLUSTER_BIN, else
# <repo>/build/cluster-bin.  The processes run detached (own session, output
# in DIR/logs/NAME.log, pid in DIR/pids/NAME.pid) and outlive this script;
# stop them with down.sh DIR.  When everything is ready, DIR/env is written:
#
#   KUBECONFIG=DIR/kubeconfig   admin (system:masters) client certificate
#   KUBECTL=BINDIR/kubectl
#   APISERVER=https://127.0.0.1:PORT
#   ... (see write_env below)
#
# Use it with:  set -a; . DIR/env; set +a; "$KUBECTL" get ns
#
# Environment knobs:
#   CLUSTER_JOBS       1: also start the job controllers of jobs.sh (their
#                      binaries from build.sh; RDMA_WEBHOOK_BIN, default
#                      build/rdma-webhook, makes their certificates).
#   CLUSTER_PORT_BASE  use ports BASE..BASE+10 exactly (fails if one is busy);
#                      default: a random base in 20000-31000, skipping busy
#                      ports (below the kernel's ephemeral range).
#   CLUSTER_TIMEOUT    seconds each readiness wait may take (default 180; a
#                      loaded 2-core CI machine needs the headroom).
#   PYTORCHJOB_CRD     CRD file to apply (default: from the training-operator
#                      module in the Go module cache, version from
#                      operator/go.mod).
#
# DIR is scratch space: etcd data, certificates and logs are recreated on
# every start, so each run begins with an empty cluster.
set -eu

here=$(cd "$(dirname "$0")" && pwd -P)
# shellcheck source=common.sh
. "$here/common.sh"

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	die "usage: $0 DIR [BINDIR]"
fi
DIR=$(abs_dir "$1" create)
BIN=$(abs_dir "${2:-${CLUSTER_BIN:-$here/../../build/cluster-bin}}")
check_path_chars "$DIR"
check_path_chars "$BIN"
TIMEOUT=${CLUSTER_TIMEOUT:-180}
JOBS=${CLUSTER_JOBS:-0}
case $JOBS in 0 | 1) ;; *) die "CLUSTER_JOBS=$JOBS: 0 or 1" ;; esac
KUBECTL=$BIN/kubectl

for b in etcd kube-apiserver kube-controller-manager kubectl training-operator; do
	[ -x "$BIN/$b" ] || die "$BIN/$b missing: run $here/build.sh $BIN"
done

# One cluster per DIR: a second set of processes would fight over the same
# data directory and pid files.
running=$(running_components "$DIR")
if [ -n "$running" ]; then
	echo "$(basename "$0"): a cluster is already running in $DIR:" >&2
	echo "$running" | sed 's/^/  /' >&2
	echo "stop it first: $here/down.sh $DIR" >&2
	exit 1
fi

# ---------------------------------------------------------------- cleanup
# If anything below fails (or we are interrupted), stop what we started and
# show the log of the component we were waiting for.
ok=0
current=""
on_exit() {
	[ "$ok" = 1 ] && return
	if [ -n "$current" ] && [ -f "$DIR/logs/$current.log" ]; then
		echo "---- last 40 lines of $DIR/logs/$current.log ----" >&2
		tail -n 40 "$DIR/logs/$current.log" >&2
		echo "----" >&2
	fi
	echo "$(basename "$0"): failed; stopping what was started (logs stay in $DIR/logs)" >&2
	"$here/down.sh" "$DIR" >&2 || true
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
	echo "$(basename "$0"): $*" >&2
	exit 1
}

# ------------------------------------------------------------------ ports
# is_listening PORT: some socket (any address, IPv4 or IPv6) listens on TCP
# PORT.  Read /proc/net/tcp{,6} (state 0A = LISTEN) rather than rely on ss or
# netstat being installed.
is_listening() {
	_hex=$(printf '%04X' "$1")
	set --
	for _f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$_f" ] && set -- "$@" "$_f"
	done
	[ $# -gt 0 ] || return 1
	awk -v h="$_hex" '
		FNR > 1 && $4 == "0A" { n = split($2, a, ":"); if (a[n] == h) found = 1 }
		END { exit !found }' "$@"
}

PORT_NAMES="ETCD_CLIENT_PORT ETCD_PEER_PORT APISERVER_PORT KCM_PORT OPERATOR_METRICS_PORT OPERATOR_HEALTH_PORT OPERATOR_WEBHOOK_PORT
JOBSET_HEALTH_PORT JOBSET_WEBHOOK_PORT TRAINER_HEALTH_PORT TRAINER_WEBHOOK_PORT"
pick_ports() {
	if [ -n "${CLUSTER_PORT_BASE:-}" ]; then
		_p=$CLUSTER_PORT_BASE
		_strict=1
	else
		# A random base makes two clusters started at the same moment (e.g.
		# parallel CI jobs) unlikely to choose the same ports between our
		# check and the servers' bind; staying below 32768 keeps clear of
		# ports the kernel hands out to outgoing connections.
		_r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
		_p=$((20000 + _r % 11000))
		_strict=0
	fi
	for _name in $PORT_NAMES; do
		while is_listening "$_p"; do
			[ "$_strict" = 0 ] || fail "port $_p (CLUSTER_PORT_BASE=$CLUSTER_PORT_BASE) is in use"
			_p=$((_p + 1))
		done
		eval "$_name=$_p"
		_p=$((_p + 1))
	done
}

# ------------------------------------------------------------ certificates
# b64 FILE: base64 on one line (GNU and BSD base64 both wrap otherwise).
b64() {
	base64 <"$1" | tr -d '\n'
}

gen_pki() {
	pki=$DIR/pki
	rm -rf "$pki"
	mkdir -p "$pki"
	# Our own small openssl config, so the result does not depend on the
	# distribution's openssl.cnf defaults.
	cat >"$pki/openssl.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
authorityKeyIdentifier = keyid
# 10.96.0.1 is the "kubernetes" Service's ClusterIP in 10.96.0.0/12.
subjectAltName = IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
[operator_webhook]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
authorityKeyIdentifier = keyid
subjectAltName = DNS:training-operator.kubeflow.svc,IP:127.0.0.1
EOF
	(
		umask 077
		cd "$pki"
		# Cluster CA: signs serving and client certificates and is the
		# apiserver's --client-ca-file and the controller-manager's
		# --root-ca-file (the ca.crt in every kube-root-ca.crt ConfigMap).
		openssl req -x509 -config openssl.cnf -extensions ca -newkey rsa:2048 -nodes \
			-subj "/CN=rdma-webhook-test-ca" -days 30 -keyout ca.key -out ca.crt 2>/dev/null
		# Service-account token key pair: the apiserver signs TokenRequest
		# tokens with the private key and verifies them with the public one;
		# the controller-manager signs its per-controller tokens with it too.
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
		openssl pkey -in sa.key -pubout -out sa.pub
		issue apiserver server "/CN=kube-apiserver"
		# O=system:masters is bound to cluster-admin by the built-in RBAC
		# policy and bypasses authorization.
		issue admin client "/O=system:masters/CN=admin"
		# The controller-manager's own identity: RBAC bootstrap policy
		# grants system:kube-controller-manager what it needs, and with
		# --use-service-account-credentials each controller then runs under
		# its own kube-system ServiceAccount, as in a real cluster.
		issue kcm client "/CN=system:kube-controller-manager"
		# The apiserver's client identity towards aggregated APIs (the
		# "front proxy"), as kubeadm sets it up.  Configuring it also fills
		# the requestheader CA in kube-system/extension-apiserver-
		# authentication, which the controller-manager's delegated authn
		# otherwise complains about every few seconds.
		# Its own CA, as in kubeadm: a certificate from the cluster CA (which
		# the controller-manager signs CSRs with) must not be able to assert
		# arbitrary users through these headers.
		openssl req -x509 -config openssl.cnf -extensions ca -newkey rsa:2048 -nodes \
			-subj "/CN=rdma-webhook-test-front-proxy-ca" -days 30 \
			-keyout front-proxy-ca.key -out front-proxy-ca.crt 2>/dev/null
		issue front-proxy-client client "/CN=front-proxy-client" front-proxy-ca
		issue operator-webhook operator_webhook "/CN=training-operator.kubeflow.svc"
		# The apiserver's client certificate towards admission webhooks
		# (webhook-admission.kubeconfig), from a CA of its own: the webhook
		# runs with --client-ca webhook-client-ca.crt (webhook.sh), which
		# must not admit every certificate the cluster CA signs.
		openssl req -x509 -config openssl.cnf -extensions ca -newkey rsa:2048 -nodes \
			-subj "/CN=rdma-webhook-test-webhook-client-ca" -days 30 \
			-keyout webhook-client-ca.key -out webhook-client-ca.crt 2>/dev/null
		issue webhook-client client "/CN=kube-apiserver-webhook-client" webhook-client-ca
	)
}

# write_admission_config: the apiserver's --admission-control-config-file,
# DIR/admission.yaml: test/cluster/admission.yaml (PodSecurity) plus the
# webhook plugins' kubeconfig, through which the apiserver presents
# webhook-client.crt to the webhooks that ask for a certificate (the
# kubeConfigFile must be an absolute path, hence a file written here). The
# user is '*', every webhook: the suite picks the webhook's port after the
# apiserver has started, and the name of a URL webhook includes its port
# (docs/install.md has the form for the Service, rdma-webhook.rdma-webhook.svc).
write_admission_config() {
	(
		umask 077
		cat >"$DIR/webhook-admission.kubeconfig" <<EOF
apiVersion: v1
kind: Config
users:
- name: '*'
  user:
    client-certificate-data: $(b64 "$DIR/pki/webhook-client.crt")
    client-key-data: $(b64 "$DIR/pki/webhook-client.key")
EOF
	)
	cat "$here/admission.yaml" - >"$DIR/admission.yaml" <<EOF
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $DIR/webhook-admission.kubeconfig
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $DIR/webhook-admission.kubeconfig
EOF
}

# issue NAME EXTENSIONS SUBJECT [CA] (inside $pki): NAME.key + NAME.crt
# signed by CA (default: ca).
issue() {
	_ca=${4:-ca}
	openssl req -new -config openssl.cnf -newkey rsa:2048 -nodes \
		-subj "$3" -keyout "$1.key" -out "$1.csr" 2>/dev/null
	openssl x509 -req -in "$1.csr" -CA "$_ca.crt" -CAkey "$_ca.key" -CAcreateserial -CAserial "$_ca.srl" \
		-days 30 -extfile openssl.cnf -extensions "$2" -out "$1.crt" 2>/dev/null
	rm -f "$1.csr"
}

# write_kubeconfig FILE CERTNAME: credentials embedded, so the file can be
# copied or read by programs that do not resolve relative paths.
write_kubeconfig() {
	(
		umask 077
		cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(b64 "$DIR/pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(b64 "$DIR/pki/$2.crt")
    client-key-data: $(b64 "$DIR/pki/$2.key")
contexts:
- name: local
  context:
    cluster: local
    user: $2
    namespace: default
current-context: local
EOF
	)
}

# --------------------------------------------------------------- processes
# start NAME CMD...: run CMD detached: new session (setsid, so the caller's
# Ctrl-C or terminal hangup does not reach it), stdin from /dev/null, output
# appended to DIR/logs/NAME.log.  The child writes its own pid ($$ of the sh
# that then execs CMD is CMD's pid), which stays right even if setsid has to
# fork.
start() {
	_name=$1
	shift
	current=$_name
	rm -f "$DIR/pids/$_name.pid"
	echo "==== $(date '+%Y-%m-%dT%H:%M:%S') $*" >>"$DIR/logs/$_name.log"
	# shellcheck disable=SC2016 # $$ and $@ belong to the inner sh
	setsid sh -c 'echo "$$" >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' \
		"$DIR/pids/$_name.pid" "$@" </dev/null >>"$DIR/logs/$_name.log" 2>&1 &
	_deadline=$(($(now) + 10))
	until [ -s "$DIR/pids/$_name.pid" ]; do
		[ "$(now)" -lt "$_deadline" ] || fail "$_name did not start"
		sleep 0.1 # the pid file appears as soon as the child has run
	done
	echo "started $_name (pid $(cat "$DIR/pids/$_name.pid"), log $DIR/logs/$_name.log)"
}

# all_alive: every component started so far is still running; otherwise
# name the dead one (its log is what the failure message shows).
all_alive() {
	for _n in $CLUSTER_COMPONENTS; do
		_pid=$(pid_of "$DIR" "$_n") || continue
		if ! is_ours "$DIR" "$_pid"; then
			current=$_n
			fail "$_n (pid $_pid) exited; see $DIR/logs/$_n.log"
		fi
	done
}

# wait_for DESCRIPTION CMD...: poll CMD until it succeeds; give up after
# $TIMEOUT seconds, or at once if a component died.
wait_for() {
	_desc=$1
	shift
	_t0=$(now)
	_deadline=$((_t0 + TIMEOUT))
	until "$@" >/dev/null 2>&1; do
		all_alive
		[ "$(now)" -lt "$_deadline" ] || fail "timed out after ${TIMEOUT}s waiting for $_desc"
		sleep 0.5 # poll interval
	done
	echo "ready: $_desc ($(($(now) - _t0))s)"
}

kc() {
	"$KUBECTL" --kubeconfig="$DIR/kubeconfig" "$@"
}

# http_ok URL: GET URL succeeds (2xx).  kubectl can GET from any HTTP server,
# which avoids needing curl; an empty kubeconfig keeps the admin credentials
# out of it.
http_ok() {
	"$KUBECTL" --kubeconfig=/dev/null --server="$1" --request-timeout=5s get --raw "$2"
}

pytorchjob_crd() {
	if [ -n "${PYTORCHJOB_CRD:-}" ]; then
		echo "$PYTORCHJOB_CRD"
		return
	fi
	# The module version comes from operator/go.mod; `go mod download`
	# fetches it if the cache does not have it yet (no-op otherwise) and
	# prints where it is.
	_dir=$(cd "$here/operator" && GO111MODULE=on GOWORK=off GOFLAGS=-mod=readonly \
		go mod download -json github.com/kubeflow/training-operator |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -n "$_dir" ] || fail "cannot locate github.com/kubeflow/training-operator in the module cache"
	echo "$_dir/manifests/base/crds/kubeflow.org_pytorchjobs.yaml"
}

# ------------------------------------------------------------------- start
crd=$(pytorchjob_crd)
[ -r "$crd" ] || fail "$crd: not readable"

pick_ports
# Only our own files: other tools (e.g. webhook.sh) keep theirs in DIR too.
rm -rf "$DIR/etcd" "$DIR/env" "$DIR/kcm" "$DIR/jobset" "$DIR/trainer"
mkdir -p "$DIR/logs" "$DIR/pids"
for n in $CLUSTER_COMPONENTS; do
	rm -f "$DIR/logs/$n.log" "$DIR/pids/$n.pid"
done
gen_pki
write_admission_config
write_kubeconfig "$DIR/kubeconfig" admin
write_kubeconfig "$DIR/kcm.kubeconfig" kcm
echo "ports: etcd $ETCD_CLIENT_PORT/$ETCD_PEER_PORT apiserver $APISERVER_PORT" \
	"controller-manager $KCM_PORT operator $OPERATOR_METRICS_PORT/$OPERATOR_HEALTH_PORT/$OPERATOR_WEBHOOK_PORT" \
	"jobset $JOBSET_HEALTH_PORT/$JOBSET_WEBHOOK_PORT trainer $TRAINER_HEALTH_PORT/$TRAINER_WEBHOOK_PORT"

# etcd: our embed wrapper prints this line once e.Server.ReadyNotify() fires.
start etcd "$BIN/etcd" \
	--name=local \
	--data-dir="$DIR/etcd" \
	--listen-client-url="http://127.0.0.1:$ETCD_CLIENT_PORT" \
	--listen-peer-url="http://127.0.0.1:$ETCD_PEER_PORT"
wait_for etcd grep -q '^etcd: ready' "$DIR/logs/etcd.log"

# kube-apiserver.  Admission: no --enable/--disable-admission-plugins, so
# the defaults apply (NamespaceLifecycle, ServiceAccount, PodSecurity,
# MutatingAdmissionPolicy, MutatingAdmissionWebhook, ValidatingAdmission-
# Policy, ValidatingAdmissionWebhook, ResourceQuota, ...); PodSecurity with
# the exemptions of test/cluster/admission.yaml, and the webhooks' client
# certificate (write_admission_config).
# MutatingAdmissionPolicy (admissionregistration.k8s.io/v1) is GA and on by
# default since 1.36, so no --feature-gates/--runtime-config are needed.
# --allow-privileged: like kubeadm clusters; otherwise privileged pods would
# be rejected for a reason a real cluster does not have.
# --advertise-address + --endpoint-reconciler-type=none: the advertised
# address is what the apiserver would publish as the "kubernetes" Service's
# endpoint, and the endpoint reconciler refuses a loopback one.  Nothing
# could route to that Service here anyway (no kube-proxy), so publish none
# rather than let it pick some interface's address.
start kube-apiserver "$BIN/kube-apiserver" \
	--etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
	--bind-address=127.0.0.1 \
	--advertise-address=127.0.0.1 \
	--endpoint-reconciler-type=none \
	--secure-port="$APISERVER_PORT" \
	--tls-cert-file="$DIR/pki/apiserver.crt" \
	--tls-private-key-file="$DIR/pki/apiserver.key" \
	--client-ca-file="$DIR/pki/ca.crt" \
	--authorization-mode=Node,RBAC \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-account-key-file="$DIR/pki/sa.pub" \
	--service-account-signing-key-file="$DIR/pki/sa.key" \
	--service-cluster-ip-range=10.96.0.0/12 \
	--allow-privileged=true \
	--admission-control-config-file="$DIR/admission.yaml" \
	--requestheader-client-ca-file="$DIR/pki/front-proxy-ca.crt" \
	--requestheader-allowed-names=front-proxy-client \
	--requestheader-username-headers=X-Remote-User \
	--requestheader-group-headers=X-Remote-Group \
	--requestheader-extra-headers-prefix=X-Remote-Extra- \
	--proxy-client-cert-file="$DIR/pki/front-proxy-client.crt" \
	--proxy-client-key-file="$DIR/pki/front-proxy-client.key" \
	--cert-dir="$DIR/pki/apiserver-generated"
wait_for "kube-apiserver /readyz" kc get --raw=/readyz

# kube-controller-manager, default controller set ("*"): among them the
# serviceaccount controller (creates "default" in every namespace; the
# ServiceAccount admission plugin rejects pods without it), namespace
# (deletion), garbage-collector (ownerReferences, e.g. PyTorchJob -> Pods),
# endpointslice, job/replicaset/deployment, csrsigning (the CA below).
# No cloud provider: the cloud controllers are not default-enabled.
# Leader election off: single instance, so no lease to wait for.
# --bind-address/--secure-port: its HTTPS health/metrics server would
# otherwise listen on *:10257.
start kube-controller-manager "$BIN/kube-controller-manager" \
	--kubeconfig="$DIR/kcm.kubeconfig" \
	--authentication-kubeconfig="$DIR/kcm.kubeconfig" \
	--authorization-kubeconfig="$DIR/kcm.kubeconfig" \
	--bind-address=127.0.0.1 \
	--secure-port="$KCM_PORT" \
	--cert-dir="$DIR/kcm" \
	--service-account-private-key-file="$DIR/pki/sa.key" \
	--root-ca-file="$DIR/pki/ca.crt" \
	--use-service-account-credentials=true \
	--cluster-signing-cert-file="$DIR/pki/ca.crt" \
	--cluster-signing-key-file="$DIR/pki/ca.key" \
	--leader-elect=false
wait_for "ServiceAccount default/default" kc get serviceaccount default --namespace=default

# PyTorchJob CRD, straight from the module cache.  Server-side apply: the
# CRD is ~600 kB, and client-side apply would store all of it again in the
# last-applied annotation, which is limited to 256 kB.
current=kube-apiserver
kc apply --server-side --force-conflicts -f "$crd" >/dev/null
wait_for "CRD pytorchjobs.kubeflow.org Established" \
	kc wait --for=condition=Established --timeout=5s crd/pytorchjobs.kubeflow.org

# training-operator.  Its cert-controller (open-policy-agent/cert-controller)
# runs unconditionally -- there is no flag to turn the webhook side off --
# and gates both the controllers and /readyz on it:
#  * it keeps CA + serving cert in Secret $MY_POD_NAMESPACE/training-
#    operator-webhook-cert and fails at start if that Secret does not exist
#    (in-cluster the manifests create it empty), so create the namespace and
#    an empty Secret;
#  * it then waits for tls.crt in the hard-coded directory
#    /tmp/k8s-webhook-server/serving-certs, where the kubelet would mount
#    that Secret.  Nobody mounts anything here, so we put a key pair there
#    ourselves (any valid one will do: see the next point).  The directory
#    is shared by every cluster on the machine; that is harmless, because
#  * we deliberately do NOT create its ValidatingWebhookConfiguration
#    (validator.training-operator.kubeflow.org): it would point the
#    apiserver at Service training-operator.kubeflow, which nothing routes
#    to without kube-proxy, and PyTorchJob writes would then fail.  The
#    cert-controller logs "Webhook not found" and carries on; the operator's
#    webhook server runs but is never called.
#  TMPDIR=/tmp: controller-runtime looks for the serving certs under
#  $TMPDIR, the cert-controller under /tmp; make them agree.
current=training-operator
kc apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Namespace
metadata:
  name: kubeflow
---
apiVersion: v1
kind: Secret
metadata:
  name: training-operator-webhook-cert
  namespace: kubeflow
type: Opaque
EOF

webhook_certs=/tmp/k8s-webhook-server/serving-certs
install_operator_webhook_certs() {
	# Keep a pair that is still valid for a day (another cluster may be
	# serving it); otherwise replace it atomically (rename), so a concurrent
	# reader never sees half a file.
	if [ -r "$webhook_certs/tls.crt" ] && [ -r "$webhook_certs/tls.key" ] &&
		openssl x509 -checkend 86400 -noout -in "$webhook_certs/tls.crt" >/dev/null 2>&1; then
		return 0
	fi
	mkdir -p "$webhook_certs" || fail "cannot create $webhook_certs"
	cp "$DIR/pki/operator-webhook.key" "$webhook_certs/.tls.key.$$"
	cp "$DIR/pki/operator-webhook.crt" "$webhook_certs/.tls.crt.$$"
	mv -f "$webhook_certs/.tls.key.$$" "$webhook_certs/tls.key"
	mv -f "$webhook_certs/.tls.crt.$$" "$webhook_certs/tls.crt"
}
install_operator_webhook_certs

# Flags: only the PyTorchJob controller (the other kinds' CRDs are not
# installed, and their informers would never sync); no gang scheduler
# (empty --gang-scheduler-name = plain pods); no leader election; metrics,
# health and webhook ports chosen above.  NOTE: controller-runtime's webhook
# server has no host flag in this operator and binds ":PORT" (all
# interfaces); metrics and health are on 127.0.0.1.
start training-operator env TMPDIR=/tmp MY_POD_NAMESPACE=kubeflow \
	"$BIN/training-operator" \
	--kubeconfig="$DIR/kubeconfig" \
	--enable-scheme=pytorchjob \
	--gang-scheduler-name= \
	--leader-elect=false \
	--metrics-bind-address="127.0.0.1:$OPERATOR_METRICS_PORT" \
	--health-probe-bind-address="127.0.0.1:$OPERATOR_HEALTH_PORT" \
	--webhook-server-port="$OPERATOR_WEBHOOK_PORT"
wait_for "training-operator /readyz" http_ok "http://127.0.0.1:$OPERATOR_HEALTH_PORT" /readyz

if [ "$JOBS" = 1 ]; then
	# shellcheck source=jobs.sh
	. "$here/jobs.sh"
	jobs_up
fi

# ------------------------------------------------------------------- done
write_env() {
	cat >"$DIR/env.tmp" <<EOF
KUBECONFIG=$DIR/kubeconfig
KUBECTL=$KUBECTL
APISERVER=https://127.0.0.1:$APISERVER_PORT
CLUSTER_DIR=$DIR
CLUSTER_BIN=$BIN
CLUSTER_CA_CERT=$DIR/pki/ca.crt
CLUSTER_CA_KEY=$DIR/pki/ca.key
WEBHOOK_CLIENT_CA=$DIR/pki/webhook-client-ca.crt
WEBHOOK_CLIENT_CERT=$DIR/pki/webhook-client.crt
WEBHOOK_CLIENT_KEY=$DIR/pki/webhook-client.key
SERVICE_ACCOUNT_ISSUER=https://kubernetes.default.svc.cluster.local
ETCD_URL=http://127.0.0.1:$ETCD_CLIENT_PORT
TRAINING_OPERATOR_HEALTH=http://127.0.0.1:$OPERATOR_HEALTH_PORT
PYTORCHJOB_CRD=$crd
CLUSTER_JOBS=$JOBS
EOF
	if [ "$JOBS" = 1 ]; then
		cat >>"$DIR/env.tmp" <<EOF
JOBSET_HEALTH=http://127.0.0.1:$JOBSET_HEALTH_PORT
TRAINER_HEALTH=http://127.0.0.1:$TRAINER_HEALTH_PORT
EOF
	fi
	mv "$DIR/env.tmp" "$DIR/env"
}
write_env
ok=1
echo "cluster up: $DIR/env"
sed 's/^/  /' "$DIR/env"
