#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# falcond --metrics (issue 26), two falcond on 127.0.0.1 (no root): during a transfer
# GET /metrics passes `promtool check metrics` (Debian's prometheus package: the format
# and Prometheus' naming rules), a connection has its own series whose bytes grow and
# whose RTT is measured and moves between scrapes; falconctl stats -o prometheus passes
# too; other paths are 404, other methods 405; an address already taken is an error
# saying so.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-metrics
for t in promtool curl; do
	command -v $t >/dev/null || { e2e_fail "$t is missing (make deps: prometheus, curl)"; e2e_done; exit 1; }
done

td_ports
MP=$((TD_BASE + 100))
td_start "--metrics 127.0.0.1:$MP" "" || { e2e_fail "daemons start"; e2e_done; exit 1; }
URL=http://127.0.0.1:$MP/metrics
grep -q "metrics on http://127.0.0.1:$MP/metrics" "$TD_DIR/a.log" &&
	e2e_ok "falcond says where it serves metrics" || e2e_fail "no metrics line in the log"

# the idle daemon first: valid, no connection series
curl -sf "$URL" >"$TD_DIR/m0.txt"
out=$(promtool check metrics <"$TD_DIR/m0.txt" 2>&1)
[ $? = 0 ] && grep -q '^falcond_info{' "$TD_DIR/m0.txt" && ! grep -q '^falcon_conn_' "$TD_DIR/m0.txt" &&
	e2e_ok "idle: promtool check metrics passes ($(grep -vc '^#' "$TD_DIR/m0.txt") samples)" ||
	e2e_fail "idle /metrics: $out"

# during a transfer: three scrapes a second apart
E2E_SERVICE=5032 "$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 6 \
	>"$TD_DIR/steady.log" 2>&1 &
spid=$!
for _ in $(seq 200); do grep -q "^connected" "$TD_DIR/steady.log" && break; sleep 0.05; done
sleep 0.5
for i in 1 2 3; do
	curl -sf -D "$TD_DIR/h$i.txt" "$URL" >"$TD_DIR/m$i.txt"
	sleep 1
done
"$FALCONCTL" -r "$TD_DIR/a" stats -o prometheus >"$TD_DIR/ctl.txt"
wait $spid
src=$?
bad=
for i in 1 2 3; do
	out=$(promtool check metrics <"$TD_DIR/m$i.txt" 2>&1) || bad="$bad [scrape $i: $out]"
done
out=$(promtool check metrics <"$TD_DIR/ctl.txt" 2>&1) || bad="$bad [falconctl: $out]"
[ -z "$bad" ] && [ $src = 0 ] &&
	e2e_ok "during a transfer: promtool check metrics passes on 3 scrapes and on falconctl stats -o prometheus" ||
	e2e_fail "promtool:$bad (transfer rc $src)"
grep -qi '^content-type: text/plain; version=0.0.4' "$TD_DIR/h1.txt" &&
	e2e_ok "Content-Type: text/plain; version=0.0.4" || e2e_fail "content type: $(grep -i content-type "$TD_DIR/h1.txt")"

# one connection's series: bytes growing, RTT measured and moving
val() { # FILE METRIC: the value of the connection's sample (the initiator's, service 5032)
	local conn
	conn=$(grep '^falcon_conn_info{' "$1" | grep 'service="5032"' | grep -o 'conn="[0-9]*"' | head -1)
	grep "^$2{$conn," "$1" | awk '{print $2}' | head -1
}
b1=$(val "$TD_DIR/m1.txt" falcon_conn_tx_bytes_total) b3=$(val "$TD_DIR/m3.txt" falcon_conn_tx_bytes_total)
r=()
for i in 1 2 3; do r+=("$(val "$TD_DIR/m$i.txt" falcon_conn_rtt_seconds)"); done
echo "tx bytes $b1 -> $b3; smoothed RTT ${r[*]} s"
awk -v a="${b1:-0}" -v b="${b3:-0}" 'BEGIN { exit !(b > a && a > 0) }' &&
	e2e_ok "falcon_conn_tx_bytes_total of the connection grows ($b1 -> $b3)" ||
	e2e_fail "connection bytes: '$b1' -> '$b3'"
awk -v a="${r[0]:-0}" -v b="${r[1]:-0}" -v c="${r[2]:-0}" \
	'BEGIN { exit !(a > 0 && b > 0 && c > 0 && (a != b || b != c)) }' &&
	e2e_ok "falcon_conn_rtt_seconds measured and moving (${r[*]})" ||
	e2e_fail "connection RTT: ${r[*]}"
for m in falcon_conn_rx_bytes_total falcon_conn_tx_packets_total falcon_conn_retransmits_total \
	falcon_conn_drops_total falcon_conn_fcwnd_packets falcon_conn_ncwnd_packets \
	falcon_peer_connections falcon_node_rx_drops_total falcon_cm_hs_refused_total; do
	grep -q "^$m{" "$TD_DIR/m2.txt" || bad="$bad $m"
done
[ -z "$bad" ] && e2e_ok "per-connection, per-peer and by-reason families present" ||
	e2e_fail "missing families:$bad"

# other paths and methods; the address taken
c1=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MP/nosuch")
c2=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL")
[ "$c1" = 404 ] && [ "$c2" = 405 ] && e2e_ok "other paths 404, POST 405" ||
	e2e_fail "status codes $c1 / $c2"
mkdir -p "$TD_DIR/c"
"$FALCOND" --security none --port $((TD_BASE + 20)) --cm-port $((TD_BASE + 21)) \
	--runtime-dir "$TD_DIR/c" --metrics "127.0.0.1:$MP" 2>"$TD_DIR/c.log"
rc=$?
[ $rc != 0 ] && grep -q "metrics 127.0.0.1:$MP: cannot serve there" "$TD_DIR/c.log" &&
	e2e_ok "--metrics on a taken address: exit $rc, saying so" ||
	e2e_fail "--metrics on a taken address: rc $rc, $(cat "$TD_DIR/c.log")"
"$FALCOND" --metrics nonsense --help >/dev/null 2>"$TD_DIR/c.log"
[ $? = 2 ] && e2e_ok "--metrics nonsense: refused" || e2e_fail "--metrics nonsense accepted"
td_stop
e2e_done
