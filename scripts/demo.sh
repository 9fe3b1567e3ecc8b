#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make demo: two falcond on 127.0.0.1 (UDP, unprivileged ports, a temporary runtime
# directory), one client through every operation with every result verified, a few
# figures, the daemons stopped. No root needed.
set -u
BUILD=${BUILD:-build}
FALCOND=$BUILD/daemon/falcond
FALCONCTL=$BUILD/cli/falconctl
. scripts/two-daemons.sh

echo "== starting two falcond on 127.0.0.1 (UDP), each with a fresh identity key allowing the other"
td_start || exit 1
echo "   A: api $TD_SOCK_A   B: api $TD_SOCK_B, connection manager $TD_CM_B"
"$FALCONCTL" -r "$TD_DIR/a" status | grep -E '^(security|cc|rue):' | sed 's/^/   /'

echo "== client: WRITE, READ, SEND, atomics, each result checked"
"$BUILD/examples/demo" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" ${DEMO_ARGS:-}
rc=$?
echo "== falconctl -r $TD_DIR/a stats (excerpt: the PSP layer)"
"$FALCONCTL" -r "$TD_DIR/a" stats | sed -n '/^psp:/,/rx_auth_fail/p' | head -12
td_stop
if [ $rc -ne 0 ]; then
	echo "demo FAILED (daemon logs were in $TD_DIR)" >&2
	exit 1
fi
echo "== daemons stopped; demo passed"
