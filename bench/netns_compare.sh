#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# netns_compare.sh - falcon through falcond beside the kernel's TCP and UDP, on the same
# veth pair between two network namespaces, in the same run (make bench-netns; root).
#
#   falcon-perf   8 B WRITE latency (half round trip, ping-pong; busy-polling and
#                 sleeping on the CQ fd), 64 KiB WRITE bandwidth, 8 B WRITE rate at
#                 depth 64
#   sockperf      16 B ping-pong latency (half round trip) and message rate, UDP and TCP
#                 (16 B: sockperf's smallest message)
#   iperf3        one TCP stream's bandwidth
#
# BENCH_SECONDS (default 3) per measurement; BENCH_JSON=FILE also writes the figures as
# one JSON object. Every figure comes from this run; the last column is falcon's figure
# over the kernel's best (for latency: kernel over falcon, so > 1 means falcon is better).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FALCOND=$BUILD/daemon/falcond
FALCONCTL=$BUILD/cli/falconctl
PERF=$BUILD/bench/falcon-perf
SECS=${BENCH_SECONDS:-3}

if [ "$(id -u)" != 0 ]; then
	echo "bench-netns: needs root (network namespaces)" >&2
	exit 2
fi
for t in iperf3 sockperf; do
	command -v $t >/dev/null || { echo "bench-netns: $t missing: make bench-deps" >&2; exit 2; }
done

. scripts/netns-pair.sh
. scripts/two-daemons.sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/falcon-bench.XXXXXX")
SRV_PIDS=()
cleanup() {
	local p
	for p in "${SRV_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	td_stop
	np_down
	rm -rf "$WORK"
}
trap cleanup EXIT
np_up || { echo "bench-netns: could not create the namespaces" >&2; exit 1; }
TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B
td_start "--mtu 8192 --security none" "--mtu 8192 --security none" || exit 1
BL_NAME=bench-netns
. bench/lib.sh

echo "bench-netns: veth pair $NP_ADDR_A <-> $NP_ADDR_B (MTU 9000), $SECS s per figure, $(nproc) cores"
echo "  (falcond: UDP I/O, security none for the first table, psp for the second; kernel: the"
echo "   same veth, default sysctls)"

lat_poll=$(falcon 6001 -t write -m lat -s 8) || exit 1
lat_ev=$(falcon 6002 -t write -m lat -s 8 -e) || exit 1
bw=$(falcon 6003 -t write -m bw -s 64K -d 64) || exit 1
rate=$(falcon 6004 -t write -m bw -s 8 -d 64) || exit 1
bw_ev=$(falcon 6005 -t write -m bw -s 64K -d 64 -e) || exit 1
rate_ev=$(falcon 6006 -t write -m bw -s 8 -d 64 -e) || exit 1
# the same pair under security psp (authenticated, every packet encrypted)
td_stop
td_start "--mtu 8192" "--mtu 8192" || exit 1
psp_lat=$(falcon 6011 -t write -m lat -s 8) || exit 1
psp_bw=$(falcon 6013 -t write -m bw -s 64K -d 64) || exit 1
psp_rate=$(falcon 6014 -t write -m bw -s 8 -d 64) || exit 1
psp_cipher=$("$FALCONCTL" -j -r "$TD_DIR/a" stats | grep -o '"cipher":"[a-z0-9-]*"' | cut -d'"' -f4)
SPORT=$((TD_BASE + 100))
sp_udp=$(sockperf_run $((SPORT + 1)) ping-pong)
sp_tcp=$(sockperf_run $((SPORT + 2)) ping-pong --tcp)
tp_udp=$(sockperf_run $((SPORT + 3)) throughput)
tp_tcp=$(sockperf_run $((SPORT + 4)) throughput --tcp)
IPORT=$((SPORT + 5))
ip netns exec "$NP_NS_B" iperf3 -s -1 -B "$NP_ADDR_B" -p $IPORT >"$WORK/iperf-srv.log" 2>&1 &
SRV_PIDS+=($!)
for _ in $(seq 100); do # bounded: until it listens (it buffers its own output)
	[ -n "$(in_b ss -ltnH "sport = :$IPORT")" ] && break
	sleep 0.05
done
iperf=$(in_a iperf3 -c "$NP_ADDR_B" -p $IPORT -t "$SECS" -f g 2>&1)
ip_gbps=$(awk '/receiver/ {print $(NF-2)}' <<<"$iperf")

f_p50=$(jnum p50_us "$lat_poll") f_p99=$(jnum p99_us "$lat_poll")
fe_p50=$(jnum p50_us "$lat_ev") fe_p99=$(jnum p99_us "$lat_ev")
f_gbps=$(jnum gbit_s "$bw") f_mops=$(jnum mops "$rate")
fe_gbps=$(jnum gbit_s "$bw_ev") fe_mops=$(jnum mops "$rate_ev")
u_p50=$(sp_pct 50.000 "$sp_udp") u_p99=$(sp_pct 99.000 "$sp_udp")
t_p50=$(sp_pct 50.000 "$sp_tcp") t_p99=$(sp_pct 99.000 "$sp_tcp")
u_mps=$(sp_rate "$tp_udp") t_mps=$(sp_rate "$tp_tcp")
for v in f_p50 f_p99 fe_p50 fe_p99 f_gbps f_mops fe_gbps fe_mops u_p50 u_p99 t_p50 t_p99 u_mps t_mps ip_gbps; do
	if [ -z "${!v}" ]; then
		echo "bench-netns: no figure for $v; the tools said:" >&2
		printf '%s\n' "$lat_poll" "$bw" "$rate" "$sp_udp" "$sp_tcp" "$tp_udp" "$tp_tcp" "$iperf" >&2
		exit 1
	fi
