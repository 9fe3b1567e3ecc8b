#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Open MPI (Debian's openmpi-bin 4.1.x) over the falcon libfabric provider: two ranks in
# two network namespaces, each beside its own falcond (security psp), joined by a veth pair.
# mpirun runs in namespace A and starts the ranks' orted through tests/mpi/netns-agent.sh
# (ip netns exec, in place of ssh); its out-of-band TCP crosses the veth. The MPI
# traffic is forced onto falcon: pml cm + mtl ofi with mtl_ofi_provider_include falcon, and
# one-sided goes two ways: osc pt2pt over that pml (btl self only: no TCP BTL is even
# loaded), and osc rdma over the ofi BTL on falcon (btl ofi,self, btl_ofi_provider_include
# falcon). The verbose selection logs are asserted (the ofi MTL / BTL on the falcon
# provider in both ranks, pml cm, no TCP BTL), and both daemons must have set up the
# provider's RC connection, so a run over anything else cannot pass.
#   pingpong   build/tests/mpi/mpi_falcon: 8 B .. 1 MiB, data checked; figures printed
#   allreduce  MPI_Allreduce SUM / MAX, results checked
#   rma        MPI_Put / MPI_Get (fence), MPI_Fetch_and_op / MPI_Accumulate (lock/unlock);
#              rank 0 on its own window too
# osc rdma with one rank per node reaches the rank's own window state through the BTL:
# RMA and atomics from an endpoint to itself, which the provider sends through its daemon
# over a second RC QP, so each daemon's allow-list has its own key beside the other's
# (falcond under psp answering itself; checked first with two endpoints on one daemon).
# Needs root (namespaces); says so and counts nothing without.
#   MPI_PP_ITERS=1000 tests/e2e/test_mpi.sh
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh
e2e_init e2e-mpi
ITERS=${MPI_PP_ITERS:-1000}

e2e_need_root "network namespaces"
for t in mpirun fi_info; do
	command -v $t >/dev/null || { e2e_fail "$t is not installed (make deps: openmpi-bin, libfabric-bin)"; e2e_done; exit 1; }
done
PROV_DIR=$(cd "$BUILD/fabric" && pwd)
PROG=$(cd "$BUILD/tests/mpi" 2>/dev/null && pwd)/mpi_falcon
[ -f "$PROV_DIR/libfalcon-fi.so" ] || { e2e_fail "no $PROV_DIR/libfalcon-fi.so"; e2e_done; exit 1; }
[ -x "$PROG" ] || { e2e_fail "no $PROG (make all)"; e2e_done; exit 1; }
MPI_DIR=$(cd tests/mpi && pwd)

NP_PREFIX=fmp
. scripts/netns-pair.sh
. scripts/two-daemons.sh
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fmp.XXXXXX")
chmod 755 "$TMP"
cleanup() { td_stop; np_down; rm -rf "$TMP"; }
trap cleanup EXIT
if ! np_up; then
	e2e_fail "create namespaces and veth"
	e2e_done
	exit 1
fi
TD_NS_A=$NP_NS_A TD_NS_B=$NP_NS_B TD_ADDR_A=$NP_ADDR_A TD_ADDR_B=$NP_ADDR_B
# td_start's steps, with each daemon's own key in its allow-list too (security psp)
start_daemons() {
	TD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/falcon.XXXXXX") && td_ports && td_keys || return 1
	# shellcheck disable=SC2086
	td_one a "$TD_NS_A" "$TD_ADDR_A" $TD_BASE $((TD_BASE + 1)) $TD_SEC_A \
		--peer "$(cat "$TD_DIR/a.pub")@$TD_ADDR_A:$((TD_BASE + 1))"
	# shellcheck disable=SC2086
	td_one b "$TD_NS_B" "$TD_ADDR_B" $((TD_BASE + 2)) $((TD_BASE + 3)) $TD_SEC_B \
		--peer "$(cat "$TD_DIR/b.pub")@$TD_ADDR_B:$((TD_BASE + 3))"
	td_wait a && td_wait b || return 1
	TD_SOCK_A=$TD_DIR/a/falcond.sock TD_SOCK_B=$TD_DIR/b/falcond.sock
	TD_CM_A=$TD_ADDR_A:$((TD_BASE + 1)) TD_CM_B=$TD_ADDR_B:$((TD_BASE + 3))
}
start_daemons || { e2e_fail "daemons start"; e2e_done; exit 1; }

