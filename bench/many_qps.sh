#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make bench-qps: many RC QPs between two falcond on 127.0.0.1 (no root), with
# bench/many_qps (its comment says what it measures).
#
#   BENCH_QPS_N        QPs of the first run (default 10000): setup time per QP, each
#                      daemon's VmRSS per QP, 8 B WRITEs round robin over all of them at
#                      depth 64 against one QP, in that one run
#   BENCH_QPS_MAX      QPs of the second run, set up only (default 65536, the most one
#                      falcond holds; 0: no second run): its memory
#   BENCH_QPS_SECONDS  each rate measurement (default 5)
#   BENCH_QPS_SECURITY none (default) or psp
#
# Nothing to raise on the host: a client's QPs share one mapping and no descriptor
# (falcond(8), LIMITS). A client without an arena would need vm.max_map_count above its
# QPs (sysctl vm.max_map_count=262144).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FALCOND=${FALCOND:-$BUILD/daemon/falcond}
FALCONCTL=${FALCONCTL:-$BUILD/cli/falconctl}
MANY=$BUILD/bench/many_qps
N=${BENCH_QPS_N:-10000}
MAX=${BENCH_QPS_MAX:-65536}
SECS=${BENCH_QPS_SECONDS:-5}
SEC=${BENCH_QPS_SECURITY:-none}
. scripts/two-daemons.sh

run() { # qps many_qps-args...
	local qps=$1; shift
	td_start "--security $SEC --max-qps $qps --log-level warn" \
		"--security $SEC --max-qps $qps --log-level warn" || exit 1
	echo "falcond --security $SEC --max-qps $qps (both): pids $TD_PID_A, $TD_PID_B"
	"$MANY" -p "$TD_PID_A,$TD_PID_B" "$@" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B"
	local rc=$?
	for d in a b; do
		echo "falcond ${d^^} CM: $("$FALCONCTL" -j -r "$TD_DIR/$d" stats |
			grep -o '"\(rx\|tx\|retries\|timeouts\|rx_stale\)":[0-9]*' | head -5 | tr '\n' ' ')"
	done
	td_stop
	return $rc
}

echo "== $N RC QPs: setup, memory, 8 B WRITEs round robin over all at depth 64 vs one QP"
run $((N + 1)) -n "$N" -s "$SECS" || exit 1
if [ "$MAX" -gt 0 ]; then
	echo
	echo "== $MAX RC QPs: setup and memory"
	run "$MAX" -n "$MAX" --setup-only || exit 1
fi
