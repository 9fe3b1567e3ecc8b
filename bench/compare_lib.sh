# SPDX-License-Identifier: Apache-2.0
# compare_lib.sh - sourced by bench/compare.sh: the parts of bench-compare that need no
# root and no network, so tests/bench/test_compare.sh checks them with fake figures:
# where each host's processes run, which poll modes the falcon rows use, the row ids, the
# human table and the JSON.
#
# A row is one line of tab-separated fields:
#   id  stack  latency-us  bandwidth-Gbit/s  M-ops/s  how
# A figure field holds a number or the words that say why there is none ("-" for a figure
# the stack does not have, "n/a (...)", "failed"); the JSON has null for every such word.
# ids: tcp udp_spin udp_epoll ucx_tcp ofi_rxm ofi_rxd falcon_<io>_<security>_<poll>.

BC_POLL_ALL="sleep adaptive busy"
BC_ID_RE='^(tcp|udp_spin|udp_epoll|ucx_tcp|ofi_rxm|ofi_rxd|falcon_(udp|xdp)_(none|psp)_(sleep|adaptive|busy))$'
BC_NUM_RE='^[0-9]+(\.[0-9]+)?$'

# Placement: sets PIN_A / PIN_B (command prefixes for host A's and B's processes) and
# BC_CORES (cores per host, the JSON's cores_per_host). pinned: host A on CPU cpu-a and B
# on cpu-b, one core each; shared: no taskset, each host has all ncpu cores.
# Returns 1 (and says why) on an unknown placement or fewer than 2 CPUs for pinned.
bc_placement() { # placement ncpu cpu-a cpu-b
	case "$1" in
	pinned)
		[ "$2" -ge 2 ] || { echo "placement pinned needs 2 CPUs, this host has $2" >&2; return 1; }
		PIN_A="taskset -c $3" PIN_B="taskset -c $4" BC_CORES=1 ;;
	shared) PIN_A= PIN_B= BC_CORES=$2 ;;
	*) echo "BENCH_PLACEMENT=$1: pinned or shared" >&2; return 1 ;;
	esac
}

# The falcon rows' poll modes: the wanted ones (BENCH_POLL) when falcond's --help lists
# --poll, else "sleep" alone (falcond's one behaviour: it sleeps until a packet or a
# client's doorbell). Sets BC_POLLS and BC_HAS_POLL (1 or 0); returns 1 on a mode that is
# none of sleep, adaptive, busy, or on none wanted.
bc_poll_modes() { # falcond-help-text wanted-modes
	local m
	[ -n "${2// /}" ] || { echo "BENCH_POLL is empty" >&2; return 1; }
	for m in $2; do
		[[ " $BC_POLL_ALL " == *" $m "* ]] ||
			{ echo "BENCH_POLL: $m is none of $BC_POLL_ALL" >&2; return 1; }
	done
	if grep -q -- '--poll' <<<"$1"; then
		BC_HAS_POLL=1 BC_POLLS=$2
	else
		BC_HAS_POLL=0 BC_POLLS=sleep
	fi
}

# The ids a run of these stacks gives, one per line, in the order the run makes them.
# stacks: words of tcp udp ucx ofi falcon_udp falcon_xdp; returns 1 on another word.
bc_ids() { # stacks polls
	local s io sec poll
	for s in $1; do
		case $s in
		tcp) echo tcp ;;
		udp) echo udp_spin; echo udp_epoll ;;
		ucx) echo ucx_tcp ;;
		ofi) echo ofi_rxm; echo ofi_rxd ;;
		falcon_udp | falcon_xdp)
			io=${s#falcon_}
			for sec in none psp; do
				for poll in $2; do echo "falcon_${io}_${sec}_$poll"; done
			done ;;
		*) echo "BENCH_ROWS: $s is none of tcp udp ucx ofi falcon_udp falcon_xdp" >&2; return 1 ;;
		esac
	done
}

