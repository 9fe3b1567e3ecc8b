#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_compare.sh - bench-compare's rows without root or a network (bench/compare_lib.sh):
# the JSON writer fed fake figures (words become null, numbers stay the table's), the
# schema check (and that it rejects what breaks the schema), the poll-mode fallback
# when falcond has no --poll, the placement and the row ids. Under a second.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. bench/compare_lib.sh
e2e_init test_compare
command -v jq >/dev/null || { e2e_fail "jq missing (make deps)"; e2e_done; exit; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# --- poll modes: BENCH_POLL's when falcond lists --poll, else sleep alone ---
bc_poll_modes "  --poll sleep|adaptive|busy  how falcond waits" "busy sleep" &&
	[ "$BC_HAS_POLL $BC_POLLS" = "1 busy sleep" ] && e2e_ok "poll: --poll listed, modes as asked" ||
	e2e_fail "poll: --poll listed gave '${BC_HAS_POLL:-} ${BC_POLLS:-}'"
bc_poll_modes "  --mtu N   RDMA payload" "sleep adaptive busy" &&
	[ "$BC_HAS_POLL $BC_POLLS" = "0 sleep" ] && e2e_ok "poll: no --poll, sleep alone" ||
	e2e_fail "poll: no --poll gave '$BC_HAS_POLL $BC_POLLS'"
bc_poll_modes "--poll" "sleep spin" 2>/dev/null && e2e_fail "poll: mode spin taken" || e2e_ok "poll: mode spin refused"
bc_poll_modes "--poll" " " 2>/dev/null && e2e_fail "poll: no mode taken" || e2e_ok "poll: no mode refused"

# --- placement ---
bc_placement pinned 2 0 1 && [ "$PIN_A|$PIN_B|$BC_CORES" = "taskset -c 0|taskset -c 1|1" ] &&
	e2e_ok "placement pinned: taskset -c 0 / 1, 1 core per host" || e2e_fail "placement pinned: '$PIN_A|$PIN_B|$BC_CORES'"
bc_placement shared 2 0 1 && [ "$PIN_A|$PIN_B|$BC_CORES" = "||2" ] &&
	e2e_ok "placement shared: no taskset, 2 cores per host" || e2e_fail "placement shared: '$PIN_A|$PIN_B|$BC_CORES'"
bc_placement pinned 1 0 1 2>/dev/null && e2e_fail "placement pinned on 1 CPU taken" || e2e_ok "placement pinned on 1 CPU refused"
bc_placement spread 2 0 1 2>/dev/null && e2e_fail "placement spread taken" || e2e_ok "placement spread refused"

# --- ids ---
ids=$(bc_ids "tcp udp ucx ofi falcon_udp falcon_xdp" "sleep adaptive busy")
[ "$(wc -l <<<"$ids")" = 18 ] && grep -qx falcon_udp_none_busy <<<"$ids" && grep -qx ofi_rxd <<<"$ids" &&
	e2e_ok "ids: 6 + 2 io x 2 security x 3 poll = 18" || e2e_fail "ids: $(echo $ids)"
bc_ids "tcp rdma" sleep >/dev/null 2>&1 && e2e_fail "ids: stack rdma taken" || e2e_ok "ids: stack rdma refused"

# --- the JSON of fake rows: every id, numbers kept, every word null ---
fig() { # id -> the fake row: figures by kind of id, words where a stack has none
	case $1 in
	tcp) printf '%s\tkernel TCP\t-\t19.8\t-\tiperf3\n' "$1" ;;
	udp_*) printf '%s\tkernel UDP\t1.908\t-\t-\tsockperf\n' "$1" ;;
	ucx_tcp) printf '%s\tUCX\t5.804\t16.49\t1.234\tucx\n' "$1" ;;
	ofi_rxd) printf '%s\tlibfabric\tfailed\t6.78\t-\tfi\n' "$1" ;;
	ofi_*) printf '%s\tlibfabric\t3.92\t18.53\t-\tfi\n' "$1" ;;
	falcon_xdp_psp_*) printf '%s\tfalcon\tn/a (falcond fell back to udp)\tn/a (falcond fell back to udp)\tn/a (falcond fell back to udp)\tx\n' "$1" ;;
	falcon_*) printf '%s\tfalcon\t8.60\t30.837\t0.8012\tf\n' "$1" ;;
	esac
}
while read -r id; do fig "$id"; done <<<"$ids" >"$T/rows.tsv"
bc_json "$T/rows.tsv" 1 pinned 0 >"$T/c.json" && python3 -m json.tool "$T/c.json" >/dev/null &&
	e2e_ok "json: written, python3 reads it" || e2e_fail "json: not written or not JSON"
