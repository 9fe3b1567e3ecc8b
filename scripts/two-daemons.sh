# SPDX-License-Identifier: Apache-2.0
# two-daemons.sh - sourced by the demo and the e2e tests: start two falcond on
# 127.0.0.1 (or in given network namespaces) with their runtime directories under one
# temporary directory, wait until both answer, and stop them (and remove it) on exit.
#
#   FALCOND=path FALCONCTL=path . scripts/two-daemons.sh
#   td_start [EXTRA_ARGS_A [EXTRA_ARGS_B]]   sets TD_DIR, TD_SOCK_A/B, TD_CM_B, TD_PID_A/B;
#                                            security psp with fresh keys (td_keys) unless
#                                            the extra args say --security none
#   td_stop                                  (also on EXIT, if the caller set no trap)
# TD_NS_A / TD_NS_B / TD_ADDR_A / TD_ADDR_B: run the daemons in those namespaces on
# those addresses instead of both on 127.0.0.1. TD_NETNS_ENTER=1 enters only the network
# namespace (nsenter --net) instead of ip netns exec's own mount namespace, so that the
# bpffs pins of --io xdp are the host's (bpftool and the test see them).
# TD_PIN_A / TD_PIN_B: a command prefix daemon a / b runs under, e.g. "taskset -c 0"
# (its pid stays TD_PID_A / B: taskset and ip netns exec exec the next program).

TD_ADDR_A=${TD_ADDR_A:-127.0.0.1}
TD_ADDR_B=${TD_ADDR_B:-127.0.0.1}

td_stop() {
	local p
	for p in ${TD_PID_A:-} ${TD_PID_B:-}; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in ${TD_PID_A:-} ${TD_PID_B:-}; do
		# bounded: SIGKILL after 5 s
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	TD_PID_A= TD_PID_B=
	[ -n "${TD_DIR:-}" ] && [ -z "${TD_KEEP:-}" ] && rm -rf "$TD_DIR"
	return 0
}

# a free-looking port pair base: from the pid, away from the ephemeral range
td_ports() {
	TD_BASE=$(( 20000 + ($$ * 4 + RANDOM % 1000 * 4) % 12000 ))
}

td_one() { # name ns addr data_port cm_port extra...
	local name=$1 ns=$2 addr=$3 dport=$4 cport=$5; shift 5
	local pre=()
	if [ -n "$ns" ] && [ -n "${TD_NETNS_ENTER:-}" ]; then
		pre=(nsenter --net="/run/netns/$ns")
	elif [ -n "$ns" ]; then
		pre=(ip netns exec "$ns")
	fi
	local pin="TD_PIN_${name^^}"
	mkdir -p "$TD_DIR/$name"
	# shellcheck disable=SC2086
	${!pin:-} "${pre[@]}" "$FALCOND" --listen "$addr" --port "$dport" --cm-port "$cport" \
		--runtime-dir "$TD_DIR/$name" "$@" 2>"$TD_DIR/$name.log" &
	eval "TD_PID_${name^^}=$!"
}

td_wait() { # name
	local name=$1 i
	for i in $(seq 100); do
		[ -S "$TD_DIR/$name/falconctl.sock" ] && "$FALCONCTL" -r "$TD_DIR/$name" status >/dev/null 2>&1 && return 0
		local pid_var="TD_PID_${name^^}"
		if ! kill -0 "${!pid_var}" 2>/dev/null; then
			echo "falcond $name did not start:" >&2
			cat "$TD_DIR/$name.log" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "falcond $name did not answer within 5 s" >&2
	cat "$TD_DIR/$name.log" >&2
	return 1
}

# identity keys for a and b (security psp, the default): each allows the other
td_keys() {
	local n
	for n in a b; do
		[ -s "$TD_DIR/$n.pub" ] && continue
		"$FALCONCTL" key generate -o "$TD_DIR/$n.key" >"$TD_DIR/$n.pub" || return 1
	done
	TD_SEC_A="--key $TD_DIR/a.key --peer $(cat "$TD_DIR/b.pub")@$TD_ADDR_B:$((TD_BASE + 3))"
	TD_SEC_B="--key $TD_DIR/b.key --peer $(cat "$TD_DIR/a.pub")@$TD_ADDR_A:$((TD_BASE + 1))"
}

td_start() {
	TD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/falcon.XXXXXX")
	td_ports
	td_keys || return 1
	# stop the daemons on exit, unless the caller has its own exit trap (which then
	# calls td_stop itself, beside its other cleanup)
	[ -n "$(trap -p EXIT)" ] || trap td_stop EXIT
	# shellcheck disable=SC2086
	td_one a "${TD_NS_A:-}" "$TD_ADDR_A" $TD_BASE $((TD_BASE + 1)) $TD_SEC_A ${1:-}
	# shellcheck disable=SC2086
	td_one b "${TD_NS_B:-}" "$TD_ADDR_B" $((TD_BASE + 2)) $((TD_BASE + 3)) $TD_SEC_B ${2:-}
	td_wait a && td_wait b || return 1
	TD_SOCK_A=$TD_DIR/a/falcond.sock
	TD_SOCK_B=$TD_DIR/b/falcond.sock
	TD_CM_B=$TD_ADDR_B:$((TD_BASE + 3))
	TD_CM_A=$TD_ADDR_A:$((TD_BASE + 1))
	return 0
}
