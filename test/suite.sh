#!/usr/bin/env bash
# suite.sh: what `make test` runs, step by step, in two lanes.
#
#   lane main:    layers, format, build, unit, unit-asan, e2e-asan,
#                 e2e-native, valgrind, fuzz-replay
#   lane cluster: cluster-bins (Go, CPU-bound, niced), then realcluster
#                 (the local control plane with the ASan binary), once the
#                 main lane's build step has passed
#
# The cluster lane's build is the long pole on a cold cache and the main
# lane mostly waits on its servers, so the two overlap; the build runs at
# nice 19 so that the tests' servers get the CPU when they need it.
#
# Each step is a make target; its whole output goes to build/test-logs/
# NAME.log. The suite prints one line when a step starts and one when it
# ends (with its time), the last lines of a failing step's log, and a table
# of every step at the end. Exit status: 0 when every step passed.
#
# SUITE_SERIAL=1 runs the lanes one after the other (for a quiet machine or
# to tell a timing problem from a real one); SUITE_STEPS="a b" runs only
# those steps (and skips the rest).
set -u

here=$(cd "$(dirname "$0")/.." && pwd -P)
cd "$here" || exit 1
logs=build/test-logs
mkdir -p "$logs"
rm -f "$logs"/*.log "$logs"/results "$logs"/.built-*
make=(make --no-print-directory)
t0=$(date +%s)
tail_lines=40

main_steps=(layers format build unit unit-asan e2e-asan e2e-native valgrind fuzz-replay)
cluster_steps=(cluster-bins realcluster)

# What each step runs.
step_cmd() {
	case $1 in
	layers) echo "sh test/check-layers.sh" ;;
	format) echo "${make[*]} check-format" ;;
	build) echo "${make[*]} -j2 test-build" ;;
	unit) echo "${make[*]} unit" ;;
	unit-asan) echo "${make[*]} unit-asan" ;;
	e2e-asan) echo "${make[*]} e2e-asan" ;;
	e2e-native) echo "${make[*]} e2e-native" ;;
	valgrind) echo "${make[*]} valgrind" ;;
	fuzz-replay) echo "${make[*]} fuzz-replay" ;;
	cluster-bins) echo "nice -n 19 ${make[*]} cluster-bins" ;;
	realcluster) echo "${make[*]} realcluster-asan" ;;
	esac
}

clock() {
	local s=$(($(date +%s) - t0))
	printf '%02d:%02d' $((s / 60)) $((s % 60))
}

wanted() {
	[ -z "${SUITE_STEPS:-}" ] && return 0
	case " $SUITE_STEPS " in *" $1 "*) return 0 ;; esac
	return 1
}

# run_step LANE NAME: run it, log it, record it; returns its status.
run_step() {
	local lane=$1 name=$2 log=$logs/$2.log start rc secs
	if ! wanted "$name"; then
		echo "$name|$lane|-|0|skip" >>"$logs/results"
		return 0
	fi
	start=$(($(date +%s) - t0))
	echo "[$(clock)] start  $name ($lane lane): $(step_cmd "$name")"
	# shellcheck disable=SC2046 # the command is a word list on purpose
	eval "$(step_cmd "$name")" >"$log" 2>&1 </dev/null
	rc=$?
	secs=$(($(date +%s) - t0 - start))
	if [ "$rc" -eq 0 ]; then
		echo "[$(clock)] ok     $name in ${secs}s"
		echo "$name|$lane|$start|$secs|ok" >>"$logs/results"
	else
		{
			echo "[$(clock)] FAIL   $name after ${secs}s (exit $rc); its last $tail_lines lines:"
			tail -n "$tail_lines" "$log" | sed 's/^/    | /'
			echo "[$(clock)]        the whole output: $log"
		} | flock "$logs/.print" cat
		echo "$name|$lane|$start|$secs|FAIL" >>"$logs/results"
	fi
	return "$rc"
}

skip_rest() {
	local lane=$1 why=$2
	shift 2
	for s in "$@"; do
		echo "[$(clock)] skip   $s: $why"
		echo "$s|$lane|-|0|not run ($why)" >>"$logs/results"
	done
}

lane_main() {
	run_step main layers
	run_step main format
	if ! run_step main build; then
		touch "$logs/.built-fail"
		skip_rest main "build failed" "${main_steps[@]:3}"
		return
	fi
	touch "$logs/.built-ok"
	for s in "${main_steps[@]:3}"; do
		run_step main "$s"
	done
}

lane_cluster() {
	if ! run_step cluster cluster-bins; then
		skip_rest cluster "cluster-bins failed" realcluster
		return
	fi
	# realcluster needs build-asan/rdma-webhook: wait for the main lane's
	# build rather than race it for the same objects.
	while [ ! -e "$logs/.built-ok" ] && [ ! -e "$logs/.built-fail" ]; do
		sleep 1
	done
	if [ -e "$logs/.built-fail" ]; then
		skip_rest cluster "build failed" realcluster
		return
	fi
	run_step cluster realcluster
}

pids=()
stop_lanes() {
	trap - INT TERM
	echo "[$(clock)] interrupted: stopping the steps"
	for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; done
	wait
	test/cluster/down.sh "$here/build/cluster-test" >/dev/null 2>&1
	exit 130
}
trap stop_lanes INT TERM

echo "[$(clock)] make test: ${#main_steps[@]} steps in the main lane, ${#cluster_steps[@]} in the cluster lane; logs in $logs/"
set -m # each lane in its own process group, so an interrupt stops its whole tree
if [ "${SUITE_SERIAL:-0}" = 1 ]; then
	lane_main
	lane_cluster
else
	lane_cluster &
	pids+=($!)
	lane_main &
	pids+=($!)
	wait
fi
set +m

# The table, in the order the steps are listed above.
total=$(($(date +%s) - t0))
passed=0
failed=0
echo
printf '%-13s %-8s %7s %7s  %s\n' step lane start time result
for s in "${main_steps[@]}" "${cluster_steps[@]}"; do
	line=$(grep "^$s|" "$logs/results" | tail -n 1)
	IFS='|' read -r name lane start secs result <<<"${line:-$s|?|-|0|not run}"
	case $result in
	ok) passed=$((passed + 1)) ;;
	skip) ;;
	*) failed=$((failed + 1)) ;;
	esac
	[ "$start" = - ] || start=$(printf '%d:%02d' $((start / 60)) $((start % 60)))
	printf '%-13s %-8s %7s %6ss  %s\n' "$name" "$lane" "$start" "$secs" "$result"
done
printf '%-13s %-8s %7s %6ss\n' total "" "" "$total"
echo "logs: $logs/<step>.log"
echo "suite: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
