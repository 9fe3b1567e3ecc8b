#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Two falcond joined through a router namespace (scripts/netns-router.sh: A - R - B) whose
# XDP program (tests/bpf/falcon_router.bpf.c, steered by router_ctl) drops and duplicates
# Falcon packets, so the chaos comes from the network, not from the daemons' fault knobs:
#   - E2E_ROUTER_MIB MiB (default 32; make e2e-chaos-xdp: 1024) of WRITEs and READs,
#     verified, under router drop 5 % + duplicate 1 % of the data packets both ways; the
#     router's counters show the drops and duplicates at about those rates;
#   - exactly N duplicates injected (router_ctl's budget) are read back from the router's
#     counters, and B's falcond received exactly N datagrams more than A's sent; exactly N
#     drops likewise, B receiving N fewer (and the transfer verified all the same);
#   - with falcond --io xdp (only when this build has it): the same chaos run over AF_XDP
#     (the hosts' XDP programs answering what duplicates they see), then B's XDP answers
#     the N injected duplicates (its duplicate counter rises by N) and falcond's receive
#     counter does not.
# Needs root (namespaces, XDP); says so and counts nothing without. Every transfer is
# bounded in time (timeout: 120 s, the long one 1 s per MiB + 120 s).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
e2e_init e2e-router
ROUTER_MIB=${E2E_ROUTER_MIB:-32}
DUP_N=${E2E_ROUTER_DUP_N:-100}
# consecutive drops: every packet to B, retransmissions too, until the budget is spent, so
# a budget beyond the first burst starves one packet past its retry count (RETRY_EXC_ERR)
DROP_N=${E2E_ROUTER_DROP_N:-10}
SEED=${E2E_ROUTER_SEED:-4242}
RCTL=$BUILD/tests/e2e/router_ctl

e2e_need_root "network namespaces and XDP"

. scripts/netns-router.sh
. scripts/two-daemons.sh
BPFFS=$(mktemp -d "${TMPDIR:-/tmp}/fxr-bpffs.XXXXXX")
PIN=$BPFFS/router
cleanup() {
	td_stop
	"$RCTL" detach "$PIN" 2>/dev/null
	mountpoint -q "$BPFFS" && umount "$BPFFS"
	rmdir "$BPFFS" 2>/dev/null
	nr_down
}
trap cleanup EXIT
# a bpffs of our own: the pins never meet another run's, and go with the unmount
if ! mount -t bpf fxr-bpf "$BPFFS" || ! nr_up; then
	e2e_fail "create bpffs, namespaces, veths and routes"
	e2e_done
	exit 1
fi
echo "router: $NR_NS_A ($NR_ADDR_A) - $NR_NS_R - $NR_NS_B ($NR_ADDR_B), MTU 9000, seed $SEED"
if ! "$RCTL" attach "$PIN" "$NR_NS_R" "$NR_IF_RA" "$NR_IF_RB" seed="$SEED"; then
	e2e_fail "router XDP program attached (native) to both of R's ports"
	e2e_done
	exit 1
fi
e2e_ok "router XDP program attached (native) to both of R's ports"

num() { grep -o "\"$1\":[0-9]*" <<<"$2" | head -1 | cut -d: -f2; }
rget() { "$RCTL" get "$PIN" "$1"; }
# a counter of a daemon (falconctl stats -j): daemon key
dstat() { num "$2" "$("$FALCONCTL" -j -r "$TD_DIR/$1" stats)"; }
# UDP datagrams B's kernel dropped for a full socket buffer (namespace-wide)
rcvbuf_errs() {
	ip netns exec "$NR_NS_B" awk '/^Udp:/ { if (h) { print $6; exit } h = 1 }' /proc/net/snmp
}
# until daemon counters stop moving (the transfer's last ACKs): bounded, 5 s
settle() {
	local prev= cur
	for _ in $(seq 50); do
		cur="$(dstat a tx_frames) $(dstat b rx_frames) $(dstat b tx_frames) $(dstat a rx_frames)"
		[ "$cur" = "$prev" ] && return 0
		prev=$cur
		sleep 0.1
	done
	return 1
}

