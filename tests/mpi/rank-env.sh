#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# rank-env.sh - the program mpirun starts for each rank (tests/e2e/test_mpi.sh): it finds
# the network namespace it runs in and takes the falcon provider's environment for it from
# $MPI_ENV_DIR/<namespace>.env (FALCON_SOCKET, FI_FALCON_ADDR: the daemon of that
# namespace), then runs the MPI program "$@".
set -u
ns=$(ip netns identify $$)
[ -n "$ns" ] && [ -f "${MPI_ENV_DIR:?}/$ns.env" ] ||
	{ echo "rank-env.sh: no environment for namespace '$ns'" >&2; exit 2; }
set -a
. "$MPI_ENV_DIR/$ns.env"
set +a
exec "$@"
