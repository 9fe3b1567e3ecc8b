#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Security psp refuses bad input (issue 10, "Must show"). Two falcond in namespaces A and
# B on a veth pair, a third namespace C joined to B by a veth of its own; a client moves
# verified data A -> B the whole time (e2e_client canary: first WRITEs of a known text,
# each into a guard slot of B that is wiped after it landed, then steady WRITE + READ
# back). Packets are captured on B's veth (AF_PACKET, tests/e2e/pkt_tool.c) and shown:
#   (a) the capture of the data port carries no plaintext of the known text (and the
#       same capture against falcond in security none does: the search works)
#   (c) a captured data packet replayed from A's address right away: opened, then
#       dropped by Falcon's window as old (conn rx_old), not replayed into memory; and
#       after the replay window: node.rx_replay
#   (b) random ICV -> psp.rx_auth_fail      (d) wrong SPI -> psp.rx_unknown_spi
#   (f) cut at every length -> psp.rx_too_short (< 36 B), psp.rx_auth_fail (the rest)
#   (g) E2E_SEC_RANDOM (1,000,000) random datagrams, paced so the kernel drops none:
#       each counted by one psp reason, falcond alive, its memory bounded (VmData and
#       RssAnon flat over the whole flood: the receive area is populated at start)
#   (e) packets of key generations 0 and 1 after `key rotate` twice and the erase:
#       psp.rx_old_phase
#   (h) a third falcond whose key nobody allows: cm.hs_refused.unknown_key, logged
#   (i) the recorded handshake message 1 of A replayed: cm.hs_refused."replayed"
#   (j) a plain "FCM1" CM message: cm.rx_plain_refused
# and at the end the client's transfer verified and B's guard slots still all zero (no
# replayed WRITE was taken). Needs root; says so and counts nothing without.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
e2e_init e2e-security
N_RANDOM=${E2E_SEC_RANDOM:-1000000}
MARGIN_US=500000 # B's replay window, long enough that "right away" is inside it
CANARY="FALCON-CANARY:plaintext-pattern/" # e2e_client.c CANARY_TEXT
MEM_GROWTH_MAX_KB=512

e2e_need_root "network namespaces and raw sockets"

. scripts/netns-pair.sh
. scripts/two-daemons.sh
PKT=$E2E_BIN/pkt_tool
NS_C=fe2e-c-$$ IF_C=fvc$$ IF_CB=fvcb$$
ADDR_CB=10.78.$(($$ % 250)).1 ADDR_C=10.78.$(($$ % 250)).3
BG=() # background jobs of ours (captures, the client, falcond C)

cleanup() {
	local p
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${BG[@]}"; do wait "$p" 2>/dev/null; done
	td_stop
	p=$(ip netns pids "$NS_C" 2>/dev/null)
	[ -n "$p" ] && kill -KILL $p 2>/dev/null
	ip netns del "$NS_C" 2>/dev/null
	np_down
}
trap cleanup EXIT

# C: a namespace of its own, a veth to B, routed to B's addresses through it
c_up() {
	ip netns add "$NS_C" &&
	ip link add "$IF_C" netns "$NS_C" type veth peer name "$IF_CB" netns "$NP_NS_B" &&
	ip -n "$NS_C" link set lo up && ip -n "$NS_C" link set "$IF_C" up &&
	ip -n "$NP_NS_B" link set "$IF_CB" up &&
	ip -n "$NS_C" addr add "$ADDR_C/24" dev "$IF_C" &&
	ip -n "$NP_NS_B" addr add "$ADDR_CB/24" dev "$IF_CB" &&
	ip -n "$NS_C" route add default via "$ADDR_CB"
}

in_a() { ip netns exec "$NP_NS_A" "$@"; }
in_b() { ip netns exec "$NP_NS_B" "$@"; }
in_c() { ip netns exec "$NS_C" "$@"; }

