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

echo "== starting two falcond on 127.0.0.1 (UDP)"
td_start || exit 1
echo "   A: api $TD_SOCK_A   B: api $TD_SOCK_B, connection manager $TD_CM_B"
echo "== client: WRITE, READ, SEND, atomics, each result checked"
"$BUILD/examples/demo" "$TD_SOCK_A" "$TD_SOCK_B" "$TD_CM_B" ${DEMO_ARGS:-}
rc=$?
echo "== falconctl -r $TD_DIR/a stats (excerpt)"
"$FALCONCTL" -r "$TD_DIR/a" stats | sed -n '/^node:/,/tx_io_drop/p' | head -14
td_stop
if [ $rc -ne 0 ]; then
	echo "demo FAILED (daemon logs were in $TD_DIR)" >&2
	exit 1
fi
echo "== daemons stopped; demo passed"
