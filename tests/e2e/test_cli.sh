#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# falconctl as people and scripts use it (issue 26), against two live falcond
# (scripts/two-daemons.sh, no root): --version of the three programs; help for every
# command (falconctl OBJECT --help, falconctl OBJECT COMMAND --help); each list's table
# with its header while empty, -o COLUMNS, fitting 80 columns; -j of every command is JSON
# with machine-shaped values and keys without spaces; exit statuses; bash completion of
# the three programs, ids asked of the daemon the -r on the line names; falcond's log
# lines with an ISO 8601 date and zone, and the journal prefix only on JOURNAL_STREAM's
# own stream.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-cli
FPERF=$BUILD/bench/falcon-perf
command -v jq >/dev/null || { e2e_fail "jq is missing (make deps)"; e2e_done; exit 1; }

# ---- versions ----
v1=$("$FALCONCTL" --version) && v2=$("$FALCOND" --version) && v3=$("$FPERF" --version)
grep -q '^falconctl [0-9]' <<<"$v1" && grep -q '^falcond [0-9]' <<<"$v2" &&
	grep -q '^falcon-perf [0-9]' <<<"$v3" && [ "${v1#* }" = "${v3#* }" ] &&
	e2e_ok "--version: $v1, $v2, $v3" || e2e_fail "--version: '$v1' '$v2' '$v3'"

# ---- help: every command's own, every object's own ----
bad=
while read -r obj verb; do
	out=$("$FALCONCTL" $obj $verb --help) || bad="$bad [$obj $verb: rc]"
	head -1 <<<"$out" | grep -q "^usage: falconctl \[OPTIONS\] $obj${verb:+ $verb}" ||
		bad="$bad [$obj $verb: $(head -1 <<<"$out")]"
	grep -q '^exit status' <<<"$out" || bad="$bad [$obj $verb: no exit status]"
done <<'EOF'
status
peer list
conn list
conn show
conn trace
qp list
mr list
client list
stats
xdp
key generate
key show
key rotate
EOF
[ -z "$bad" ] && e2e_ok "OBJECT COMMAND --help: each command's own usage" || e2e_fail "help:$bad"
out=$("$FALCONCTL" conn --help)
[ "$(grep -c '^  conn ' <<<"$out")" = 3 ] && ! grep -q '^  peer' <<<"$out" &&
	e2e_ok "falconctl conn --help: conn's three commands, nothing else" ||
	e2e_fail "falconctl conn --help: $out"
out=$("$FALCONCTL" conn trace --help)
grep -q 'ring sized to' <<<"$out" && grep -q -- '-o, --output PREFIX' <<<"$out" &&
	e2e_ok "falconctl conn trace --help: what it records and its -o" ||
	e2e_fail "falconctl conn trace --help"
"$FALCONCTL" conn list --help | grep -q '^  \* srtt_us ' &&
	e2e_ok "conn list --help lists its columns, the default ones marked" ||
	e2e_fail "conn list --help: no columns"
"$FALCONCTL" nosuch >/dev/null 2>&1
rc1=$?
"$FALCONCTL" conn nosuch >/dev/null 2>&1
rc2=$?
[ $rc1 = 2 ] && [ $rc2 = 2 ] && e2e_ok "unknown object or command: exit 2" ||
	e2e_fail "unknown command: exit $rc1 / $rc2"

# ---- two daemons, nothing connected yet ----
td_start "" "" || { e2e_fail "daemons start"; e2e_done; exit 1; }
F=("$FALCONCTL" -r "$TD_DIR/a")

declare -A header=(
	[peer]="CM_ADDR SESSION CONNS VERSION REJECTS RESTARTS LAST_SEEN_S_AGO"
	[conn]="ID STATE PEER LOCAL_CID SRTT_US FCWND TX_BYTES RX_BYTES"
	[qp]="CLIENT QPN TYPE STATE REMOTE_QPN MADE_BY SQ_OUTSTANDING RQ_OUTSTANDING"
	[mr]="CLIENT IOVA LEN LKEY RKEY ACCESS BY_COPY"
	[client]="ID PID UID PD MR CQ QP MSGS ERRORS"
)
bad=
for obj in peer conn qp mr client; do
	out=$("${F[@]}" "$obj" list)
	[ "$out" = "${header[$obj]}" ] || bad="$bad [$obj: '$out']"
	[ "$("${F[@]}" -j "$obj" list)" = "[]" ] || bad="$bad [$obj -j]"
	[ "$("${F[@]}" "$obj")" = "${header[$obj]}" ] || bad="$bad [$obj alone]"
