#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# falcond and the CPU (issue 20; README "falcond and the CPU"): bad values of the CPU
# options refused with exit status 2; --help and falcond(8) name the same options; in
# each poll mode two falcond on 127.0.0.1 run every operation (the demo, verified) and
# falconctl status names the mode; WRs posted while the daemon polls ring no doorbell
# (api stats: doorbells beside ring_wrs) and in sleep mode they do; FALCON_POLL_US spares
# a client waiting on its CQ the daemon's wakeups (cq_wakeups); the loop counters
# say the mode ran as named; an idle adaptive daemon uses < 1 % of a core; --cpu pins
# the engine thread; --sched fifo either runs in that class or says what it lacks;
# as root also --poll busy over AF_XDP across a veth (the kernel's busy polling taken,
# no doorbell). No root needed for the rest (the --sched check then sees the refusal).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-poll
PERF=$BUILD/bench/falcon-perf

# ---- options ----
for bad in "--poll foo" "--poll-us 0" "--sched fifo:0" "--sched rr:100" "--sched idle" \
	   "--cpu 99" "--cpu 1-0" "--cpu 0,"; do
	# shellcheck disable=SC2086
	out=$("$FALCOND" $bad --security none 2>&1)
	rc=$?
	opt=${bad%% *}
	if [ $rc -eq 2 ] && grep -q "bad value for ${opt#--}" <<<"$out"; then
		e2e_ok "falcond $bad: exit 2, '$out'"
	else
		e2e_fail "falcond $bad: exit $rc, '$out'"
	fi
