#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# compare.sh - falcon beside the stacks it is measured against, all on ONE veth pair between
# two network namespaces (MTU 9000), in ONE run (make bench-compare; root):
#
#   kernel TCP   iperf3, one TCP stream                          -> the bandwidth baseline
#   kernel UDP   sockperf ping-pong, 64 B, with non-blocking sockets that spin and with
#                sockperf's default (sleeping in epoll): the faster is the latency baseline
#   UCX          ucx_perftest over TCP (UCX_TLS=tcp, UCX_NET_DEVICES=the veth):
#                ucp_put_lat 8 B, ucp_put_bw 64 KiB, ucp_put_bw 8 B (its message rate:
#                the one other stack here with a small-message rate at depth)
#   libfabric    fi_pingpong, providers tcp;ofi_rxm and udp;ofi_rxd (rdm endpoints),
#                8 B and 64 KiB ping-pong
#   falcon       falcon-perf through two falcond, --io udp and --io xdp (when this falcond
#                has it), --security none and psp, one row per poll mode of falcond
#                (--poll sleep|adaptive|busy, when falcond has it): 8 B WRITE ping-pong,
#                64 KiB WRITEs at depth 64, 8 B WRITEs at depth 64 (M ops/s). The xdp rows
#                run the pair at MTU 3500 and falcond at the largest RDMA MTU one 4 KiB
#                AF_XDP frame holds (a single-buffer XDP program attaches to a veth only
#                while its peer's MTU is at most about 3500 bytes), and say so; a falcond
#                that falls back to udp gives "n/a (falcond fell back to udp ...)", never
#                udp's figures.
#
# Placement (BENCH_PLACEMENT): pinned (default) runs every process of host A (its
# falcond, falcon-perf's client, iperf3/sockperf/ucx_perftest/fi_pingpong clients) under
# taskset -c BENCH_CPU_A (0) and host B's (its falcond, falcon-perf's server, the other
# tools' servers) under taskset -c BENCH_CPU_B (1): one core per host, as a production
# host gives a transport its core. falcon-perf shares its host's core with that host's
# falcond, which in busy poll mode spins on it: the production trade-off, measured as it
# is. shared: no taskset, every process on any of the machine's cores (the run before
# placement existed).
#
# Units made comparable: every latency is HALF the round trip (sockperf reports RTT/2
# unless --full-rtt, ucx_perftest divides ping-pong time by 2, fi_pingpong's usec/xfer
# counts both directions' transfers, falcon-perf halves its WRITE ping-pong), the median
# (p50) except fi_pingpong, which prints only the mean. Bandwidth in Gbit/s (10^9 bit/s)
# of payload: iperf3's receiver figure; ucx_perftest's message rate x 64 KiB (it prints
# MiB/s); fi_pingpong's bytes of both directions over the time (one message in flight:
# a ping-pong, not a stream); falcon-perf's completed WRITEs x 64 KiB.
# Ratios: latency over kernel UDP's (below 1 is faster), bandwidth over kernel TCP's
# (above 1 is more).
#
# BENCH_SECONDS (default 3): seconds per figure (iperf3, sockperf, falcon-perf; the
# iteration counts of ucx_perftest and fi_pingpong are set to take about as long).
# BENCH_DOC (default docs/performance.md): the file whose section between the markers
# <!-- bench-compare:begin --> and <!-- bench-compare:end --> is replaced by this run's
# table; BENCH_DOC= (empty) writes no file. BENCH_PNG (default docs/perf-compare.png): the
# chart of the ratios (with BENCH_DOC= and no BENCH_PNG: ${TMPDIR:-/tmp}/bench-compare.png).
# BENCH_POLL (default "sleep adaptive busy"): the falcon rows' poll modes; a falcond
# without --poll runs only its one behaviour, labelled sleep (and the output says so);
# BENCH_POLL_US: --poll-us for falcond. BENCH_ROWS (default "tcp udp ucx ofi falcon_udp
# falcon_xdp"): the stacks to run. BENCH_JSON=FILE: the figures as
#   {"cores_per_host": N, "placement": P, "falcond_poll": B,
#    "rows": [{"id": ..., "lat_us": ..., "gbps": ..., "mops": ...}]}
# ids tcp udp_spin udp_epoll ucx_tcp ofi_rxm ofi_rxd falcon_<io>_<security>_<poll>, null
# where a stack has no such figure (bench/compare_lib.sh; tests/bench/test_compare.sh).
# NP_PREFIX (default fcmp) names the namespaces.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FALCOND=${FALCOND:-$BUILD/daemon/falcond}
FALCONCTL=${FALCONCTL:-$BUILD/cli/falconctl}
PERF=${PERF:-$BUILD/bench/falcon-perf}
SECS=${BENCH_SECONDS:-3}
DOC=${BENCH_DOC-docs/performance.md}
PNG=${BENCH_PNG:-$([ -n "$DOC" ] && echo docs/perf-compare.png || echo "${TMPDIR:-/tmp}/bench-compare.png")}
PLACEMENT=${BENCH_PLACEMENT:-pinned}
CPU_A=${BENCH_CPU_A:-0} CPU_B=${BENCH_CPU_B:-1}
STACKS=${BENCH_ROWS:-tcp udp ucx ofi falcon_udp falcon_xdp}
JSON=${BENCH_JSON:-}
BL_NAME=bench-compare
export NP_PREFIX=${NP_PREFIX:-fcmp}
. bench/compare_lib.sh