TD_NS_A=$NR_NS_A TD_NS_B=$NR_NS_B TD_ADDR_A=$NR_ADDR_A TD_ADDR_B=$NR_ADDR_B
# MTU 2048: the router duplicates frames of up to FC_RTR_DUP_MAX_BYTES (one page)
DARGS="--security none --mtu 2048 --rue thread"
if ! td_start "$DARGS" "$DARGS"; then
	e2e_fail "daemons start"
	e2e_done
	exit 1
fi
# the data ports: B's (A -> B) and A's (B -> A); the CM ports are left alone
PORT_B=$((TD_BASE + 2)) PORT_A=$TD_BASE

# --- chaos: drop 5 %, duplicate 1 % of the data packets both ways ---
"$RCTL" set "$PIN" port=$PORT_B port2=$PORT_A drop_ppm=50000 dup_ppm=10000
e2e_check "router chaos: $ROUTER_MIB MiB WRITE + READ verified through R dropping 5 % and duplicating 1 %" \
	timeout $((ROUTER_MIB + 120)) "$E2E_BIN/e2e_client" chaos "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" "$ROUTER_MIB"
"$RCTL" set "$PIN" drop_ppm=0 dup_ppm=0
"$RCTL" stats "$PIN"
tgt=$(rget target) drp=$(rget drop_rate) dup=$(rget dup) fail=$(rget dup_fail_pass)
# the seeded rates, within wide bounds (thousands of packets: 5 % +- 2, 1 % +- 0.6)
if [ "$tgt" -gt 2000 ] && [ $((drp * 1000 / tgt)) -ge 30 ] && [ $((drp * 1000 / tgt)) -le 70 ]; then
	e2e_ok "the router dropped $drp of $tgt data packets ($((drp * 1000 / tgt)) per mille)"
else
	e2e_fail "router drops: $drp of $tgt data packets, not about 5 %"
fi
if [ "$tgt" -gt 2000 ] && [ $((dup * 1000 / tgt)) -ge 4 ] && [ $((dup * 1000 / tgt)) -le 16 ] &&
	[ "$fail" = 0 ]; then
	e2e_ok "the router duplicated $dup of $tgt data packets ($((dup * 1000 / tgt)) per mille), none refused"
else
	e2e_fail "router duplicates: $dup of $tgt data packets ($fail could not be duplicated), not about 1 %"
fi
st_b=$("$FALCONCTL" -j -r "$TD_DIR/b" stats)
echo "B: rx_frames $(num rx_frames "$st_b"), tx_frames $(num tx_frames "$st_b")"
[ "$(rget pass_other)" -gt 0 ] && e2e_ok "everything else (CM, ARP) passed to the kernel's forwarding" ||
	e2e_fail "no packet passed untouched"

# --- exactly N duplicates, A -> B only, read back ---
"$RCTL" set "$PIN" port2=0
settle || echo "(daemon counters still moving after 5 s)"
dup0=$(rget dup) dupb0=$(rget dup_budget) tgt0=$(rget target)
a_tx0=$(dstat a tx_frames) b_rx0=$(dstat b rx_frames) rcv0=$(rcvbuf_errs)
"$RCTL" set "$PIN" dup_budget="$DUP_N"
e2e_check "a transfer through R while it duplicates the next $DUP_N data packets to B" \
	timeout 120 "$E2E_BIN/e2e_client" chaos "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 4
