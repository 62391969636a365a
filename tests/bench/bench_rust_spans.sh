#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What a tracing span costs through culpert-tracing: one enter+exit
# (span.enter() and its guard dropped) under the registry with the layer,
# against the registry alone and the registry with a layer that does
# nothing -- unprofiled (the layer's two semaphore loads and branches, and
# tracing-subscriber's layering) and under culpert-bpf attach (the two USDT
# probes and the span bookkeeping in BPF) -- next to span.h's profiled pair
# (tests/bench/span_bench.c, as bench_spans measures it).  Interleaved runs,
# medians; unprofiled, each run reports the fastest of its 20 rounds of
# LOOPS/20 pairs (see span_bench.rs).
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-7}
LOOPS=${BENCH_SPAN_LOOPS:-200000}
UNPROFILED_LOOPS=${BENCH_SPAN_UNPROFILED_LOOPS:-40000000}
RUST_BENCH=$OUTPUT/rust/release/examples/span_bench

[ "$(id -u)" = 0 ] || { echo "bench_rust_spans: needs root"; exit 1; }

# bench_once BIN PROFILED ARGS...: BIN (a span_bench) with ARGS, under
# culpert-bpf attach when PROFILED is 1; prints its "ns_..." values in the
# order it printed them
bench_once() {
	bin=$1
	profiled=$2
	shift 2
	: >"$TMP/s.out"
	: >"$TMP/s.err"
	"$bin" "$@" >"$TMP/s.out" &
	w=$!
	wait_for "$TMP/s.out" ready 5 || return 1
	p=""
	if [ "$profiled" = 1 ]; then
		"$BIN_BPF" attach --pid "$w" -o "$TMP/s.pb.gz" 2>"$TMP/s.err" &
		p=$!
		wait_for "$TMP/s.err" "culpert-bpf: profiling" 10 || return 1
	fi
	kill -USR1 "$w"
	wait "$w"
	[ -n "$p" ] && wait "$p"
	awk '/^ns_/ { printf "%s ", $2 } END { print "" }' "$TMP/s.out"
}

run_once() {
	case "$1" in
	# "layer plain empty_layer empty", ns per turn
	rust_unprofiled) bench_once "$RUST_BENCH" 0 $((UNPROFILED_LOOPS / 20)) 20 ;;
	rust_profiled) bench_once "$RUST_BENCH" 1 "$LOOPS" 1 ;;
	# "pair empty"
	c_profiled) bench_once "$BENCH/span_bench" 1 "$LOOPS" ;;
	esac
}

interleave "$RUNS" rust_unprofiled rust_profiled c_profiled
col() { awk -v c="$2" '{ print $c }' "$TMP/$1" | median; }
diff_cols() { awk -v a="$2" -v b="$3" '{ print $a - $b }' "$TMP/$1" | median; }
plain=$(col rust_unprofiled 2)
empty=$(col rust_unprofiled 3)
layer=$(col rust_unprofiled 1)
over_plain=$(diff_cols rust_unprofiled 1 2)
over_empty=$(diff_cols rust_unprofiled 1 3)
rprof=$(diff_cols rust_profiled 1 2)
cprof=$(diff_cols c_profiled 1 2)
awk -v p="$plain" -v e="$empty" -v l="$layer" -v op="$over_plain" -v oe="$over_empty" \
	-v r="$rprof" -v c="$cprof" 'BEGIN {
	printf "  enter+exit, registry alone:                          %8.2f ns\n", p
	printf "  enter+exit, registry + a layer that does nothing:    %8.2f ns\n", e
	printf "  enter+exit, registry + culpert layer, unprofiled:    %8.2f ns\n", l
	printf "  the layer unprofiled, over the registry alone:       %8.2f ns   (goal <= 2 ns)\n", op
	printf "  the layer unprofiled, over a layer doing nothing:    %8.2f ns\n", oe
	printf "  the layer under culpert-bpf attach, per pair:        %8.0f ns\n", r
	printf "  span.h enter+exit under culpert-bpf attach:          %8.0f ns   (layer %.2fx)\n", c, r / c
}'
