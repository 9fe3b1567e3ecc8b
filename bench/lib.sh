# SPDX-License-Identifier: Apache-2.0
# lib.sh - sourced by the netns benchmarks (netns_compare.sh, compare.sh): run a server in
# namespace B and a client in A and pull the figures out of what they print. The caller
# sets WORK (a scratch directory), SECS (seconds per figure), PERF (falcon-perf), the
# namespaces of scripts/netns-pair.sh (NP_*), the daemons of scripts/two-daemons.sh (TD_*)
# and BL_NAME (how its messages start). Every wait is bounded.
# PIN_A / PIN_B (default none): a command prefix, e.g. "taskset -c 0", that every process
# of host A / host B (in_a, in_b, falcon-perf's client / server) runs under.

in_a() { ${PIN_A:-} ip netns exec "$NP_NS_A" "$@"; }
in_b() { ${PIN_B:-} ip netns exec "$NP_NS_B" "$@"; }

# until a server prints its ready line (5 s at most)
ready() { # file pattern
	for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	echo "$BL_NAME: a server did not start:" >&2
	cat "$1" >&2
	return 1
}
# the value of "key":number in a JSON line
jnum() { grep -o "\"$1\":[0-9.e+-]*" <<<"$2" | head -1 | cut -d: -f2; }

# falcon-perf: server through daemon B, client through daemon A, on service SVC (each
# run its own: this runs in $(...), nothing it sets survives); prints the client's JSON.
# Each has 5 x SECS and 30 s to finish (connection, warmup, a QP's retries running out).
falcon() { # service args...
	local svc=$1; shift
	local bound=$((SECS * 5 + 30))
	local slog="$WORK/perf-srv-$svc.log" clog="$WORK/perf-cli-$svc.log"
	${PIN_B:-} timeout "$bound" "$PERF" -S "$TD_SOCK_B" -p "$svc" "$@" >"$slog" 2>&1 &
	local srv=$!
	ready "$slog" "server on" || { kill $srv; return 1; }
	local out
	out=$(${PIN_A:-} timeout "$bound" "$PERF" -S "$TD_SOCK_A" -p "$svc" -j -D "$SECS" "$@" "$TD_CM_B" 2>"$clog")
	local rc=$?
	if [ $rc -ne 0 ]; then
		kill $srv 2>/dev/null
		wait $srv 2>/dev/null
		echo "$BL_NAME: falcon-perf $* failed:" >&2
		cat "$clog" "$slog" >&2
		return 1
	fi
	wait $srv
	echo "$out" | tail -1
}

# sockperf: server in B, client in A, SP_MSG-byte messages (default 16); prints the
# client's output
sockperf_run() { # port mode [--tcp]   (runs in $(...): nothing it sets survives)
	local port=$1 mode=$2; shift 2
	# one exec chain (not in_b, a function: backgrounded it is a subshell that kill
	# would end without its server)
	${PIN_B:-} ip netns exec "$NP_NS_B" sockperf server -i "$NP_ADDR_B" -p "$port" "$@" \
		>"$WORK/sp-srv-$port.log" 2>&1 &
	local srv=$!
	ready "$WORK/sp-srv-$port.log" "to block on socket" || { kill $srv; return 1; }
	in_a sockperf "$mode" -i "$NP_ADDR_B" -p "$port" -m "${SP_MSG:-16}" -t "$SECS" "$@" 2>&1
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
}
sp_pct() { grep -o "percentile $1 = *[0-9.]*" <<<"$2" | awk '{print $NF}'; }
sp_rate() { grep -o "Message Rate is [0-9]*" <<<"$1" | awk '{print $NF}'; }

