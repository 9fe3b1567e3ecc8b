#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The libfabric provider (build/fabric/libfalcon-fi.so) against two falcond in two network
# namespaces on a veth pair (security psp with generated keys):
#   fi_info      libfabric loads it from FI_PROVIDER_PATH (fi_info -l); fi_info -p falcon
#                lists an RDM endpoint with FI_MSG, FI_TAGGED, FI_RMA, FI_ATOMIC and a DGRAM
#                endpoint with FI_MSG, and no MSG endpoint; their limits are falcond's
#   capabilities the C programs of tests/fabric (tagged, RMA, atomics, CQ data, errors,
#                DGRAM, bad input, completion flags and fi_getinfo's hints: fi_contract,
#                a window of rendezvous both ways: fi_rndv_window, a directed receive of a
#                message that came before its sender was inserted: fi_unexp_src, counters:
#                fi_cntr, FI_MULTI_RECV: fi_multi_recv)
#   in-band      fi_inband: a server named by node and service (FI_SOURCE), a client that
#                inserts the info's dest_addr and sends its name in a message (provider
#                and FI_SOCKADDR_IN addresses)
#   fi_pingpong  -e rdm (msg and tagged) 8 B .. 64 KiB and 1 MiB (rendezvous: a tenth of the
#                round trips) and -e dgram 8 B .. 1 KiB, data
#                checked (-c), server in one namespace, client in the other; beside them,
#                in the same run, the same sizes over tcp;ofi_rxm and udp;ofi_rxd (and
#                udp's dgram), whose figures are printed for reference (not counted)
# Needs root (namespaces); says so and counts nothing without.
#   FABRIC_PP_ITERS=1000 tests/e2e/test_fabric.sh
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
e2e_init e2e-fabric
ITERS=${FABRIC_PP_ITERS:-1000}

e2e_need_root "network namespaces"
for t in fi_info fi_pingpong; do
	command -v $t >/dev/null || { e2e_fail "$t is not installed (make deps: libfabric-bin)"; e2e_done; exit 1; }
done

PROV_DIR=$(cd "$BUILD/fabric" && pwd)
[ -f "$PROV_DIR/libfalcon-fi.so" ] || { e2e_fail "no $PROV_DIR/libfalcon-fi.so"; e2e_done; exit 1; }
. scripts/netns-pair.sh
NP_NS_A=ffi-a-$$ NP_NS_B=ffi-b-$$ NP_IF_A=ffa$$ NP_IF_B=ffb$$
. scripts/two-daemons.sh
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ffi.XXXXXX")
cleanup() { td_stop; np_down; rm -rf "$TMP"; }
trap cleanup EXIT
if ! np_up; then
	e2e_fail "create namespaces and veth"
	e2e_done
	exit 1
fi
TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B
td_start || { e2e_fail "daemons start"; e2e_done; exit 1; }

# a sanitizer build of the provider (make SAN=1) loads into fi_info / fi_pingpong only
# with its runtimes preloaded
SAN_ENV=
if ldd "$PROV_DIR/libfalcon-fi.so" | grep -q libasan; then
	SAN_ENV="LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
	SAN_ENV+=" ASAN_OPTIONS=detect_leaks=0"
fi
# the provider's environment on side A / B (no utility providers layered over it)
fenv() { # a|b
	local sock=$TD_SOCK_A cm=$TD_CM_A
	[ "$1" = b ] && sock=$TD_SOCK_B cm=$TD_CM_B
	echo "FI_PROVIDER_PATH=$PROV_DIR FI_PROVIDER=^ofi_rxd,ofi_rxm FALCON_SOCKET=$sock FI_FALCON_ADDR=$cm"
}
# the same for programs that are not sanitizer builds themselves
fenvx() { echo "$(fenv "$1") $SAN_ENV"; }

# ---- fi_info ----
# shellcheck disable=SC2046
env $(fenvx a) fi_info -l >"$TMP/list" 2>&1
grep -q '^falcon:' "$TMP/list" && e2e_ok "fi_info -l lists falcon (loaded from FI_PROVIDER_PATH)" ||
	{ cat "$TMP/list"; e2e_fail "fi_info -l does not list falcon"; }
# shellcheck disable=SC2046
env $(fenvx a) fi_info -p falcon -t FI_EP_RDM -v >"$TMP/rdm" 2>&1
caps=$(grep -m1 '^    caps:' "$TMP/rdm")
echo "RDM $caps"
ok=1
for c in FI_MSG FI_TAGGED FI_RMA FI_ATOMIC FI_SOURCE FI_DIRECTED_RECV FI_REMOTE_COMM; do
	grep -q "$c" <<<"$caps" || ok=0
