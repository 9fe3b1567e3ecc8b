#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# compare.sh - falcon beside the stacks it is measured against, all on ONE veth pair between
# two network namespaces (MTU 9000), in ONE run (make bench-compare; root):
#
#   kernel TCP   iperf3, one TCP stream                          -> the bandwidth baseline
#   kernel UDP   sockperf ping-pong, 64 B, with non-blocking sockets that spin and with
#                sockperf's default (sleeping in epoll): the faster is the latency baseline
#   UCX          ucx_perftest over TCP (UCX_TLS=tcp, UCX_NET_DEVICES=the veth):
#                ucp_put_lat 8 B, ucp_put_bw 64 KiB
#   libfabric    fi_pingpong, providers tcp;ofi_rxm and udp;ofi_rxd (rdm endpoints),
#                8 B and 64 KiB ping-pong
#   falcon       falcon-perf through two falcond, --io udp and --io xdp (when this falcond
#                has it), --security none and psp: 8 B WRITE ping-pong, 64 KiB WRITEs at
#                depth 64. The xdp rows run the pair at MTU 3500 and falcond at the largest
#                RDMA MTU one 4 KiB AF_XDP frame holds (a single-buffer XDP program attaches
#                to a veth only while its peer's MTU is at most about 3500 bytes), and say
#                so; a falcond that falls back to udp
#                gives "n/a (falcond fell back to udp ...)", never udp's figures.
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
# chart of the ratios. NP_PREFIX (default fcmp) names the namespaces.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FALCOND=${FALCOND:-$BUILD/daemon/falcond}
FALCONCTL=${FALCONCTL:-$BUILD/cli/falconctl}
PERF=${PERF:-$BUILD/bench/falcon-perf}
SECS=${BENCH_SECONDS:-3}
DOC=${BENCH_DOC-docs/performance.md}
PNG=${BENCH_PNG:-docs/perf-compare.png}
BL_NAME=bench-compare
export NP_PREFIX=${NP_PREFIX:-fcmp}

if [ "$(id -u)" != 0 ]; then
	echo "$BL_NAME: needs root (network namespaces)" >&2
	exit 2
fi
for t in iperf3 sockperf ucx_perftest fi_pingpong gnuplot; do
	command -v $t >/dev/null || { echo "$BL_NAME: $t missing: make bench-deps" >&2; exit 2; }
done
for f in "$FALCOND" "$FALCONCTL" "$PERF"; do
	[ -x "$f" ] || { echo "$BL_NAME: $f missing: make" >&2; exit 2; }
done

. scripts/netns-pair.sh
. scripts/two-daemons.sh
. bench/lib.sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/falcon-compare.XXXXXX")
ROWS=$WORK/rows.tsv
cleanup() {
	td_stop
	np_down
	rm -rf "$WORK"
}
trap cleanup EXIT
np_up || { echo "$BL_NAME: could not create the namespaces" >&2; exit 1; }
TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B