e2e_check "the router spent its budget of $DUP_N duplicates" "$RCTL" wait "$PIN" dup_budget 10000
settle || echo "(daemon counters still moving after 5 s)"
d_dup=$(( $(rget dup) - dup0 )) d_dupb=$(( $(rget dup_budget) - dupb0 )) d_tgt=$(( $(rget target) - tgt0 ))
d_atx=$(( $(dstat a tx_frames) - a_tx0 )) d_brx=$(( $(dstat b rx_frames) - b_rx0 ))
d_rcv=$(( $(rcvbuf_errs) - rcv0 ))
echo "router: $d_tgt data packets to B, $d_dup duplicated ($d_dupb from the budget); A sent $d_atx frames, B received $d_brx, B's kernel dropped $d_rcv for a full buffer"
[ "$d_dup" = "$DUP_N" ] && [ "$d_dupb" = "$DUP_N" ] &&
	e2e_ok "exactly $DUP_N duplicates injected, read back from the router's counters" ||
	e2e_fail "injected $d_dup duplicates ($d_dupb by budget), asked for $DUP_N"
[ $((d_brx + d_rcv - d_atx)) = "$DUP_N" ] &&
	e2e_ok "B's falcond received exactly $DUP_N datagrams more than A's sent" ||
	e2e_fail "B received $d_brx (+ $d_rcv dropped by its kernel), A sent $d_atx: $((d_brx + d_rcv - d_atx)) extra, not $DUP_N"

# --- exactly N drops, A -> B only: Falcon recovers them, B misses exactly N of A's ---
settle || echo "(daemon counters still moving after 5 s)"
drb0=$(rget drop_budget)
a_tx0=$(dstat a tx_frames) b_rx0=$(dstat b rx_frames) rcv0=$(rcvbuf_errs)
"$RCTL" set "$PIN" drop_budget="$DROP_N"
e2e_check "a transfer through R while it drops the next $DROP_N data packets to B" \
	timeout 120 "$E2E_BIN/e2e_client" chaos "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 4
e2e_check "the router spent its budget of $DROP_N drops" "$RCTL" wait "$PIN" drop_budget 10000
settle || echo "(daemon counters still moving after 5 s)"
d_drb=$(( $(rget drop_budget) - drb0 ))
d_atx=$(( $(dstat a tx_frames) - a_tx0 )) d_brx=$(( $(dstat b rx_frames) - b_rx0 ))
d_rcv=$(( $(rcvbuf_errs) - rcv0 ))
echo "router: dropped $d_drb by budget; A sent $d_atx frames, B received $d_brx, B's kernel dropped $d_rcv"
[ "$d_drb" = "$DROP_N" ] && [ $((d_atx - d_brx - d_rcv)) = "$DROP_N" ] &&
	e2e_ok "exactly $DROP_N packets dropped at the router: B received $DROP_N fewer than A sent" ||
	e2e_fail "router dropped $d_drb by budget, A sent $d_atx, B received $d_brx (+ $d_rcv): not $DROP_N missing"
td_stop

