#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Errors that say why, and UD answers from a completion (issue 21, items 4 and 7). Two
# falcond on 127.0.0.1 (scripts/two-daemons.sh, no root) and a few more beside them;
# tests/e2e/why_client.c makes each call and prints its errno, its time and
# falcon_error_detail(). Each refusal must come back as its own errno within REFUSE_MS,
# with the peer named in the detail:
#   psp   (A, B; C whose key B does not allow; D with a wrong key for B; E in security
#         none; G with keys for E, for a dead port and for a silent one; H and I with A's
#         key and another cipher / a required feature)
#         not allowed EACCES, wrong key EKEYREJECTED, none -> psp and psp -> none and
#         cipher EPROTONOSUPPORT, feature EPROTO, no listener ECONNREFUSED, full backlog EAGAIN (the request
#         held meanwhile is not silence: it fails at its own timeout, not at the silence
#         bound), ICMP port unreachable EHOSTUNREACH, silence ETIMEDOUT within
#         SILENT_MIN_MS .. SILENT_MAX_MS; UD ping-pong where B answers A from the
#         completion alone (falcon_create_ah_from_wc); a flood of refused connects leaves
#         B's log with one line and one "(repeated N times ...)"
#   none  (A, B with --max-conns 1; F requiring a feature nobody has)
#         peer table full EUSERS, feature mismatch EPROTO, dead port EHOSTUNREACH, silence
#         ETIMEDOUT
# and: falcon_open on a missing socket names the path; a config file with a bad value
# names FILE:LINE, and a line with two peers is refused.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-errors
W=$E2E_BIN/why_client
REFUSE_MS=1000          # a refusal's round trip, with room for a loaded host
SILENT_MIN_MS=900       # the CM's silence bound is 1 s (falcon.h, falcon_connect)
SILENT_MAX_MS=2500
FLOOD=100
EXTRA=()                # falcond of ours beside A and B

cleanup() {
	local p
	for p in "${EXTRA[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${EXTRA[@]}"; do wait "$p" 2>/dev/null; done
	EXTRA=()
	td_stop
}
trap cleanup EXIT

# extra NAME DATA_PORT CM_PORT ARGS...: one more falcond on 127.0.0.1, waited for
extra() {
	local n=$1 dp=$2 cp=$3
	shift 3
	mkdir -p "$TD_DIR/$n"
	"$FALCOND" --listen 127.0.0.1 --port "$dp" --cm-port "$cp" --runtime-dir "$TD_DIR/$n" \
		"$@" 2>"$TD_DIR/$n.log" &
	EXTRA+=($!)
	for _ in $(seq 100); do
		"$FALCONCTL" -r "$TD_DIR/$n" status >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "falcond $n did not start:"; cat "$TD_DIR/$n.log"
	return 1
}

