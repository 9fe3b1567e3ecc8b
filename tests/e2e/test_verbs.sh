#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Unmodified libibverbs programs over falcon (issue 24): falcon's libibverbs.so.1
# (build/verbs) under falcon-run, two network namespaces on a veth pair, a falcond in each
# (security psp, fresh keys; CM ports told to falcon-run with -P):
#   ibv_devices, ibv_devinfo -v   list falcon0, its GID (the daemon's address), its limits
#   rdma-core's examples          ibv_rc_pingpong -c, ibv_srq_pingpong -c, ibv_ud_pingpong,
#                                 ibv_xsrq_pingpong, server in B, client in A, exit 0 both
#   perftest                      ib_{write,read,send}_{bw,lat} -a, ib_atomic_{bw,lat},
#                                 VERBS_PT_ITERS (10) iterations per size, exit 0 both
#   misbehaving programs          tests/e2e/verbs_abuse.c: bad lkey, bad rkey, a post on a
#                                 RESET QP, a CQ too small, a peer that disappears, what
#                                 falcon lacks; then both daemons still serve (a pingpong)
# Needs root (namespaces) and Debian's ibverbs-utils and perftest (make deps).
#   VERBS_PT_ITERS=1000 tests/e2e/test_verbs.sh
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
e2e_init e2e-verbs
ITERS=${VERBS_PT_ITERS:-10}

e2e_need_root "network namespaces"
for t in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_xsrq_pingpong ib_write_bw ib_atomic_lat; do
	command -v $t >/dev/null ||
		{ e2e_fail "$t is not installed (make deps: ibverbs-utils, perftest)"; e2e_done; exit 1; }
done
RUN=$BUILD/verbs/falcon-run
[ -x "$RUN" ] && [ -f "$BUILD/verbs/libibverbs.so.1" ] ||
	{ e2e_fail "no $RUN or $BUILD/verbs/libibverbs.so.1"; e2e_done; exit 1; }

. scripts/netns-pair.sh
NP_NS_A=fvb-a-$$ NP_NS_B=fvb-b-$$ NP_IF_A=fva$$ NP_IF_B=fvb$$
. scripts/two-daemons.sh
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fverbs.XXXXXX")
cleanup() { td_stop; np_down; rm -rf "$TMP"; }
trap cleanup EXIT
if ! np_up; then
	e2e_fail "create namespaces and veth"
	e2e_done
	exit 1
fi
TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B
# perftest's latency programs spin on memory, never giving the CPU away; on a host with
# fewer cores than spinners the daemons wait for the scheduler's tick (ms per round
# trip, ib_write_lat -a past 120 s with the host loaded): the daemons run real-time, as
# falcon-run(1) advises for such programs
td_start "--sched fifo:10" "--sched fifo:10" || { e2e_fail "daemons start"; e2e_done; exit 1; }

# a program over falcon in namespace A / B; the other daemon's CM port through -P (the
# two daemons listen on different ports). A sanitizer build of the library (make SAN=1)
# loads into the (uninstrumented) programs only with its runtimes preloaded.
PEERS=(-P "$TD_CM_A" -P "$TD_CM_B")
SAN_ENV=()
if ldd "$BUILD/verbs/libibverbs.so.1" | grep -q libasan; then
	SAN_ENV=("LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
		 ASAN_OPTIONS=detect_leaks=0)