# --- with falcond --io xdp: B's XDP answers the duplicates, falcond never sees them ---
if "$FALCOND" --help 2>&1 | grep -q -- '--io .*xdp'; then
	XARGS="$DARGS --io xdp"
	# MTU 3000 on both links: a single-buffer XDP program attaches to a veth only while
	# the veth's peer has at most about 3500 bytes of MTU (falcond falls back to udp
	# above); the frames of --mtu 2048 fit
	ip -n "$NR_NS_A" link set "$NR_IF_A" mtu 3000 && ip -n "$NR_NS_R" link set "$NR_IF_RA" mtu 3000 &&
	ip -n "$NR_NS_R" link set "$NR_IF_RB" mtu 3000 && ip -n "$NR_NS_B" link set "$NR_IF_B" mtu 3000
	# the exact count first, with a long smallest RTO: a daemon stalled on a loaded host
	# past the default 2 ms RTO would retransmit, and B's XDP would answer that copy too
	# (it is a duplicate as well), so its count would no longer be the router's alone
	if ! td_start "$XARGS --min-rto-us 200000" "$XARGS --min-rto-us 200000"; then
		e2e_fail "daemons start with --io xdp"
	elif ! "$FALCONCTL" -j -r "$TD_DIR/b" xdp | grep -q '"program":{'; then
		e2e_fail "--io xdp: B's falcond runs XDP (it says: $(grep -m1 -i xdp "$TD_DIR/b.log"))"
		td_stop
	else
		e2e_ok "--io xdp: B's falcond runs its XDP program"
		xdp_dup() { # B's (or $1's) XDP duplicate counter (falconctl xdp -j)
			num dup_acked "$("$FALCONCTL" -j -r "$TD_DIR/${1:-b}" xdp)"
		}
		"$RCTL" set "$PIN" port=$((TD_BASE + 2)) port2=0 drop_ppm=0 dup_ppm=0
		e2e_check "--io xdp: a transfer through R" \
			timeout 120 "$E2E_BIN/e2e_client" chaos "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 4
		settle
		x0=$(xdp_dup) a_tx0=$(dstat a tx_frames) b_rx0=$(dstat b rx_frames) dup0=$(rget dup)
		ax0=$(xdp_dup a)
		"$RCTL" set "$PIN" dup_budget="$DUP_N"
		e2e_check "--io xdp: a transfer while R duplicates $DUP_N data packets to B" \
			timeout 120 "$E2E_BIN/e2e_client" chaos "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 4
		"$RCTL" wait "$PIN" dup_budget 10000
		settle
		d_x=$(( $(xdp_dup) - x0 )) d_dup=$(( $(rget dup) - dup0 ))
		d_atx=$(( $(dstat a tx_frames) - a_tx0 )) d_brx=$(( $(dstat b rx_frames) - b_rx0 ))
		# what reaches B's falcond comes from A's falcond or is an ACK A's XDP answered
		# a duplicate of B's with
		d_ax=$(( $(xdp_dup a) - ax0 ))
		echo "--io xdp: router duplicated $d_dup; B's XDP answered $d_x duplicates; A sent $d_atx (+ $d_ax ACKs from its XDP), B's falcond received $d_brx"
		[ "$d_dup" = "$DUP_N" ] && [ "$d_x" = "$DUP_N" ] &&
			e2e_ok "--io xdp: B's XDP duplicate counter rose by exactly $DUP_N" ||
			e2e_fail "--io xdp: B's XDP duplicate counter rose by $d_x, router sent $d_dup, asked $DUP_N"
		[ "$d_brx" = "$(( d_atx + d_ax ))" ] &&
			e2e_ok "--io xdp: B's falcond received no duplicate (rx = A's tx)" ||
			e2e_fail "--io xdp: B's falcond received $d_brx, A sent $d_atx + $d_ax"
		# the chaos run in XDP mode, with the default RTO: R drops 5 % and duplicates 1 %
		# both ways; the hosts' XDP programs answer the duplicates they see
		td_stop
		td_start "$XARGS" "$XARGS" || e2e_fail "daemons restart with --io xdp"
		x0=$(xdp_dup)
		"$RCTL" set "$PIN" port=$((TD_BASE + 2)) port2=$TD_BASE drop_ppm=50000 dup_ppm=10000
		e2e_check "--io xdp: router chaos: $ROUTER_MIB MiB WRITE + READ verified through R dropping 5 % and duplicating 1 %" \
			timeout $((ROUTER_MIB + 120)) "$E2E_BIN/e2e_client" chaos "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" "$ROUTER_MIB"
		"$RCTL" set "$PIN" port2=0 drop_ppm=0 dup_ppm=0
		"$RCTL" stats "$PIN"
		[ "$(( $(xdp_dup) - x0 ))" -gt 0 ] &&
			e2e_ok "--io xdp: B's XDP answered $(( $(xdp_dup) - x0 )) duplicates during the chaos run" ||
			e2e_fail "--io xdp: B's XDP answered no duplicate during the chaos run"
		td_stop
	fi
else
	echo "e2e-router: NOT RUN: the --io xdp checks (B's XDP answers the router's duplicates," \
		"falcond's receive counter stays): this falcond has no --io xdp"
fi
e2e_done