done
missing=""
for o in $("$FALCOND" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
	grep -qF -- "$(sed 's/-/\\-/g' <<<"$o")" docs/man/falcond.8 || missing="$missing $o"
done
[ -z "$missing" ] && e2e_ok "every option of falcond --help is in falcond(8)" ||
	e2e_fail "falcond(8) lacks$missing"

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
stat_of() { # daemon key: a counter from falconctl -j stats
	"$FALCONCTL" -j -r "$TD_DIR/$1" stats | grep -o "\"$2\":[0-9]*" | head -1 | cut -d: -f2
}

# ---- each mode ----
svc=5300
for mode in sleep adaptive busy; do
	td_start "--security none --poll $mode" "--security none --poll $mode" ||
		{ e2e_fail "daemons start (--poll $mode)"; continue; }
	st=$("$FALCONCTL" -j -r "$TD_DIR/a" status)
	grep -q "\"poll\":\"$mode\"" <<<"$st" && grep -q '"poll_us":[0-9]' <<<"$st" &&
		e2e_ok "--poll $mode: falconctl status says poll $mode" ||
		e2e_fail "--poll $mode: status: $st"
	e2e_check "--poll $mode: demo, every operation verified" \
		"$BUILD/examples/demo" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" --quick

	# 2000 8-byte WRITEs one at a time (the client busy-polls its CQ): doorbells rung
	# by the posts against the WRs the daemon took from the rings meanwhile
	svc=$((svc + 1))
	timeout 60 "$PERF" -S "$TD_SOCK_B" -p $svc -t write -m lat -s 8 -n 2000 >"$TD_DIR/srv.log" 2>&1 &
	srv=$!
	for _ in $(seq 50); do grep -q "server on" "$TD_DIR/srv.log" 2>/dev/null && break; sleep 0.1; done
	db0=$(stat_of a doorbells); wr0=$(stat_of a ring_wrs)
	out=$(timeout 60 "$PERF" -S "$TD_SOCK_A" -p $svc -j -t write -m lat -s 8 -n 2000 "$TD_CM_B" 2>&1)
	rc=$?
	wait $srv
	db=$(( $(stat_of a doorbells) - db0 )); wrs=$(( $(stat_of a ring_wrs) - wr0 ))
	echo "--poll $mode: $out; $db doorbells for $wrs WRs"
	case $mode in
	sleep)    [ $rc -eq 0 ] && [ $wrs -ge 2000 ] && [ $((db * 4)) -gt $wrs ] ;;
	adaptive) [ $rc -eq 0 ] && [ $wrs -ge 2000 ] && [ $((db * 10)) -lt $wrs ] ;;
	busy)     [ $rc -eq 0 ] && [ $wrs -ge 2000 ] && [ $db -eq 0 ] ;;
	esac && e2e_ok "--poll $mode: $db doorbells for $wrs WRs" ||
		e2e_fail "--poll $mode: $db doorbells for $wrs WRs (falcon-perf exit $rc)"

	polls=$(stat_of a polls); sleeps=$(stat_of a sleeps)
	case $mode in
	sleep)    [ "$polls" = 0 ] && [ "$sleeps" -gt 0 ] ;;
	adaptive) [ "$polls" -gt 0 ] && [ "$sleeps" -gt 0 ] ;;
	busy)     [ "$polls" -gt 0 ] && [ "$sleeps" = 0 ] ;;
	esac && e2e_ok "--poll $mode: loop counters $polls polls, $sleeps sleeps" ||
		e2e_fail "--poll $mode: loop counters $polls polls, $sleeps sleeps"

	if [ $mode = adaptive ]; then
		# the client's side: falcon_wait_cq (-e) sleeps on the CQ's fd, woken by the
		# daemon per completion, unless FALCON_POLL_US lets it poll the ring first
		for pu in 0 300; do
			svc=$((svc + 1))
			FALCON_POLL_US=$pu timeout 60 "$PERF" -S "$TD_SOCK_B" -p $svc -e -t write -m lat -s 8 \
				-n 1000 >"$TD_DIR/srv.log" 2>&1 &
			srv=$!
			for _ in $(seq 50); do grep -q "server on" "$TD_DIR/srv.log" 2>/dev/null && break; sleep 0.1; done
			w0=$(stat_of a cq_wakeups)
			FALCON_POLL_US=$pu timeout 60 "$PERF" -S "$TD_SOCK_A" -p $svc -j -e -t write -m lat \
				-s 8 -n 1000 "$TD_CM_B" >/dev/null 2>&1
			rc=$?
			wait $srv
			w=$(( $(stat_of a cq_wakeups) - w0 ))
			if [ $pu = 0 ]; then
				[ $rc -eq 0 ] && [ $w -gt 500 ]
			else
				[ $rc -eq 0 ] && [ $w -lt 100 ]
			fi && e2e_ok "FALCON_POLL_US=$pu: 1000 WRITEs waited for with $w CQ wakeups" ||
				e2e_fail "FALCON_POLL_US=$pu: $w CQ wakeups for 1000 WRITEs (falcon-perf exit $rc)"
		done
		# idle (its connection to B still open): the window closes, the daemon sleeps
		sleep 0.5
		c0=$(ticks "$TD_PID_A"); t0=$(date +%s%N)
		sleep 3
		c1=$(ticks "$TD_PID_A"); t1=$(date +%s%N)
		pct=$(awk -v t=$((c1 - c0)) -v ns=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
			'BEGIN { printf "%.2f", 100 * t / hz / (ns / 1e9) }')
		awk -v p="$pct" 'BEGIN { exit !(p < 1) }' &&
			e2e_ok "an idle adaptive daemon: $pct % of a core over 3 s" ||
			e2e_fail "an idle adaptive daemon: $pct % of a core over 3 s (< 1 % expected)"
	fi
	td_stop
done

# ---- --cpu and --sched ----
td_start "--security none --cpu 0" "--security none" || e2e_fail "daemons start (--cpu 0)"
if [ -n "${TD_PID_A:-}" ]; then
	allowed=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$TD_PID_A/task/$TD_PID_A/status")
	"$FALCONCTL" -j -r "$TD_DIR/a" status | grep -q '"cpu":"0"' && [ "$allowed" = 0 ] &&
		e2e_ok "--cpu 0: the engine thread runs on CPU 0 only, status says so" ||
		e2e_fail "--cpu 0: engine thread allowed on '$allowed'"