# one row: stack, latency us (or n/a ...), bandwidth Gbit/s (or ...), how
row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$ROWS"; }
# a number or the word that says why there is none
num_or() { [ -n "$1" ] && echo "$1" || echo "failed"; }
# a server in B (log file given), then the client in A; the server is gone afterwards
serve() { # log cmd...   (the server's pid in SRV)
	local log=$1; shift
	in_b timeout $((SECS * 4 + 60)) "$@" >"$log" 2>&1 &
	SRV=$!
}
reap() { kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
# until a TCP port listens in B (5 s at most)
listening() {
	for _ in $(seq 100); do
		[ -n "$(in_b ss -ltnH "sport = :$1")" ] && return 0
		sleep 0.05
	done
	return 1
}

echo "$BL_NAME: veth pair $NP_ADDR_A <-> $NP_ADDR_B (MTU 9000), $SECS s per figure, $(nproc) cores"

# --- kernel TCP: iperf3, one stream ---
serve "$WORK/iperf-srv.log" iperf3 -s -1 -B "$NP_ADDR_B" -p 5201
listening 5201
out=$(in_a timeout $((SECS + 30)) iperf3 -c "$NP_ADDR_B" -p 5201 -t "$SECS" -f g 2>&1)
reap
tcp_bw=$(awk '/receiver/ {print $(NF-2)}' <<<"$out")
[ -n "$tcp_bw" ] || { echo "$BL_NAME: iperf3 gave no figure:" >&2; echo "$out" >&2; exit 1; }
row "kernel TCP (iperf3, 1 stream)" "-" "$tcp_bw" "iperf3 -t $SECS"

# --- kernel UDP: sockperf ping-pong, 64 B, with sockets that spin (--nonblocked, as every
# other stack here polls) and with sockperf's default (sleeping in epoll); the faster of the
# two is the baseline (on a busy 2-core host either can lose by orders of magnitude) ---
out=$(SP_MSG=64 sockperf_run 11111 ping-pong --nonblocked)
spin_lat=$(sp_pct 50.000 "$out")
out2=$(SP_MSG=64 sockperf_run 11112 ping-pong)
epoll_lat=$(sp_pct 50.000 "$out2")
[ -n "$spin_lat" ] && [ -n "$epoll_lat" ] ||
	{ echo "$BL_NAME: sockperf gave no figure:" >&2; echo "$out" "$out2" >&2; exit 1; }
if awk -v a="$spin_lat" -v b="$epoll_lat" 'BEGIN { exit !(a <= b) }'; then
	udp_lat=$spin_lat base_spin=" (baseline)" base_epoll=
else
	udp_lat=$epoll_lat base_spin= base_epoll=" (baseline)"
fi
row "kernel UDP (sockperf, 64 B, spinning)" "$spin_lat" "-" "ping-pong --nonblocked, p50$base_spin"
row "kernel UDP (sockperf, 64 B, epoll)" "$epoll_lat" "-" "ping-pong, sleeping in epoll, p50$base_epoll"

# --- UCX over TCP: ucp_put_lat 8 B, ucp_put_bw 64 KiB ---
ucx() { # port test size iters   (prints the client's final line)
	serve "$WORK/ucx-srv-$1.log" env UCX_TLS=tcp UCX_NET_DEVICES="$NP_IF_B" ucx_perftest -p "$1"
	listening "$1" || { reap; return 1; }
	in_a env UCX_TLS=tcp UCX_NET_DEVICES="$NP_IF_A" timeout $((SECS * 4 + 60)) \
		ucx_perftest "$NP_ADDR_B" -p "$1" -t "$2" -s "$3" -n "$4" -w 1000 -f 2>&1 | tail -1
	reap
}
# final line: iterations, latency p50 / avg / overall, MiB/s avg / overall, msg/s avg / overall
out=$(ucx 13337 ucp_put_lat 8 $((SECS * 100000)))
ucx_lat=$(awk 'NF >= 8 {print $2}' <<<"$out")
out2=$(ucx 13338 ucp_put_bw 65536 $((SECS * 15000)))
ucx_bw=$(awk 'NF >= 8 {printf "%.2f", $NF * 65536 * 8 / 1e9}' <<<"$out2")
[ -n "$ucx_lat" ] && [ -n "$ucx_bw" ] || { echo "$BL_NAME: ucx_perftest said:" >&2; echo "$out" "$out2" >&2; }
row "UCX over TCP (ucx_perftest)" "$(num_or "$ucx_lat")" "$(num_or "$ucx_bw")" \
	"UCX_TLS=tcp; ucp_put_lat 8 B p50, ucp_put_bw 64 KiB"

# --- libfabric: fi_pingpong, tcp;ofi_rxm and udp;ofi_rxd ---
fab() { # port provider size iters   (prints the client's result line)
	serve "$WORK/fi-srv-$1.log" fi_pingpong -p "$2" -e rdm -S "$3" -I "$4" -B "$1"
	listening "$1" || { reap; return 1; }
	in_a timeout $((SECS * 4 + 60)) fi_pingpong -p "$2" -e rdm -S "$3" -I "$4" -P "$1" \
		"$NP_ADDR_B" 2>&1 | tail -1
	reap
}
# result line: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
p=47600
for prov in "tcp;ofi_rxm" "udp;ofi_rxd"; do
	[ "$prov" = "tcp;ofi_rxm" ] && big=$((SECS * 6000)) || big=$((SECS * 800))
	out=$(fab $p "$prov" 8 $((SECS * 60000)))
	lat=$(awk 'NF == 8 && $1 == "8" {print $7}' <<<"$out")
	out2=$(fab $((p + 1)) "$prov" 65536 $big)
	bw=$(awk 'NF == 8 && $1 == "64k" {printf "%.2f", $6 * 8 / 1000}' <<<"$out2")
	[ -n "$lat" ] && [ -n "$bw" ] || { echo "$BL_NAME: fi_pingpong $prov said:" >&2; echo "$out" "$out2" >&2; }
	row "libfabric $prov (fi_pingpong)" "$(num_or "$lat")" "$(num_or "$bw")" \
		"rdm; 8 B mean, 64 KiB ping-pong"
	p=$((p + 2))
done

# --- falcon: falcon-perf through two falcond, io udp / xdp x security none / psp ---
setmtu() { ip -n "$NP_NS_A" link set "$NP_IF_A" mtu "$1" && ip -n "$NP_NS_B" link set "$NP_IF_B" mtu "$1"; }
runs_xdp() { "$FALCONCTL" -j -r "$TD_DIR/$1" xdp 2>/dev/null | grep -q '"program":{'; }
has_io=0 has_xdp=0
"$FALCOND" --help 2>&1 | grep -q -- '--io ' && has_io=1
"$FALCOND" --help 2>&1 | grep -q -- '--io .*xdp' && has_xdp=1
svc=6100
for io in udp xdp; do
	for sec in none psp; do
		name="falcon --io $io, security $sec"
		if [ $io = xdp ] && [ $has_xdp = 0 ]; then
			row "$name" "n/a (no xdp backend in this build)" "n/a (no xdp backend in this build)" "-"
			continue
		fi
		# a single-buffer XDP program attaches to a veth only while its peer's MTU is
		# at most about 3500 bytes: the xdp rows run the pair at MTU 3500 and falcond picks
		# the RDMA MTU an AF_XDP frame holds
		args="--mtu 8192" how=
		if [ $io = xdp ]; then
			args= how="; veth MTU 3500, RDMA MTU the largest one AF_XDP frame holds"
			setmtu 3500
		fi
		[ $has_io = 1 ] && args="$args --io $io"
		[ $sec = none ] && args="$args --security none"
		if ! td_start "$args" "$args"; then
			row "$name" "failed (daemons)" "failed (daemons)" "-"
			td_stop
			setmtu 9000
			continue
		fi
		if [ $io = xdp ] && ! { runs_xdp a && runs_xdp b; }; then
			why="n/a (falcond fell back to udp: see its log)"
			grep -m1 -i 'xdp' "$TD_DIR/a.log" "$TD_DIR/b.log" >&2
			row "$name" "$why" "$why" "-"
			td_stop
			setmtu 9000
			continue
		fi
		cipher=
		[ $sec = psp ] && cipher=$("$FALCONCTL" -j -r "$TD_DIR/a" stats |
			grep -o '"cipher":"[a-z0-9-]*"' | cut -d'"' -f4)
		lat=$(jnum p50_us "$(falcon $svc -t write -m lat -s 8)")
		bw=$(jnum gbit_s "$(falcon $((svc + 1)) -t write -m bw -s 64K -d 64)")
		row "$name" "$(num_or "$lat")" "$(num_or "$bw")" \
			"8 B WRITE ping-pong p50, 64 KiB WRITE depth 64${cipher:+; $cipher}$how"
		td_stop
		[ $io = xdp ] && setmtu 9000
		svc=$((svc + 2))
	done
done

# --- the table: ratios to kernel UDP (latency) and kernel TCP (bandwidth) ---
ratios() { # fmt: text | md
	awk -F'\t' -v fmt="$1" -v ul="$udp_lat" -v tb="$tcp_bw" '
	function isnum(x) { return x ~ /^[0-9.]+$/ }
	function ratio(x, base) { return isnum(x) ? sprintf("%.2f", x / base) : "-" }
	{
		lr = $2 == "-" ? "-" : ratio($2, ul)
		br = $3 == "-" ? "-" : ratio($3, tb)
		if (fmt == "md")
			printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, lr, $3, br, $4
		else if (fmt == "chart")
			printf "\"%s\"\t%s\t%s\t%s\n", $1, isnum($3) ? br : "-", isnum($2) ? lr : "-", $4
		else
			printf "%-36s %-12s %-8s %-12s %-8s %s\n", $1, $2, lr, $3, br, $4
	}' "$ROWS"
}
echo
printf "%-36s %-12s %-8s %-12s %-8s %s\n" "stack" "lat us" "/UDP" "Gbit/s" "/TCP" "how"
ratios text
echo "latency: half round trip, us (p50; fi_pingpong: mean); /UDP = over kernel UDP's, below 1 is faster"
echo "bandwidth: Gbit/s of payload; /TCP = over kernel TCP's (iperf3), above 1 is more"

# --- the chart: grouped bars of the ratios ---
# (the baselines themselves are 1 by definition, and rows without a figure have no bar:
# left out)
ratios chart | grep -v -F -e '"kernel TCP (iperf3, 1 stream)"' -e '(baseline)' |
	grep -v -P '\t-\t-\t' | cut -f1-3 >"$WORK/chart.dat"
if ! gnuplot <<EOF 2>"$WORK/gnuplot.log"; then
set terminal png size 1000,560 font ",10" noenhanced
set output "$PNG"
set title "falcon and others over kernel TCP (bandwidth) and kernel UDP (latency), one veth pair"
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
set bmargin 9
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2
plot "$WORK/chart.dat" using 2:xtic(1) title "bandwidth / kernel TCP (higher is better)", \
     "" using 3 title "latency / kernel UDP (lower is better)"
EOF
	echo "$BL_NAME: gnuplot failed:" >&2
	cat "$WORK/gnuplot.log" >&2
	exit 1
fi
echo "chart: $PNG"

# --- docs: the section between the markers ---
[ -n "$DOC" ] || exit 0
cpu=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
{
	echo "<!-- bench-compare:begin -->"
	echo "$cpu, $(nproc) cores, kernel $(uname -r), $(date -u +%Y-%m-%d), commit $commit,"
	echo "\`BENCH_SECONDS=$SECS make bench-compare\`:"
	echo
	echo "| stack | latency, us (half round trip) | / kernel UDP | bandwidth, Gbit/s | / kernel TCP | how |"
	echo "|---|---|---|---|---|---|"
	ratios md
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