# counters: the first "KEY":N in the JSON (the keys used here are unique in it)
num() { grep -o "\"$1\":[0-9]*" <<<"$2" | head -1 | cut -d: -f2; }
stats_b() { "$FALCONCTL" -j -r "$TD_DIR/b" stats; }
conns_b() { "$FALCONCTL" -j -r "$TD_DIR/b" conn list; }
# delta KEY BEFORE AFTER
delta() { echo $(($(num "$1" "$3") - $(num "$1" "$2"))); }
# wait (at most 5 s) until counter KEY of B's stats has risen by at least N over BEFORE
wait_b() { # at most 30 s: a sanitizer build on a loaded host opens a few hundred a second
	local key=$1 n=$2 before=$3 i
	for i in $(seq 600); do
		[ "$(delta "$key" "$before" "$(stats_b)")" -ge "$n" ] && return 0
		sleep 0.05
	done
	return 1
}
# expect DESC KEY BEFORE AFTER WANT (exact) -- prints the value either way
expect_eq() {
	local d
	d=$(delta "$2" "$3" "$4")
	[ "$d" -eq "$5" ] && e2e_ok "$1: $2 +$d (want $5)" || e2e_fail "$1: $2 +$d, want $5"
}
# wait for a line matching RE in FILE (at most 10 s)
wait_line() {
	local i
	for i in $(seq 200); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
capture_bg() { # LOG ARGS... : a capture in B's namespace, started when it says so
	local log=$1; shift
	in_b "$PKT" capture "$NP_IF_B" "$@" >"$log" 2>&1 &
	BG+=($!)
	wait_line "^capturing" "$log"
}

if ! np_up || ! c_up; then
	e2e_fail "create namespaces and veths"
	e2e_done
	exit 1
fi
TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B

# ---- control: in security none the same capture shows the text (the search works) ----
td_start "--security none" "--security none" || { e2e_fail "daemons start (none)"; e2e_done; exit 1; }
capture_bg "$TD_DIR/none.log" $((TD_BASE + 2)) 20 10000 "$TD_DIR/none.pcap" dport
"$E2E_BIN/e2e_client" canary "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" "$TD_DIR/none.stop" 0 >"$TD_DIR/none.client" 2>&1
wait "${BG[-1]}"
hits=$("$PKT" grep "$TD_DIR/none.pcap" "$CANARY")
echo "security none: $hits"
[[ "$hits" =~ ^20\ of\ 20\  ]] && e2e_ok "control: security none shows the text in every captured datagram" ||
	e2e_fail "control: the search did not find the text in clear ($hits)"
BG=()
td_stop

# ---- security psp ----
td_start "" "--replay-margin-us $MARGIN_US --log-level debug" || { e2e_fail "daemons start (psp)"; e2e_done; exit 1; }
PID_B=$TD_PID_B
DPORT_B=$((TD_BASE + 2)) CMPORT_B=$((TD_BASE + 3))
capture_bg "$TD_DIR/hs.log" $CMPORT_B 1 20000 "$TD_DIR/hs.pcap" dport prefix 46434831 # "FCH1"
capture_bg "$TD_DIR/d.log" $DPORT_B 60 20000 "$TD_DIR/d.pcap" dport
CAP_D=${BG[-1]}
"$E2E_BIN/e2e_client" canary "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" "$TD_DIR/stop" 90 >"$TD_DIR/client.log" 2>&1 &
CLIENT=$!
BG+=($CLIENT)
wait "$CAP_D"
cat "$TD_DIR/d.log"
"$PKT" list "$TD_DIR/d.pcap" | tail -1
# (a) no plaintext
hits=$("$PKT" grep "$TD_DIR/d.pcap" "$CANARY")
hits2=$("$PKT" grep "$TD_DIR/d.pcap" "CANARY")
echo "psp: $hits; $hits2"
[[ "$hits" =~ ^0\ of\ 60\  ]] && [[ "$hits2" =~ ^0\ of\ 60\  ]] &&
	e2e_ok "(a) 60 captured canary WRITE packets carry no plaintext of the text" ||
	e2e_fail "(a) plaintext on the wire, or not 60 packets captured ($hits)"

# (c) replay right away (well inside the window): opened, dropped by Falcon as old
s0=$(stats_b) c0=$(conns_b)
in_a "$PKT" resend "$TD_DIR/d.pcap" -10
for _ in $(seq 100); do
	c1=$(conns_b)
	[ "$(($(delta rx_old "$c0" "$c1") + $(delta rx_dup "$c0" "$c1")))" -ge 1 ] && break
	sleep 0.05
done
s1=$(stats_b)
old=$(($(delta rx_old "$c0" "$c1") + $(delta rx_dup "$c0" "$c1")))
echo "replay right away: conn rx_old+rx_dup +$old, node rx_replay +$(delta rx_replay "$s0" "$s1")"
[ "$old" -ge 1 ] && e2e_ok "(c) replayed right away: Falcon's window dropped it as old (rx_old+rx_dup +$old)" ||
	e2e_fail "(c) the replay right away was not seen as a duplicate"
expect_eq "(c) right away is inside the window" rx_replay "$s0" "$s1" 0

# (c) the same packet after the replay window (the client keeps A's clock moving)
sleep "$(awk "BEGIN {print $MARGIN_US * 2 / 1e6}")"
s0=$(stats_b)
in_a "$PKT" resend "$TD_DIR/d.pcap" -10
wait_b rx_replay 1 "$s0"
s1=$(stats_b)
expect_eq "(c) replayed after the window" rx_replay "$s0" "$s1" 1
expect_eq "(c) ... and it authenticated (a true packet)" rx_auth_fail "$s0" "$s1" 0

# (b) forged: random ICV on the captured packet, from C
s0=$(stats_b)
in_c "$PKT" forge-icv "$TD_DIR/d.pcap" -10 "$TD_ADDR_B" $DPORT_B 1000 "$PID_B"
wait_b rx_auth_fail 1000 "$s0"
s1=$(stats_b)
expect_eq "(b) random ICV" rx_auth_fail "$s0" "$s1" 1000
expect_eq "(b) nothing forged opened" rx_replay "$s0" "$s1" 0

# (d) wrong SPI
s0=$(stats_b)
in_c "$PKT" forge-spi "$TD_DIR/d.pcap" -10 "$TD_ADDR_B" $DPORT_B 1000 "$PID_B"
wait_b rx_unknown_spi 1000 "$s0"
s1=$(stats_b)
expect_eq "(d) wrong SPI" rx_unknown_spi "$s0" "$s1" 1000
expect_eq "(d) not taken for an old phase" rx_old_phase "$s0" "$s1" 0
expect_eq "(d) no key tried" rx_auth_fail "$s0" "$s1" 0

# (f) truncated at every length: < 36 B too short (9.2.2.1), the rest fail the ICV
len=$("$PKT" list "$TD_DIR/d.pcap" | awk 'NR == 1 {print $6}')
s0=$(stats_b)
in_c "$PKT" truncate "$TD_DIR/d.pcap" 0 "$TD_ADDR_B" $DPORT_B "$PID_B"
wait_b rx_encap_err "$len" "$s0"
s1=$(stats_b)
expect_eq "(f) truncated below 36 B" rx_too_short "$s0" "$s1" 36
expect_eq "(f) truncated at 36 .. $((len - 1)) B" rx_auth_fail "$s0" "$s1" $((len - 36))
expect_eq "(f) no header refused (each cut keeps a valid one)" rx_bad_hdr "$s0" "$s1" 0
expect_eq "(f) every cut dropped by the node" rx_encap_err "$s0" "$s1" "$len"

# (g) random datagrams, paced on B's receive queue, in two halves: neither may grow
# falcond's memory (its receive area, GRO runs up to 64 KiB per slot, is populated at
# start)
mem() { awk -v k="$2" '$1 == k ":" {print $2}' "/proc/$1/status"; }
anon0=$(mem "$PID_B" RssAnon) data0=$(mem "$PID_B" VmData) drops0=$(in_b "$PKT" drops "$PID_B" $DPORT_B)
s0=$(stats_b)
in_c "$PKT" random "$TD_ADDR_B" $DPORT_B $((N_RANDOM / 2)) 0x5EC "$TD_DIR/d.pcap" 0 "$PID_B"
wait_b rx_encap_err $((N_RANDOM / 2)) "$s0"
anon1=$(mem "$PID_B" RssAnon) data1=$(mem "$PID_B" VmData)
in_c "$PKT" random "$TD_ADDR_B" $DPORT_B $((N_RANDOM - N_RANDOM / 2)) 0x5ED "$TD_DIR/d.pcap" 0 "$PID_B"
wait_b rx_encap_err "$N_RANDOM" "$s0"
s1=$(stats_b)
anon2=$(mem "$PID_B" RssAnon) data2=$(mem "$PID_B" VmData) drops1=$(in_b "$PKT" drops "$PID_B" $DPORT_B)
sum=0
for k in rx_too_short rx_bad_hdr rx_unknown_spi rx_old_phase rx_auth_fail; do
	echo "  $k +$(delta $k "$s0" "$s1")"
	sum=$((sum + $(delta $k "$s0" "$s1")))
done
echo "random: $sum counted by a PSP reason, kernel drops +$((drops1 - drops0))"
echo "memory of B: RssAnon $anon0 -> $anon1 -> $anon2 kB, VmData $data0 -> $data1 -> $data2 kB"
[ "$sum" -eq "$N_RANDOM" ] && e2e_ok "(g) all $N_RANDOM random datagrams counted by a PSP reason" ||
	e2e_fail "(g) $sum of $N_RANDOM random datagrams counted"
expect_eq "(g) each dropped by the node" rx_encap_err "$s0" "$s1" "$N_RANDOM"
expect_eq "(g) none opened into a replay check" rx_replay "$s0" "$s1" 0
[ "$((drops1 - drops0))" -eq 0 ] && e2e_ok "(g) the kernel dropped none (all reached falcond)" ||
	e2e_fail "(g) the kernel dropped $((drops1 - drops0))"
[ $((data2 - data0)) -le $MEM_GROWTH_MAX_KB ] && [ $((anon1 - anon0)) -le $MEM_GROWTH_MAX_KB ] &&
	[ $((anon2 - anon1)) -le $MEM_GROWTH_MAX_KB ] &&
	e2e_ok "(g) memory bounded: VmData +$((data2 - data0)) kB, RssAnon +$((anon1 - anon0)) then +$((anon2 - anon1)) kB (bound $MEM_GROWTH_MAX_KB each half)" ||
	e2e_fail "(g) memory grew: VmData +$((data2 - data0)) kB, RssAnon +$((anon1 - anon0)) then +$((anon2 - anon1)) kB"
kill -0 "$PID_B" && "$FALCONCTL" -r "$TD_DIR/b" status >/dev/null &&
	e2e_ok "(g) falcond B alive and answering" || e2e_fail "(g) falcond B is gone"

# (e) old key phase: generation 0 (the canary capture) and 1, after two rotations and
# the erase of generation 1 (the debug log says when)
s0=$(stats_b)
"$FALCONCTL" -r "$TD_DIR/b" key rotate >/dev/null
wait_b keys_acked 1 "$s0" && wait_line "previous PSP key phase is erased" "$TD_DIR/b.log" ||
	e2e_fail "(e) rotation 1 not acknowledged and drained"
capture_bg "$TD_DIR/g1.log" $DPORT_B 5 10000 "$TD_DIR/g1.pcap" dport
wait "${BG[-1]}"
spi1=$("$PKT" list "$TD_DIR/g1.pcap" | awk 'NR == 1 {print $10}')
echo "generation 1 packet: SPI $spi1"
"$FALCONCTL" -r "$TD_DIR/b" key rotate >/dev/null
for _ in $(seq 100); do
	[ "$(grep -c "previous PSP key phase is erased" "$TD_DIR/b.log")" -ge 2 ] && break
	sleep 0.05
done
s1=$(stats_b)
echo "rotations $(num rotations "$s1"), keys_acked $(num keys_acked "$s1"), key_generation $(num key_generation "$s1"), erased $(grep -c "previous PSP key phase is erased" "$TD_DIR/b.log")x"
[ "$(num key_generation "$s1")" -eq 2 ] && [ "$(grep -c "previous PSP key phase is erased" "$TD_DIR/b.log")" -ge 2 ] &&
	e2e_ok "(e) two rotations, both acknowledged, generation 1 erased" || e2e_fail "(e) rotations did not complete"
expect_eq "(e) rotations counted" rotations "$s0" "$s1" 2
s0=$(stats_b)
in_a "$PKT" resend "$TD_DIR/d.pcap" -10
in_a "$PKT" resend "$TD_DIR/g1.pcap" 0
wait_b rx_old_phase 2 "$s0"
s1=$(stats_b)
expect_eq "(e) generations 0 and 1 after the erase" rx_old_phase "$s0" "$s1" 2
expect_eq "(e) not unknown" rx_unknown_spi "$s0" "$s1" 0
expect_eq "(e) none opened into a replay check" rx_replay "$s0" "$s1" 0

# (h) a third falcond, in C, whose key nobody allows
"$FALCONCTL" key generate -o "$TD_DIR/c.key" >"$TD_DIR/c.pub"
s0=$(stats_b)
mkdir -p "$TD_DIR/c"
in_c "$FALCOND" --listen "$ADDR_C" --port $((TD_BASE + 4)) --cm-port $((TD_BASE + 5)) \
	--runtime-dir "$TD_DIR/c" --key "$TD_DIR/c.key" --peer "$(cat "$TD_DIR/b.pub")@$TD_CM_B" \
	2>"$TD_DIR/c.log" &
BG+=($!)
wait_line "falcond .*: data udp" "$TD_DIR/c.log"
E2E_CONNECT_MS=1500 E2E_SERVICE=5100 "$E2E_BIN/e2e_client" steady "$TD_DIR/c/falcond.sock" \
	"$TD_SOCK_B" "$TD_CM_B" 0 >"$TD_DIR/c.client" 2>&1
rc=$?
tail -1 "$TD_DIR/c.client"
# B refused C's message 1 and said so (in clear, issue 21): C's connect failed at once
sleep 0.3
c1=$("$FALCONCTL" -j -r "$TD_DIR/c" stats) s1=$(stats_b)
sent=$(num hs_started "$c1")
ukey() { grep -o '"unknown_key":[0-9]*' <<<"$1" | cut -d: -f2; }
n=$(($(ukey "$s1") - $(ukey "$s0")))
grep -m1 "refused: unknown key" "$TD_DIR/b.log"
echo "C sent $sent handshakes, B refused $n as unknown key"
[ $rc -ne 0 ] && grep -q "connect: not allowed: .*$TD_CM_B refused our handshake: our key is not on its allow-list" "$TD_DIR/c.client" &&
	e2e_ok "(h) C's client could not connect: not allowed, B named" || e2e_fail "(h) C's client: rc $rc"
[ "$n" -ge 1 ] && [ "$n" -eq "$sent" ] &&
	e2e_ok "(h) every handshake of C refused: hs_refused.unknown_key +$n = C's hs_started" ||
	e2e_fail "(h) hs_refused.unknown_key +$n, C sent $sent"
grep -q "handshake from $ADDR_C:[0-9]* refused: unknown key" "$TD_DIR/b.log" &&
	e2e_ok "(h) B logged the reason" || e2e_fail "(h) no log line on B"
expect_eq "(h) no session for C" hs_done "$s0" "$s1" 0

# (i) A's recorded handshake message 1, replayed from A's CM address
cat "$TD_DIR/hs.log"
s0=$(stats_b)
in_a "$PKT" resend "$TD_DIR/hs.pcap" 0
for _ in $(seq 100); do
	s1=$(stats_b)
	[ "$(grep -o '"replayed":[0-9]*' <<<"$s1" | cut -d: -f2)" -gt "$(grep -o '"replayed":[0-9]*' <<<"$s0" | cut -d: -f2)" ] && break
	sleep 0.05
done
n=$(($(grep -o '"replayed":[0-9]*' <<<"$s1" | cut -d: -f2) - $(grep -o '"replayed":[0-9]*' <<<"$s0" | cut -d: -f2)))
grep -m1 "refused: replayed" "$TD_DIR/b.log"
[ "$n" -eq 1 ] && grep -q "refused: replayed" "$TD_DIR/b.log" &&
	e2e_ok "(i) replayed handshake message 1 refused: hs_refused.\"replayed\" +1, logged" ||
	e2e_fail "(i) replayed handshake: hs_refused.\"replayed\" +$n"
expect_eq "(i) no new session" hs_done "$s0" "$s1" 0
"$FALCONCTL" -j -r "$TD_DIR/b" peer list | grep -q '"session":"up","identity":"[^"]*","handshakes":1,' &&
	e2e_ok "(i) A's session untouched (1 handshake)" || e2e_fail "(i) A's session changed"

# (j) a plain CM message in psp
s0=$(stats_b)
in_c "$PKT" send "$TD_ADDR_B" $CMPORT_B FCM1 72 5
wait_b rx_plain_refused 5 "$s0"
s1=$(stats_b)
expect_eq "(j) plain FCM1" rx_plain_refused "$s0" "$s1" 5

# the client: its transfer verified throughout, B's guard slots untouched
touch "$TD_DIR/stop"
for _ in $(seq 300); do kill -0 $CLIENT 2>/dev/null || break; sleep 0.1; done
wait $CLIENT
rc=$?
cat "$TD_DIR/client.log"
[ $rc -eq 0 ] && grep -q "^transfer: .* 0 failures" "$TD_DIR/client.log" &&
	e2e_ok "the client's transfer was verified throughout" || e2e_fail "the client failed (rc $rc)"
grep -q "^guard: 100 of 100 slots still zero" "$TD_DIR/client.log" &&
	e2e_ok "no replayed WRITE reached B's memory (guard slots all zero)" ||
	e2e_fail "B's guard memory changed"
s1=$(stats_b)
for k in rx_spi_mismatch rx_peer_mismatch rx_replay rx_opened; do echo "  B node/psp $k $(num $k "$s1")"; done
e2e_done
