#!/usr/bin/env bash
# `make bench`: rdma-webhook against three yardsticks on one machine, same
# certificate, same reviews, same client, and two floors: the bare responder
# that also parses each review with cJSON, and the memory of the required
# libraries alone (lib_floor). See docs/benchmark.md.
#
# Expects (the Makefile builds them): build/rdma-webhook, certs/dev,
# build/bench/{mhd_responder,gowebhook,ready_probe,lib_floor}. Writes
# bench/RESULTS.md. Any wrk error, timeout or non-200 response fails the run.
#
# Two reviews get a table each: the example master pod and the realistic
# worker pod (bench/review-worker.json, recorded from kube-apiserver). The
# yardsticks that answer a fixed response get a second instance for the
# worker pod, answering the webhook's own response to it; rdma-webhook and Go
# answer both from one process.
#
# All servers run side by side; each round drives every server at every
# connection count, the servers in a rotating order, and the table reports
# each figure's median over the rounds (with the spread of req/s; memory from
# round 1), so that drift in a shared machine's speed falls on all servers
# alike instead of on whichever ran last. A round under half the best round
# is named on stdout and under the table, without failing the run.
#
# Environment: BENCH_DURATION (seconds per point, default 5), BENCH_WARMUP
# (default 1), BENCH_CONNS (default "1 16 64 256"), BENCH_WORKER_CONNS (the
# worker pod's, default BENCH_CONNS), BENCH_ROUNDS (default 3).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
out=build/bench
run=$out/run
duration=${BENCH_DURATION:-5}
warmup=${BENCH_WARMUP:-1}
conns=${BENCH_CONNS:-"1 16 64 256"}
wconns=${BENCH_WORKER_CONNS:-$conns}
rounds=${BENCH_ROUNDS:-3}
cert=$repo/certs/dev/tls.crt
key=$repo/certs/dev/tls.key
ca=$repo/certs/dev/ca.crt
port_webhook=18443
port_metrics=19090
port_nginx=18444
port_mhd=18445
port_go=18446
port_parse=18447
port_nginx_w=18448
port_mhd_w=18449
port_parse_w=18450
results=bench/RESULTS.md
# The issue's target against the Go webhook: this many times its throughput.
go_factor=3

LOAD_BEFORE=$(cut -d" " -f1-3 /proc/loadavg)
rm -rf "$run"
mkdir -p "$run" "$run/nginx-root" "$run/worker/nginx-root"

pids=()
cleanup() {
    local p
    for p in "${pids[@]:-}"; do
        if [ -n "$p" ]; then kill "$p" 2>/dev/null || true; fi
    done
}
trap cleanup EXIT

stop() { # pid
    kill "$1" 2>/dev/null || true
    while kill -0 "$1" 2>/dev/null; do sleep 0.02; done
}
die() {
    echo "bench: $*" >&2
    exit 1
}
# The value of key in a line of key=value words (wrk's BENCH line,
# ready_probe's "pid=N ready_us=M").
field() { # line key
    echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k {print $2}'
}

for tool in wrk nginx curl; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install wrk nginx curl)"
done

webhook_cmd=(build/rdma-webhook serve --listen "127.0.0.1:$port_webhook"
    --metrics-listen "127.0.0.1:$port_metrics" --tls-cert-file "$cert"
    --tls-private-key-file "$key" --profiles manifests/profiles.json)

bench/gen-reviews.sh "$repo" "$run"
small=$run/review-8gpu.json
worker=$run/review-worker.json
large=$run/review-large.json

# --- time to ready: exec to the first 200 on /readyz (plain port) ----------
ready_list=()
for i in 1 2 3 4 5 6 7 8 9 10 11; do
    line=$("$out/ready_probe" "$port_metrics" 5000 "${webhook_cmd[@]}" 2>>"$run/ready.log") ||
        die "rdma-webhook did not become ready (see $run/ready.log)"
    ready_list+=("$(field "$line" ready_us)")
    stop "$(field "$line" pid)"
done
ready_sorted=$(printf '%s\n' "${ready_list[@]}" | sort -n)
ready_med=$(echo "$ready_sorted" | sed -n 6p)
ready_max=$(echo "$ready_sorted" | tail -n 1)
awk -v m="$ready_med" -v x="$ready_max" \
    'BEGIN {printf "time to ready: median %.1f ms, max %.1f ms (11 starts)\n", m / 1000, x / 1000}'

