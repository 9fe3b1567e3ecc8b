#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# falcond --io xdp between two network namespaces on a veth pair: the XDP program attached
# in native mode on each end, AF_XDP sockets on their queues.
#   - security none (XDP runs the windows) and security psp (XDP steers): the opcode matrix
#     through e2e_client as test_netns.sh runs it; falcond's io is xdp (not fallen back);
#     falconctl xdp names the program and its redirect counter rises with the traffic;
#     during a live transfer, bpftool reads the pinned maps with their BTF field names: the
#     connection's slot in falcon_conns carries the CID falconctl conn list names, the
#     counters are there; after SIGTERM the pins are gone and the program detached.
#   - security none with transmit faults: XDP answers duplicates itself, the transfer
#     completes.
#   - where XDP cannot attach (loopback; the veth at MTU 9000, above what a single-buffer
#     XDP program takes on veth) --io xdp fails saying why, --io auto falls back to udp
#     with one log line.
# The veth runs at MTU 3500 (NP_MTU): veth refuses a single-buffer XDP program above
# about 3500 bytes. Needs root; says so and counts nothing without.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
e2e_init e2e-xdp

e2e_need_root "network namespaces and XDP"

NP_PREFIX=fxi
NP_MTU=3500
. scripts/netns-pair.sh
TD_NETNS_ENTER=1 # the daemons' pins in the host's bpffs, where bpftool looks
. scripts/two-daemons.sh
PIN=/sys/fs/bpf/falcon
INST_A=fxi-a-$$ INST_B=fxi-b-$$ INST_F=fxi-f-$$
TD_PID_F=
cleanup() {
	[ -n "$TD_PID_F" ] && kill -KILL "$TD_PID_F" 2>/dev/null
	td_stop
	np_down
	rm -rf "${PIN:?}/$INST_A" "${PIN:?}/$INST_B" "${PIN:?}/$INST_F"
}
trap cleanup EXIT
if ! np_up; then
	e2e_fail "create namespaces and veth"
	e2e_done
	exit 1
fi
TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B

num() { grep -o "\"$1\": *[0-9]*" <<<"$2" | head -1 | grep -o '[0-9]*$'; }
xdp_of() { "$FALCONCTL" -j -r "$TD_DIR/$1" xdp; }