done

awk -v f_p50="$f_p50" -v f_p99="$f_p99" -v fe_p50="$fe_p50" -v fe_p99="$fe_p99" \
    -v f_gbps="$f_gbps" -v f_mops="$f_mops" -v fe_gbps="$fe_gbps" -v fe_mops="$fe_mops" -v u_p50="$u_p50" -v u_p99="$u_p99" \
    -v t_p50="$t_p50" -v t_p99="$t_p99" -v u_mps="$u_mps" -v t_mps="$t_mps" \
    -v ip_gbps="$ip_gbps" 'BEGIN {
	lp50 = u_p50 < t_p50 ? u_p50 : t_p50; lp99 = u_p99 < t_p99 ? u_p99 : t_p99
	mps = u_mps > t_mps ? u_mps : t_mps
	printf "\n%-34s %12s %12s %12s %9s\n", "figure", "falcon", "kernel UDP", "kernel TCP", "ratio"
	printf "%-34s %12.2f %12.2f %12.2f %9.2f\n", "latency p50, us (busy-poll)", f_p50, u_p50, t_p50, lp50 / f_p50
	printf "%-34s %12.2f %12.2f %12.2f %9.2f\n", "latency p99, us (busy-poll)", f_p99, u_p99, t_p99, lp99 / f_p99
	printf "%-34s %12.2f %12s %12s %9.2f\n", "latency p50, us (sleeping)", fe_p50, "", "", lp50 / fe_p50
	printf "%-34s %12.2f %12s %12s %9.2f\n", "latency p99, us (sleeping)", fe_p99, "", "", lp99 / fe_p99
	printf "%-34s %12.3f %12.3f %12.3f %9.2f\n", "small messages, M/s (busy-poll)", f_mops, u_mps / 1e6, t_mps / 1e6, f_mops * 1e6 / mps
	printf "%-34s %12.3f %12s %12s %9.2f\n", "small messages, M/s (sleeping)", fe_mops, "", "", fe_mops * 1e6 / mps
	printf "%-34s %12.2f %12s %12.2f %9.2f\n", "bandwidth, Gbit/s (busy-poll)", f_gbps, "", ip_gbps, f_gbps / ip_gbps
	printf "%-34s %12.2f %12s %12s %9.2f\n", "bandwidth, Gbit/s (sleeping)", fe_gbps, "", "", fe_gbps / ip_gbps
}'
awk -v p50="$f_p50" -v p99="$f_p99" -v g="$f_gbps" -v m="$f_mops" \
    -v sp50="$(jnum p50_us "$psp_lat")" -v sp99="$(jnum p99_us "$psp_lat")" \
    -v sg="$(jnum gbit_s "$psp_bw")" -v sm="$(jnum mops "$psp_rate")" -v c="$psp_cipher" 'BEGIN {
	printf "\n%-34s %12s %12s %9s\n", "falcon (busy-poll)", "none", "psp " c, "psp/none"
	printf "%-34s %12.2f %12.2f %9.2f\n", "latency p50, us", p50, sp50, sp50 / p50
	printf "%-34s %12.2f %12.2f %9.2f\n", "latency p99, us", p99, sp99, sp99 / p99
	printf "%-34s %12.3f %12.3f %9.2f\n", "small messages, M/s", m, sm, sm / m
	printf "%-34s %12.2f %12.2f %9.2f\n", "bandwidth, Gbit/s", g, sg, sg / g
}'
echo "latency: falcon 8 B WRITE ping-pong, half round trip; sockperf 16 B ping-pong, half round trip"
echo "small messages: falcon 8 B WRITEs at depth 64 (completed); sockperf 16 B messages sent"
echo "bandwidth: falcon 64 KiB WRITEs at depth 64; iperf3 one TCP stream"
echo "busy-poll: falcon-perf spins on its CQ (as perftest; after 64 empty polls each poll yields the CPU); sleeping: it waits on the CQ fd"
if [ -n "${BENCH_JSON:-}" ]; then
	printf '{"falcon":{"lat_p50_us":%s,"lat_p99_us":%s,"lat_event_p50_us":%s,"lat_event_p99_us":%s,"write_64k_gbit_s":%s,"write_8b_mops":%s,"write_64k_event_gbit_s":%s,"write_8b_event_mops":%s},"udp":{"lat_p50_us":%s,"lat_p99_us":%s,"msg_per_s":%s},"tcp":{"lat_p50_us":%s,"lat_p99_us":%s,"msg_per_s":%s,"iperf3_gbit_s":%s}}\n' \
		"$f_p50" "$f_p99" "$fe_p50" "$fe_p99" "$f_gbps" "$f_mops" "$fe_gbps" "$fe_mops" "$u_p50" "$u_p99" "$u_mps" \
		"$t_p50" "$t_p99" "$t_mps" "$ip_gbps" >"$BENCH_JSON"
fi