# --- helpers -----------------------------------------------------------------
# Sum of a /proc/PID/status field (kB) over the given pids.
status_kb() { # field pids...
    local f=$1 p s=0 v
    shift
    for p in "$@"; do
        v=$(awk -v f="$f:" '$1 == f {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
        s=$((s + ${v:-0}))
    done
    echo "$s"
}
reset_hwm() {
    local p
    for p in "$@"; do echo 5 >"/proc/$p/clear_refs" 2>/dev/null || true; done
}
# The server's pid and its children (nginx workers).
tree_pids() {
    echo "$1"
    pgrep -P "$1" || true
}
# A server is started in the background and takes a moment to listen: retry
# the check every 20 ms, for up to 10 s, before giving up on it.
wait_until() { # message command...
    local msg=$1 _
    shift
    for _ in $(seq 1 500); do
        "$@" 2>/dev/null && return 0
        sleep 0.02
    done
    die "$msg"
}
# Every curl call is bounded: a server that accepts and then stalls (say, in
# the TLS handshake) must fail the run, not hang it.
ready_https() { # port
    curl -fsS --max-time 5 -o /dev/null --cacert "$ca" "https://127.0.0.1:$1/readyz"
}
# POSTs a file to /mutate as the apiserver would; the answer goes to out and
# the HTTP code to stdout ("000" when nothing answered, so that the callers
# can say what went wrong instead of stopping on curl's status).
post_review() { # port file out
    curl -sS --max-time 5 -o "$3" -w '%{http_code}' --cacert "$ca" \
        -H 'Content-Type: application/json' --data-binary @"$2" "https://127.0.0.1:$1/mutate" ||
        true
}
answers_post() { # port
    [ "$(post_review "$1" "$small" /dev/null)" = 200 ]
}
# A webhook that answered without a patch would be measured doing less than
# the mutation.
expect_patch() { # name port review out
    local code
    code=$(post_review "$2" "$3" "$4")
    if [ "$code" != 200 ] || ! grep -q '"patch"' "$4"; then
        die "$1 did not mutate $(basename "$3") (HTTP $code)"
    fi
}
# The yardsticks must send the webhook's own answer to the review they are
# measured with, byte for byte, or they would be measured sending something
# else.
expect_fixed() { # name port review response
    local code
    code=$(post_review "$2" "$3" "$run/$1.first")
    if [ "$code" != 200 ] || ! cmp -s "$run/$1.first" "$4"; then
        die "$1 does not answer the fixed response (HTTP $code)"
    fi
}
# One wrk point; prints the BENCH line. Fails on any error or non-200.
wrk_point() { # name port conns seconds body
    local name=$1 port=$2 c=$3 secs=$4 body=$5 t line
    t=$((c < 2 ? c : 2))
    wrk -t"$t" -c"$c" -d"${secs}s" --timeout 2s --latency -s bench/post.lua \
        "https://127.0.0.1:$port/mutate" -- "$body" >"$run/wrk-$name-$c.txt" 2>&1 ||
        die "wrk failed against $name at $c connections (see $run/wrk-$name-$c.txt)"
    line=$(grep '^BENCH ' "$run/wrk-$name-$c.txt") ||
        die "no result from wrk against $name at $c connections (see $run/wrk-$name-$c.txt)"
    local bad
    bad=$(echo "$line" | awk '{for (i = 2; i <= NF; i++) {split($i, kv, "=");
        if (kv[1] ~ /^(non200|connect|read|write|status|timeout)$/) s += kv[2]} print s + 0}')
    [ "$bad" = 0 ] || die "$name at $c connections: errors or non-200 responses: $line"
    echo "$line"
}
declare -A RPS P50 P99 P999 RSS ANON FILE # by name,conns,round (and "large")
declare -A PORT PID REVIEW SPREAD RSSMAX
# A warm-up, then the measured wrk run, whose req/s and latencies go into
# RPS, P50, P99 and P999 under key. The peak RSS of the given pids is reset
# in between, so that it is the measured run's.
measure() { # key name port conns review [pids...]
    local k=$1 name=$2 port=$3 c=$4 review=$5 line
    shift 5
    # wrk refuses -d0s: BENCH_WARMUP=0 means no warm-up run at all.
    if [ "$warmup" != 0 ]; then wrk_point "$name" "$port" "$c" "$warmup" "$review" >/dev/null; fi
    reset_hwm "$@"
    line=$(wrk_point "$name" "$port" "$c" "$duration" "$review")
    RPS[$k]=$(field "$line" rps)
    P50[$k]=$(field "$line" p50_us)
    P99[$k]=$(field "$line" p99_us)
    P999[$k]=$(field "$line" p999_us)
}
bench_point() { # name conns round
    local name=$1 c=$2 r=$3 k=$1,$2,$3 tp
    tp=$(tree_pids "${PID[$1]}")
    # shellcheck disable=SC2086
    measure "$k" "$name" "${PORT[$name]}" "$c" "${REVIEW[$name]}" $tp
    # shellcheck disable=SC2086
    RSS[$k]=$(status_kb VmHWM $tp)
    # shellcheck disable=SC2086
    ANON[$k]=$(status_kb RssAnon $tp)
    # shellcheck disable=SC2086
    FILE[$k]=$(status_kb RssFile $tp)
    printf 'round %s  %-19s c=%-4s %10.0f req/s  p50 %6d us  p99 %6d us  p99.9 %6d us  peak RSS %6d kB\n' \
        "$r" "$name" "$c" "${RPS[$k]}" "${P50[$k]}" "${P99[$k]}" "${P999[$k]}" "${RSS[$k]}"
}
# One metric's values over the rounds for name,conns (an associative
# array's name), sorted; the median, range and maximum are read off them.
round_values() { # array name conns
    local -n arr=$1
    local r
    for r in $(seq 1 "$rounds"); do echo "${arr[$2,$3,$r]}"; done | sort -g
}
median_of() { # array name conns
    round_values "$@" |
        awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}