done
[ -z "$bad" ] && e2e_ok "empty lists: the header alone (and [] with -j; OBJECT alone = list)" ||
	e2e_fail "empty lists:$bad"
[ "$("${F[@]}" conn list -o id,STATE,srtt_us)" = "ID STATE SRTT_US" ] &&
	[ "$("${F[@]}" conn list -o +qpn)" = "${header[conn]} QPN" ] &&
	e2e_ok "-o COLUMNS and -o +COLUMNS choose the columns" || e2e_fail "-o COLUMNS"
"${F[@]}" conn list -o id,nosuch >/dev/null 2>&1
[ $? = 2 ] && e2e_ok "-o with an unknown column: exit 2" || e2e_fail "-o nosuch"

# ---- a connection: every command's table fits 80 columns, -j is JSON ----
E2E_SERVICE=5031 "$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 6 \
	>"$TD_DIR/steady.log" 2>&1 &
spid=$!
for _ in $(seq 200); do grep -q "^connected" "$TD_DIR/steady.log" && break; sleep 0.05; done
id=$("${F[@]}" -j conn list | jq '.[0].id')
wide=
for obj in peer conn qp mr client; do
	out=$(COLUMNS=80 "${F[@]}" "$obj" list)
	[ "$(wc -l <<<"$out")" -ge 2 ] || wide="$wide [$obj: no rows]"
	awk 'length > 80 { exit 1 }' <<<"$out" || wide="$wide [$obj: $(awk '{print length}' <<<"$out" | sort -n | tail -1)]"
done
out=$(COLUMNS=60 "${F[@]}" conn list)
awk 'length > 60 { exit 1 }' <<<"$out" || wide="$wide [conn at 60: $out]"
[ -z "$wide" ] && e2e_ok "every list with rows fits 80 columns (conn list 60 too)" ||
	e2e_fail "tables too wide:$wide"

mkdir -p "$TD_DIR/keys"
bad=
json() { # DESC CMD...: CMD's stdout is one JSON document
	local desc=$1 out
	shift
	out=$("$@" 2>/dev/null)
	jq -e . >/dev/null 2>&1 <<<"$out" || bad="$bad [$desc: $(head -c 80 <<<"$out")]"
	printf '%s' "$out"
}
json status "${F[@]}" -j status >"$TD_DIR/status.json"
json stats "${F[@]}" -j stats >"$TD_DIR/stats.json"
for c in "peer list" "conn list" "qp list" "mr list" "client list" "conn show $id" "key rotate"; do
	json "$c" "${F[@]}" -j $c >"$TD_DIR/c.json"
done
json "conn trace" "${F[@]}" -j conn trace "$id" 1 >"$TD_DIR/trace.json"
json xdp "${F[@]}" -j xdp >/dev/null
json "key generate" "$FALCONCTL" -j key generate -o "$TD_DIR/keys/k" >"$TD_DIR/k.json"
json "key show" "$FALCONCTL" -j key show "$TD_DIR/keys/k" >/dev/null
[ -z "$bad" ] && e2e_ok "-j of every command is one JSON document" || e2e_fail "-j:$bad"
jq -e '.events > 10 and (.trace[0] | (.event | type == "string") and (.rtt_us | type == "number"))' \
	"$TD_DIR/trace.json" >/dev/null &&
	e2e_ok "conn trace -j: $(jq .events "$TD_DIR/trace.json") events with named fields" ||
	e2e_fail "conn trace -j: $(head -c 200 "$TD_DIR/trace.json")"
spaced=$(cat "$TD_DIR/status.json" "$TD_DIR/stats.json" |
	jq -r '[paths | .[] | strings | select(test("[^a-z0-9_]"))] | unique | .[]')
