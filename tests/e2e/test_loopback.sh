#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Two falcond on 127.0.0.1 (no root needed): the demo, every opcode x size, falconctl,
# feature refusal in the CM hello, a client killed mid-transfer, hostile clients.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-loopback

# security none here (the feature refusal below needs plain CM hellos); the netns test,
# the demo and the CM-loss run at the end run security psp
td_start "--security none" "--security none" || { e2e_fail "daemons start"; e2e_done; exit 1; }
e2e_check "demo: every operation verified" "$BUILD/examples/demo" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" --quick
e2e_check "opcode x size matrix (1 B .. 1 MiB)" "$E2E_BIN/e2e_client" matrix "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B"

E2E_SERVICE=5020 e2e_check "a shared receive queue: SENDs of two QPs land in one SRQ" "$E2E_BIN/e2e_client" srq "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B"
e2e_check "QPs by create/modify (RC, crossing RTRs), UD with address handles, XRC" "$E2E_BIN/qp_types" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_A" "$TD_CM_B"
# its two address handles from A to B shared one connection (plus B's to A): two on A
n_ah=$(grep -c 'established (ah' "$TD_DIR/a.log")
[ "$n_ah" = 2 ] && e2e_ok "address handles to one daemon share its connection" ||
	e2e_fail "A has $n_ah ah connections, not 2"

# memory not from falcon_alloc_buf (malloc): the daemons reach it by copy
out=$(E2E_ANYMEM=1 E2E_SERVICE=5010 "$E2E_BIN/e2e_client" matrix "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 2>&1)
rc=$?
echo "$out" | tail -3
n_copy=$("$FALCONCTL" -j -r "$TD_DIR/a" stats | grep -o '"mr_by_copy":[0-9]*' | cut -d: -f2)
if [ $rc -eq 0 ] && [ "${n_copy:-0}" -gt 0 ]; then
	e2e_ok "matrix over malloc'd memory reached by copy ($n_copy regions on A)"
else
	e2e_fail "matrix over malloc'd memory (rc $rc, regions by copy ${n_copy:-none})"
	echo "$out"
fi

# the installed library is usable as a user finds it: make install into a staging
# directory, then the example built against it with pkg-config alone, then run
STAGE=$TD_DIR/stage
san=0 sanflags=""
case "$BUILD" in *-san) san=1 sanflags="-fsanitize=address,undefined" ;; esac
if make --no-print-directory -s install SAN=$san BUILD="$BUILD" DESTDIR="$STAGE" PREFIX=/usr >"$TD_DIR/install.log" 2>&1 &&
   libdir=$(make --no-print-directory -s install-dirs PREFIX=/usr | sed -n 's/^LIBDIR=//p') &&
   cflags=$(PKG_CONFIG_SYSROOT_DIR=$STAGE PKG_CONFIG_LIBDIR=$STAGE$libdir/pkgconfig pkg-config --cflags --libs falcon-client) &&
   gcc -Wall -Werror $sanflags examples/rc_pingpong.c $cflags -o "$TD_DIR/pp-installed" 2>>"$TD_DIR/install.log"; then
	FALCON_SOCKET=$TD_SOCK_B LD_LIBRARY_PATH=$STAGE$libdir timeout 30 "$TD_DIR/pp-installed" >"$TD_DIR/ppi.log" 2>&1 &
	ppi=$!
	for _ in $(seq 50); do grep -q waiting "$TD_DIR/ppi.log" && break; sleep 0.1; done
	out=$(FALCON_SOCKET=$TD_SOCK_A LD_LIBRARY_PATH=$STAGE$libdir timeout 30 "$TD_DIR/pp-installed" "$TD_CM_B" 20 2>&1)
	rc=$?
	wait $ppi
	if [ $rc -eq 0 ] && grep -q "^20 round trips" <<<"$out"; then
		e2e_ok "make install: rc_pingpong built with pkg-config against the staged library runs"
	else
		e2e_fail "rc_pingpong against the installed library: $out"
	fi