spread_of() { # array name conns
    round_values "$@" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f-%.0f", lo, hi}'
}
max_of() { # array name conns
    round_values "$@" | tail -n 1
}
thousands() { # number: 1469.2 -> 1,469
    printf '%.0f' "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'
}
# A round under half the best round is a stall, of the machine or of the
# server, not a speed. The median hides it and the range only hints at it, so
# it is named on stdout and under the table; it does not fail the run, as it
# says nothing about the other rounds. The best round, not the median, is the
# measure: two stalls in three rounds would pull the median down with them.
collapsed=()
flag_collapsed() { # name conns
    local r v best
    best=$(max_of RPS "$1" "$2")
    for r in $(seq 1 "$rounds"); do
        v=${RPS[$1,$2,$r]}
        awk -v v="$v" -v m="$best" 'BEGIN {exit !(v < m / 2)}' || continue
        collapsed+=("$1 at $2 connections, round $r: $(thousands "$v") req/s")
        echo "bench: collapsed round: ${collapsed[-1]}, under half the best round's $(thousands "$best")"
    done
}

# --- rdma-webhook ----------------------------------------------------------
# The admission log goes through a pipe, as to a container runtime; only its
# tail is kept.
line=$("$out/ready_probe" "$port_metrics" 5000 "${webhook_cmd[@]}" 2> >(tail -n 50 >"$run/webhook.log")) ||
    die "rdma-webhook did not become ready (see $run/webhook.log)"
wpid=$(field "$line" pid)
pids+=("$wpid")
expect_patch rdma-webhook "$port_webhook" "$small" "$run/response.json"
expect_patch rdma-webhook "$port_webhook" "$worker" "$run/response-worker.json"
expect_patch rdma-webhook "$port_webhook" "$large" "$run/response-large.json"
resp_bytes=$(wc -c <"$run/response.json")
wresp_bytes=$(wc -c <"$run/response-worker.json")
cp "$run/response.json" "$run/nginx-root/mutate"
cp "$run/response-worker.json" "$run/worker/response.json"
cp "$run/response-worker.json" "$run/worker/nginx-root/mutate"

