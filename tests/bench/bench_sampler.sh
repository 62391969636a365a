#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What libculpert-sampler.so costs the peer workload (malloc_bench: malloc of
# 16 B..8 KiB + free) with no profiler attached, over glibc and over jemalloc,
# next to the workload without it; and, as root, with counting perf uprobes on
# its two probes (semaphores raised: sampled calls fire the probes and keep the
# set of sampled pointers, every free asks the set), the part of an attach that
# is the sampler's.  Modes are interleaved run by run; each figure is the
# median of BENCH_RUNS runs.  malloc_bench reports wall time per malloc+free
# over all its threads: on one thread that is the cost of one pair, of which
# half is the cost of one call.
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-11}
THREADS=${BENCH_THREADS:-1}
OPS=${BENCH_OPS:-4000000}
LIB=$(realpath "$OUTPUT/libculpert-sampler.so")
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
JEMALLOC=/usr/lib/$MULTIARCH/libjemalloc.so.2
COUNT=$OUTPUT/tests/sampler/uprobe_count

# bench CMD...: malloc_bench THREADS OPS under the command prefix CMD (env, uprobe_count ...)
bench() {
	: >"$TMP/w.out"
	"$@" "$BENCH/malloc_bench" "$THREADS" "$OPS" >"$TMP/w.out" 2>&1 &
	track $!
	wait_for "$TMP/w.out" ready 5 || return 1
	kill -USR1 "$(awk '/ready/ { print $2; exit }' "$TMP/w.out")"
	wait $!
	awk '/^ns_per_op/ { print $2 }' "$TMP/w.out"
}

run_once() {
	case "$1" in
	none) bench env ;;
	sampler) bench env LD_PRELOAD="$LIB" ;;
	jemalloc) bench env LD_PRELOAD="$JEMALLOC" ;;
	sampler_jemalloc) bench env LD_PRELOAD="$LIB $JEMALLOC" ;;
	probed) bench "$COUNT" "$LIB" otel_memory -- env LD_PRELOAD="$LIB" ;;
	esac
}

MODES="none sampler jemalloc sampler_jemalloc"
[ "$(id -u)" = 0 ] && MODES="$MODES probed"
echo "workload: $THREADS thread(s) x $OPS x (malloc 16 B..8 KiB + free), rate 512 KiB, $RUNS runs each, interleaved"
interleave "$RUNS" $MODES
for m in $MODES; do
	eval "$m=\$(median <\"\$TMP/$m\")"
done
awk -v n="$none" -v s="$sampler" -v j="$jemalloc" -v sj="$sampler_jemalloc" -v p="${probed:-}" 'BEGIN {
	printf "  %-52s %7.1f ns/op\n", "glibc, unprofiled", n
	printf "  %-52s %7.1f ns/op  %.3fx  +%.1f ns/op = +%.1f ns/call (goal <= 1.05x, <= 5 ns/call)\n", \
		"glibc under the sampler, no profiler", s, s / n, s - n, (s - n) / 2
	printf "  %-52s %7.1f ns/op\n", "jemalloc, unprofiled", j
	printf "  %-52s %7.1f ns/op  %.3fx  +%.1f ns/op = +%.1f ns/call\n", \
		"jemalloc under the sampler, no profiler", sj, sj / j, sj - j, (sj - j) / 2
	if (p != "")
		printf "  %-52s %7.1f ns/op  %.3fx  +%.1f ns/op\n", \
			"glibc, sampler + counting uprobes on its probes", p, p / n, p - n
}'
for m in $MODES; do
	echo "  runs $m (ns/op): $(tr '\n' ' ' <"$TMP/$m")"
done