# a sanitizer build of the provider (make SAN=1) loads into the MPI program only with its
# runtimes preloaded
SAN_ENV=
if ldd "$PROV_DIR/libfalcon-fi.so" | grep -q libasan; then
	SAN_ENV="LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)
ASAN_OPTIONS=detect_leaks=0"
fi
# each namespace's provider environment, read by tests/mpi/rank-env.sh in the rank
for side in a b; do
	ns=$NP_NS_A sock=$TD_SOCK_A cm=$TD_CM_A
	[ $side = b ] && ns=$NP_NS_B sock=$TD_SOCK_B cm=$TD_CM_B
	printf 'FALCON_SOCKET=%s\nFI_FALCON_ADDR=%s\n%s\n' "$sock" "$cm" "$SAN_ENV" >"$TMP/$ns.env"
done
printf '%s %s\n%s %s\n' "$NP_ADDR_A" "$NP_NS_A" "$NP_ADDR_B" "$NP_NS_B" >"$TMP/ns.map"

# ---- a psp daemon answering itself: two endpoints on daemon A (fi_tagged) ----
FT=$BUILD/tests/fabric/fi_tagged
if [ -x "$FT" ]; then
	e2e_check "two endpoints on one daemon under psp (its own key allowed): fi_tagged" \
		ip netns exec "$NP_NS_A" env FI_PROVIDER_PATH="$PROV_DIR" FI_PROVIDER='^ofi_rxd,ofi_rxm' \
		FALCON_SOCKET="$TD_SOCK_A" FI_FALCON_ADDR="$TD_CM_A" timeout 120 "$FT" \
		"$TD_SOCK_A" "$TD_CM_A" "$TD_SOCK_A" "$TD_CM_A"
else
	e2e_fail "no $FT (make all)"
fi

# the common mpirun line: one rank per namespace (the hosts are the veth addresses; A is
# mpirun's own, B is reached through the agent), Open MPI's TCP out-of-band over the veth
SUBNET=${NP_ADDR_A%.*}.0/24
mpi_run() { # OUT [mpirun args...] -- PROGRAM ARGS
	local out=$1; shift
	ip netns exec "$NP_NS_A" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		MPI_NS_MAP="$TMP/ns.map" MPI_ENV_DIR="$TMP" HOME="$TMP" \
		FI_PROVIDER_PATH="$PROV_DIR" FI_PROVIDER='^ofi_rxd,ofi_rxm' \
		timeout -k 5 ${MPI_TIMEOUT:-180} mpirun --allow-run-as-root -np 2 \
		--host "$NP_ADDR_A:1,$NP_ADDR_B:1" --map-by node \
		--mca plm_rsh_agent "$MPI_DIR/netns-agent.sh" \
		--mca oob_tcp_if_include "$SUBNET" \
		-x FI_PROVIDER_PATH -x FI_PROVIDER -x MPI_ENV_DIR \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include falcon \
		--mca mtl_base_verbose 100 --mca pml_base_verbose 100 \
		"$@" >"$out" 2>&1
}

# ---- pingpong, allreduce, one-sided (osc pt2pt) in one job ----
OUT=$TMP/all.out
mpi_run "$OUT" --mca btl self --mca osc pt2pt --mca osc_base_verbose 100 --mca btl_base_verbose 100 \
	"$MPI_DIR/rank-env.sh" "$PROG" all "$ITERS"