# shellcheck disable=SC2086
e2e_check "json: schema and the 18 ids" bc_check "$T/c.json" $ids
q() { jq -c "$1" "$T/c.json"; }
[ "$(q '.cores_per_host, .placement, .falcond_poll')" = $'1\n"pinned"\nfalse' ] &&
	e2e_ok "json: cores_per_host 1, placement, falcond_poll" || e2e_fail "json: head $(q '[.cores_per_host, .placement, .falcond_poll]')"
[ "$(q '.rows[] | select(.id == "tcp")')" = '{"id":"tcp","lat_us":null,"gbps":19.8,"mops":null}' ] &&
	[ "$(q '.rows[] | select(.id == "falcon_udp_none_busy")')" = '{"id":"falcon_udp_none_busy","lat_us":8.6,"gbps":30.837,"mops":0.8012}' ] &&
	[ "$(q '.rows[] | select(.id == "ofi_rxd") | [.lat_us, .gbps]')" = '[null,6.78]' ] &&
	[ "$(q '[.rows[] | select(.id | startswith("falcon_xdp_psp")) | .lat_us, .gbps, .mops] | unique')" = '[null]' ] &&
	e2e_ok "json: numbers kept, '-', 'failed' and 'n/a (...)' null" || e2e_fail "json: figures $(q '.rows')"
# the table says the same figures as the JSON
bc_table text "$T/rows.tsv" 1.908 19.8 >"$T/table.txt"
grep -q '^falcon .* 8.60  *4.51  *30.837  *1.56  *0.8012 ' "$T/table.txt" && [ "$(wc -l <"$T/table.txt")" = 18 ] &&
	e2e_ok "table: 18 lines, falcon's figures and ratios" || { e2e_fail "table:"; cat "$T/table.txt"; }
bc_table text "$T/rows.tsv" "" "" | grep -q '^kernel TCP .*19.8  *-  ' &&
	e2e_ok "table: no baseline, no ratio" || e2e_fail "table without baselines"

# --- the check fails where it should ---
bad() { # desc jq-edit
	jq "$2" "$T/c.json" >"$T/bad.json"
	# shellcheck disable=SC2086
	if bc_check "$T/bad.json" $ids 2>"$T/bad.err"; then e2e_fail "check took $1"
	else e2e_ok "check refuses $1: $(head -1 "$T/bad.err" | sed 's|^[^:]*: ||')"; fi
}
bad "a figure as a string" '(.rows[] | select(.id == "tcp") | .gbps) |= tostring'
bad "a negative figure" '(.rows[] | select(.id == "tcp") | .gbps) = -1'
bad "a row without mops" 'del(.rows[0].mops)'
bad "a missing id" 'del(.rows[] | select(.id == "udp_epoll"))'
bad "an id twice" '.rows += [.rows[0]]'
bad "an unknown id" '.rows[0].id = "falcon_udp_none_spin"'
bad "cores_per_host 0" '.cores_per_host = 0'
bad "no rows" 'del(.rows)'
echo '{"cores_per_host": 1, "rows": [' >"$T/bad.json"
bc_check "$T/bad.json" 2>/dev/null; [ $? = 2 ] && e2e_ok "check refuses a file that is not JSON" ||
	e2e_fail "check took a file that is not JSON"
e2e_done
