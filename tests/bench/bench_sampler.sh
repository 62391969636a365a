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
# half is the cost of one call.  On these shared cores other jobs inflate wall
# time, so each run also reports the workload's CPU time (wait4's rusage, the
# scheduler's exact runtime) per malloc+free, the figure the ratios use; it
# includes start-up and the thread's creation, well under 1% of a run.
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-11}
THREADS=${BENCH_THREADS:-1}
OPS=${BENCH_OPS:-4000000}
LIB=$(realpath "$OUTPUT/libculpert-sampler.so")
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
JEMALLOC=/usr/lib/$MULTIARCH/libjemalloc.so.2
COUNT=$OUTPUT/tests/sampler/uprobe_count

# bench CMD...: malloc_bench THREADS OPS under the command prefix CMD (env,
# uprobe_count ...); prints "CPU-NS WALL-NS" per malloc+free
bench() {
	: >"$TMP/w.out"
	python3 -c 'import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
ru = os.wait4(pid, 0)[2]
print("cpu_s %.6f" % (ru.ru_utime + ru.ru_stime))' "$@" "$BENCH/malloc_bench" "$THREADS" "$OPS" \
		>"$TMP/w.out" 2>&1 &
	track $!
	wait_for "$TMP/w.out" ready 5 || return 1
	kill -USR1 "$(awk '/ready/ { print $2; exit }' "$TMP/w.out")"
	wait $!
	awk -v n=$((THREADS * OPS)) '/^ns_per_op/ { w = $2 } /^cpu_s/ { c = $2 * 1e9 / n }
		END { printf "%.1f %.1f\n", c, w }' "$TMP/w.out"
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
	eval "$m=\$(cut -d' ' -f1 <\"\$TMP/$m\" | median)"
	eval "${m}_wall=\$(cut -d' ' -f2 <\"\$TMP/$m\" | median)"
done
echo "  CPU time per malloc+free (wall time in brackets), medians:"
awk -v n="$none" -v s="$sampler" -v j="$jemalloc" -v sj="$sampler_jemalloc" -v p="${probed:-}" \
    -v nw="$none_wall" -v sw="$sampler_wall" -v jw="$jemalloc_wall" -v sjw="$sampler_jemalloc_wall" \
    -v pw="${probed_wall:-}" 'BEGIN {
	printf "  %-50s %6.1f ns/op (%5.1f)\n", "glibc, unprofiled", n, nw
	printf "  %-50s %6.1f ns/op (%5.1f)  %.3fx  %+.1f ns/op = %+.1f ns/call (goals <= 1.05x, <= 5 ns)\n", \
		"glibc under the sampler, no profiler", s, sw, s / n, s - n, (s - n) / 2
	printf "  %-50s %6.1f ns/op (%5.1f)\n", "jemalloc, unprofiled", j, jw
	printf "  %-50s %6.1f ns/op (%5.1f)  %.3fx  %+.1f ns/op = %+.1f ns/call\n", \
		"jemalloc under the sampler, no profiler", sj, sjw, sj / j, sj - j, (sj - j) / 2
	if (p != "")
		printf "  %-50s %6.1f ns/op (%5.1f)  %.3fx  %+.1f ns/op\n", \
			"glibc, sampler + counting uprobes on its probes", p, pw, p / n, p - n
}'
for m in $MODES; do
	echo "  runs $m (cpu/wall ns/op): $(tr '\n' ',' <"$TMP/$m" | sed 's/,$//; s/,/, /g')"
done
