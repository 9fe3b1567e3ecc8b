#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# netns-agent.sh - mpirun's remote launch agent (--mca plm_rsh_agent) for ranks in network
# namespaces on this machine, in place of ssh: "netns-agent.sh HOST COMMAND..." runs the
# command (ssh-style: the words joined, run by sh) in the namespace that $MPI_NS_MAP maps
# HOST to (lines "HOST NAMESPACE"). Used by tests/e2e/test_mpi.sh.
set -u
[ $# -ge 2 ] || { echo "usage: netns-agent.sh HOST COMMAND..." >&2; exit 2; }
host=$1
shift
ns=$(awk -v h="$host" '$1 == h { print $2; exit }' "${MPI_NS_MAP:?}")
[ -n "$ns" ] || { echo "netns-agent.sh: no namespace for host $host in $MPI_NS_MAP" >&2; exit 2; }
exec ip netns exec "$ns" sh -c "$*"