else
	e2e_fail "make install / pkg-config / build against it"
	cat "$TD_DIR/install.log"
fi

# the example a user reads first, and the perftest-like tool in each of its modes
FALCON_SOCKET=$TD_SOCK_B timeout 30 "$BUILD/examples/rc_pingpong" >"$TD_DIR/pp.log" 2>&1 &
pp=$!
for _ in $(seq 50); do grep -q waiting "$TD_DIR/pp.log" && break; sleep 0.1; done
out=$(FALCON_SOCKET=$TD_SOCK_A timeout 30 "$BUILD/examples/rc_pingpong" "$TD_CM_B" 200 2>&1)
rc=$?
wait $pp
src=$?
echo "rc_pingpong: $out"
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "^200 round trips" <<<"$out" &&
   grep -q "client left after 200 round trips" "$TD_DIR/pp.log"; then
	e2e_ok "examples/rc_pingpong: 200 round trips, every echo checked, the server's last echo completed"
else
	e2e_fail "examples/rc_pingpong (client $rc, server $src)"
	cat "$TD_DIR/pp.log"
fi
PERF=$BUILD/bench/falcon-perf
perf_case() { # service args...: server and client, the client's JSON line checked
	local svc=$1; shift
	local slog="$TD_DIR/perf-srv-$svc.log" # its own: a reused file shows the last server's line
	timeout 60 "$PERF" -S "$TD_SOCK_B" -p "$svc" "$@" >"$slog" 2>&1 &
	local srv=$!
	for _ in $(seq 50); do grep -q "server on" "$slog" && break; sleep 0.1; done
	local out rc
	out=$(timeout 60 "$PERF" -S "$TD_SOCK_A" -p "$svc" -j "$@" "$TD_CM_B" 2>&1)
	rc=$?
	wait $srv
	local src=$?
	echo "falcon-perf $*: $out"
	# a measured line: a positive rate or latency, never a zero from a run that did nothing
	if [ $rc -eq 0 ] && [ $src -eq 0 ] &&
	   grep -qE '"(mops|p50_us)":(0\.0*[1-9]|[1-9])' <<<"$out"; then
		e2e_ok "falcon-perf $*"
	else
		e2e_fail "falcon-perf $* (client $rc, server $src)"
		cat "$slog"
		echo "daemon logs (last lines):"
		tail -n 8 "$TD_DIR/a.log" "$TD_DIR/b.log"
	fi
}
perf_case 5101 -t write -m bw -s 64K -n 2000
perf_case 5102 -t read -m bw -s 4K -n 2000 -q 2
perf_case 5103 -t send -m bw -s 1K -n 2000
perf_case 5104 -t atomic -m bw -n 2000
perf_case 5105 -t write -m lat -s 8 -n 500
perf_case 5106 -t read -m lat -s 8 -n 500
perf_case 5107 -t send -m lat -s 8 -n 500
perf_case 5108 -t atomic -m lat -n 500
perf_case 5109 -t write -m bw -a -s 16K -n 200 -e

# falconctl while a transfer runs
E2E_SERVICE=5001 "$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 3 >"$TD_DIR/steady.log" 2>&1 &
steady=$!
for _ in $(seq 50); do grep -q connected "$TD_DIR/steady.log" && break; sleep 0.1; done
out=$("$FALCONCTL" -r "$TD_DIR/a" conn list -o +role)
echo "$out"
if grep -q established <<<"$out" && grep -q initiator <<<"$out"; then e2e_ok "falconctl conn list shows the connection"; else e2e_fail "falconctl conn list"; fi
id=$("$FALCONCTL" -j -r "$TD_DIR/a" conn list | grep -o '"id":[0-9]*' | head -1 | cut -d: -f2)
if "$FALCONCTL" -r "$TD_DIR/a" conn show "$id" | grep -q "fcwnd"; then e2e_ok "falconctl conn show $id"; else e2e_fail "falconctl conn show"; fi
for cmd in status "peer list" "qp list" "mr list" "client list" stats; do
	# shellcheck disable=SC2086
	if "$FALCONCTL" -j -r "$TD_DIR/b" $cmd | grep -q '^[[{]' && "$FALCONCTL" -r "$TD_DIR/b" $cmd >/dev/null; then
		e2e_ok "falconctl $cmd (table and -j)"
	else
		e2e_fail "falconctl $cmd"
	fi
