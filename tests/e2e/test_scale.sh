#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Issue 21, "hidden limits" (no root: two falcond on 127.0.0.1): the limits are options,
# checked at start, shown by falconctl status and honoured (one past a daemon limit is
# ENOSPC, one past a client's quota EDQUOT, each logged naming its option); 2,000 RC QPs
# connect, and 8 B WRITEs round robin over them at depth 64 keep up with one QP (the long
# form, 10,000 and 65,536 QPs, is make bench-qps).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-scale
LIMITS=$E2E_BIN/limits
MANY=$BUILD/bench/many_qps
# round robin over N QPs may be this much slower than one QP (measured 2.3x to 4.8x at
# 2,000 on the shared 2-CPU host; an O(N) step per WRITE would be far past 8), and one
# QP no slower than 5 times the round robin (a daemon that looks into every ring each
# round starves the one busy QP: it ran at 7 WRITEs/s; a lone QP is the more sensitive to
# a loaded host, its window the only one, and was seen at 0.65x)
SCALE_N=${SCALE_N:-2000}
MAX_SLOWDOWN=${SCALE_MAX_SLOWDOWN:-8}
QP_BYTES_MAX=24000

# ---- the options, checked before anything starts ----
bad_opt() { # desc expected-text args...
	local desc=$1 want=$2; shift 2
	local out rc
	out=$("$FALCOND" "$@" 2>&1)
	rc=$?
	if [ $rc -eq 2 ] && grep -qF -- "$want" <<<"$out"; then
		e2e_ok "refused at start: $desc ($out)"
	else
		e2e_fail "$desc: exit $rc, '$out' (wanted exit 2 naming '$want')"
	fi
}
bad_opt "a client quota above its daemon limit" "--client-max-qps 200 is above --max-qps 100" \
	--security none --max-qps 100 --client-max-qps 200
bad_opt "--max-qps past the largest table" "(1 .. 65536)" --security none --max-qps 65537
bad_opt "--max-mrs 0" "(1 .. 65536)" --security none --max-mrs 0
bad_opt "--client-max-objects past the handles' room" "(1 .. 262144)" --security none \
	--client-max-objects 300000
CONF=$(mktemp "${TMPDIR:-/tmp}/falcond-scale.XXXXXX")
printf 'max-qps 100\nclient-max-mrs 200\n' >"$CONF"
bad_opt "the same from the config file" "--client-max-mrs 200 is above --max-mrs" \
	--security none --config "$CONF" --max-mrs 150
rm -f "$CONF"

# ---- the limits honoured ----
# A: 20 QPs, 12 of them per client, 6 CQs, 10 MRs per client, 3 connections
A_OPTS="--security none --max-qps 20 --client-max-qps 12 --max-cqs 6 --client-max-mrs 10 --max-conns 3"
td_start "$A_OPTS" "--security none" || { e2e_fail "daemons start"; e2e_done; exit 1; }
status=$("$FALCONCTL" -j -r "$TD_DIR/a" status)
for kv in '"max_qps":20' '"client_max_qps":12' '"max_cqs":6' '"client_max_mrs":10' '"max_conns":3' \
	'"max_mrs":16384'; do
	grep -qF "$kv" <<<"$status" && e2e_ok "falconctl status -j shows $kv" ||
		e2e_fail "falconctl status -j lacks $kv: $status"
done
"$FALCONCTL" -r "$TD_DIR/a" status | grep -q "max_qps: 20" && e2e_ok "falconctl status shows the limits" ||
	e2e_fail "falconctl status (text) lacks max_qps"

# hold: limits in the background, holding its objects until it is killed
hold() { # name args...
	local name=$1; shift
	"$LIMITS" "$@" >"$TD_DIR/$name.out" 2>&1 &
	eval "HOLD_${name}=$!"
	for _ in $(seq 200); do grep -q "holding\|listening" "$TD_DIR/$name.out" && break
		kill -0 "$(eval echo \$HOLD_$name)" 2>/dev/null || break; sleep 0.05; done
}
release() { # name
	local pidv="HOLD_$1"
	kill "${!pidv}" 2>/dev/null
	wait "${!pidv}" 2>/dev/null
}
check_hold() { # name desc
	if grep -q "holding" "$TD_DIR/$1.out"; then e2e_ok "$2 ($(head -1 "$TD_DIR/$1.out"))"
	else e2e_fail "$2: $(cat "$TD_DIR/$1.out")"; fi
}
hold c1 "$TD_SOCK_A" qp 12 EDQUOT
check_hold c1 "client 1: 12 QPs, the 13th refused EDQUOT (--client-max-qps 12)"
hold c2 "$TD_SOCK_A" qp 8 ENOSPC
check_hold c2 "client 2: 8 QPs, the 21st of the daemon refused ENOSPC (--max-qps 20)"
grep -q '"qps":20' <<<"$("$FALCONCTL" -j -r "$TD_DIR/a" status)" && e2e_ok "status: 20 QPs in use" ||
	e2e_fail "status does not count 20 QPs"
