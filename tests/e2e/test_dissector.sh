#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Wireshark dissector (tools/wireshark/falcon.lua) against the project's own decoders
# (tools/falcon-dump.c: fc_psp_decode, fc_falcon_decode, fc_rdma_decode), field by field
# (tests/e2e/dissector_compare.py):
#   1. hand-made packets (falcon-dump forge): every Falcon type and many RDMA opcodes
#      well-formed, an encrypted and a GMAC one, and malformed ones (truncated, reserved
#      type, wrong version, inconsistent lengths, ...): each malformed one must raise an
#      expert error in tshark naming the decoder's error code; then DISSECTOR_MUTANTS
#      (5000) copies of the good ones with random bits flipped or cut short (seed printed;
#      DISSECTOR_SEED=N replays): tshark and the decoders must agree on each;
#   2. a capture (pkt_tool, AF_PACKET on lo) of two falcond under security none with
#      transmit faults (reorder, drop, duplicate: EACKs), one short of room for READ
#      answers (pull RNR NACKs), through the opcode matrix, the spec flows (push RNR, CIE:
#      NACKs and Resyncs), UD and XRC QPs, and 3000 WRITEs to a bad R_Key on a CIE QP
#      (tests/e2e/dissector_load.c: a NACK and a Resync each): every field of every packet
#      equal, no expert info, at least DISSECTOR_MIN (1000) packets of each Falcon type;
#   3. a capture under security psp: the clear part (version, CID), the encrypted length
#      and the ICV equal;
#   4. make install puts falcon.lua where tshark looks, and tshark loads it from the
#      personal plugin folder without -X.
# The capture needs root (AF_PACKET); without it only 1 and 4 run (said so).
# DISSECTOR_KEEP=1 keeps the captures and the outputs (the directory is printed).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-dissector
T0=$(date +%s%N)
LUA=tools/wireshark/falcon.lua
DUMP=$BUILD/tools/falcon-dump
PKT=$E2E_BIN/pkt_tool
CMP=tests/e2e/dissector_compare.py
MIN=${DISSECTOR_MIN:-1000}
MUTANTS=${DISSECTOR_MUTANTS:-5000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fws-dissector.XXXXXX")
CAP_PID=

cleanup() {
	[ -n "$CAP_PID" ] && kill -TERM "$CAP_PID" 2>/dev/null && wait "$CAP_PID" 2>/dev/null
	td_stop
	[ -n "${DISSECTOR_KEEP:-}" ] && echo "captures kept in $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

if ! command -v tshark >/dev/null; then
	e2e_fail "tshark is not installed (make deps installs it)"
	e2e_done
	exit 1
fi
echo "$(tshark --version 2>/dev/null | head -1)"

# ---- 1. hand-made packets, and mutants of the good ones ----
SEED=${DISSECTOR_SEED:-$(date +%s)}
if "$DUMP" forge "$WORK/forge.pcap" 7470 "$MUTANTS" "$SEED" >"$WORK/forge.exp" &&
   python3 "$CMP" --lua "$LUA" --dump "$DUMP" --pcap "$WORK/forge.pcap" --port 7470 \
	--expect "$WORK/forge.exp" --allow-chat >"$WORK/forge.out" 2>&1; then
	e2e_ok "hand-made packets: $(grep -c ' falcon[a-z_]*\.error=' "$WORK/forge.exp") malformed ones raise the decoders' error as expert info, $(grep -c ' ok ' "$WORK/forge.exp") good ones decode as the decoders read them"
	e2e_ok "$MUTANTS mutants of them (seed $SEED): the dissector and the decoders agree on each"
else
	e2e_fail "hand-made packets and their mutants (seed $SEED; DISSECTOR_SEED=$SEED replays)"
	cat "$WORK/forge.out"
fi
# the dissector's port preference: on other ports nothing is Falcon
n=$(tshark -n -r "$WORK/forge.pcap" -X lua_script:"$LUA" -o falcon.udp_ports:7471-7480 -Y falcon_psp 2>/dev/null | wc -l)
[ "$n" = 0 ] && e2e_ok "the udp_ports preference moves the dissector off 7470" ||
	e2e_fail "the dissector still decodes port 7470 with udp_ports 7471-7480 ($n frames)"

# ---- 4. installed where tshark finds it ----
stage=$WORK/stage
gdir=$(tshark -G folders 2>/dev/null | awk -F'\t' '/^Global Lua Plugins:/ {print $2}')
if make --no-print-directory -s install-wireshark DESTDIR="$stage" PREFIX=/usr >"$WORK/install.log" 2>&1 &&
   [ -n "$gdir" ] && cmp -s "$LUA" "$stage$gdir/falcon.lua"; then
	e2e_ok "make install puts falcon.lua into tshark's global Lua plugin folder ($gdir)"
else
	e2e_fail "make install-wireshark into $stage$gdir"
	cat "$WORK/install.log"
fi
mkdir -p "$WORK/home/.local/lib/wireshark/plugins"
cp "$LUA" "$WORK/home/.local/lib/wireshark/plugins/"
n=$(HOME=$WORK/home tshark -n -r "$WORK/forge.pcap" -Y falcon.pkt_type 2>/dev/null | wc -l)
[ "$n" -gt 0 ] && e2e_ok "tshark loads it from ~/.local/lib/wireshark/plugins without -X ($n frames)" ||
	e2e_fail "tshark did not load falcon.lua from the personal plugin folder"
# installed and named with -X as well (the README's commands on a host with the package):
# loaded once, no "two protocols with the same description"
out=$(HOME=$WORK/home tshark -n -r "$WORK/forge.pcap" -X lua_script:"$LUA" -Y falcon.pkt_type 2>&1)
[ -n "$out" ] && ! grep -q "Lua: Error\|same description" <<<"$out" &&
	e2e_ok "installed and given with -X lua_script: loaded once, no error" ||
	e2e_fail "installed plus -X lua_script: $(grep -m2 'Lua: Error\|same description' <<<"$out")"

if [ "$(id -u)" != 0 ]; then
	echo "e2e-dissector: the captures SKIPPED: AF_PACKET needs root (run make test as root)"
	e2e_done
	exit $?
fi

# capture NAME PORT: pkt_tool on lo, datagrams to or from PORT (A's and B's traffic with
# B's port), in the background until stop_capture
capture() {
	"$PKT" capture lo "$2" 100000 300000 "$WORK/$1.pcap" >"$WORK/$1.cap.log" 2>&1 &
	CAP_PID=$!
	for _ in $(seq 100); do grep -q capturing "$WORK/$1.cap.log" && return 0; sleep 0.05; done
	return 1
}
stop_capture() {
	sleep 0.2 # the last ACKs
	kill -TERM "$CAP_PID"
	wait "$CAP_PID" 2>/dev/null
	CAP_PID=
}
run() { # DESC CMD...: a workload step; its output shown when it fails
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	[ $rc -eq 0 ] || { e2e_fail "$desc: $*"; echo "$out" | tail -5; }
	return $rc
}

# ---- 2. security none, faults: every packet type ----
FAULT="--fault-tx reorder=15%,drop=2%,dup=1%"
td_start "--security none $FAULT --fault-seed 41" \
	"--security none $FAULT --fault-seed 42 --pending-resp 1 --pull-defer 0 --conn-data-credits 1" ||
	{ e2e_fail "daemons start"; e2e_done; exit 1; }
PORT_B=$((TD_BASE + 2))
if capture none "$PORT_B"; then
	T1=$(date +%s%N)
	ok=1
	# the rare types first: the capture holds at most 100,000 datagrams
	run "CIE WRITEs" "$E2E_BIN/dissector_load" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 5330 3000 || ok=0
	for i in 1 2 3; do
		run pullrnr env E2E_SERVICE=$((5320 + i)) "$E2E_BIN/e2e_client" pullrnr "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 512 || ok=0
	done
	for i in 1 2 3 4 5; do
		run flows env E2E_SERVICE=$((5310 + i)) "$E2E_BIN/e2e_client" flows "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" || ok=0
	done
	run qp_types "$E2E_BIN/qp_types" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_A" "$TD_CM_B" || ok=0
	for i in 1 2 3 4; do
		run matrix env E2E_SERVICE=$((5300 + i)) "$E2E_BIN/e2e_client" matrix "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" || ok=0
	done
	stop_capture
	echo "workload: $(( ($(date +%s%N) - T1) / 1000000 )) ms"
	[ $ok = 1 ] && e2e_ok "the workload ran (3000 CIE WRITEs, pull RNR x3, flows x5, UD/XRC, matrix x4)"
	T2=$(date +%s%N)
	if python3 "$CMP" --trim --lua "$LUA" --dump "$DUMP" --pcap "$WORK/none.pcap" \
		--port "$PORT_B" --port "$TD_BASE" --min "Push Data=$MIN" --min "Pull Request=$MIN" \
		--min "Pull Data=$MIN" --min "BACK=$MIN" --min "EACK=$MIN" --min "NACK=$MIN" \
		--min "Resync=$MIN" >"$WORK/none.out" 2>&1; then
		e2e_ok "security none: every field tshark shows equals the decoders', no expert info ($(grep -o '[0-9]* passed' "$WORK/none.out" | head -1) packets)"
	else
		e2e_fail "security none: dissector against the decoders"
	fi
	cat "$WORK/none.out"
	echo "comparison: $(( ($(date +%s%N) - T2) / 1000000 )) ms"
else
	e2e_fail "capture on lo"
	cat "$WORK/none.cap.log"
fi
td_stop

# ---- 3. security psp: the clear part and the rest ----
td_start "" "" || { e2e_fail "daemons start (psp)"; e2e_done; exit 1; }
PORT_B=$((TD_BASE + 2))
if capture psp "$PORT_B"; then
	run steady env E2E_SERVICE=5340 "$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 1
	stop_capture
	if python3 "$CMP" --trim --allow-chat --lua "$LUA" --dump "$DUMP" --pcap "$WORK/psp.pcap" \
		--port "$PORT_B" --port "$TD_BASE" --min "encrypted=$MIN" >"$WORK/psp.out" 2>&1; then
		e2e_ok "security psp: version, CID, SPI, IV, encrypted length and ICV equal the decoders' ($(grep -o '[0-9]* passed' "$WORK/psp.out" | head -1) packets)"
	else
		e2e_fail "security psp: dissector against the decoders"
	fi
	cat "$WORK/psp.out"
else
	e2e_fail "capture on lo (psp)"
fi
td_stop

echo "e2e-dissector: run time $(( ($(date +%s%N) - T0) / 1000000 )) ms"
e2e_done
