#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Two network namespaces on a veth pair (MTU 9000), a falcond in each: the opcode x size
# matrix, the spec flows of RDMA 6.6.1-6.6.5 with the daemons reordering, and a chaos run (drop
# 5 %, duplicate 1 %, reorder 2 % on both daemons' transmit side) of E2E_CHAOS_MIB MiB of
# verified WRITEs and READs. Needs root (namespaces); says so and counts nothing without.
#   E2E_CHAOS_MIB=1024 tests/e2e/test_netns.sh     (make e2e-chaos)
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
e2e_init e2e-netns
CHAOS_MIB=${E2E_CHAOS_MIB:-64}

e2e_need_root "network namespaces"

. scripts/netns-pair.sh
. scripts/two-daemons.sh
cleanup() { td_stop; np_down; }
trap cleanup EXIT
if ! np_up; then
	e2e_fail "create namespaces and veth"
	e2e_done
	exit 1
fi
TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B

# clean daemons, Swift in the RUE thread (as in the chaos run): matrix
td_start "--mtu 8192 --rue thread" "--mtu 8192 --rue thread" || { e2e_fail "daemons start"; e2e_done; exit 1; }
e2e_check "matrix across the veth (1 B .. 1 MiB, every opcode)" "$E2E_BIN/e2e_client" matrix "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B"
td_stop

# daemons that reorder (and lose a little): the spec flows
td_start "--mtu 4096 --fault-tx reorder=10%,drop=1% --fault-seed 11" "--mtu 4096 --fault-tx reorder=10%,drop=1% --fault-seed 12" || { e2e_fail "daemons start"; e2e_done; exit 1; }
e2e_check "spec flows 6.6.1-6.6.3, 6.6.5 through the API" "$E2E_BIN/e2e_client" flows "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B"
e2e_check "QPs by create/modify, UD, XRC across the veth" "$E2E_BIN/qp_types" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_A" "$TD_CM_B"
st_a=$("$FALCONCTL" -j -r "$TD_DIR/a" stats)
st_b=$("$FALCONCTL" -j -r "$TD_DIR/b" stats)
num() { grep -o "\"$1\":[0-9]*" <<<"$2" | head -1 | cut -d: -f2; }
echo "A: tx_reorder $(num tx_reorder "$st_a") tx_drop $(num tx_drop "$st_a"); B: rnr_sent $(num rnr_sent "$st_b") nak_sent $(num nak_sent "$st_b")"
[ "$(num tx_reorder "$st_a")" -gt 0 ] && e2e_ok "packets were reordered on the way" || e2e_fail "no reordering happened"
[ "$(num rnr_sent "$st_b")" -gt 0 ] && e2e_ok "the target answered RNR (6.6.3)" || e2e_fail "no RNR sent"
[ "$(num nak_sent "$st_b")" -gt 0 ] && e2e_ok "the target NACKed the bad R_Key (6.6.5)" || e2e_fail "no NACK sent"
td_stop

# 6.6.4 pull RNR: B can hold one READ answer and has one data credit per connection, so
# READs posted together are refused with pull RNR at B and retried there by Falcon; the
# daemons still reorder
td_start "--fault-tx reorder=10% --fault-seed 13" "--fault-tx reorder=10% --fault-seed 14 --pending-resp 1 --pull-defer 0 --conn-data-credits 1" || { e2e_fail "daemons start"; e2e_done; exit 1; }
e2e_check "spec flow 6.6.4: 256 READs against a target short of room" "$E2E_BIN/e2e_client" pullrnr "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" 256
st_b=$("$FALCONCTL" -j -r "$TD_DIR/b" stats)
echo "B: pull_rnr_busy $(num pull_rnr_busy "$st_b")"
[ "$(num pull_rnr_busy "$st_b")" -gt 0 ] && e2e_ok "the target refused pulls with RNR, Falcon retried them (6.6.4)" || e2e_fail "no pull RNR at the target"
td_stop

# chaos
td_start "--fault-tx drop=5%,dup=1%,reorder=2% --fault-seed 21 --rue thread" "--fault-tx drop=5%,dup=1%,reorder=2% --fault-seed 22 --rue thread" || { e2e_fail "daemons start"; e2e_done; exit 1; }
e2e_check "chaos: $CHAOS_MIB MiB WRITE + READ verified, drop 5 % dup 1 % reorder 2 %" "$E2E_BIN/e2e_client" chaos "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" "$CHAOS_MIB"
st_a=$("$FALCONCTL" -j -r "$TD_DIR/a" stats)
echo "A: fault tx_drop $(num tx_drop "$st_a") tx_dup $(num tx_dup "$st_a") tx_reorder $(num tx_reorder "$st_a")"
"$FALCONCTL" -r "$TD_DIR/a" conn list 2>/dev/null | head -3
[ "$(num tx_drop "$st_a")" -gt 0 ] && e2e_ok "the chaos knobs dropped packets" || e2e_fail "no drops happened"
# all of it encrypted: security psp sealed every packet and opened every one it took
echo "A: psp tx_sealed $(num tx_sealed "$st_a") rx_opened $(num rx_opened "$st_a") rx_auth_fail $(num rx_auth_fail "$st_a")"
"$FALCONCTL" -j -r "$TD_DIR/a" status | grep -q '"security":"psp' && [ "$(num tx_sealed "$st_a")" -gt 10000 ] &&
	[ "$(num rx_auth_fail "$st_a")" = 0 ] && e2e_ok "security psp: every packet sealed, none forged" ||
	e2e_fail "the chaos run was not under psp"
td_stop

# key rotation every second during a transfer (spec 9.2.2.3): nothing lost or doubled
ROTATE_S=${E2E_ROTATE_S:-8}
td_start "--key-rotate-s 1" "--key-rotate-s 1" || { e2e_fail "daemons start"; e2e_done; exit 1; }
# a starved daemon (a loaded host) rotates later than every second: the transfer goes on
# in rounds of ROTATE_S s, each verified, until the rotations are there (3 rounds at most)
for round in 1 2 3; do
	e2e_check "PSP keys rotated every second during a $ROTATE_S s transfer (round $round): every WR verified once" \
		"$E2E_BIN/e2e_client" steady "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" "$ROTATE_S"
	st_a=$("$FALCONCTL" -j -r "$TD_DIR/a" stats)
	rot=$(num rotations "$st_a"); ack=$(num keys_acked "$st_a")
	[ "${rot:-0}" -ge $((ROTATE_S - 2)) ] && [ "${ack:-0}" -ge $((ROTATE_S - 3)) ] && break
done
echo "A: $rot rotations, $ack acknowledged, old phase refused $(num rx_old_phase "$st_a"), auth failures $(num rx_auth_fail "$st_a")"
[ "${rot:-0}" -ge $((ROTATE_S - 2)) ] && [ "${ack:-0}" -ge $((ROTATE_S - 3)) ] &&
	e2e_ok "keys rotated and acknowledged during the transfer" || e2e_fail "too few rotations ($rot, $ack acked)"
td_stop
e2e_done
