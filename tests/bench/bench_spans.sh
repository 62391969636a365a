#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What a span costs: an unprofiled culpert:span_* site (one load and a
# branch), and an enter+exit pair while profiled, next to the floor of an
# empty USDT program on the same sites.  Interleaved runs, medians.
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-7}
LOOPS=${BENCH_SPAN_LOOPS:-200000}
UNPROFILED_LOOPS=${BENCH_SPAN_UNPROFILED_LOOPS:-200000000}

[ "$(id -u)" = 0 ] || { echo "bench_spans: needs root"; exit 1; }

# span_bench LOOPS under MODE; prints "ns_per_pair ns_per_empty_turn"
span_once() {
	: >"$TMP/s.out"
	: >"$TMP/s.err"
	"$BENCH/span_bench" "$2" >"$TMP/s.out" &
	w=$!
	wait_for "$TMP/s.out" ready 5 || return 1
	p=""
	case "$1" in
	floor) "$BENCH/floor_attach" "$w" --usdt 2>"$TMP/s.err" & p=$!
		wait_for "$TMP/s.err" "floor: attached" 10 || return 1 ;;
	culpert) "$BIN_BPF" attach --pid "$w" -o "$TMP/s.pb.gz" 2>"$TMP/s.err" & p=$!
		wait_for "$TMP/s.err" "culpert-bpf: profiling" 10 || return 1 ;;
	esac
	kill -USR1 "$w"
	wait "$w"
	[ -n "$p" ] && wait "$p"
	awk '/^ns_per_pair/ { p = $2 } /^ns_per_empty_turn/ { e = $2 } END { print p, e }' "$TMP/s.out"
}

run_once() {
	case "$1" in
	unprofiled) span_once none "$UNPROFILED_LOOPS" ;;
	*) span_once "$1" "$LOOPS" ;;
	esac
}

interleave "$RUNS" unprofiled floor culpert
site=$(awk '{ print ($1 - $2) / 2 }' "$TMP/unprofiled" | median)
floor=$(awk '{ print $1 - $2 }' "$TMP/floor" | median)
cul=$(awk '{ print $1 - $2 }' "$TMP/culpert" | median)
awk -v s="$site" -v f="$floor" -v c="$cul" 'BEGIN {
	printf "  unprofiled span site (semaphore load + branch): %8.3f ns   (goal <= 2 ns)\n", s
	printf "  enter+exit pair, floor (empty USDT programs):   %8.0f ns\n", f
	printf "  enter+exit pair, culpert-bpf attach:            %8.0f ns   %.2fx the floor\n", c, c / f
	printf "  span bookkeeping in BPF per pair:               %8.0f ns\n", c - f
}'