fi
td_stop
td_start "--security none --sched fifo:10" "--security none"
if [ -n "${TD_PID_A:-}" ] && kill -0 "$TD_PID_A" 2>/dev/null &&
   "$FALCONCTL" -j -r "$TD_DIR/a" status | grep -q '"sched":"fifo:10"'; then
	cls=$(awk '{ print $41 }' "/proc/$TD_PID_A/task/$TD_PID_A/stat")
	[ "$cls" = 1 ] && e2e_ok "--sched fifo:10: the engine thread is SCHED_FIFO" ||
		e2e_fail "--sched fifo:10: policy $cls"
elif grep -qE "CAP_SYS_NICE|CAP_IPC_LOCK" "$TD_DIR/a.log"; then
	e2e_ok "--sched fifo:10 refused, the reason named: $(grep -m1 error "$TD_DIR/a.log")"
else
	e2e_fail "--sched fifo:10: neither running in fifo nor a reason"
	cat "$TD_DIR/a.log"
fi
td_stop
# ---- AF_XDP (root): busy mode across a veth, the kernel's busy-poll options taken ----
if [ "$(id -u)" = 0 ]; then
	NP_PREFIX=fpo NP_MTU=3500
	. scripts/netns-pair.sh
	trap 'td_stop; np_down' EXIT
	if np_up; then
		inst="--instance fpo-$$"
		TD_NETNS_ENTER=1 TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B \
			td_start "--io xdp --security none --poll busy $inst-a" \
				 "--io xdp --security none --poll busy $inst-b" || e2e_fail "xdp daemons start"
		st=$("$FALCONCTL" -j -r "$TD_DIR/a" status 2>&1)
		grep -q '"io":"xdp"' <<<"$st" && grep -q '"poll":"busy"' <<<"$st" &&
			grep -q '"socket_busy_poll":"on"' <<<"$st" &&
			e2e_ok "--io xdp --poll busy: status io xdp, poll busy, socket busy poll on" ||
			e2e_fail "--io xdp --poll busy: status $st"
		db0=$(stat_of a doorbells)
		e2e_check "--io xdp --poll busy: demo across the veth, every operation verified" \
			"$BUILD/examples/demo" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" --quick
		db=$(( $(stat_of a doorbells) - db0 ))
		[ $db -eq 0 ] && e2e_ok "--io xdp --poll busy: the demo's WRs rang no doorbell" ||
			e2e_fail "--io xdp --poll busy: $db doorbells"
		td_stop
		TD_NS_A= TD_NS_B= TD_ADDR_A=127.0.0.1 TD_ADDR_B=127.0.0.1
	else
		e2e_fail "create namespaces and veth"
	fi
	np_down
fi

# without CAP_SYS_NICE (and RLIMIT_RTPRIO 0): refused, the reason named, exit 1
if command -v setpriv >/dev/null && [ "$(ulimit -r)" = 0 ]; then
	d=$(mktemp -d "${TMPDIR:-/tmp}/falcon-sched.XXXXXX")
	td_ports
	out=$(timeout 10 setpriv --bounding-set=-sys_nice --inh-caps=-sys_nice "$FALCOND" \
		--listen 127.0.0.1 --port $TD_BASE --cm-port $((TD_BASE + 1)) --runtime-dir "$d" \
		--security none --sched rr:5 2>&1)
	rc=$?
	rm -rf "$d"
	[ $rc -eq 1 ] && grep -q "sched rr:5: Operation not permitted.*CAP_SYS_NICE" <<<"$out" &&
		e2e_ok "--sched rr:5 without CAP_SYS_NICE: exit 1, $(grep -o 'sched rr:5: Operation not permitted' <<<"$out")" ||
		e2e_fail "--sched rr:5 without CAP_SYS_NICE: exit $rc: $out"
fi
e2e_done