done
grep -q 'type: FI_EP_RDM' "$TMP/rdm" && grep -q 'cq_data_size: 4' "$TMP/rdm" && [ $ok = 1 ] &&
	e2e_ok "fi_info: an RDM endpoint with FI_MSG FI_TAGGED FI_RMA FI_ATOMIC, 4 B CQ data" ||
	{ cat "$TMP/rdm"; e2e_fail "fi_info -p falcon -t FI_EP_RDM"; }
# shellcheck disable=SC2046
env $(fenvx a) fi_info -p falcon -t FI_EP_DGRAM -v >"$TMP/dgram" 2>&1
caps=$(grep -m1 '^    caps:' "$TMP/dgram")
echo "DGRAM $caps"
grep -q 'type: FI_EP_DGRAM' "$TMP/dgram" && grep -q FI_MSG <<<"$caps" &&
	! grep -qE 'FI_TAGGED|FI_RMA|FI_ATOMIC' <<<"$caps" &&
	e2e_ok "fi_info: a DGRAM endpoint with FI_MSG only" ||
	{ cat "$TMP/dgram"; e2e_fail "fi_info -p falcon -t FI_EP_DGRAM"; }
# the limits are the daemon's (falcon_query_device), not the provider's constants: an RDM
# message or RMA up to falcond's max_msg_size (2^31) in one work request, a datagram up to
# its MTU less the provider's 48-byte header, MRs as one context may hold them
"$E2E_BIN/bigmsg" query "$TD_SOCK_A" >"$TMP/dev" 2>&1
dev() { grep "^query: $1=" "$TMP/dev" | cut -d= -f2; }
want_msg=$(dev max_msg_size) want_dgram=$(( $(dev mtu) - 48 ))
want_mr=$(dev max_mr)
[ "$(dev max_objects)" -lt "$want_mr" ] && want_mr=$(dev max_objects)
echo "falcond: max_msg_size $want_msg, mtu $(dev mtu), MRs per context $want_mr"
[ "$want_msg" = 2147483648 ] && grep -q "max_msg_size: $want_msg\$" "$TMP/rdm" &&
	grep -q "max_msg_size: $want_dgram\$" "$TMP/dgram" && grep -q "mr_cnt: $want_mr\$" "$TMP/rdm" &&
	e2e_ok "fi_info: max_msg_size $want_msg (RDM), $want_dgram (DGRAM), mr_cnt $want_mr: falcond's" ||
	{ cat "$TMP/dev"; grep -E 'max_msg_size|mr_cnt' "$TMP/rdm" "$TMP/dgram"; e2e_fail "fi_info limits"; }
# shellcheck disable=SC2046
if env $(fenvx a) fi_info -p falcon -t FI_EP_MSG >/dev/null 2>&1; then
	e2e_fail "fi_info offers an FI_EP_MSG endpoint"
else
	e2e_ok "no FI_EP_MSG endpoint offered"
fi
# shellcheck disable=SC2046
if env $(fenvx a) FALCON_SOCKET="$TMP/nothing.sock" fi_info -p falcon >/dev/null 2>&1; then
	e2e_fail "fi_info offers falcon without a daemon"
else
	e2e_ok "no daemon: nothing offered"
fi

# ---- the capability programs ----
for t in fi_tagged fi_rma fi_atomic fi_cqdata fi_dgram fi_contract fi_rndv_window fi_unexp_src fi_cntr \
	fi_multi_recv; do
	# shellcheck disable=SC2046
	e2e_check "provider capability: $t" env $(fenv a) timeout 300 "$BUILD/tests/fabric/$t" \
		"$TD_SOCK_A" "$TD_CM_A" "$TD_SOCK_B" "$TD_CM_B"
done

# ---- addresses exchanged in-band (fi_inband): server in A named by its service, client in
# B from node and service, in the provider's format and as FI_SOCKADDR_IN ----
IB_PORT=$(( TD_BASE + 5 ))
for fmt in falcon sockaddr; do
	# shellcheck disable=SC2046
	ip netns exec "$NP_NS_A" env $(fenv a) timeout 60 "$BUILD/tests/fabric/fi_inband" server "$IB_PORT" \
		"$fmt" >"$TMP/ib.s" 2>&1 &
	ibs=$!
	sleep 0.3
	# shellcheck disable=SC2046
	ip netns exec "$NP_NS_B" env $(fenv b) timeout 60 "$BUILD/tests/fabric/fi_inband" client \
		"$NP_ADDR_A" "$IB_PORT" "$fmt" >"$TMP/ib.c" 2>&1
	ibc=$?
	wait $ibs
	ibr=$?
	if [ $ibc = 0 ] && [ $ibr = 0 ]; then
		e2e_ok "in-band address exchange ($fmt addresses)"
	else
		cat "$TMP/ib.s" "$TMP/ib.c"
		e2e_fail "in-band address exchange ($fmt addresses)"
	fi
	IB_PORT=$(( IB_PORT + 1 ))
done