PORT[rdma-webhook]=$port_webhook PID[rdma-webhook]=$wpid REVIEW[rdma-webhook]=$small
PORT[worker-rdma-webhook]=$port_webhook PID[worker-rdma-webhook]=$wpid REVIEW[worker-rdma-webhook]=$worker
measure large rdma-webhook-large "$port_webhook" 1 "$large"
printf '%-12s c=1    %10.0f req/s  p50 %6d us  p99 %6d us  p99.9 %6d us\n' \
    "large pod" "${RPS[large]}" "${P50[large]}" "${P99[large]}" "${P999[large]}"
# --- nginx -------------------------------------------------------------------
# One instance per review, each in its own directory with that review's
# response.json.
start_nginx() { # name port dir review
    local name=$1 port=$2 dir=$repo/$3 pid
    sed -e "s|@RUN@|$dir|g" -e "s|@CERT@|$cert|g" -e "s|@KEY@|$key|g" \
        -e "s|@PORT@|$port|g" bench/nginx.conf.in >"$dir/nginx.conf"
    nginx -c "$dir/nginx.conf" -p "$dir" -e "$dir/nginx-error.log" &
    pid=$!
    pids+=("$pid")
    wait_until "nothing ready on port $port" ready_https "$port"
    expect_fixed "$name" "$port" "$4" "$dir/response.json"
    PORT[$name]=$port PID[$name]=$pid REVIEW[$name]=$4
}
start_nginx nginx "$port_nginx" "$run" "$small"
start_nginx worker-nginx "$port_nginx_w" "$run/worker" "$worker"

# --- bare libmicrohttpd, and the same parsing each review with cJSON ------------
start_mhd() { # name port review response [--parse]
    local name=$1 port=$2 review=$3 response=$4 pid
    shift 4
    "$out/mhd_responder" "$port" "$cert" "$key" "$response" "$@" 2>"$run/$name.log" &
    pid=$!
    pids+=("$pid")
    # It has no /readyz: the first answered POST says it is up.
    wait_until "$name does not answer on port $port" answers_post "$port"
    expect_fixed "$name" "$port" "$review" "$response"
    PORT[$name]=$port PID[$name]=$pid REVIEW[$name]=$review
}
start_mhd mhd "$port_mhd" "$small" "$run/response.json"
start_mhd mhd+cjson "$port_parse" "$small" "$run/response.json" --parse
start_mhd worker-mhd "$port_mhd_w" "$worker" "$run/response-worker.json"
start_mhd worker-mhd+cjson "$port_parse_w" "$worker" "$run/response-worker.json" --parse
printf '{"not json' >"$run/not-json"
for port in "$port_parse" "$port_parse_w"; do
    code=$(post_review "$port" "$run/not-json" /dev/null)
    [ "$code" = 400 ] || die "mhd+cjson on port $port answered $code to a body that is not JSON: it is not parsing"
done

# --- the required libraries alone ----------------------------------------------
floor=$("$out/lib_floor" "$cert" "$key") || die "lib_floor failed"
FLOOR_HWM=$(field "$floor" vmhwm_kb)
FLOOR_FILE=$(field "$floor" rss_file_kb)

# --- Go ------------------------------------------------------------------------
"$out/gowebhook" -listen "127.0.0.1:$port_go" -cert "$cert" -key "$key" 2>"$run/gowebhook.log" &
gpid=$!
pids+=("$gpid")
wait_until "nothing ready on port $port_go" ready_https "$port_go"
expect_patch gowebhook "$port_go" "$small" "$run/response-go.json"
expect_patch gowebhook "$port_go" "$worker" "$run/response-go-worker.json"
PORT[go]=$port_go PID[go]=$gpid REVIEW[go]=$small
PORT[worker-go]=$port_go PID[worker-go]=$gpid REVIEW[worker-go]=$worker

# --- the rounds ------------------------------------------------------------------
servers=(rdma-webhook nginx mhd mhd+cjson go)
# The worker pod's table: the same servers, under their names with "worker-".
wservers=("${servers[@]/#/worker-}")
# Both tables' points are in every round, so that drift falls on both alike.
for r in $(seq 1 "$rounds"); do
    for c in $conns; do
        for i in "${!servers[@]}"; do
            bench_point "${servers[$(((i + r - 1) % ${#servers[@]}))]}" "$c" "$r"
        done
    done
    for c in $wconns; do
        for i in "${!wservers[@]}"; do
            bench_point "${wservers[$(((i + r - 1) % ${#wservers[@]}))]}" "$c" "$r"
        done
    done
