#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Issue 21, items 2 and 6 and falcon_query_device, through two falcond on 127.0.0.1 (no
# root; tests/e2e/bigmsg.c does the work):
#   - falcon_query_device reports the daemons' options (--mtu, --max-conns, --max-clients,
#     and --max-qps / --max-mrs / --max-cqs where falcond has them) and its defaults;
#   - a WRITE one byte above the reported max_msg_size completes LOC_LEN_ERR; a 64 KiB
#     WRITE whose last 8 bytes lie past the region completes REM_ACCESS_ERR, writes nothing;
#   - one WRITE, one READ and one SEND of E2E_BIGMSG_MIB (1024) MiB, one WR each, checksums
#     checked, under --security psp with both daemons dropping 1 % of what they send
#     (--fault-tx drop=1%), memory of falcon_alloc_buf (zero copy); then WRITE and READ
#     under --security none with the same loss, A's memory mapped and B's malloc'd (the
#     daemon reaches it by copy), and E2E_BIGMSG_COPY_MIB (256) MiB malloc'd on both sides.
# Each transfer prints its time and Gbit/s ("xfer: WRITE 1024 MiB in 1.234 s = ...").
#   E2E_BIGMSG_MIB=2048 tests/e2e/test_bigmsg.sh      (make e2e-bigmsg: 2 GiB, the limit)
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-bigmsg
MIB=${E2E_BIGMSG_MIB:-1024}
COPY_MIB=${E2E_BIGMSG_COPY_MIB:-256}
BIG=$E2E_BIN/bigmsg
LOSS="--fault-tx drop=1%"

# the options under test, and what falcon_query_device must say of them
OPTS_A="--security none --mtu 2048 --max-conns 300 --max-clients 9"
WANT_A="mtu=2048 max_conn=300 max_clients=9 max_msg_size=2147483648"
for o in "max-qps 333 max_qp" "max-mrs 555 max_mr" "max-cqs 77 max_cq"; do
	set -- $o
	if "$FALCOND" --help 2>&1 | grep -q -- "--$1 "; then
		OPTS_A="$OPTS_A --$1 $2"
		WANT_A="$WANT_A $3=$2"
	fi
done
# B runs on defaults: the ones this test owns (table sizes are another option's business)
WANT_B="mtu=4096 max_msg_size=2147483648 max_send_sge=4 max_recv_sge=4 max_cqe=65536 \
atomic_cap=1 atomic_size=8"

td_start "$OPTS_A" "--security none" || { e2e_fail "daemons start"; e2e_done; exit 1; }
e2e_check "falcon_query_device reports A's options ($WANT_A)" "$BIG" query "$TD_SOCK_A" $WANT_A
e2e_check "falcon_query_device reports B's defaults" "$BIG" query "$TD_SOCK_B" $WANT_B
td_stop

td_start "--security none" "--security none" || { e2e_fail "daemons start"; e2e_done; exit 1; }
e2e_check "a WRITE above max_msg_size: LOC_LEN_ERR; a WRITE past its region: REM_ACCESS_ERR, nothing written" \
	"$BIG" toolong "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B"
td_stop

# Transfers under loss: xfer DESC MIB MEM OPS
dropped() { "$FALCONCTL" -j -r "$TD_DIR/$1" stats | grep -o '"tx_drop":[0-9]*' | cut -d: -f2; }
xfer() {
	local desc=$1 mib=$2 mem=$3 ops=${4:-} out rc da db
	echo "-- $desc"
	out=$("$BIG" xfer "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" "$mib" "$mem" $ops 2>&1)
	rc=$?
	echo "$out"
	da=$(dropped a) db=$(dropped b)
	if [ $rc -eq 0 ] && [ "${da:-0}" -gt 0 ] && [ "${db:-0}" -gt 0 ]; then
		e2e_ok "$desc (packets dropped on purpose: A ${da}, B ${db})"
	else
		e2e_fail "$desc (rc $rc, dropped A ${da:-?} B ${db:-?})"
	fi
}

td_start "$LOSS --fault-seed 11" "$LOSS --fault-seed 12" ||
	{ e2e_fail "daemons start (psp)"; e2e_done; exit 1; }
xfer "psp, 1 % loss: WRITE, READ, SEND of $MIB MiB, one WR each, zero-copy memory" "$MIB" buf wrs
td_stop

td_start "--security none $LOSS --fault-seed 13" "--security none $LOSS --fault-seed 14" ||
	{ e2e_fail "daemons start (none)"; e2e_done; exit 1; }
xfer "none, 1 % loss: WRITE, READ of $MIB MiB, B's memory reached by copy" "$MIB" mixed
xfer "none, 1 % loss: WRITE, READ of $COPY_MIB MiB, both sides reached by copy" "$COPY_MIB" malloc
td_stop

e2e_done