if [ "$(id -u)" != 0 ]; then
	echo "$BL_NAME: needs root (network namespaces)" >&2
	exit 2
fi
for t in iperf3 sockperf ucx_perftest fi_pingpong gnuplot jq taskset; do
	command -v $t >/dev/null || { echo "$BL_NAME: $t missing: make bench-deps" >&2; exit 2; }
done
for f in "$FALCOND" "$FALCONCTL" "$PERF"; do
	[ -x "$f" ] || { echo "$BL_NAME: $f missing: make" >&2; exit 2; }
done
bc_placement "$PLACEMENT" "$(nproc)" "$CPU_A" "$CPU_B" || exit 2
if [ "$PLACEMENT" = pinned ] && ! taskset -c "$CPU_A,$CPU_B" true 2>/dev/null; then
	echo "$BL_NAME: CPUs $CPU_A and $CPU_B are not both ours (BENCH_CPU_A, BENCH_CPU_B)" >&2
	exit 2
fi
bc_poll_modes "$("$FALCOND" --help 2>&1)" "${BENCH_POLL:-$BC_POLL_ALL}" || exit 2
EXPECT=$(bc_ids "$STACKS" "$BC_POLLS") || exit 2
want() { [[ " $STACKS " == *" $1 "* ]]; }

. scripts/netns-pair.sh
. scripts/two-daemons.sh
. bench/lib.sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/falcon-compare.XXXXXX")
ROWS=$WORK/rows.tsv
: >"$ROWS"
cleanup() {
	td_stop
	np_down
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
np_up || { echo "$BL_NAME: could not create the namespaces" >&2; exit 1; }
TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B
TD_PIN_A=$PIN_A TD_PIN_B=$PIN_B

# one row: id, stack, latency us, bandwidth Gbit/s, M ops/s (each a number, "-" or the
# words that say why there is none), how
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" >>"$ROWS"; }
# a number or the word that says why there is none
num_or() { [ -n "$1" ] && echo "$1" || echo "failed"; }
# Bounds: a client has TOOL_S to give its figure (5 times the time it is set to take, and
# a margin; a figure that needs longer is no figure on this host), a server that long and
# 15 s more, and 20 s to listen (a loaded host starts ucx_perftest and fi_pingpong slowly)
TOOL_S=$((SECS * 5 + 15))
# a server in B (log file given), then the client in A; the server is gone afterwards
serve() { # log cmd...   (the server's pid in SRV: one exec chain, so kill reaches it)
	local log=$1; shift
	$PIN_B ip netns exec "$NP_NS_B" timeout $((TOOL_S + 15)) "$@" >"$log" 2>&1 &
	SRV=$!
}
reap() { kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
# until a TCP port listens in B (20 s at most; says so when it does not)
listening() {
	for _ in $(seq 200); do
		[ -n "$(in_b ss -ltnH "sport = :$1")" ] && return 0
		sleep 0.1
	done
	echo "$BL_NAME: no server listens on port $1 after 20 s" >&2
	return 1
}
# the CPU list a process may run on
cpus_of() { taskset -pc "$1" 2>/dev/null | awk '{print $NF}'; }

tcp_bw= udp_lat= udp_base=
echo "$BL_NAME: veth pair $NP_ADDR_A <-> $NP_ADDR_B (MTU 9000), $SECS s per figure, $(nproc) cores"
if [ "$PLACEMENT" = pinned ]; then
	echo "placement pinned: host A's processes (falcond A, falcon-perf client, the tools' clients)"
	echo "  on CPU $CPU_A, host B's (falcond B, falcon-perf server, the tools' servers) on CPU $CPU_B:"
	echo "  $BC_CORES core per host. falcon-perf shares its host's core with that host's falcond"
	echo "  (in busy poll mode a falcond spinning on it): the trade-off of a host that gives the"
	echo "  transport one core"
else
	echo "placement shared: no taskset, every process on any of the $BC_CORES cores"
fi
if [ "$BC_HAS_POLL" = 1 ]; then
	echo "falcon poll modes: $BC_POLLS (falcond --poll${BENCH_POLL_US:+, --poll-us $BENCH_POLL_US})"
else
	echo "falcon poll modes: falcond has no --poll: its rows are its one behaviour (it sleeps until"
	echo "  a packet or a client's doorbell), labelled sleep; adaptive and busy are not measured"
fi

# --- kernel TCP: iperf3, one stream ---
if want tcp; then
	serve "$WORK/iperf-srv.log" iperf3 -s -1 -B "$NP_ADDR_B" -p 5201
	listening 5201
	out=$(in_a timeout $((SECS + 30)) iperf3 -c "$NP_ADDR_B" -p 5201 -t "$SECS" -f g 2>&1)
	reap
	tcp_bw=$(awk '/receiver/ {print $(NF-2)}' <<<"$out")
	# no figure: a failed row, and no bandwidth ratios (the rest of the run still counts)
	[ -n "$tcp_bw" ] || { echo "$BL_NAME: iperf3 gave no figure:" >&2; echo "$out" >&2; }
	row tcp "kernel TCP (iperf3, 1 stream)" - "$(num_or "$tcp_bw")" - "iperf3 -t $SECS"
fi

# --- kernel UDP: sockperf ping-pong, 64 B, with sockets that spin (--nonblocked, as every
# other stack here polls) and with sockperf's default (sleeping in epoll); the faster of the
# two is the baseline (on a busy 2-core host either can lose by orders of magnitude) ---
if want udp; then
	out=$(SP_MSG=64 sockperf_run 11111 ping-pong --nonblocked)
	spin_lat=$(sp_pct 50.000 "$out")
	out2=$(SP_MSG=64 sockperf_run 11112 ping-pong)
	epoll_lat=$(sp_pct 50.000 "$out2")
	# the one with a figure is the baseline if the other has none; neither: no latency ratios
	[ -n "$spin_lat" ] && [ -n "$epoll_lat" ] ||
		{ echo "$BL_NAME: sockperf gave no figure:" >&2; echo "$out" "$out2" >&2; }
	base_spin= base_epoll=
	if [ -n "$spin_lat" ] && { [ -z "$epoll_lat" ] ||
		awk -v a="$spin_lat" -v b="$epoll_lat" 'BEGIN { exit !(a <= b) }'; }; then
		udp_lat=$spin_lat udp_base=udp_spin base_spin=" (baseline)"
	elif [ -n "$epoll_lat" ]; then
		udp_lat=$epoll_lat udp_base=udp_epoll base_epoll=" (baseline)"
	fi
	row udp_spin "kernel UDP (sockperf, 64 B, spinning)" "$(num_or "$spin_lat")" - - \
		"ping-pong --nonblocked, p50$base_spin"
	row udp_epoll "kernel UDP (sockperf, 64 B, epoll)" "$(num_or "$epoll_lat")" - - \
		"ping-pong, sleeping in epoll, p50$base_epoll"
fi

# --- UCX over TCP: ucp_put_lat 8 B, ucp_put_bw 64 KiB and 8 B ---
ucx() { # port test size iters   (prints the client's final line)
	serve "$WORK/ucx-srv-$1.log" env UCX_TLS=tcp UCX_NET_DEVICES="$NP_IF_B" ucx_perftest -p "$1"
	listening "$1" || { reap; return 1; }
	in_a env UCX_TLS=tcp UCX_NET_DEVICES="$NP_IF_A" timeout "$TOOL_S" \
		ucx_perftest "$NP_ADDR_B" -p "$1" -t "$2" -s "$3" -n "$4" -w 1000 -f 2>&1 | tail -1
	reap
}
# final line: iterations, latency p50 / avg / overall, MiB/s avg / overall, msg/s avg / overall
if want ucx; then
	out=$(ucx 13337 ucp_put_lat 8 $((SECS * 100000)))
	ucx_lat=$(awk 'NF >= 8 {print $2}' <<<"$out")
	out2=$(ucx 13338 ucp_put_bw 65536 $((SECS * 15000)))
	ucx_bw=$(awk 'NF >= 8 {printf "%.2f", $NF * 65536 * 8 / 1e9}' <<<"$out2")
	out3=$(ucx 13339 ucp_put_bw 8 $((SECS * 300000)))
	ucx_mops=$(awk 'NF >= 8 {printf "%.3f", $NF / 1e6}' <<<"$out3")
	[ -n "$ucx_lat" ] && [ -n "$ucx_bw" ] && [ -n "$ucx_mops" ] ||
		{ echo "$BL_NAME: ucx_perftest said:" >&2; echo "$out" "$out2" "$out3" >&2; }
	row ucx_tcp "UCX over TCP (ucx_perftest)" "$(num_or "$ucx_lat")" "$(num_or "$ucx_bw")" \
		"$(num_or "$ucx_mops")" "UCX_TLS=tcp; ucp_put_lat 8 B p50, ucp_put_bw 64 KiB, ucp_put_bw 8 B"
fi

# --- libfabric: fi_pingpong, tcp;ofi_rxm and udp;ofi_rxd ---
fab() { # port provider size iters   (prints the client's result line)
	serve "$WORK/fi-srv-$1.log" fi_pingpong -p "$2" -e rdm -S "$3" -I "$4" -B "$1"
	listening "$1" || { reap; return 1; }
	in_a timeout "$TOOL_S" fi_pingpong -p "$2" -e rdm -S "$3" -I "$4" -P "$1" \
		"$NP_ADDR_B" 2>&1 | tail -1
	reap
}
# result line: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec (a ping-pong's
# Mxfers/sec is one over its latency, not a rate at depth: no M ops/s figure)
p=47600
for prov in "tcp;ofi_rxm" "udp;ofi_rxd"; do
	want ofi || break
	[ "$prov" = "tcp;ofi_rxm" ] && big=$((SECS * 6000)) || big=$((SECS * 800))
	out=$(fab $p "$prov" 8 $((SECS * 60000)))
	lat=$(awk 'NF == 8 && $1 == "8" {print $7}' <<<"$out")
	out2=$(fab $((p + 1)) "$prov" 65536 $big)
	bw=$(awk 'NF == 8 && $1 == "64k" {printf "%.2f", $6 * 8 / 1000}' <<<"$out2")
	[ -n "$lat" ] && [ -n "$bw" ] || { echo "$BL_NAME: fi_pingpong $prov said:" >&2; echo "$out" "$out2" >&2; }
	row "ofi_${prov#*;ofi_}" "libfabric $prov (fi_pingpong)" "$(num_or "$lat")" "$(num_or "$bw")" - \
		"rdm; 8 B mean, 64 KiB ping-pong"
	p=$((p + 2))
done

# --- falcon: falcon-perf through two falcond, io udp / xdp x security none / psp x poll ---
setmtu() { ip -n "$NP_NS_A" link set "$NP_IF_A" mtu "$1" && ip -n "$NP_NS_B" link set "$NP_IF_B" mtu "$1"; }
runs_xdp() { "$FALCONCTL" -j -r "$TD_DIR/$1" xdp 2>/dev/null | grep -q '"program":{'; }
has_io=0 has_xdp=0
"$FALCOND" --help 2>&1 | grep -q -- '--io ' && has_io=1
"$FALCOND" --help 2>&1 | grep -q -- '--io .*xdp' && has_xdp=1
# one falcon row: the daemons up with args (on their CPUs when pinned), three figures,
# the daemons down; a row of words when they do not start, sit elsewhere or fall back
falcon_row() { # id name args how
	local id=$1 name=$2 args=$3 how=$4 why= cipher= lat bw mops
	if ! td_start "$args" "$args"; then
		why="failed (daemons)"
	elif [ "$PLACEMENT" = pinned ] &&
		! { [ "$(cpus_of "$TD_PID_A")" = "$CPU_A" ] && [ "$(cpus_of "$TD_PID_B")" = "$CPU_B" ]; }; then
		why="failed (daemons on CPUs $(cpus_of "$TD_PID_A") / $(cpus_of "$TD_PID_B"))"
	elif [[ $args == *"--io xdp"* ]] && ! { runs_xdp a && runs_xdp b; }; then
		why="n/a (falcond fell back to udp: see its log)"
		grep -m1 -i 'xdp' "$TD_DIR/a.log" "$TD_DIR/b.log" >&2
	fi
	if [ -n "$why" ]; then
		row "$id" "$name" "$why" "$why" "$why" -
		td_stop
		return
	fi
	[[ $args == *"--security none"* ]] || cipher=$("$FALCONCTL" -j -r "$TD_DIR/a" stats |
		grep -o '"cipher":"[a-z0-9-]*"' | cut -d'"' -f4)
	lat=$(jnum p50_us "$(falcon "$svc" -t write -m lat -s 8)")
	bw=$(jnum gbit_s "$(falcon $((svc + 1)) -t write -m bw -s 64K -d 64)")
	mops=$(jnum mops "$(falcon $((svc + 2)) -t write -m bw -s 8 -d 64)")
	row "$id" "$name" "$(num_or "$lat")" "$(num_or "$bw")" "$(num_or "$mops")" \
		"8 B WRITE ping-pong p50, 64 KiB and 8 B WRITE depth 64${cipher:+; $cipher}$how"
	td_stop
	svc=$((svc + 3))
}
svc=6100
for io in udp xdp; do
	want "falcon_$io" || continue
	for sec in none psp; do
		for poll in $BC_POLLS; do
			id=falcon_${io}_${sec}_$poll
			name="falcon --io $io, security $sec, $poll"
			if [ $io = xdp ] && [ $has_xdp = 0 ]; then
				why="n/a (no xdp backend in this build)"
				row "$id" "$name" "$why" "$why" "$why" -
				continue
			fi
			# a single-buffer XDP program attaches to a veth only while its peer's MTU
			# is at most about 3500 bytes: the xdp rows run the pair at MTU 3500 and
			# falcond picks the RDMA MTU an AF_XDP frame holds
			args="--mtu 8192" how=
			if [ $io = xdp ]; then
				args= how="; veth MTU 3500, RDMA MTU the largest one AF_XDP frame holds"
				setmtu 3500
			fi
			[ $has_io = 1 ] && args="$args --io $io"
			[ $sec = none ] && args="$args --security none"
			[ "$BC_HAS_POLL" = 1 ] && args="$args --poll $poll${BENCH_POLL_US:+ --poll-us $BENCH_POLL_US}"
			falcon_row "$id" "$name" "$args" "$how"
			[ $io = xdp ] && setmtu 9000
		done
	done
done

# --- the table: ratios to kernel UDP (latency) and kernel TCP (bandwidth) ---
poll_note=
[ "$BC_HAS_POLL" = 1 ] || poll_note=" (this falcond has no --poll: its one behaviour)"
echo
bc_table_head text
bc_table text "$ROWS" "$udp_lat" "$tcp_bw"
echo "latency: half round trip, us (p50; fi_pingpong: mean); /UDP = over kernel UDP's, below 1 is faster"
echo "bandwidth: Gbit/s of payload; /TCP = over kernel TCP's (iperf3), above 1 is more"
echo "M ops/s: million 8 B WRITEs (UCX: puts) completed per second at depth 64"
echo "placement $PLACEMENT, $BC_CORES core(s) per host; falcon poll modes: $BC_POLLS$poll_note"

# --- the JSON: the same rows, checked against its schema and the ids this run makes ---
if [ -n "$JSON" ]; then
	bc_json "$ROWS" "$BC_CORES" "$PLACEMENT" "$BC_HAS_POLL" >"$JSON" ||
		{ echo "$BL_NAME: could not write $JSON" >&2; exit 1; }
	# shellcheck disable=SC2086
	bc_check "$JSON" $EXPECT || { echo "$BL_NAME: $JSON does not hold its schema" >&2; exit 1; }
	echo "json: $JSON"
fi

# --- the chart: grouped bars of the ratios ---
# (the baselines themselves are 1 by definition, and rows without a figure have no bar:
# left out)
awk -F'\t' -v b="$udp_base" '$1 != "tcp" && $1 != b' "$ROWS" >"$WORK/chart-rows.tsv"
bc_table chart "$WORK/chart-rows.tsv" "$udp_lat" "$tcp_bw" | grep -v -P '\t-\t-\t' |
	cut -f1-3 >"$WORK/chart.dat"
bars=$(wc -l <"$WORK/chart.dat")
if [ "$bars" = 0 ]; then
	echo "chart: none (no ratios: BENCH_ROWS without tcp and udp, or no figures)"
elif ! gnuplot <<EOF 2>"$WORK/gnuplot.log"; then
set terminal png size $((bars * 55 > 1000 ? bars * 55 : 1000)),600 font ",10" noenhanced
set output "$PNG"
set title "falcon and others over kernel TCP (bandwidth) and kernel UDP (latency), one veth pair, placement $PLACEMENT"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set datafile separator "\t"
set datafile missing "-"
set logscale y
set ylabel "ratio (log scale)"
set lmargin 22
set grid ytics
set key top left
set xtics rotate by 25 right
set bmargin 11
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2
plot "$WORK/chart.dat" using 2:xtic(1) title "bandwidth / kernel TCP (higher is better)", \
     "" using 3 title "latency / kernel UDP (lower is better)"
EOF
	echo "$BL_NAME: gnuplot failed:" >&2
	cat "$WORK/gnuplot.log" >&2
	exit 1
else
	echo "chart: $PNG"
fi

# --- docs: the section between the markers ---
[ -n "$DOC" ] || exit 0
cpu=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
{
	echo "<!-- bench-compare:begin -->"
	echo "$cpu, $(nproc) cores, kernel $(uname -r), $(date -u +%Y-%m-%d), commit $commit,"
	echo "\`BENCH_SECONDS=$SECS BENCH_PLACEMENT=$PLACEMENT make bench-compare\`: $BC_CORES core(s)"
	echo "per host, falcon poll modes $BC_POLLS$poll_note:"
	echo
	bc_table_head md
	bc_table md "$ROWS" "$udp_lat" "$tcp_bw"
	echo
	echo "![ratios to kernel TCP and UDP]($(basename "$PNG"))"
	echo "<!-- bench-compare:end -->"
} >"$WORK/section.md"
if grep -q '<!-- bench-compare:begin -->' "$DOC"; then
	awk -v sec="$WORK/section.md" '
		/<!-- bench-compare:begin -->/ { while ((getline l < sec) > 0) print l; skip = 1; next }
		/<!-- bench-compare:end -->/ { skip = 0; next }
		!skip' "$DOC" >"$WORK/doc.md"
else
	{ cat "$DOC"; echo; cat "$WORK/section.md"; } >"$WORK/doc.md"
fi
cat "$WORK/doc.md" >"$DOC"
echo "table: $DOC"