# the two daemons with --io xdp and security $1; every check of the first list above
xdp_suite() {
	local sec=$1 j id r1 r2 cid jb dump sp i
	td_start "--io xdp --max-conns 16 --security $sec --instance $INST_A" \
		"--io xdp --max-conns 16 --security $sec --instance $INST_B" ||
		{ e2e_fail "$sec: daemons start"; td_stop; return; }
	for s in a b; do
		"$FALCONCTL" -j -r "$TD_DIR/$s" status | grep -q '"io":"xdp"' &&
			grep -q "data xdp (fxi[ab]$$, native" "$TD_DIR/$s.log" &&
			! grep -q "falling back" "$TD_DIR/$s.log" &&
			e2e_ok "$sec: falcond $s runs io xdp, native (status and log)" ||
			{ e2e_fail "$sec: falcond $s is not on xdp"; cat "$TD_DIR/$s.log"; }
	done
	j=$(xdp_of a)
	id=$(num id "$j")
	r1=$(num redirect "$j")
	[ "${id:-0}" -gt 0 ] && grep -q "\"interface\":\"$NP_IF_A\"" <<<"$j" &&
		grep -q '"mode":"native"' <<<"$j" &&
		bpftool prog show id "$id" | grep -q falcon_xdp_rx &&
		e2e_ok "$sec: falconctl xdp names the program (id $id, $NP_IF_A, native) bpftool shows" ||
		e2e_fail "$sec: falconctl xdp: $j"
	e2e_check "$sec: matrix across the veth through AF_XDP (1 B .. 1 MiB, every opcode)" \
		"$E2E_BIN/e2e_client" matrix "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B"
	r2=$(num redirect "$(xdp_of a)")
	echo "A: redirect $r1 -> $r2"
	[ "${r2:-0}" -gt $((${r1:-0} + 500)) ] && e2e_ok "$sec: the redirect counter rose with the matrix" ||
		e2e_fail "$sec: redirect counter $r1 -> $r2"

	# a live connection: its slot, read by falconctl and by bpftool from the pins
	"$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 4 >"$TD_DIR/steady.log" 2>&1 &
	sp=$!
	cid=
	for i in $(seq 100); do
		cid=$(grep -o '"conns":\[{"slot":[0-9]*,"cid":[0-9]*' <<<"$(xdp_of b)" | grep -o '[0-9]*$')
		[ -n "$cid" ] && break
		sleep 0.05
	done
	jb=$(xdp_of b)
	"$FALCONCTL" -j -r "$TD_DIR/b" conn list | grep -q "\"local_cid\":${cid:-x}," &&
		grep -q '"req_size":64,' <<<"$jb" && grep -q '"data_size":128,' <<<"$jb" &&
		grep -q '"req_own":' <<<"$jb" && grep -q '"data_received":' <<<"$jb" &&
		[ "$(num redirected "$jb")" -gt 0 ] &&
		e2e_ok "$sec: falconctl xdp shows B's connection in its slot (CID $cid as conn list, windows 64/128, redirected $(num redirected "$jb"))" ||
		e2e_fail "$sec: no open slot with the connection's CID ($cid): $jb"
	dump=$(bpftool map dump pinned "$PIN/$INST_B/falcon_conns")
	local missing=""
	for f in cid remote_cid flags spi_sess remote_port replay_margin_ns rx req data base size own slot ack_pending tx_bpsn; do
		grep -q "\"$f\": " <<<"$dump" || missing="$missing $f"
	done
	[ -z "$missing" ] && grep -q "\"cid\": ${cid:-x}," <<<"$dump" &&
		e2e_ok "$sec: bpftool dumps falcon_conns with its BTF field names and the CID $cid" ||
		e2e_fail "$sec: falcon_conns dump (missing:$missing; cid $cid)"
	dump=$(bpftool map dump pinned "$PIN/$INST_B/falcon_conn_counters")
	grep -q '"rx_pkts": ' <<<"$dump" && grep -q '"redirected": [1-9]' <<<"$dump" &&
		e2e_ok "$sec: bpftool dumps falcon_conn_counters: redirected > 0 on a CPU" ||
		e2e_fail "$sec: falcon_conn_counters dump"
	dump=$(bpftool map dump pinned "$PIN/$INST_B/falcon_counters")
	grep -q '"cpu": ' <<<"$dump" && grep -q '"value": [1-9]' <<<"$dump" &&
		[ -e "$PIN/$INST_B/falcon_xsks" ] &&
		e2e_ok "$sec: bpftool dumps falcon_counters per CPU; falcon_xsks is pinned" ||
		e2e_fail "$sec: falcon_counters dump"
	wait "$sp" && e2e_ok "$sec: steady WRITE + READ for 4 s verified" ||
		{ e2e_fail "$sec: steady transfer"; tail -5 "$TD_DIR/steady.log"; }
	if [ "$sec" = psp ]; then
		j=$(xdp_of a)
		[ "$(num encrypted "$j")" -gt 0 ] && [ "$(num marked "$j")" = 0 ] &&
			e2e_ok "psp: XDP saw only ciphertext and marked nothing (steering only)" ||
			e2e_fail "psp: XDP counters: $j"
	else
		[ "$(num marked "$(xdp_of a)")" -gt 0 ] &&
			e2e_ok "none: XDP marked the windows (the fast path ran)" ||
			e2e_fail "none: XDP marked nothing"
	fi

	# SIGTERM: detached, unpinned
	td_stop
	[ ! -e "$PIN/$INST_A" ] && [ ! -e "$PIN/$INST_B" ] &&
		e2e_ok "$sec: after SIGTERM the pins are removed" ||
		{ e2e_fail "$sec: pins left after SIGTERM"; ls -R "$PIN"; }
	! ip -n "$NP_NS_A" link show "$NP_IF_A" | grep -q "prog/xdp" &&
		! bpftool prog show id "$id" >/dev/null 2>&1 &&
		e2e_ok "$sec: after SIGTERM the program is detached and gone" ||
		e2e_fail "$sec: program still attached after SIGTERM"
}