# The table of a rows file, with ratios: latency over udp-lat (below 1 is faster),
# bandwidth over tcp-gbps (above 1 is more); "-" where a figure or the baseline is missing.
# fmt: text (for people), md (docs), chart (gnuplot's data: stack, bw ratio, lat ratio, how)
bc_table() { # fmt rows-file udp-lat tcp-gbps
	awk -F'\t' -v fmt="$1" -v ul="$3" -v tb="$4" -v re="$BC_NUM_RE" '
	function isnum(x) { return x ~ re }
	function ratio(x, base) { return isnum(x) && isnum(base) && base > 0 ? sprintf("%.2f", x / base) : "-" }
	{
		lr = ratio($3, ul); br = ratio($4, tb)
		if (fmt == "md")
			printf "| %s | %s | %s | %s | %s | %s | %s |\n", $2, $3, lr, $4, br, $5, $6
		else if (fmt == "chart")
			printf "\"%s\"\t%s\t%s\t%s\n", $2, br, lr, $6
		else
			printf "%-40s %-12s %-6s %-12s %-6s %-8s %s\n", $2, $3, lr, $4, br, $5, $6
	}' "$2"
}
bc_table_head() { # fmt
	if [ "$1" = md ]; then
		echo "| stack | latency, us (half round trip) | / kernel UDP | bandwidth, Gbit/s | / kernel TCP | M ops/s | how |"
		echo "|---|---|---|---|---|---|---|"
	else
		printf "%-40s %-12s %-6s %-12s %-6s %-8s %s\n" stack "lat us" /UDP Gbit/s /TCP "M ops/s" how
	fi
}

# The JSON of a rows file on stdout (jq):
#   {"cores_per_host": N, "placement": "pinned"|"shared", "falcond_poll": true|false,
#    "rows": [{"id": ..., "lat_us": ..., "gbps": ..., "mops": ...}, ...]}
# falcond_poll false: falcond had no --poll, its falcon rows are its one behaviour (sleep).
bc_json() { # rows-file cores-per-host placement has-poll(1|0)
	jq -n --rawfile rows "$1" --argjson cores "$2" --arg placement "$3" \
		--argjson poll "$([ "$4" = 1 ] && echo true || echo false)" --arg re "$BC_NUM_RE" '
		def fig: (. // "") as $f | if ($f | test($re)) then ($f | tonumber) else null end;
		{cores_per_host: $cores, placement: $placement, falcond_poll: $poll,
		 rows: [$rows | split("\n")[] | select(length > 0) | split("\t") |
			{id: .[0], lat_us: (.[2] | fig), gbps: (.[3] | fig), mops: (.[4] | fig)}]}'
}

# Checks a JSON file against the schema above and the ids expected (each exactly once,
# no others); prints each problem, returns 1 if there is one (2: not JSON at all).
bc_check() { # json-file expected-id...
	local file=$1 out; shift
	out=$(jq -r --arg re "$BC_ID_RE" --args '
		def fig: . == null or (type == "number" and . >= 0);
		(if (.cores_per_host | type) == "number" and .cores_per_host >= 1 and
		    .cores_per_host == (.cores_per_host | floor) then empty
		 else "cores_per_host is not a positive integer: \(.cores_per_host)" end),
		(if .placement == "pinned" or .placement == "shared" then empty
		 else "placement is neither pinned nor shared: \(.placement)" end),
		(if (.falcond_poll | type) == "boolean" then empty else "falcond_poll is not a boolean" end),
		(if (.rows | type) == "array" then
			(.rows[] |
			 if type != "object" then "a row is not an object: \(.)"
			 elif (keys != ["gbps", "id", "lat_us", "mops"]) then "row keys \(keys), not id lat_us gbps mops"
			 elif ((.id | type) != "string" or (.id | test($re) | not)) then "unknown id \(.id)"
			 elif ([.lat_us, .gbps, .mops] | all(fig) | not) then "\(.id): a figure neither a number >= 0 nor null"
			 else empty end),
			([.rows[].id | strings] | group_by(.)[] | select(length > 1) | "id \(.[0]) \(length) times"),
			([.rows[].id] as $have | $ARGS.positional[] | select(. as $i | $have | index([$i]) | not) |
			 "id \(.) missing"),
			([.rows[].id | strings] - $ARGS.positional | .[] | "id \(.) not expected")
		 else "rows is not an array" end)' "$@" <"$file" 2>&1)
	local rc=$?
	[ $rc -eq 0 ] || { echo "$file: not JSON: $out" >&2; return 2; }
	[ -z "$out" ] && return 0
	sed "s|^|$file: |" <<<"$out" >&2
	return 1
}
