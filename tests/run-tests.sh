#!/usr/bin/env bash
# Runs test binaries suite by suite and prints one summary line at the end:
#   tests: N passed, N failed
#
#   run-tests.sh --suite NAME [--wrap "CMD"] [--args "ARGS"] [--fuzz SECONDS] BIN... [--suite ...]
#
# A cmocka binary contributes the counts of its "[  PASSED  ] N test(s)." and
# "[  FAILED  ] N test(s)" lines; any other binary must print "N passed, N failed".
# A binary that exits non-zero without reporting a failure, or that reports nothing,
# counts as one failure. A fuzz target (--fuzz) counts as one test: it passes when
# libFuzzer runs it for SECONDS without a crash or sanitizer report.
set -u
total_pass=0
total_fail=0
failed_names=()
suite=""
wrap=""
args=""
fuzz=""
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT

run_one() {
	local bin=$1 name log rc pass=0 fail=0
	name=$(basename "$bin")
	log="$logdir/$suite-$name.log"
	if [ -n "$fuzz" ]; then
		local corpus="build-fuzz/corpus/$name" seeds="tests/fuzz/corpus/$name"
		mkdir -p "$corpus"
		local args=(-max_total_time="$fuzz" -print_final_stats=1 "$corpus")
		[ -d "$seeds" ] && args+=("$seeds")
		echo "== $suite: $name (${fuzz}s)"
		"$bin" "${args[@]}" >"$log" 2>&1
		rc=$?
		grep -E '^(stat::number_of_executed_units|Done)' "$log" | sed 's/^/   /'
		if [ $rc -eq 0 ]; then pass=1; else fail=1; tail -n 60 "$log"; fi
	else
		echo "== $suite: $name"
		# shellcheck disable=SC2086
		$wrap "$bin" $args >"$log" 2>&1
		rc=$?
		cat "$log"
		local p f
		p=$(grep -E '^\[  PASSED  \] [0-9]+ test' "$log" | grep -oE '[0-9]+' | head -1)
		f=$(grep -E '^\[  FAILED  \] [0-9]+ test' "$log" | grep -oE '[0-9]+' | head -1)
		if [ -z "$p$f" ]; then
			local line
			line=$(grep -E '^([A-Za-z0-9_-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
			if [ -n "$line" ]; then
				p=$(sed -E 's/^([A-Za-z0-9_-]+: )?([0-9]+) passed.*/\2/' <<<"$line")
				f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
			fi
		fi
		pass=${p:-0}
		fail=${f:-0}
		if [ $rc -ne 0 ] && [ "$fail" -eq 0 ]; then
			echo "!! $name exited with status $rc without reporting a failed test"
			fail=1
		fi
		if [ -z "$p$f" ] && [ $rc -eq 0 ]; then
			echo "!! $name reported no test result"
			fail=1
		fi
	fi
	total_pass=$((total_pass + pass))
	total_fail=$((total_fail + fail))
	[ "$fail" -gt 0 ] && failed_names+=("$suite/$name")
	return 0
}

while [ $# -gt 0 ]; do
	case "$1" in
	--suite) suite=$2; wrap=""; args=""; fuzz=""; shift 2 ;;
	--args) args=$2; shift 2 ;;
	--wrap) wrap=$2; shift 2 ;;
	--fuzz) fuzz=$2; shift 2 ;;
	*) run_one "$1"; shift ;;
	esac
done

echo
if [ ${#failed_names[@]} -gt 0 ]; then
	echo "failing: ${failed_names[*]}"
fi
echo "tests: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ] && [ "$total_pass" -gt 0 ]
