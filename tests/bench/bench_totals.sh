#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What exact span totals (bpf/totals.bpf.h) cost: per allocator call, attach
# against attach --no-exact (today's attach without them: the allocation
# path is the same code, so the difference is noise around 0), next to the
# empty-uprobe floor; and per span enter+exit pair, where their bookkeeping
# runs.  Interleaved runs, medians.
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-7}
THREADS=${BENCH_THREADS:-4}
OPS=${BENCH_OPS:-1000000}
LOOPS=${BENCH_SPAN_LOOPS:-200000}

[ "$(id -u)" = 0 ] || { echo "bench_totals: needs root"; exit 1; }

# span_bench LOOPS under culpert-bpf attach ARGS; prints ns per enter+exit pair
span_pair() {
	: >"$TMP/s.out"
	: >"$TMP/s.err"
	"$BENCH/span_bench" "$LOOPS" >"$TMP/s.out" &
	w=$!
	wait_for "$TMP/s.out" ready 5 || return 1
	"$BIN_BPF" attach --pid "$w" -o "$TMP/s.pb.gz" "$@" 2>"$TMP/s.err" &
	p=$!
	wait_for "$TMP/s.err" "culpert-bpf: profiling" 10 || return 1
	kill -USR1 "$w"
	wait "$w"
	wait "$p"
	awk '/^ns_per_pair/ { p = $2 } /^ns_per_empty_turn/ { e = $2 } END { print p - e }' \
		"$TMP/s.out"
}

run_once() {
	case "$1" in
	floor) workload "$THREADS" "$OPS" "floor: attached" "$BENCH/floor_attach" PID ;;
	attach) workload "$THREADS" "$OPS" "culpert-bpf: profiling" \
		"$BIN_BPF" attach --pid PID -o "$TMP/b.pb.gz" ;;
	noexact) workload "$THREADS" "$OPS" "culpert-bpf: profiling" \
		"$BIN_BPF" attach --pid PID --no-exact -o "$TMP/b.pb.gz" ;;
	pair) span_pair ;;
	pair_noexact) span_pair --no-exact ;;
	esac
}

MODES="floor attach noexact pair pair_noexact"
echo "workload: $THREADS threads x $OPS x (malloc 16 B..8 KiB + free); span_bench $LOOPS pairs;" \
	"$RUNS runs each, interleaved"
interleave "$RUNS" $MODES
for m in $MODES; do
	eval "$m=\$(median <\"\$TMP/$m\")"
done
awk -v f="$floor" -v a="$attach" -v n="$noexact" -v p="$pair" -v pn="$pair_noexact" 'BEGIN {
	printf "  %-46s %9.1f ns/op\n", "floor: empty uprobe on the malloc family", f
	printf "  %-46s %9.1f ns/op  %.3fx the floor\n", "attach --no-exact (no exact totals)", n, n / f
	printf "  %-46s %9.1f ns/op  %.3fx the floor\n", "attach (exact totals)", a, a / f
	printf "  %-46s %+9.1f ns/op  %+.2f%% (goal <= 3%%)\n", "exact totals per allocator call", \
		a - n, 100 * (a - n) / n
	printf "  %-46s %9.0f ns\n", "span enter+exit pair, attach --no-exact", pn
	printf "  %-46s %9.0f ns\n", "span enter+exit pair, attach", p
	printf "  %-46s %+9.0f ns per pair\n", "exact totals per span", p - pn
}'
for m in $MODES; do
	echo "  runs $m: $(tr '\n' ' ' <"$TMP/$m")"
done
