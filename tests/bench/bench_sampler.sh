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
#
# As root, side by side in the same rounds: the sampler with
# culpert-bpf attached (its otel_memory probes, rate 512 KiB), the uprobe
# floor (an empty BPF program on the malloc family, floor_attach), culpert-bpf
# attached through uprobes, jemalloc's own prof (prof:true,lg_prof_sample:19)
# and heaptrack.  An attacher goes in once the workload waits, before it runs.
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-11}
THREADS=${BENCH_THREADS:-1}
OPS=${BENCH_OPS:-4000000}
LIB=$(realpath "$OUTPUT/libculpert-sampler.so")
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
JEMALLOC=/usr/lib/$MULTIARCH/libjemalloc.so.2
COUNT=$OUTPUT/tests/sampler/uprobe_count

# attach_to PID: what $ATTACH names (floor, culpert) attached to PID, and
# ready; $att its pid, "" for none
attach_to() {
	att=""
	: >"$TMP/a.err"
	case "${ATTACH:-}" in
	floor) "$BENCH/floor_attach" "$1" 2>"$TMP/a.err" & att=$! ready="floor: attached" ;;
	culpert) "$BIN_BPF" attach --pid "$1" -o "$TMP/b.pb.gz" 2>"$TMP/a.err" &
		att=$! ready="culpert-bpf: profiling" ;;
	*) return 0 ;;
	esac
	track "$att"
	wait_for "$TMP/a.err" "$ready" 10
}

# bench CMD...: malloc_bench THREADS OPS under the command prefix CMD (env,
# uprobe_count ...), $ATTACH attached; prints "CPU-NS WALL-NS" per malloc+free
bench() {
	: >"$TMP/w.out"
	with_cpu "$@" "$BENCH/malloc_bench" "$THREADS" "$OPS" >"$TMP/w.out" 2>&1 &
	track $!
	wait_for "$TMP/w.out" ready 5 || return 1
	_w=$!
	_pid=$(awk '/ready/ { print $2; exit }' "$TMP/w.out")
	attach_to "$_pid" || { echo "attach failed: $(head -c 300 "$TMP/a.err")" >&2; return 1; }
	kill -USR1 "$_pid"
	wait "$_w"
	[ -z "$att" ] || wait "$att"
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
	attached) ATTACH=culpert bench env LD_PRELOAD="$LIB" ;;
	attached_jemalloc) ATTACH=culpert bench env LD_PRELOAD="$LIB $JEMALLOC" ;;
	floor) ATTACH=floor bench env ;;
	uprobes) ATTACH=culpert bench env ;;
	jeprof) bench env LD_PRELOAD="$JEMALLOC" MALLOC_CONF=prof:true,lg_prof_sample:19 ;;
	heaptrack) bench heaptrack -o "$TMP/heaptrack" ;;
	esac
}

MODES="none sampler jemalloc sampler_jemalloc"
[ "$(id -u)" = 0 ] && MODES="$MODES probed attached attached_jemalloc floor uprobes"
MODES="$MODES jeprof"
command -v heaptrack >/dev/null && MODES="$MODES heaptrack"
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
# the consumer's side and the alternatives, as root
[ -n "${attached:-}" ] && awk -v n="$none" -v a="$attached" -v f="$floor" -v u="$uprobes" \
    -v aw="$attached_wall" -v fw="$floor_wall" -v uw="$uprobes_wall" 'BEGIN {
	printf "  %-50s %6.1f ns/op (%5.1f)  %.3fx  (goal <= 1.10x), %.1fx below the floor (goal >= 10x)\n", \
		"glibc, sampler + culpert-bpf attach (otel_memory)", a, aw, a / n, (f - n) / (a - n > 0.05 ? a - n : 0.05)
	printf "  %-50s %6.1f ns/op (%5.1f)  %.3fx\n", "glibc, uprobe floor (empty program, malloc family)", f, fw, f / n
	printf "  %-50s %6.1f ns/op (%5.1f)  %.3fx  %.3fx the floor\n", "glibc, culpert-bpf attach (uprobes)", u, uw, u / n, u / f
}'
awk -v j="$jemalloc" -v p="$jeprof" -v pw="$jeprof_wall" -v a="${attached_jemalloc:-}" \
    -v aw="${attached_jemalloc_wall:-}" 'BEGIN {
	if (a != "")
		printf "  %-50s %6.1f ns/op (%5.1f)  %.3fx plain jemalloc (goal: below prof)\n", \
			"jemalloc, sampler + culpert-bpf attach (otel_memory)", a, aw, a / j
	printf "  %-50s %6.1f ns/op (%5.1f)  %.3fx plain jemalloc\n", "jemalloc prof:true,lg_prof_sample:19", p, pw, p / j
}'
[ -n "${heaptrack:-}" ] && awk -v n="$none" -v h="$heaptrack" -v hw="$heaptrack_wall" 'BEGIN {
	printf "  %-50s %6.1f ns/op (%5.1f)  %.3fx  (its interpreter'"'"'s CPU included)\n", "glibc, heaptrack", h, hw, h / n
}'
for m in $MODES; do
	echo "  runs $m (cpu/wall ns/op): $(tr '\n' ',' <"$TMP/$m" | sed 's/,$//; s/,/, /g')"
done