xdp_suite none
xdp_suite psp

# security none with the daemons duplicating and losing on transmit: XDP answers the
# duplicates itself (an ACK by XDP_TX to the peer's data port) and the transfer completes
td_start "--io xdp --max-conns 16 --security none --instance $INST_A --fault-tx drop=1%,dup=3% --fault-seed 31" \
	"--io xdp --max-conns 16 --security none --instance $INST_B --fault-tx drop=1%,dup=3% --fault-seed 32" ||
	e2e_fail "faults: daemons start"
e2e_check "faults: 16 MiB WRITE + READ verified over AF_XDP, drop 1 % dup 3 %" \
	"$E2E_BIN/e2e_client" chaos "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 16
jb=$(xdp_of b)
echo "B: dup_acked $(num dup_acked "$jb"), ack_err $(num ack_err "$jb")"
[ "$(num dup_acked "$jb")" -gt 0 ] && e2e_ok "faults: XDP answered duplicates with ACKs (XDP_TX)" ||
	e2e_fail "faults: XDP answered no duplicate"
td_stop

# where XDP cannot attach: --io xdp is an error saying why (exit status not 0, nothing
# pinned); --io auto falls back to udp with one log line saying why
fallback() { # desc addr expect-in-reason
	local desc=$1 addr=$2 why=$3 n rc
	TD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/falcon.XXXXXX")
	td_ports
	td_one f "$NP_NS_A" "$addr" "$TD_BASE" $((TD_BASE + 1)) --io xdp --security none \
		--instance "$INST_F"
	for _ in $(seq 100); do kill -0 "$TD_PID_F" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$TD_PID_F" 2>/dev/null && kill -TERM "$TD_PID_F"
	wait "$TD_PID_F"
	rc=$?
	grep "XDP cannot be used" "$TD_DIR/f.log"
	[ "$rc" != 0 ] && grep "XDP cannot be used" "$TD_DIR/f.log" | grep -q "$why" &&
		! grep -q "falling back" "$TD_DIR/f.log" && [ ! -e "$PIN/$INST_F" ] &&
		e2e_ok "$desc: --io xdp fails (exit $rc) saying why" ||
		e2e_fail "$desc: --io xdp did not fail with the reason (exit $rc)"
	td_one f "$NP_NS_A" "$addr" "$TD_BASE" $((TD_BASE + 1)) --io auto --security none \
		--instance "$INST_F"
	if td_wait f; then
		n=$(grep -c "XDP not used" "$TD_DIR/f.log")
		grep "XDP not used" "$TD_DIR/f.log"
		[ "$n" = 1 ] && grep -q "falling back to udp" "$TD_DIR/f.log" &&
			grep "XDP not used" "$TD_DIR/f.log" | grep -q "$why" &&
			"$FALCONCTL" -j -r "$TD_DIR/f" status | grep -q '"io":"udp"' &&
			! "$FALCONCTL" -r "$TD_DIR/f" xdp >/dev/null 2>&1 &&
			[ ! -e "$PIN/$INST_F" ] &&
			e2e_ok "$desc: --io auto falls back to udp, one log line saying why" ||
			e2e_fail "$desc: no clean fallback"
	else
		e2e_fail "$desc: falcond did not start"
	fi
	kill -TERM "$TD_PID_F"
	wait "$TD_PID_F"
	TD_PID_F=
	rm -rf "$TD_DIR"
}
fallback "loopback 127.0.0.1 in a namespace" 127.0.0.1 "no native XDP"
ip -n "$NP_NS_A" link set "$NP_IF_A" mtu 9000 && ip -n "$NP_NS_B" link set "$NP_IF_B" mtu 9000
fallback "the veth at MTU 9000" "$NP_ADDR_A" "MTU 9000"
e2e_done
