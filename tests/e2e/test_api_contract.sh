#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What falcon.h promises when things go wrong (issue 21), through two falcond on 127.0.0.1
# (no root): a CQ of 4 under 64 WRITEs overflows as verbs has it (4 completions, then
# -EOVERFLOW; CQ_ERR and QP_FATAL through the async fd; the receives flushed into the
# healthy CQ; no new QP on the CQ in error), and the daemon's async events are counted;
# then falcond A is killed (SIGKILL) under a client, whose post calls return -ENOTCONN
# within a bound and whose async fd reports DEVICE_FATAL (tests/e2e/api_contract.c).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
. scripts/two-daemons.sh
e2e_init e2e-api-contract

td_start "--security none" "--security none" || { e2e_fail "daemons start"; e2e_done; exit 1; }

e2e_check "CQ overflow: 4 completions then -EOVERFLOW, CQ_ERR and QP_FATAL by the fd, QPs refused on the CQ in error" \
	timeout 60 "$E2E_BIN/api_contract" overflow "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B"
n_ev=$("$FALCONCTL" -j -r "$TD_DIR/a" stats | grep -o '"async_events":[0-9]*' | cut -d: -f2)
[ "${n_ev:-0}" -ge 2 ] && e2e_ok "falcond A sent $n_ev async events to its client" ||
	e2e_fail "falcond A's async_events: ${n_ev:-none}"

e2e_check "falcond killed: post_send, post_recv, post_srq_recv -ENOTCONN within the bound, DEVICE_FATAL by the fd" \
	timeout 60 "$E2E_BIN/api_contract" gone "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" "$TD_PID_A"
# B served that client too: it is still there, and released what the client held
if kill -0 "$TD_PID_B" 2>/dev/null && "$FALCONCTL" -r "$TD_DIR/b" status >/dev/null 2>&1; then
	e2e_ok "falcond B still serves after its peer was killed"
else
	e2e_fail "falcond B is gone"
fi

td_stop
e2e_done