rc=$?
[ $rc -eq 0 ] && e2e_ok "mpirun -np 2 (one rank per namespace) mpi_falcon all: exit 0" ||
	{ grep -v 'mca: base\|mca:base' "$OUT" | tail -30; e2e_fail "mpirun ... mpi_falcon all: exit $rc"; }
# what ran: the ofi MTL on falcon in both ranks, pml cm, osc pt2pt, no TCP
n=$(grep -c 'mtl:ofi:provider: falcon$' "$OUT")
[ "$n" = 2 ] && e2e_ok "both ranks' ofi MTL chose the falcon provider" ||
	{ grep 'mtl:ofi\|mtl)' "$OUT"; e2e_fail "ofi MTL on falcon in $n of 2 ranks"; }
n=$(grep -c 'select: component cm selected' "$OUT")
[ "$n" = 2 ] && e2e_ok "both ranks run pml cm" || e2e_fail "pml cm in $n of 2 ranks"
n=$(grep -c 'pt2pt component destroying window' "$OUT")
[ "$n" -ge 2 ] && ! grep -qi 'btl.*tcp\|tcp btl' "$OUT" &&
	e2e_ok "one-sided through osc pt2pt in both ranks; no TCP BTL" ||
	e2e_fail "osc pt2pt in $n ranks, or a TCP BTL loaded"
# the provider's RDM connection between the ranks: an RC QP pair set up by the two daemons
if grep -q 'established (bind' "$TD_DIR/a.log" && grep -q 'established (bind' "$TD_DIR/b.log"; then
	e2e_ok "both daemons carried the ranks' RC connection"
else
	e2e_fail "no RC connection in the daemons' logs"
fi
for part in pingpong allreduce rma; do
	line=$(grep -m1 "^mpi-$part: " "$OUT")
	if [[ $line =~ ^mpi-$part:\ ([0-9]+)\ passed,\ 0\ failed$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
		e2e_ok "$line"
	else
		grep 'FAILED' "$OUT" | head -10
		e2e_fail "mpi-$part: '${line:-no result}'"
	fi
done
echo
echo "MPI ping-pong between two namespaces over falcon (Open MPI $(mpirun --version 2>/dev/null |
	sed -n 's/.*(Open MPI) //p'), pml cm + mtl ofi, security psp), $ITERS round trips per size"
echo "(256 KiB and up: a tenth); half round trip and bandwidth (2 x size x iters / time):"
grep -E '^bytes +iters|^[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+$' "$OUT"
echo

# ---- one-sided again, as osc rdma over the ofi BTL on falcon ----
OUT=$TMP/rdma.out
mpi_run "$OUT" --mca btl ofi,self --mca btl_ofi_provider_include falcon --mca osc rdma \
	--mca btl_base_verbose 100 --mca osc_base_verbose 100 \
	"$MPI_DIR/rank-env.sh" "$PROG" rma
rc=$?
[ $rc -eq 0 ] && e2e_ok "mpirun ... --mca osc rdma --mca btl ofi,self mpi_falcon rma: exit 0" ||
	{ grep -v 'mca: base\|mca:base' "$OUT" | tail -30; e2e_fail "mpirun ... osc rdma: exit $rc"; }
n=$(grep -c 'select: component ofi selected' "$OUT")
[ "$n" -ge 2 ] && ! grep -qi 'btl.*tcp\|tcp btl' "$OUT" &&
	e2e_ok "both ranks' BTL is ofi (on falcon: btl_ofi_provider_include), no TCP BTL" ||
	e2e_fail "the ofi BTL selected in $n ranks, or a TCP BTL loaded"
line=$(grep -m1 '^mpi-rma: ' "$OUT")
if [[ $line =~ ^mpi-rma:\ ([0-9]+)\ passed,\ 0\ failed$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
	e2e_ok "osc rdma: $line"
else
	grep 'FAILED\|btl_ofi' "$OUT" | head -10
	e2e_fail "osc rdma: mpi-rma: '${line:-no result}'"
fi
e2e_done
