#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# poll-bench.sh - falcond's poll modes measured (README, "falcond and the CPU"): for each
# mode, two falcond on 127.0.0.1 (UDP, security none), falcon-perf 8 B WRITE latency
# (busy-polling client, as perftest) for POLL_BENCH_S seconds, and each daemon's CPU over
# that run from /proc/PID/stat (utime + stime); then an idle daemon's CPU over
# POLL_BENCH_IDLE_S seconds with nobody connected. No root needed.
#
#   scripts/poll-bench.sh [MODE[:POLL_US]]...   (default: sleep adaptive:50 adaptive:100
#                                               adaptive:200 busy)
# Environment: BUILD (build), POLL_BENCH_S (5), POLL_BENCH_IDLE_S (10), PERF_ARGS (extra
# falcon-perf arguments, e.g. -e to sleep on the CQ's fd; FALCON_POLL_US is passed on).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FALCOND=$BUILD/daemon/falcond
FALCONCTL=$BUILD/cli/falconctl
PERF=$BUILD/bench/falcon-perf
DUR=${POLL_BENCH_S:-5}
IDLE=${POLL_BENCH_IDLE_S:-10}
. scripts/two-daemons.sh

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
now() { date +%s.%N; }
pct() { awk -v t="$1" -v s="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", 100 * t / hz / s }'; }

one() { # mode[:us]
	local mode=${1%%:*} us="" args svc=$((6000 + RANDOM % 1000))
	[ "$mode" != "$1" ] && us=${1#*:}
	args="--security none --poll $mode${us:+ --poll-us $us}"
	td_start "$args" "$args" || return 1
	timeout $((DUR + 30)) "$PERF" -S "$TD_SOCK_B" -p $svc -t write -m lat -s 8 -D "$DUR" \
		${PERF_ARGS:-} >"$TD_DIR/srv.log" 2>&1 &
	local srv=$! a0 b0 t0 a1 b1 t1 out
	for _ in $(seq 50); do grep -q "server on" "$TD_DIR/srv.log" && break; sleep 0.1; done
	a0=$(ticks "$TD_PID_A"); b0=$(ticks "$TD_PID_B"); t0=$(now)
	out=$("$PERF" -S "$TD_SOCK_A" -p $svc -j -t write -m lat -s 8 -D "$DUR" ${PERF_ARGS:-} "$TD_CM_B")
	a1=$(ticks "$TD_PID_A"); b1=$(ticks "$TD_PID_B"); t1=$(now)
	wait $srv
	local el dbell wrs p50 p99
	el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	p50=$(grep -o '"p50_us":[0-9.]*' <<<"$out" | cut -d: -f2)
	p99=$(grep -o '"p99_us":[0-9.]*' <<<"$out" | cut -d: -f2)
	dbell=$("$FALCONCTL" -j -r "$TD_DIR/a" stats | grep -o '"doorbells":[0-9]*' | cut -d: -f2)
	wrs=$("$FALCONCTL" -j -r "$TD_DIR/a" stats | grep -o '"ring_wrs":[0-9]*' | cut -d: -f2)
	printf '%-14s p50 %7s us  p99 %7s us  daemon CPU A %5s %%  B %5s %%  (A: %s doorbells for %s WRs)\n' \
		"$1" "${p50:-?}" "${p99:-?}" "$(pct $((a1 - a0)) "$el")" "$(pct $((b1 - b0)) "$el")" \
		"${dbell:-?}" "${wrs:-?}"
	td_stop
}

idle() { # mode[:us]: one daemon, nobody connected
	local mode=${1%%:*} us="" d t0 t1 c0 c1 pid
	[ "$mode" != "$1" ] && us=${1#*:}
	d=$(mktemp -d "${TMPDIR:-/tmp}/falcon-idle.XXXXXX")
	td_ports
	"$FALCOND" --listen 127.0.0.1 --port $TD_BASE --cm-port $((TD_BASE + 1)) --runtime-dir "$d" --security none \
		--poll "$mode" ${us:+--poll-us $us} 2>"$d/log" &
	pid=$!
	for _ in $(seq 50); do "$FALCONCTL" -r "$d" status >/dev/null 2>&1 && break; sleep 0.1; done
	kill -0 $pid 2>/dev/null || { echo "falcond did not start:"; cat "$d/log"; return 1; }
	sleep 1
	c0=$(ticks $pid); t0=$(now)
	sleep "$IDLE"
	c1=$(ticks $pid); t1=$(now)
	printf '%-14s idle CPU %5s %% over %s s\n' "$1" \
		"$(pct $((c1 - c0)) "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")" "$IDLE"
	kill -TERM $pid; wait $pid 2>/dev/null
	rm -rf "$d"
}

modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(sleep adaptive:50 adaptive:100 adaptive:200 busy)
echo "== 8 B WRITE latency, ${DUR} s per mode ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
for m in "${modes[@]}"; do one "$m"; done
echo "== an idle daemon"
for m in "${modes[@]}"; do idle "$m"; done