done
if "$FALCONCTL" -r "$TD_DIR/a" status | grep -q "security: none"; then e2e_ok "status names the security mode"; else e2e_fail "status security"; fi
"$FALCONCTL" -r "$TD_DIR/a" conn show 99999 >/dev/null 2>&1
[ $? -eq 1 ] && e2e_ok "conn show of an unknown id exits 1" || e2e_fail "conn show unknown id"
"$FALCONCTL" -r "$TD_DIR/nowhere" status 2>"$TD_DIR/ctl.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "is falcond running" "$TD_DIR/ctl.err"; then e2e_ok "falconctl without a daemon: message, exit 2"; else e2e_fail "falconctl without a daemon (rc $rc)"; fi
wait $steady
rc=$?
cat "$TD_DIR/steady.log"
[ $rc -eq 0 ] && e2e_ok "steady transfer during falconctl" || e2e_fail "steady transfer"

# a client killed with SIGKILL mid-transfer: the daemons free its objects, another goes on
# (the victim's memory is malloc'd: the daemons reach it by copy until it dies)
sleep 0.3
base_fds=$(e2e_fds "$TD_PID_A"); base_rss=$(e2e_rss "$TD_PID_A")
E2E_SERVICE=5002 "$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 4 >"$TD_DIR/other.log" 2>&1 &
other=$!
E2E_ANYMEM=1 E2E_SERVICE=5003 "$E2E_BIN/e2e_client" victim "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" >"$TD_DIR/victim.log" 2>&1 &
victim=$!
for _ in $(seq 50); do grep -q "until killed" "$TD_DIR/victim.log" && break; sleep 0.1; done
sleep 1
kill -KILL $victim; wait $victim 2>/dev/null
wait $other
rc=$?
cat "$TD_DIR/other.log"
[ $rc -eq 0 ] && e2e_ok "the other client's transfer went on" || e2e_fail "other client's transfer"
sleep 0.3
fds=$(e2e_fds "$TD_PID_A"); rss=$(e2e_rss "$TD_PID_A")
clients=$("$FALCONCTL" -j -r "$TD_DIR/a" client list)
echo "daemon A: fds $base_fds -> $fds, RSS $base_rss kB -> $rss kB, clients now $clients"
[ "$fds" -le "$base_fds" ] && e2e_ok "fds back to the baseline after SIGKILL" || e2e_fail "fds leaked ($base_fds -> $fds)"
[ "$rss" -le $((base_rss + 8192)) ] && e2e_ok "RSS back near the baseline (+8 MiB)" || e2e_fail "RSS grew ($base_rss -> $rss kB)"
[ "$clients" = "[]" ] && e2e_ok "no client left in the daemon" || e2e_fail "clients left: $clients"
grep -q "released" "$TD_DIR/a.log" && e2e_ok "the daemon logged the release" || e2e_fail "no release logged"

# falconctl conn trace: a connection's CC events while a transfer runs, as CSV
E2E_SERVICE=5030 "$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 3 >"$TD_DIR/traced.log" 2>&1 &
tpid=$!
for _ in $(seq 200); do grep -q "^connected" "$TD_DIR/traced.log" && break; sleep 0.05; done
tid=$("$FALCONCTL" -j -r "$TD_DIR/a" conn list | grep -o '"id":[0-9]*,"role":"initiator","kind":"service","state":"established"' | head -1 | cut -d: -f2 | cut -d, -f1)
"$FALCONCTL" -r "$TD_DIR/a" -o "$TD_DIR/trace" conn trace "${tid:-0}" 1
wait $tpid
rows=$(tail -n +2 "$TD_DIR/trace.csv" 2>/dev/null | wc -l)
bad=$(tail -n +2 "$TD_DIR/trace.csv" 2>/dev/null | awk -F, 'NF != 9 || $5 <= 0 || $1 < 0' | wc -l)
head -3 "$TD_DIR/trace.csv" 2>/dev/null
[ "$rows" -gt 50 ] && [ "$bad" = 0 ] && head -1 "$TD_DIR/trace.csv" | grep -q '^t_s,event,rtt_us,delay_us,fcwnd,ncwnd,rto_us,retx,nack_code$' &&
	e2e_ok "conn trace: $rows CC events of a live connection as CSV" || e2e_fail "conn trace ($rows rows, $bad malformed)"