release c1; release c2
sleep 0.2
grep -q -- "a qp refused: the client holds 12, its limit (--client-max-qps 12)" "$TD_DIR/a.log" &&
	e2e_ok "the log names the client quota" || e2e_fail "no log line naming --client-max-qps 12"
grep -q -- "a qp refused: the daemon holds 20, its limit (--max-qps 20)" "$TD_DIR/a.log" &&
	e2e_ok "the log names the daemon limit" || e2e_fail "no log line naming --max-qps 20"
# a CQ of the setup, 5 more, then the daemon's table of 6 is full
hold c3 "$TD_SOCK_A" cq 5 ENOSPC
check_hold c3 "CQs: the 7th refused ENOSPC (--max-cqs 6)"
release c3
hold c4 "$TD_SOCK_A" mr 10 EDQUOT
check_hold c4 "MRs: the 11th of a client refused EDQUOT (--client-max-mrs 10)"
release c4
# connections: B accepts, A has 3
hold l1 "$TD_SOCK_B" listen 3
hold c5 "$TD_SOCK_A" conn 3 ENOSPC "$TD_CM_B"
check_hold c5 "RC connections: the 4th refused ENOSPC (--max-conns 3)"
release c5; release l1
grep -q -- "its limit (--max-conns 3)" "$TD_DIR/a.log" && e2e_ok "the log names --max-conns" ||
	e2e_fail "no log line naming --max-conns 3"
td_stop

# ---- many QPs: setup, memory, the round robin against one QP ----
td_start "--security none --max-qps $((SCALE_N + 1))" "--security none --max-qps $((SCALE_N + 1))" ||
	{ e2e_fail "daemons start"; e2e_done; exit 1; }
out=$("$MANY" -n "$SCALE_N" -s 2 -p "$TD_PID_A,$TD_PID_B" --max-slowdown "$MAX_SLOWDOWN" \
	--min-slowdown 0.2 --min-rate 5000 "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] && e2e_ok "$SCALE_N QPs: round robin within ${MAX_SLOWDOWN}x of one QP, one QP not starved" ||
	e2e_fail "many_qps -n $SCALE_N (exit $rc)"
# memory by the sizes asked: a QP of 4 send and 1 receive WRs, 4 in flight, about 15 KB
# of each daemon (65,536 of them in about 1 GiB); a QP sized for the maximum was 5.3 MB
for who in A B; do
	per=$(awk -v w="$who" '$1 == "falcond" && $2 == w {for (i = 1; i <= NF; i++) if ($i == "bytes") print $(i - 1)}' <<<"$out")
	[ -n "$per" ] && [ "$per" -le "$QP_BYTES_MAX" ] &&
		e2e_ok "falcond $who: $per bytes resident per QP (bound $QP_BYTES_MAX)" ||
		e2e_fail "falcond $who: '${per:-?}' bytes per QP (bound $QP_BYTES_MAX)"
done
db=$("$FALCONCTL" -j -r "$TD_DIR/a" stats | grep -o '"arena_doorbells":[0-9]*' | cut -d: -f2)
[ "${db:-0}" -gt 0 ] && e2e_ok "the daemon looked into QPs by their doorbell bits ($db times)" ||
	e2e_fail "no arena doorbells counted"
# the daemons release the last client's QPs when they notice it has gone, and its
# connections once the peer has answered their close (falconctl status: limits.conns)
for _ in $(seq 100); do
	grep -q '"qps":0,.*"conns":0,' <<<"$("$FALCONCTL" -j -r "$TD_DIR/b" status)" &&
		grep -q '"qps":0,.*"conns":0,' <<<"$("$FALCONCTL" -j -r "$TD_DIR/a" status)" && break
	sleep 0.1
done
# a client without an arena (FALCON_ARENA=0, as an older library): a memfd per QP
out=$(FALCON_ARENA=0 "$MANY" -n 300 -s 1 -S 18601 --min-slowdown 0.2 --min-rate 2000 \
	"$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 2>&1)
rc=$?
echo "FALCON_ARENA=0: $out"
[ $rc -eq 0 ] && e2e_ok "without an arena: 300 QPs with rings of their own" ||
	e2e_fail "FALCON_ARENA=0 many_qps (exit $rc)"
td_stop
e2e_done