done
# Each table's servers with their connection counts, "name conns".
points() {
    local name c
    for name in "${servers[@]}"; do for c in $conns; do echo "$name $c"; done; done
    for name in "${wservers[@]}"; do for c in $wconns; do echo "$name $c"; done; done
}
# Read from a process substitution, not a pipe, so that the loop runs in this
# shell and what it stores stays.
while read -r name c <&3; do
    for m in RPS P50 P99 P999; do
        declare -n med=$m
        # shellcheck disable=SC2034,SC2004 # med names an associative array
        med[$name,$c]=$(median_of "$m" "$name" "$c")
        unset -n med
    done
    RSSMAX[$name,$c]=$(max_of RSS "$name" "$c")
    SPREAD[$name,$c]=$(spread_of RPS "$name" "$c")
    flag_collapsed "$name" "$c"
done 3< <(points)
# Every admission must have been logged: a queue that dropped lines would
# have done less work than a real deployment.
dropped=$(curl -fsS --max-time 5 "http://127.0.0.1:$port_metrics/metrics" |
    awk '$1 == "rdma_webhook_log_lines_dropped_total" {print $2}')
[ "$dropped" = 0 ] || die "rdma-webhook dropped ${dropped:-?} log lines during the run"
stop "$wpid"

# --- RESULTS.md ----------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }
ms() { awk -v u="$1" 'BEGIN {printf "%.2f", u / 1000}'; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
# One table row per server and connection count; the worker pod's servers
# are shown under their own names.
server_table() { # conns names...
    local cs=$1 name c
    shift
    echo "| server | conns | req/s | range | p50 | p99 | p99.9 | peak RSS MiB | anon | file |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for name in "$@"; do
        for c in $cs; do
            echo "| ${name#worker-} | $c | ${RPS[$name,$c]%.*} | ${SPREAD[$name,$c]} | $(ms "${P50[$name,$c]}") | $(ms "${P99[$name,$c]}") | $(ms "${P999[$name,$c]}") | $(mib "${RSS[$name,$c,1]}") | $(mib "${ANON[$name,$c,1]}") | $(mib "${FILE[$name,$c,1]}") |"
        done
    done
}
ratio_table() { # conns prefix ("" or "worker-")
    local c p=$2
    echo "| conns | / nginx | / bare libmicrohttpd | / Go webhook | / bare + cJSON parse |"
    echo "|---:|---:|---:|---:|---:|"
    for c in $1; do
        echo "| $c | $(ratio "${RPS[${p}rdma-webhook,$c]}" "${RPS[${p}nginx,$c]}") | $(ratio "${RPS[${p}rdma-webhook,$c]}" "${RPS[${p}mhd,$c]}") | $(ratio "${RPS[${p}rdma-webhook,$c]}" "${RPS[${p}go,$c]}") | $(ratio "${RPS[${p}rdma-webhook,$c]}" "${RPS[${p}mhd+cjson,$c]}") |"
    done
}
collapsed_notes() { # worker: 0 or 1
    local note w
    for note in "${collapsed[@]}"; do
        case $note in worker-*) w=1 ;; *) w=0 ;; esac
        [ "$w" = "$1" ] || continue
        echo "- collapsed round (under half the best round; the median and range above include it): $note."
    done
}
{
    echo "# Benchmark results"
    echo
    echo "Written by \`make bench\` (bench/run.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'), from one run of $rounds rounds."
    echo
    echo "## The bench pods"
    echo
    echo "- **Example master pod** (test/example-review.json, $(wc -c <"$small") bytes compact, answer $resp_bytes bytes):"
    echo "  the master pod of an 8-GPU PyTorchJob, written by hand in the review's format; the main tables."
    echo "- **Realistic worker pod** (bench/review-worker.json, $(wc -c <"$worker") bytes, answer $wresp_bytes bytes):"
    echo "  the worker pod of Kubeflow's public pytorch-deepspeed-demo job at 8 GPUs a node, as the"
    echo "  training-operator creates it, in the review kube-apiserver v1.37.2 sent a mutating webhook for it"
    echo "  (with managedFields, the service-account token volume and a bound token's userInfo); its own tables."
    echo "- **Large synthetic pod** (bench/gen-reviews.sh, $(wc -c <"$large") bytes, answer $(wc -c <"$run/response-large.json") bytes):"
    echo "  10 containers x 200 env entries, every container a target; rdma-webhook alone, one connection."
    echo
    echo "## Throughput and latency"
    echo
    echo "8-GPU PyTorchJob master pod review ($(wc -c <"$small") bytes compact, answer $resp_bytes bytes);"
    echo "wrk, keep-alive, TLS 1.3 on loopback, ${duration} s per point after a ${warmup} s warm-up;"
    echo "all servers up at once, each round drives each in turn (the order rotates by round);"
    echo "req/s (with its range) and latency are the median over the rounds; latency in ms."
    echo "Peak RSS is VmHWM (summed over nginx's master and workers), reset before each point; it, and anon"
    echo "and file (RssAnon and RssFile at the end of a point; file: mapped library pages, shared with other"
    echo "processes), are from round 1: later rounds start from what the 256-connection point left."
    echo
    server_table "$conns" "${servers[@]}"
    notes=$(collapsed_notes 0)
    [ -z "$notes" ] || printf '\n%s\n' "$notes"
    echo
    echo "## rdma-webhook relative to each yardstick (throughput ratio)"
    echo
    ratio_table "$conns" ""
    echo
    echo "## The realistic worker pod"
    echo
    echo "Worker pod review ($(wc -c <"$worker") bytes compact, answer $wresp_bytes bytes); the same client, and its points"
    echo "in the same rounds as the master pod's. rdma-webhook and Go answer both reviews from one process, so their"
    echo "memory here follows the master pod's points of the round; nginx and the two bare responders are second"
    echo "instances, answering the webhook's own response to this review."
    echo
    server_table "$wconns" "${wservers[@]}"
    notes=$(collapsed_notes 1)
    [ -z "$notes" ] || printf '\n%s\n' "$notes"
    echo
    echo "rdma-webhook relative to each yardstick (throughput ratio):"
    echo
    ratio_table "$wconns" worker-
    echo
    echo "## Floors"
    echo
    echo "What no webhook built on this stack can beat, measured in the same run:"
    echo
    echo "- **Parsing.** mhd+cjson is the bare responder plus one \`cJSON_ParseWithLength\` of each review,"
    echo "  in the webhook's own per-request arena, and nothing else. Its throughput relative to the bare"
    echo "  responder is the most any webhook that reads the review with libcjson can reach:"
    echo "  $(for c in $conns; do printf '%s x at %s, ' "$(ratio "${RPS[mhd+cjson,$c]}" "${RPS[mhd,$c]}")" "$c"; done | sed 's/, $//') connections."
    echo "  For comparison, $go_factor x Go is $(for c in $conns; do printf '%.0f, ' "$(awk -v g="${RPS[go,$c]}" -v f="$go_factor" 'BEGIN {print f * g}')"; done | sed 's/, $//') req/s"
    echo "  and mhd+cjson served $(for c in $conns; do printf '%s, ' "${RPS[mhd+cjson,$c]%.*}"; done | sed 's/, $//') req/s at those connection counts."
    case " $conns " in *" 64 "*)
        echo "- **Latency.** p99 of the yardsticks at 64 connections: nginx $(ms "${P99[nginx,64]}") ms,"
        echo "  bare $(ms "${P99[mhd,64]}") ms, mhd+cjson $(ms "${P99[mhd+cjson,64]}") ms (client and servers share the CPUs)." ;;
    esac
    echo "- **Memory.** lib_floor initializes only the required libraries (libcurl, OpenSSL checking the"
    echo "  certificate and key, GnuTLS loading them) and serves nothing: peak RSS $(mib "$FLOOR_HWM") MiB,"
    echo "  $(mib "$FLOOR_FILE") MiB of it library pages."
    # Growth needs both ends: an unset RSS[mhd,1,1] would count as 0.
    if [[ " $conns " == *" 1 "* && " $conns " == *" 256 "* ]]; then
        growth=$((RSS[mhd,256,1] - RSS[mhd,1,1]))
        echo "  In round 1 the bare responder grew by $(mib "$growth") MiB from 1 to 256 connections"
        echo "  (libmicrohttpd and GnuTLS state per connection); with the libraries that makes"
        echo "  $(mib $((FLOOR_HWM + growth))) MiB before the webhook keeps a byte of its own."
    fi
    echo
    echo "## rdma-webhook alone"
    echo
    echo "- Large pod (10 containers x 200 env, $(wc -c <"$large") bytes, answer $(wc -c <"$run/response-large.json") bytes), one connection:"
    echo "  ${RPS[large]%.*} req/s, p50 $(ms "${P50[large]}") ms, p99 $(ms "${P99[large]}") ms, p99.9 $(ms "${P999[large]}") ms."
    echo "- Time to ready (exec to the first 200 on /readyz, polled every 0.1 ms), 11 starts:"
    echo "  median $(ms "$ready_med") ms, max $(ms "$ready_max") ms."
    case " $conns " in *" 256 "*)
        echo "- Highest peak RSS at 256 connections over the rounds: $(mib "${RSSMAX[rdma-webhook,256]}") MiB"
        echo "  (nginx $(mib "${RSSMAX[nginx,256]}"), bare libmicrohttpd $(mib "${RSSMAX[mhd,256]}"), Go $(mib "${RSSMAX[go,256]}"))." ;;
    esac
    echo
    echo "## Targets"
    echo
    echo "| target | measured | met |"
    echo "|---|---|---|"
    for c in 16 64; do
        case " $conns " in *" $c "*) ;; *) continue ;; esac
        for y in nginx:0.4 mhd:0.85 "go:$go_factor"; do
            n=${y%%:*} want=${y##*:} rv=$(ratio "${RPS[rdma-webhook,$c]}" "${RPS[$n,$c]}")
            echo "| throughput at $c conns >= $want x $n | $rv x | $(awk -v r="$rv" -v w="$want" 'BEGIN {print (r >= w ? "yes" : "no")}') |"
        done
    done
    case " $conns " in *" 64 "*)
        echo "| p99 at 64 conns <= 2 ms | $(ms "${P99[rdma-webhook,64]}") ms | $(awk -v u="${P99[rdma-webhook,64]}" 'BEGIN {print (u <= 2000 ? "yes" : "no")}') |" ;;
    esac
    case " $conns " in *" 256 "*)
        echo "| peak RSS at 256 conns <= 16 MiB (highest round) | $(mib "${RSSMAX[rdma-webhook,256]}") MiB | $(awk -v k="${RSSMAX[rdma-webhook,256]}" 'BEGIN {print (k <= 16384 ? "yes" : "no")}') |" ;;
    esac
    echo "| large pod < 1 ms per admission, one connection | p50 $(ms "${P50[large]}") ms, mean $(awk -v r="${RPS[large]}" 'BEGIN {printf "%.2f", 1000 / r}') ms | $(awk -v u="${P50[large]}" 'BEGIN {print (u < 1000 ? "yes" : "no")}') |"
    echo "| ready within 50 ms of start | max $(ms "$ready_max") ms | $(awk -v u="$ready_max" 'BEGIN {print (u <= 50000 ? "yes" : "no")}') |"
    echo
    echo "## Machine"
    echo
    echo "- CPUs: $(nproc) ($cpu); the client (wrk -t2, -t1 at one connection) shares them with the server."
    # shellcheck source=/dev/null
    echo "- Kernel: $(uname -sr); $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "- rdma-webhook $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet -- webhook 2>/dev/null || echo ' (webhook/ modified)'), $(cc --version | head -n 1)"
    echo "- libmicrohttpd $(pkg-config --modversion libmicrohttpd), GnuTLS $(pkg-config --modversion gnutls)"
    echo "- $(nginx -v 2>&1 | sed 's/^nginx version: //'), $(go version | sed 's/^go version //'), $(wrk -v 2>&1 | head -n 1 | awk '{print $1, $2}')"
    echo "- Load average before the run: $LOAD_BEFORE"
    echo
    echo "## Command"
    echo
    echo '```sh'
    echo "make bench    # BENCH_DURATION=$duration BENCH_WARMUP=$warmup BENCH_CONNS=\"$conns\" BENCH_WORKER_CONNS=\"$wconns\" BENCH_ROUNDS=$rounds"
    echo '```'
} >"$results"
echo "wrote $results"
