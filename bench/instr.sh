#!/usr/bin/env bash
# Instructions per operation per side of engine_bench cases, counted by valgrind's
# callgrind (stable on a noisy machine, unlike time): Ir of a run with N operations minus
# Ir of the same setup with none, divided by N and by 2 (two nodes share the work).
#   bench/instr.sh BENCH_BINARY [N]
set -euo pipefail
bin=$1
n=${2:-20000}
names=("8 B WRITE d64" "8 B WRITE d1" "8 B READ d64" "8 B READ d1" "8 B FetchAdd d64" \
	"8 B FetchAdd d1" "4 KiB WRITE d64" "64 KiB WRITE d16")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ir() { # case ops -> total instructions
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$bin" --instr "$1" "$2" \
		>/dev/null 2>"$tmp/vg.log"
	grep -E '^summary:|^totals:' "$tmp/cg.out" | head -1 | awk '{print $2}'
}
printf '%-20s %10s %16s\n' case ops "instr/op/side"
for c in 0 2 4 6 7; do
	ops=$n
	[ "$c" -eq 7 ] && ops=$((n / 10))
	base=$(ir "$c" 0)
	total=$(ir "$c" "$ops")
	awk -v n="${names[$c]}" -v o="$ops" -v t="$total" -v b="$base" 'BEGIN { printf "%-20s %10d %16.0f\n", n, o, (t - b) / o / 2 }'
done
