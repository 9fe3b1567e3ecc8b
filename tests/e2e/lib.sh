# SPDX-License-Identifier: Apache-2.0
# lib.sh - sourced by the e2e tests: counts checks and prints the summary line that
# tests/run-tests.sh reads ("NAME: N passed, N failed").
#   e2e_init NAME        e2e_check DESC CMD...      e2e_expect DESC COND-CMD...
#   e2e_done             (exit status 1 if a check failed)
E2E_PASS=0
E2E_FAIL=0
BUILD=${BUILD:-build}
FALCOND=${FALCOND:-$BUILD/daemon/falcond}
FALCONCTL=${FALCONCTL:-$BUILD/cli/falconctl}
E2E_BIN=$BUILD/tests/e2e

e2e_init() { E2E_NAME=$1; }

# run CMD, pass when it exits 0 (its output shown)
e2e_check() {
	local desc=$1; shift
	echo "-- $desc"
	if "$@"; then
		E2E_PASS=$((E2E_PASS + 1))
	else
		echo "!! FAILED: $desc"
		E2E_FAIL=$((E2E_FAIL + 1))
	fi
}

e2e_ok() { E2E_PASS=$((E2E_PASS + 1)); echo "-- $1: ok"; }
e2e_fail() { E2E_FAIL=$((E2E_FAIL + 1)); echo "!! FAILED: $1"; }

# Without root: say what is skipped and why, count nothing, exit 0 (make test as root runs it).
#   e2e_need_root "network namespaces and XDP"
e2e_need_root() {
	[ "$(id -u)" = 0 ] && return 0
	echo "$E2E_NAME: SKIPPED: needs root for $1 (run make test as root)"
	echo "$E2E_NAME: 0 passed, 0 failed"
	exit 0
}

e2e_done() {
	echo "$E2E_NAME: $E2E_PASS passed, $E2E_FAIL failed"
	[ "$E2E_FAIL" -eq 0 ]
}

# the daemon's open descriptors and resident memory (kB)
e2e_fds() { ls "/proc/$1/fd" | wc -l; }
e2e_rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