# expect DESC ERRNO MIN_MS MAX_MS DETAIL_RE CMD...: CMD (a why_client call that must
# fail) prints a result line with ERRNO, a time in [MIN_MS, MAX_MS] and a detail that
# matches DETAIL_RE
expect() {
	local desc=$1 want=$2 lo=$3 hi=$4 re=$5 out e ms detail
	shift 5
	out=$("$@" 2>&1)
	echo "$out" | sed 's/^/   /'
	out=$(grep '^result ' <<<"$out" | tail -1)
	e=$(sed -E 's/^result errno=([^ ]*) .*/\1/' <<<"$out")
	ms=$(sed -E 's/^result errno=[^ ]* ms=([0-9]*) .*/\1/' <<<"$out")
	detail=${out#*detail=}
	if [ "$e" = "$want" ] && [ "${ms:-0}" -ge "$lo" ] && [ "${ms:-999999}" -le "$hi" ] &&
		grep -qE -- "$re" <<<"$detail"; then
		e2e_ok "$desc: $e in $ms ms, \"$detail\""
	else
		e2e_fail "$desc: want $want in $lo..$hi ms with /$re/; got ${e:-nothing} in ${ms:-?} ms"
	fi
}

# ---- falcon_open names the socket it tried ----
missing=$(mktemp -u "${TMPDIR:-/tmp}/falcon-why.XXXXXX")/falcond.sock
expect "falcon_open on a missing socket" ENOENT 0 "$REFUSE_MS" "falcond socket $missing .*no such socket" \
	"$W" open "$missing"
expect "falcon_open(NULL) with \$FALCON_SOCKET" ENOENT 0 "$REFUSE_MS" "$missing \(\\\$FALCON_SOCKET\)" \
	env FALCON_SOCKET="$missing" "$W" open ""

# ---- config files: FILE:LINE, one value per line ----
cfgdir=$(mktemp -d "${TMPDIR:-/tmp}/falcon-why.XXXXXX")
"$FALCONCTL" key generate -o "$cfgdir/k.key" >"$cfgdir/k.pub"
printf '# a comment\nmtu 1000\n' >"$cfgdir/bad.conf"
printf 'log-level info\npeer %s@127.0.0.1:7471 %s@127.0.0.1:7473\n' "$(cat "$cfgdir/k.pub")" \
	"$(cat "$cfgdir/k.pub")" >"$cfgdir/two.conf"
printf 'peer %s@localhost:7471\n' "$(cat "$cfgdir/k.pub")" >"$cfgdir/host.conf"
for c in bad two host; do
	timeout 10 "$FALCOND" -c "$cfgdir/$c.conf" --runtime-dir "$cfgdir" >"$cfgdir/$c.out" 2>&1
	echo "   exit $?: $(cat "$cfgdir/$c.out")"
done
grep -q "^falcond: $cfgdir/bad.conf:2: bad value for mtu: '1000'" "$cfgdir/bad.out" &&
	e2e_ok "a bad value names FILE:LINE" || e2e_fail "a bad value: $(cat "$cfgdir/bad.out")"
grep -q "^falcond: $cfgdir/two.conf:2: 'peer' takes one value; the line has more" "$cfgdir/two.out" &&
	e2e_ok "a line with two peers is refused, FILE:LINE named" || e2e_fail "two peers on a line: $(cat "$cfgdir/two.out")"
grep -q "^falcond: $cfgdir/host.conf:1: bad value for peer" "$cfgdir/host.out" &&
	e2e_ok "a peer that is not ADDRESS:PORT is refused with FILE:LINE" || e2e_fail "peer address: $(cat "$cfgdir/host.out")"
rm -rf "$cfgdir"

# ---- security psp ----
td_start "" "" || { e2e_fail "daemons start (psp)"; e2e_done; exit 1; }
CM_C=127.0.0.1:$((TD_BASE + 5)) CM_E=127.0.0.1:$((TD_BASE + 9))
DEAD=127.0.0.1:$((TD_BASE + 12)) SINK_PORT=$((TD_BASE + 13))
for k in c g; do "$FALCONCTL" key generate -o "$TD_DIR/$k.key" >"$TD_DIR/$k.pub"; done
extra c $((TD_BASE + 4)) $((TD_BASE + 5)) --key "$TD_DIR/c.key" \
	--peer "$(cat "$TD_DIR/b.pub")@$TD_CM_B" &&
extra d $((TD_BASE + 6)) $((TD_BASE + 7)) --key "$TD_DIR/c.key" \
	--peer "$(cat "$TD_DIR/c.pub")@$TD_CM_B" &&
extra e $((TD_BASE + 8)) $((TD_BASE + 9)) --security none &&
extra g $((TD_BASE + 10)) $((TD_BASE + 11)) --key "$TD_DIR/g.key" \
	--peer "$(cat "$TD_DIR/c.pub")@$CM_E" --peer "$(cat "$TD_DIR/c.pub")@$DEAD" \
	--peer "$(cat "$TD_DIR/c.pub")@127.0.0.1:$SINK_PORT" ||
	{ e2e_fail "extra daemons start"; e2e_done; exit 1; }
B_RE=${TD_CM_B//./\\.}

expect "B does not allow C's key" EACCES 0 "$REFUSE_MS" "^$B_RE refused our handshake: our key is not on its allow-list" \
	"$W" connect "$TD_DIR/c/falcond.sock" "$TD_CM_B" 4000
expect "D has a wrong key for B" EKEYREJECTED 0 "$REFUSE_MS" "^$B_RE refused our handshake: it could not authenticate us" \
	"$W" connect "$TD_DIR/d/falcond.sock" "$TD_CM_B" 4000
expect "security none -> psp" EPROTONOSUPPORT 0 "$REFUSE_MS" "^$B_RE refused .*it runs security psp, we none" \
	"$W" connect "$TD_DIR/e/falcond.sock" "$TD_CM_B" 4000
expect "security psp -> none" EPROTONOSUPPORT 0 "$REFUSE_MS" "^${CM_E//./\\.} refused our handshake: it runs security none, we psp" \
	"$W" connect "$TD_DIR/g/falcond.sock" "$CM_E" 4000
# H and I hold A's key (B allows it) but differ from B: a cipher, a required feature; B
# refuses after authenticating them, so it may say what does not match
if grep -qw aes /proc/cpuinfo; then
	extra h $((TD_BASE + 14)) $((TD_BASE + 15)) --key "$TD_DIR/a.key" \
		--peer "$(cat "$TD_DIR/b.pub")@$TD_CM_B" --psp-cipher chacha20-poly1305 ||
		e2e_fail "falcond h starts"
	expect "another PSP cipher" EPROTONOSUPPORT 0 "$REFUSE_MS" "^$B_RE refused our handshake: it encrypts with PSP version 1, we with 12" \
		"$W" connect "$TD_DIR/h/falcond.sock" "$TD_CM_B" 4000
else
	echo "e2e-errors: no AES instructions here: the cipher mismatch needs one side with them"
fi
extra i $((TD_BASE + 16)) $((TD_BASE + 17)) --key "$TD_DIR/a.key" \
	--peer "$(cat "$TD_DIR/b.pub")@$TD_CM_B" --cm-require 0x80 || e2e_fail "falcond i starts"
expect "a feature B lacks (psp)" EPROTO 0 "$REFUSE_MS" "^$B_RE refused our handshake: CM features do not match" \
	"$W" connect "$TD_DIR/i/falcond.sock" "$TD_CM_B" 4000
expect "no key for the peer at all" EACCES 0 "$REFUSE_MS" "^${CM_C//./\\.}: we have no key for it" \
	"$W" connect "$TD_SOCK_A" "$CM_C" 4000
expect "no listener" ECONNREFUSED 0 "$REFUSE_MS" "^$B_RE refused the service connection: no listener on service 4000" \
	"$W" connect "$TD_SOCK_A" "$TD_CM_B" 4000
expect "a dead port (ICMP port unreachable)" EHOSTUNREACH 0 "$REFUSE_MS" "^${DEAD//./\\.} unreachable: ICMP port unreachable" \
	"$W" connect "$TD_DIR/g/falcond.sock" "$DEAD" 4000
"$W" sink "$SINK_PORT" 8 >"$TD_DIR/sink.log" 2>&1 &
EXTRA+=($!)
for _ in $(seq 50); do grep -q "^sink on" "$TD_DIR/sink.log" && break; sleep 0.05; done
expect "a peer that answers nothing" ETIMEDOUT "$SILENT_MIN_MS" "$SILENT_MAX_MS" "^no answer at all from 127\.0\.0\.1:$SINK_PORT in" \
	"$W" connect "$TD_DIR/g/falcond.sock" "127.0.0.1:$SINK_PORT" 4000 20000

# a full backlog is refused at once; the request B holds meanwhile is answered (MRA), so
# it waits for its own timeout (2.5 s) instead of failing as silence at 1 s
"$W" hold "$TD_SOCK_B" 4100 1 8 >"$TD_DIR/hold.log" 2>&1 &
EXTRA+=($!)
for _ in $(seq 50); do grep -q "^listening" "$TD_DIR/hold.log" && break; sleep 0.05; done
"$W" connect "$TD_SOCK_A" "$TD_CM_B" 4100 2500 >"$TD_DIR/held.log" 2>&1 &
held=$!
sleep 0.3
expect "a full backlog" EAGAIN 0 "$REFUSE_MS" "^$B_RE refused the service connection: the backlog of its listener on service 4100 is full" \
	"$W" connect "$TD_SOCK_A" "$TD_CM_B" 4100
wait $held
expect "the request B holds (MRA: no silence)" ETIMEDOUT 2400 4000 "did not complete .* it holds our request" \
	cat "$TD_DIR/held.log"

# UD: B answers A knowing nothing of A but what the completion says
out=$("$W" ud "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 2>&1)
rc=$?
echo "$out" | sed 's/^/   /'
[ $rc -eq 0 ] && grep -q "^ud: 8 rounds answered from the completion alone" <<<"$out" &&
	e2e_ok "UD ping-pong: B answered 8 pings through falcon_create_ah_from_wc" ||
	e2e_fail "UD ping-pong from the completion (rc $rc)"

# a flood of refused connects: each refused at once, B's log rate-limited
before=$(grep -c "refused: unknown key" "$TD_DIR/b.log")
t0=$(date +%s%N)
out=$("$W" flood "$TD_DIR/c/falcond.sock" "$TD_CM_B" 4000 $FLOOD 2>&1)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
echo "   $out ($ms ms)"
[ $rc -eq 0 ] && grep -q "^flood: $FLOOD failed, errno EACCES (all)" <<<"$out" &&
	e2e_ok "$FLOOD refused connects, each EACCES, in $ms ms" || e2e_fail "the flood: $out"
kill -TERM "$TD_PID_B" # its exit writes the counts still open
wait "$TD_PID_B" 2>/dev/null
TD_PID_B=
n=$(grep -c "refused: unknown key" "$TD_DIR/b.log")
grep "refused: unknown key" "$TD_DIR/b.log" | sed 's/^/   /'
once=$(grep "refused: unknown key" "$TD_DIR/b.log" | grep -vc "(repeated")
rep=$(grep -o "refused: unknown key (repeated [0-9]* times" "$TD_DIR/b.log" | grep -o '[0-9]*' |
	awk '{ s += $1 } END { print s + 0 }')
# 1 + FLOOD refusals in all (C's first connect above): each is a line or a repeat
[ "$n" -le 4 ] && [ $((once + rep)) -eq $((FLOOD + 1)) ] && [ "$rep" -gt 0 ] &&
	e2e_ok "B's log: $n lines for $((FLOOD + 1)) refusals ($once written, $rep counted as repeats)" ||
	e2e_fail "B's log: $n lines ($once written, $rep repeats) for $((FLOOD + 1)) refusals"
cleanup

# ---- security none: table full, feature mismatch, dead port, silence ----
td_start "--security none" "--security none --max-conns 1" ||
	{ e2e_fail "daemons start (none)"; e2e_done; exit 1; }
extra f $((TD_BASE + 4)) $((TD_BASE + 5)) --security none --cm-require 0x80 ||
	{ e2e_fail "falcond f starts"; e2e_done; exit 1; }
B_RE=${TD_CM_B//./\\.} A_RE=${TD_CM_A//./\\.}
expect "B's connection table full (--max-conns 1)" EUSERS 0 "$REFUSE_MS" "^$B_RE refused the service connection: it is out of resources" \
	"$W" full "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 4200
expect "F requires a feature A lacks" EPROTO 0 "$REFUSE_MS" "^$A_RE refused the service connection: features do not match \(it supports 0x1 and requires 0, we support 0x1 and require 0x80\)" \
	"$W" connect "$TD_DIR/f/falcond.sock" "$TD_CM_A" 4000
expect "a dead port (none)" EHOSTUNREACH 0 "$REFUSE_MS" "unreachable: ICMP port unreachable" \
	"$W" connect "$TD_SOCK_A" "127.0.0.1:$((TD_BASE + 12))" 4000
"$W" sink $((TD_BASE + 13)) 8 >"$TD_DIR/sink.log" 2>&1 &
EXTRA+=($!)
for _ in $(seq 50); do grep -q "^sink on" "$TD_DIR/sink.log" && break; sleep 0.05; done
expect "a peer that answers nothing (none)" ETIMEDOUT "$SILENT_MIN_MS" "$SILENT_MAX_MS" "^no answer at all from" \
	"$W" connect "$TD_SOCK_A" "127.0.0.1:$((TD_BASE + 13))" 4000 20000
e2e_done
