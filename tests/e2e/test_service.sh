#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# falcond as a service: the systemd unit passes systemd-analyze verify; the notification
# protocol (READY, STATUS, WATCHDOG from the loop, STOPPING) against a stand-in for
# systemd's socket; falcond killed with SIGKILL mid-transfer: the client gets a clear
# error promptly (not a hang), nothing stale stays behind, and a restarted falcond in the
# same runtime directory serves clients again. No root needed.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-service

TD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/falcon-svc.XXXXXX")
NPID=
cleanup() {
	[ -n "$NPID" ] && kill "$NPID" 2>/dev/null
	td_stop
}
trap cleanup EXIT

# ---- the unit: systemd-analyze verify (its Documentation= pages found in docs/man) ----
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$TD_DIR/man/man5" "$TD_DIR/man/man8" "$TD_DIR/unit"
	cp docs/man/*.8 "$TD_DIR/man/man8/"
	cp docs/man/*.5 "$TD_DIR/man/man5/"
	sed -e "s|@SBINDIR@|$PWD/$BUILD/daemon|" -e "s|@SYSCONFDIR@|$TD_DIR|" \
		systemd/falcond.service.in >"$TD_DIR/unit/falcond.service"
	out=$(MANPATH="$TD_DIR/man" systemd-analyze verify "$TD_DIR/unit/falcond.service" 2>&1)
	rc=$?
	[ -n "$out" ] && echo "$out"
	[ $rc -eq 0 ] && [ -z "$out" ] && e2e_ok "systemd-analyze verify: the unit is clean" ||
		e2e_fail "systemd-analyze verify (rc $rc)"
	systemd-analyze security --offline=true "$TD_DIR/unit/falcond.service" 2>/dev/null |
		grep "Overall exposure"
else
	e2e_fail "systemd-analyze is missing (make deps installs systemd)"
fi

# ---- the notification protocol ----
mkdir -p "$TD_DIR/n"
"$E2E_BIN/notify_recv" "$TD_DIR/notify.sock" 20 >"$TD_DIR/notify.log" &
NPID=$!
for _ in $(seq 100); do [ -S "$TD_DIR/notify.sock" ] && break; sleep 0.02; done
td_ports
NOTIFY_SOCKET=$TD_DIR/notify.sock WATCHDOG_USEC=200000 "$FALCOND" --security none --listen 127.0.0.1 \
	--port $((TD_BASE + 10)) --cm-port $((TD_BASE + 11)) --runtime-dir "$TD_DIR/n" \
	2>"$TD_DIR/n.log" &
fpid=$!
# bounded wait: READY, then at least 3 watchdog pings (every 100 ms)
for _ in $(seq 100); do
	[ "$(grep -c 'WATCHDOG=1' "$TD_DIR/notify.log")" -ge 3 ] && break
	sleep 0.05
done
head -2 "$TD_DIR/notify.log"
head -1 "$TD_DIR/notify.log" | grep -q '^READY=1|STATUS=0 clients, 0 connections, security none' &&
	e2e_ok "READY=1 with a STATUS line first" || e2e_fail "no READY=1 first"
[ "$(grep -c 'WATCHDOG=1' "$TD_DIR/notify.log")" -ge 3 ] &&
	e2e_ok "watchdog pings from the loop at half of WATCHDOG_USEC" || e2e_fail "no watchdog pings"
[ "$(stat -c %a "$TD_DIR/n/falcond.sock")" = 660 ] && e2e_ok "API socket mode 0660" ||
	e2e_fail "API socket mode $(stat -c %a "$TD_DIR/n/falcond.sock")"
kill -TERM $fpid
wait $fpid
wait $NPID
NPID=
tail -1 "$TD_DIR/notify.log"
tail -1 "$TD_DIR/notify.log" | grep -q '^STOPPING=1' && e2e_ok "STOPPING=1 at shutdown" ||
	e2e_fail "no STOPPING=1"
# outside systemd nothing is sent and nothing breaks: the rest of the suite runs so

# ---- SIGKILL mid-transfer (security psp), then a restart ----
td_keys
# shellcheck disable=SC2086
td_one a "" 127.0.0.1 $TD_BASE $((TD_BASE + 1)) $TD_SEC_A
# shellcheck disable=SC2086
td_one b "" 127.0.0.1 $((TD_BASE + 2)) $((TD_BASE + 3)) $TD_SEC_B
if td_wait a && td_wait b; then
	TD_SOCK_A=$TD_DIR/a/falcond.sock TD_SOCK_B=$TD_DIR/b/falcond.sock
	TD_CM_B=127.0.0.1:$((TD_BASE + 3))
	E2E_SERVICE=5600 "$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 60 \
		>"$TD_DIR/victim.log" 2>&1 &
	cpid=$!
	for _ in $(seq 200); do grep -q "^connected" "$TD_DIR/victim.log" && break; sleep 0.05; done
	kill -KILL "$TD_PID_A"
	wait "$TD_PID_A" 2>/dev/null
	TD_PID_A=
	t0=$(date +%s%N)
	# the client must notice within 5 s (its own timeout is 20 s per wait)
	for _ in $(seq 100); do kill -0 $cpid 2>/dev/null || break; sleep 0.05; done
	if kill -0 $cpid 2>/dev/null; then
		e2e_fail "the client hangs after falcond died"
		kill -KILL $cpid
		wait $cpid
	else
		wait $cpid
		rc=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		grep -m1 "FAILED" "$TD_DIR/victim.log"
		[ $rc -ne 0 ] && grep -q "falcond closed the connection" "$TD_DIR/victim.log" &&
			e2e_ok "the client got a clear error ${ms} ms after SIGKILL" ||
			e2e_fail "the client's exit (rc $rc) named no error"
	fi
	# nothing of the dead daemon's shared memory is anywhere to be found
	stale=$(find /dev/shm -maxdepth 1 -name 'falcon*' 2>/dev/null | wc -l)
	[ "$stale" -eq 0 ] && e2e_ok "no shared memory left behind (memfds die with their holders)" ||
		e2e_fail "$stale falcon files in /dev/shm"
	# a restart in the same runtime directory takes over its stale socket and serves
	# shellcheck disable=SC2086
	td_one a "" 127.0.0.1 $TD_BASE $((TD_BASE + 1)) $TD_SEC_A
	if td_wait a; then
		e2e_ok "falcond restarted over its stale socket"
		e2e_check "a client after the restart: every operation verified" \
			"$BUILD/examples/demo" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" --quick
		# B failed what it had with A's former instance (not retransmitting into the
		# new one, which reuses its CIDs)
		grep -m1 "restarted" "$TD_DIR/b.log"
		"$FALCONCTL" -j -r "$TD_DIR/b" peer list | grep -q '"restarts":1' &&
			e2e_ok "B saw A's restart (new boot id) and failed the old connections" ||
			e2e_fail "B did not notice A's restart"
	else
		e2e_fail "falcond did not restart"
	fi
else
	e2e_fail "daemons start"
fi

# ---- SIGHUP reloads the peers (security psp) ----
# C is not among B's peers: refused. B's config file gains C, SIGHUP: C gets in, and A's
# transfer with B (a kept peer) goes on unharmed through the reload.
if [ -n "${TD_PID_A:-}" ] && [ -n "${TD_PID_B:-}" ]; then
	"$FALCONCTL" key generate -o "$TD_DIR/c.key" >"$TD_DIR/c.pub"
	mkdir -p "$TD_DIR/c"
	CM_C=127.0.0.1:$((TD_BASE + 5))
	"$FALCOND" --listen 127.0.0.1 --port $((TD_BASE + 4)) --cm-port $((TD_BASE + 5)) \
		--runtime-dir "$TD_DIR/c" --key "$TD_DIR/c.key" \
		--peer "$(cat "$TD_DIR/b.pub")@$TD_CM_B" --cm-retries 5 2>"$TD_DIR/c.log" &
	cpid_c=$!
	for _ in $(seq 100); do "$FALCONCTL" -r "$TD_DIR/c" status >/dev/null 2>&1 && break; sleep 0.05; done
	E2E_SERVICE=5700 "$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 6 \
		>"$TD_DIR/kept.log" 2>&1 &
	kept=$!
	if E2E_SERVICE=5710 timeout 30 "$BUILD/examples/demo" "$TD_DIR/c/falcond.sock" "$TD_SOCK_B" \
		"$TD_CM_B" --quick >"$TD_DIR/c1.log" 2>&1; then
		e2e_fail "a peer B does not allow got in"
	else
		grep -q "unknown key" "$TD_DIR/b.log" &&
			"$FALCONCTL" -j -r "$TD_DIR/b" stats | grep -q '"unknown_key":[1-9]' &&
			e2e_ok "B refused C's handshake: unknown key (logged and counted)" ||
			e2e_fail "B's refusal of C not logged or counted"
	fi
	# B's configuration file now names C; B started with command-line peers, which stay
	echo "peer $(cat "$TD_DIR/c.pub")@$CM_C" >"$TD_DIR/b.conf"
	kill -TERM "$TD_PID_B" 2>/dev/null
	wait "$TD_PID_B" 2>/dev/null
	# (B restarts with -c so that SIGHUP has a file to read)
	: >"$TD_DIR/b.conf.empty"
	# shellcheck disable=SC2086
	td_one b "" 127.0.0.1 $((TD_BASE + 2)) $((TD_BASE + 3)) $TD_SEC_B -c "$TD_DIR/b.conf.empty"
	td_wait b || e2e_fail "B restarted with a config file"
	wait $kept 2>/dev/null # the transfer through the old B ended with it
	E2E_SERVICE=5720 "$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 6 \
		>"$TD_DIR/kept.log" 2>&1 &
	kept=$!
	for _ in $(seq 200); do grep -q "^connected" "$TD_DIR/kept.log" && break; sleep 0.05; done
	cp "$TD_DIR/b.conf" "$TD_DIR/b.conf.empty"
	kill -HUP "$TD_PID_B"
	for _ in $(seq 100); do grep -q "configuration reloaded" "$TD_DIR/b.log" && break; sleep 0.05; done
	grep "reload" "$TD_DIR/b.log" | tail -2
	E2E_SERVICE=5730 e2e_check "after SIGHUP B allows C: every operation verified" \
		timeout 30 "$BUILD/examples/demo" "$TD_DIR/c/falcond.sock" "$TD_SOCK_B" "$TD_CM_B" --quick
	wait $kept
	rc=$?
	tail -1 "$TD_DIR/kept.log"
	[ $rc -eq 0 ] && grep -q ", 0 failures" "$TD_DIR/kept.log" &&
		e2e_ok "A's transfer with B (a kept peer) went on through the reload" ||
		e2e_fail "A's transfer broke at the reload (rc $rc)"
	kill -TERM $cpid_c
	wait $cpid_c
fi

# ---- the PSP cipher: ChaCha20-Poly1305 on both ends works; ends that differ are refused ----
td_stop
td_start "--psp-cipher chacha20-poly1305" "--psp-cipher chacha20-poly1305" ||
	e2e_fail "daemons start (chacha20-poly1305)"
e2e_check "security psp with ChaCha20-Poly1305: every operation verified" \
	timeout 60 "$BUILD/examples/demo" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" --quick
"$FALCONCTL" -j -r "$TD_DIR/a" stats | grep -q '"cipher":"chacha20-poly1305"' &&
	e2e_ok "the daemons say which cipher" || e2e_fail "cipher not reported"
td_stop
if grep -qw aes /proc/cpuinfo; then
	td_start "--psp-cipher chacha20-poly1305 --cm-retries 5" "--psp-cipher aes-256-gcm" ||
		e2e_fail "daemons start (mixed ciphers)"
	if E2E_SERVICE=5750 timeout 30 "$BUILD/examples/demo" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" \
		--quick >"$TD_DIR/mixed.log" 2>&1; then
		e2e_fail "daemons of different ciphers connected"
	else
		grep -m1 "encrypts with PSP version" "$TD_DIR/b.log"
		grep -q "encrypts with PSP version 12, we with 1" "$TD_DIR/b.log" &&
			e2e_ok "a peer of another cipher is refused, the reason logged" ||
			e2e_fail "the cipher mismatch was not logged"
	fi
else
	echo "e2e-service: this CPU has no AES instructions: the mixed-cipher check needs one side with them"
fi
e2e_done