fi
in_a() { ip netns exec "$NP_NS_A" env "${SAN_ENV[@]}" "$RUN" -S "$TD_SOCK_A" "${PEERS[@]}" "$@"; }
in_b() { ip netns exec "$NP_NS_B" env "${SAN_ENV[@]}" "$RUN" -S "$TD_SOCK_B" "${PEERS[@]}" "$@"; }
# until the server in B listens on TCP port $1 (rdma-core's examples and perftest, 18515)
wait_listen() {
	for _ in $(seq 100); do
		ip netns exec "$NP_NS_B" ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# server (B) and client (A) of one program: both must exit 0 within 120 s; their output
# (without the address lines) shown. perftest samples the CPU clock against the time of
# day and gives up ("Correlation coefficient r^2 ... < 0.9", no report, exit 1) when the
# host is too busy for the sample to be regular: that run, and only that, is tried again
# (twice at most).
pair() {
	local try
	for try in 1 2 3; do
		pair_once "$@" && return 0
		grep -q 'Correlation coefficient' "$TMP/$1.a" "$TMP/$1.b" || return 1
		echo "perftest could not sample the CPU clock on this busy host: again ($try)"
	done
	return 1
}
pair_once() { # name args...
	local name=$1; shift
	in_b timeout 120 "$@" >"$TMP/$name.b" 2>&1 &
	local pb=$!
	wait_listen 18515
	in_a timeout 120 "$@" "$NP_ADDR_B" >"$TMP/$name.a" 2>&1
	local ra=$?
	wait $pb
	local rb=$?
	grep -v -E 'address|GID|^ *$' "$TMP/$name.a" | tail -n "${PAIR_TAIL:-4}"
	[ $ra = 0 ] && [ $rb = 0 ] && return 0
	echo "client exit $ra, server exit $rb"; cat "$TMP/$name.a" "$TMP/$name.b"
	return 1
}

# ---- the device ----
in_a ibv_devices >"$TMP/devices" 2>&1
cat "$TMP/devices"
grep -q '^ *falcon0 ' "$TMP/devices" && e2e_ok "ibv_devices lists falcon0" ||
	e2e_fail "ibv_devices does not list falcon0"
in_a ibv_devinfo -v >"$TMP/devinfo" 2>&1
grep -E 'hca_id|max_qp:|max_cqe|max_mr:|max_sge:|max_srq_wr|atomic_cap|state:|link_layer|active_mtu|GID\[' "$TMP/devinfo"
grep -q 'hca_id:.*falcon0' "$TMP/devinfo" && grep -q 'PORT_ACTIVE' "$TMP/devinfo" &&
	grep -q 'link_layer:.*Ethernet' "$TMP/devinfo" && grep -q 'max_qp:[[:space:]]*[1-9]' "$TMP/devinfo" &&
	grep -q "GID\[ *0\]:.*::ffff:$NP_ADDR_A, RoCE v2" "$TMP/devinfo" &&
	e2e_ok "ibv_devinfo -v: falcon0 active, Ethernet, its limits, GID 0 = ::ffff:$NP_ADDR_A (RoCE v2)" ||
	{ cat "$TMP/devinfo"; e2e_fail "ibv_devinfo -v"; }

# ---- rdma-core's examples (-g 0: RoCE needs the GID) ----
e2e_check "ibv_rc_pingpong -c (data checked), 500 round trips" pair rc ibv_rc_pingpong -g 0 -c -n 500
e2e_check "ibv_srq_pingpong -c (data checked), 16 QPs on one SRQ" pair srq ibv_srq_pingpong -g 0 -c -n 500
e2e_check "ibv_ud_pingpong (2 KiB datagrams through AHs)" pair ud ibv_ud_pingpong -g 0 -n 500
e2e_check "ibv_xsrq_pingpong (XRC domains and SRQs)" pair xsrq ibv_xsrq_pingpong -g 0 -n 500

# ---- perftest, all sizes (-a) where it has it ----
for t in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
	PAIR_TAIL=30 e2e_check "$t -a -n $ITERS" pair "$t" "$t" -d falcon0 -x 0 -a -n "$ITERS"
done
for t in ib_atomic_bw ib_atomic_lat; do
	e2e_check "$t -n $ITERS" pair "$t" "$t" -d falcon0 -x 0 -n "$ITERS"
done

# ---- falcon-perf under perftest's flags, and beside perftest ----
PERF=$BUILD/bench/falcon-perf
fperf() { # a|b args...: falcon-perf on side a / b (its own socket flag, the CM address)
	local ns=$NP_NS_A sock=$TD_SOCK_A
	[ "$1" = b ] && ns=$NP_NS_B sock=$TD_SOCK_B
	shift
	ip netns exec "$ns" timeout 120 "$PERF" "$1" --socket "$sock" "${@:2}"
}
fpair() { # name test args...: server in B, client in A to B's CM address
	local name=$1 t=$2; shift 2
	fperf b "$t" -d falcon0 -p 18600 >"$TMP/$name.fb" 2>&1 &
	local pb=$!
	for _ in $(seq 100); do grep -q 'server on service' "$TMP/$name.fb" && break; sleep 0.1; done
	fperf a "$t" -d falcon0 -p 18600 "$@" "$TD_CM_B" >"$TMP/$name.fa" 2>&1
	local ra=$?
	wait $pb
	local rb=$?
	[ $ra = 0 ] && [ $rb = 0 ] && return 0
	echo "client exit $ra, server exit $rb"; cat "$TMP/$name.fa" "$TMP/$name.fb"
	return 1
}
e2e_check "falcon-perf ib_write_bw -d falcon0 -s 4096 -n 500 -t 64 -m 4096 -F --report_gbits" \
	fpair fwbw ib_write_bw -s 4096 -n 500 -t 64 -m 4096 -F --report_gbits
grep -q 'BW average\[Gb/sec\]' "$TMP/fwbw.fa" && grep -q '^ 4096 *500 ' "$TMP/fwbw.fa" &&
	e2e_ok "falcon-perf prints perftest's columns" || { cat "$TMP/fwbw.fa"; e2e_fail "falcon-perf's columns"; }
e2e_check "falcon-perf ib_send_lat -a -n 20 (perftest's latency columns)" fpair fslat ib_send_lat -a -n 20
grep -q 't_typical\[usec\]' "$TMP/fslat.fa" && e2e_ok "falcon-perf latency columns" ||
	e2e_fail "falcon-perf latency columns"
# VERBS_COMPARE=1: perftest and falcon-perf for the same sizes, one after the other
if [ -n "${VERBS_COMPARE:-}" ]; then
	for t in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
		for sz in 8 4096 65536 1048576; do
			n=2000; [ $sz -ge 1048576 ] && n=200
			case $t in *_lat) [ $sz -ge 65536 ] && n=200 ;; esac
			pair "cmp-$t-$sz" "$t" -d falcon0 -x 0 -s $sz -n $n >/dev/null 2>&1
			pt=$(grep -E "^ $sz +" "$TMP/cmp-$t-$sz.a" | head -1)
			fpair "cmpf-$t-$sz" "$t" -s $sz -n $n >/dev/null 2>&1
			fp=$(grep -E "^ $sz +" "$TMP/cmpf-$t-$sz.fa" | head -1)
			echo "$t $sz perftest: $pt"
			echo "$t $sz falcon-perf: $fp"
		done
	done
fi

# ---- misbehaving programs get verbs' errors; the daemons keep serving ----
e2e_check "verbs errors: bad lkey, bad rkey, RESET QP, CQ too small, peer gone, no MW/ODP/raw; a UD answer by ibv_create_ah_from_wc" \
	ip netns exec "$NP_NS_A" "$RUN" "${PEERS[@]}" "$E2E_BIN/verbs_abuse" "$TD_SOCK_A" "$TD_SOCK_B"
kill -0 "$TD_PID_A" && kill -0 "$TD_PID_B" && e2e_ok "both falcond still run" ||
	e2e_fail "a falcond died"
e2e_check "and serve: ibv_rc_pingpong -c after the abuse" pair rc2 ibv_rc_pingpong -g 0 -c -n 100
e2e_done