jq -e '(.security == "psp" or .security == "none") and (.cc == "swift" or .cc == "off")
	and (.rue == "thread" or .rue == "inline") and (.clients | type == "number")' \
	"$TD_DIR/status.json" >/dev/null && [ -z "$spaced" ] &&
	e2e_ok "JSON machine-shaped: security/cc/rue enums, numbers, keys [a-z0-9_] only" ||
	e2e_fail "JSON: status $(jq -c '{security,cc,rue}' "$TD_DIR/status.json"), odd keys: $spaced"
"${F[@]}" -j conn list | jq -e '.[0] | (.local_cid | type == "number") and (.tx_bytes > 0)
	and (.srtt_us > 0) and (.dead == false)' >/dev/null &&
	e2e_ok "conn list -j: numeric CIDs, bytes, smoothed RTT, a boolean" ||
	e2e_fail "conn list -j: $("${F[@]}" -j conn list | head -c 300)"
cid=$("${F[@]}" -j conn list | jq '.[0].local_cid')
grep -q "connection $cid <-> [0-9]* with" "$TD_DIR/a.log" &&
	e2e_ok "logs name CIDs in JSON's base (connection $cid)" ||
	e2e_fail "log: $(grep -m1 'established' "$TD_DIR/a.log")"

"${F[@]}" conn show 99999 >/dev/null 2>&1
rc1=$?
"${F[@]}" -j xdp >/dev/null 2>&1
rc2=$?
[ $rc1 = 1 ] && [ $rc2 = 1 ] && e2e_ok "refused commands (conn show 99999, xdp on udp): exit 1" ||
	e2e_fail "refused: exit $rc1 / $rc2"
# ---- completion (while the connection is there) ----
if [ -f /usr/share/bash-completion/bash_completion ] && PATH=$PWD/$BUILD/cli:$PWD/$BUILD/daemon:$PWD/$BUILD/bench:$PATH bash -c '
	. /usr/share/bash-completion/bash_completion
	. cli/falconctl.bash; . daemon/falcond.bash; . bench/falcon-perf.bash
	comp() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=();
		$(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/"); echo "${COMPREPLY[*]}"; }
	[ "$(comp falconctl -r "'"$TD_DIR/a"'" conn show "")" = "'"$id"'" ] || exit 1
	[ -z "$(comp falconctl -r /nonexistent conn show "")" ] || exit 2
	[ "$(comp falconctl conn l)" = list ] || exit 3
	comp falconctl conn list -o +rt | grep -q "+rto_us" || exit 4
	[ "$(comp falcond --io "")" = "auto xdp udp" ] || exit 5
	comp falcond --me | grep -q -- --metrics || exit 6
	[ "$(comp falcon-perf -t "")" = "write read send atomic" ] || exit 7
	'; then
	e2e_ok "completion: ids from the daemon -r names, -o columns, falcond and falcon-perf"
else
	e2e_fail "completion (check $?)"
fi

wait $spid

# ---- log lines: ISO 8601 date, time and zone; the journal's prefix only on its stream ----
iso='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} info: '
grep -Eq "$iso" "$TD_DIR/a.log" && e2e_ok "log lines: $(head -c 40 "$TD_DIR/a.log")..." ||
	e2e_fail "log lines: $(head -1 "$TD_DIR/a.log")"
td_stop
J=$(mktemp -d "${TMPDIR:-/tmp}/falcon-cli.XXXXXX")
td_ports
journal_run() { # JOURNAL_STREAM value: one falcond started and stopped, its log in $J/j.log
	: >"$J/j.log"
	JOURNAL_STREAM=$1 "$FALCOND" --security none --port "$TD_BASE" --cm-port $((TD_BASE + 1)) \
		--runtime-dir "$J" 2>>"$J/j.log" &
	local p=$!
	for _ in $(seq 100); do [ -S "$J/falconctl.sock" ] && break; sleep 0.05; done
	kill -TERM $p
	wait $p
}
journal_run "1:1"
plain=$(head -1 "$J/j.log")
journal_run "$(stat -c '%d:%i' "$J/j.log")"
jrnl=$(head -1 "$J/j.log")
grep -Eq "$iso" <<<"$plain" && grep -q '^<6>falcond' <<<"$jrnl" &&
	e2e_ok "JOURNAL_STREAM of another stream: plain lines; of stderr's own: <6> prefixes" ||
	e2e_fail "journal prefix: '$plain' / '$jrnl'"
rm -rf "$J"
e2e_done