# ---- fi_pingpong between the namespaces ----
PP_PORT=$(( TD_BASE + 7 ))
# pp PROVIDER EP SIZE MODE ENV_A ENV_B: run server in A, client in B; 0 when both ended
# well with every message acknowledged; the client's figure line in $TMP/pp.line
pp() {
	local prov=$1 ep=$2 size=$3 mode=$4 ea=$5 eb=$6 port spid crc src iters=$ITERS
	[ "$size" -ge 1048576 ] && iters=$(( (ITERS + 9) / 10 ))
	port=$PP_PORT
	PP_PORT=$((PP_PORT + 1))
	# shellcheck disable=SC2086
	ip netns exec "$NP_NS_A" env $ea timeout 120 fi_pingpong -p "$prov" -e "$ep" -m "$mode" \
		-B "$port" -S "$size" -I "$iters" -c >"$TMP/pp.s" 2>&1 &
	spid=$!
	for _ in $(seq 200); do # the server's control socket, bounded (10 s)
		ip netns exec "$NP_NS_A" ss -ltnH "sport = :$port" 2>/dev/null | grep -q . && break
		kill -0 $spid 2>/dev/null || break
		sleep 0.05
	done
	# shellcheck disable=SC2086
	ip netns exec "$NP_NS_B" env $eb timeout 120 fi_pingpong -p "$prov" -e "$ep" -m "$mode" \
		-P "$port" -S "$size" -I "$iters" -c "$NP_ADDR_A" >"$TMP/pp.c" 2>&1
	crc=$?
	wait $spid
	src=$?
	grep -E "^[0-9.]+[km]? +[0-9.]+[km]? +=" "$TMP/pp.c" | tail -1 >"$TMP/pp.line"
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || ! [ -s "$TMP/pp.line" ]; then
		echo "   client (rc $crc):"; sed 's/^/     /' "$TMP/pp.c" | tail -5
		echo "   server (rc $src):"; sed 's/^/     /' "$TMP/pp.s" | tail -5
		return 1
	fi
	return 0
}
# usec/xfer and MB/s of the last pp
fig() { awk '{printf "%9s us %9s MB/s", $(NF-1), $(NF-2)}' "$TMP/pp.line"; }

FA=$(fenvx a)
FB=$(fenvx b)
declare -A RES
run_falcon() { # ep mode sizes...
	local ep=$1 mode=$2 s; shift 2
	for s in "$@"; do
		if pp falcon "$ep" "$s" "$mode" "$FA" "$FB"; then
			RES["falcon/$ep/$mode/$s"]=$(fig)
			e2e_ok "fi_pingpong -p falcon -e $ep -m $mode -S $s -c"
		else
			RES["falcon/$ep/$mode/$s"]="failed"
			e2e_fail "fi_pingpong -p falcon -e $ep -m $mode -S $s"
		fi
	done
}
run_ref() { # provider ep sizes...: reference figures, not counted
	local prov=$1 ep=$2 s; shift 2
	for s in "$@"; do
		if pp "$prov" "$ep" "$s" msg "" ""; then
			RES["$prov/$ep/msg/$s"]=$(fig)
		else
			RES["$prov/$ep/msg/$s"]="(did not run)"
		fi
	done
}
RDM_SIZES="8 64 512 4096 65536 1048576"
DGRAM_SIZES="8 64 512 1024"
run_falcon rdm msg $RDM_SIZES
run_falcon rdm tagged $RDM_SIZES
run_falcon dgram msg $DGRAM_SIZES
run_ref "tcp;ofi_rxm" rdm $RDM_SIZES
run_ref "udp;ofi_rxd" rdm $RDM_SIZES
run_ref udp dgram $DGRAM_SIZES

echo
echo "fi_pingpong between two namespaces, $ITERS round trips per size (1 MiB: a tenth), -c (half round trip"
echo "per transfer, MB/s as fi_pingpong prints them; falcon under security psp):"
printf '%-8s %-36s %-36s %-36s %-36s\n' bytes "falcon rdm" "falcon rdm tagged" "tcp;ofi_rxm rdm" "udp;ofi_rxd rdm"
for s in $RDM_SIZES; do
	printf '%-8s %-36s %-36s %-36s %-36s\n' "$s" "${RES[falcon/rdm/msg/$s]}" "${RES[falcon/rdm/tagged/$s]}" \
		"${RES[tcp;ofi_rxm/rdm/msg/$s]}" "${RES[udp;ofi_rxd/rdm/msg/$s]}"
done
printf '%-8s %-36s %-36s\n' bytes "falcon dgram" "udp dgram"
for s in $DGRAM_SIZES; do
	printf '%-8s %-36s %-36s\n' "$s" "${RES[falcon/dgram/msg/$s]}" "${RES[udp/dgram/msg/$s]}"
done
e2e_done