# and drawn: a PNG (checked structure: tests/unit/test_plot.c) of 1000 x 600
[ "$(head -c 8 "$TD_DIR/trace.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
	[ "$(od -An -tu1 -j16 -N8 "$TD_DIR/trace.png" | tr -s ' ')" = " 0 0 3 232 0 0 2 88" ] &&
	e2e_ok "conn trace: the plot is a 1000 x 600 PNG" || e2e_fail "conn trace: no plot"

# hostile clients on the API socket
e2e_check "api abuse: handles of other clients, malformed messages" "$E2E_BIN/api_abuse" "$TD_SOCK_A"
kill -0 "$TD_PID_A" && e2e_ok "daemon A alive after the abuse" || e2e_fail "daemon A died"

# feature refusal in the CM hello: a third daemon requires a feature nobody has
mkdir -p "$TD_DIR/c"
"$FALCOND" --security none --listen 127.0.0.1 --port $((TD_BASE + 4)) --cm-port $((TD_BASE + 5)) \
	--runtime-dir "$TD_DIR/c" --cm-require 0x80 --cm-retries 5 2>"$TD_DIR/c.log" &
cpid=$!
for _ in $(seq 100); do "$FALCONCTL" -r "$TD_DIR/c" status >/dev/null 2>&1 && break; sleep 0.05; done
E2E_SERVICE=5004 "$E2E_BIN/e2e_client" matrix "$TD_SOCK_A" "$TD_DIR/c/falcond.sock" "127.0.0.1:$((TD_BASE + 5))" >"$TD_DIR/refused.log" 2>&1
rc=$?
cat "$TD_DIR/refused.log"
if [ $rc -ne 0 ] && grep -q "protocol version or features do not match .*refused the service connection: features do not match" "$TD_DIR/refused.log" && grep -q "lacks features 0x80" "$TD_DIR/c.log" && grep -q "refused a service connection" "$TD_DIR/a.log"; then
	e2e_ok "a peer lacking a required feature is refused, with the reason logged on both sides"
else
	e2e_fail "feature refusal"
fi
kill -TERM $cpid; wait $cpid

td_stop

# the CM over a lossy path (security psp: handshakes too): 30 % of its messages lost each
# way, connections still set up
td_start "--fault-cm drop=30% --cm-retry-ms 20 --cm-retries 100 --fault-seed 5" "--fault-cm drop=30% --cm-retry-ms 20 --cm-retries 100 --fault-seed 6" || { e2e_fail "daemons start"; e2e_done; exit 1; }
e2e_check "20 connections set up and torn down with 30 % CM loss" "$E2E_BIN/e2e_client" connects "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 20
e2e_check "create/modify bindings, AHs and XRC with 30 % CM loss" "$E2E_BIN/qp_types" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_A" "$TD_CM_B"
st=$("$FALCONCTL" -j -r "$TD_DIR/a" stats)
drops=$(grep -o '"fault_drops":[0-9]*' <<<"$st" | cut -d: -f2); retries=$(grep -o '"retries":[0-9]*' <<<"$st" | cut -d: -f2)
echo "CM of A: $drops messages lost on purpose, $retries retransmissions"
[ "${drops:-0}" -gt 0 ] && [ "${retries:-0}" -gt 0 ] && e2e_ok "CM losses recovered by retransmission" || e2e_fail "no CM loss or no retry"
td_stop
e2e_done
