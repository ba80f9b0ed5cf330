#!/bin/sh
# down.sh DIR -- stop the control plane that up.sh started in DIR.
#
# Each process gets SIGTERM (all of them shut down cleanly on it), then
# SIGKILL if it is still there after CLUSTER_STOP_TIMEOUT seconds (default
# 20).  Components are stopped one at a time in reverse start order so that
# etcd outlives the apiserver.  Pid files are removed.  Running it twice, or
# on a DIR where nothing runs, is fine: it just says there is nothing to stop.
# Data (DIR/etcd, DIR/logs, DIR/pki) is left for post-mortems; up.sh
# recreates it.
set -eu

here=$(cd "$(dirname "$0")" && pwd -P)
# shellcheck source=common.sh
. "$here/common.sh"

[ $# -eq 1 ] || die "usage: $0 DIR"
[ -d "$1" ] || {
	echo "$1: no such directory, nothing to stop"
	exit 0
}
DIR=$(abs_dir "$1")
timeout=${CLUSTER_STOP_TIMEOUT:-20}

# First any other pid file in DIR/pids (clients of the cluster that other
# scripts started there, e.g. webhook.sh's webhook.pid: they should go before
# the apiserver does), then our components in reverse start order.
order=""
if [ -d "$DIR/pids" ]; then
	for f in "$DIR"/pids/*.pid; do
		[ -e "$f" ] || continue
		n=$(basename "$f" .pid)
		case " $CLUSTER_COMPONENTS " in *" $n "*) ;; *) order="$order $n" ;; esac
	done
fi
for n in $CLUSTER_COMPONENTS; do
	reverse="$n ${reverse:-}"
done
order="$order $reverse"

stopped=0
for n in $order; do
	pid=$(pid_of "$DIR" "$n") || continue
	if is_ours "$DIR" "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		deadline=$(($(now) + timeout))
		while is_ours "$DIR" "$pid" && [ "$(now)" -lt "$deadline" ]; do
			sleep 0.2 # poll for the exit; there is nothing to wait(1) on
		done
		if is_ours "$DIR" "$pid"; then
			echo "$n (pid $pid) ignored SIGTERM for ${timeout}s, sending SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			while is_ours "$DIR" "$pid"; do
				sleep 0.2 # SIGKILL cannot be ignored; this ends promptly
			done
		fi
		echo "stopped $n (pid $pid)"
		stopped=$((stopped + 1))
	fi
	rm -f "$DIR/pids/$n.pid"
done

if [ "$stopped" -eq 0 ]; then
	echo "nothing running in $DIR"
fi
