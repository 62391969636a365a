#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# --sampler inject (docs/inject.md), as root: the peer workload
# (malloc_bench: malloc of 16 B..4 KiB + free) unprofiled, under
# culpert-bpf attach on uprobes, under attach --sampler inject (rate 512
# KiB), and after an injection was released (the library mapped and
# dormant); modes interleaved run by run, the workload's CPU time per
# malloc+free (wait4's rusage), medians of BENCH_RUNS.  Then the cost of
# one sample, on the target, in culpert-bpf and in its BPF programs.  Then
# the injection's latency and the longest thread stop over BENCH_CYCLES
# inject/detach cycles on one process (p50, p99), as -v prints them.
. tests/lib.sh
. tests/inject_lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-7}
OPS=${BENCH_OPS:-3000000}
CYCLES=${BENCH_CYCLES:-100}
# the samples a second of the one-sample runs: under the default --max-stack-rate, whose
# samples past it skip the stack walk
SAMPLE_RATE=${BENCH_SAMPLE_RATE:-5000}
SAMPLE_SECONDS=${BENCH_SAMPLE_SECONDS:-4}

[ "$(id -u)" = 0 ] || { echo "bench_inject: needs root"; exit 0; }

# bench MODE: one run of malloc_bench 1 OPS; prints its CPU ns per malloc+free
bench() {
	: >"$TMP/w.out"
	: >"$TMP/a.err"
	with_cpu "$BENCH/malloc_bench" 1 "$OPS" >"$TMP/w.out" 2>&1 &
	w=$!
	wait_for "$TMP/w.out" ready 5 || return 1
	pid=$(awk '/ready/ { print $2; exit }' "$TMP/w.out")
	att=""
	case "$1" in
	uprobes|inject)
		"$BIN_BPF" attach --pid "$pid" --sampler "$1" \
			-o "$TMP/b.pb.gz" 2>"$TMP/a.err" &
		att=$!
		wait_for "$TMP/a.err" "culpert-bpf: profiling" 20 || return 1 ;;
	detached)
		"$BIN_BPF" attach --pid "$pid" --sampler inject -d 0.1 -o "$TMP/b.pb.gz" \
			2>"$TMP/a.err" || return 1 ;;
	esac
	kill -USR1 "$pid"
	wait "$w"
	[ -z "$att" ] || { kill -INT "$att"; wait "$att"; }
	awk -v n="$OPS" '/^cpu_s/ { printf "%.1f\n", $2 * 1e9 / n }' "$TMP/w.out"
}

run_once() { bench "$1"; }

echo "workload: 1 thread x $OPS x (malloc 16 B..4 KiB + free), $RUNS runs each, interleaved ($(uptime))"
interleave "$RUNS" none uprobes inject detached
for m in none uprobes inject detached; do
	eval "$m=\$(median <\"\$TMP/$m\")"
done
awk -v n="$none" -v u="$uprobes" -v i="$inject" -v d="$detached" 'BEGIN {
	printf "  %-44s %7.1f ns/op\n", "unprofiled", n
	printf "  %-44s %7.1f ns/op  %.2fx\n", "attach, uprobes", u, u / n
	printf "  %-44s %7.1f ns/op  %.2fx  (goal <= 1.10x; %.1fx below uprobes)\n", \
		"attach --sampler inject", i, i / n, (u - n) / (i - n > 0.05 ? i - n : 0.05)
	printf "  %-44s %7.1f ns/op  %.3fx  (goal <= 1.03x)\n", "after release (dormant)", d, d / n
}'

# task_cpu_ns PID: the CPU time PID's threads have had so far, ns (schedstat)
task_cpu_ns() {
	cat "/proc/$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# prog_stats PID: "RUN_TIME_NS RUN_CNT" of the BPF programs PID holds, summed (their fdinfo)
prog_stats() {
	cat "/proc/$1"/fdinfo/* 2>/dev/null |
		awk '/^run_time_ns:/ { t += $2 } /^run_cnt:/ { c += $2 } END { printf "%.0f %.0f\n", t, c }'
}

# BPF run-time statistics on (BPF_ENABLE_STATS through the raw bpf() syscall) for as long
# as the process started here lives; its pid in $stats_pid
stats_on() {
	"$PY" -c 'import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(128)  # type 0: BPF_STATS_RUN_TIME
fd = libc.syscall(321, 32, attr, 4)       # __NR_bpf, BPF_ENABLE_STATS
if fd < 0:
    sys.exit("BPF_ENABLE_STATS: " + os.strerror(ctypes.get_errno()))
print("on", flush=True)
signal.pause()' >"$TMP/stats.out" 2>&1 &
	stats_pid=$!
	track "$stats_pid"
	wait_for "$TMP/stats.out" on 5
}

# one_sample MODE (none, inject): paced_alloc SAMPLE_RATE malloc(64)+free a second, under
# attach --sampler inject --rate 1 (every call a sample); prints the target's CPU ns a call,
# and injected, over the samples of the run's middle (its first and last half second left
# out: culpert-bpf's start, the ring buffer's last reads), culpert-bpf's CPU ns and its BPF
# programs' ns a sample
one_sample() {
	: >"$TMP/p.out"
	: >"$TMP/p.err"
	"$BENCH/paced_alloc" "$SAMPLE_RATE" "$SAMPLE_SECONDS" >"$TMP/p.out" 2>&1 &
	w=$!
	wait_for "$TMP/p.out" ready 5 || return 1
	att=""
	if [ "$1" = inject ]; then
		"$BIN_BPF" attach --pid "$w" --sampler inject --rate 1 -o "$TMP/p.pb.gz" \
			2>"$TMP/p.err" &
		att=$!
		wait_for "$TMP/p.err" "culpert-bpf: profiling" 20 || return 1
	fi
	kill -USR1 "$w"
	if [ -n "$att" ]; then
		# the programs' runs, counted by the kernel, mark the moments
		runs_past() { [ "$(prog_stats "$att" | cut -d' ' -f2)" -ge "$1" ]; }
		wait_until 10 runs_past $((SAMPLE_RATE / 2))
		c0=$(task_cpu_ns "$att")
		p0=$(prog_stats "$att")
		wait_until 30 runs_past $((SAMPLE_RATE * SAMPLE_SECONDS - SAMPLE_RATE / 2))
		c1=$(task_cpu_ns "$att")
		p1=$(prog_stats "$att")
	fi
	wait "$w"
	[ -z "$att" ] || { kill -INT "$att" 2>/dev/null; wait "$att"; }
	awk '/^allocs/ { n = $2 } /^cpu_ns/ { printf "%.1f", $2 / n }' "$TMP/p.out"
	[ -z "$att" ] || echo $((c1 - c0)) $p0 $p1 |
		awk '{ r = $5 - $3; if (r > 0) printf " %.1f %.1f", $1 / r, ($4 - $2) / r }'
	echo
}

echo "one sample: paced_alloc $SAMPLE_RATE x malloc(64)+free a second for $SAMPLE_SECONDS s, every call sampled (--rate 1), $RUNS runs each, interleaved"
if stats_on; then
	run_once() { one_sample "$1"; }
	interleave "$RUNS" none inject
	kill "$stats_pid"
	n=$(median <"$TMP/none")
	# the median of each column of the injected runs
	col() { cut -d' ' -f"$1" "$TMP/inject" | median; }
	awk -v n="$n" -v t="$(col 1)" -v c="$(col 2)" -v b="$(col 3)" 'BEGIN {
		printf "  the target %.2f us a sample (goal <= 3): its CPU a call %.1f ns injected, %.1f unprofiled\n", \
			(t - n) / 1e3, t, n
		printf "  culpert-bpf %.2f us a sample (goal <= 2)\n", c / 1e3
		printf "  of the target'"'"'s, its BPF programs %.2f us (run_time_ns), the trap and the sampler %.2f us\n", \
			b / 1e3, (t - n - b) / 1e3 }'
else
	echo "  no BPF run-time statistics: $(cat "$TMP/stats.out")"
fi

# latency: CYCLES inject/release cycles on one process with blocked and busy threads
"$TARGETS/inject_blocked" 3600 2 >"$TMP/c.out" 2>&1 &
tp=$!
track $tp
wait_for "$TMP/c.out" ready 5 || exit 1
: >"$TMP/lat"
i=0
while [ $i -lt "$CYCLES" ]; do
	"$BIN_BPF" attach --pid "$tp" --sampler inject -d 0.01 -v -o "$TMP/c.pb.gz" 2>"$TMP/c.err" ||
		{ echo "cycle $i failed: $(tail -1 "$TMP/c.err")"; break; }
	inj_times "$TMP/c.err" >>"$TMP/lat"
	i=$((i + 1))
done
kill -USR1 $tp
wait $tp && echo "  the target's own check after $i cycles: ok" || echo "  the target's check FAILED"
echo "  injection over $(wc -l <"$TMP/lat") cycles: p50 $(pct "$TMP/lat" 1 50) ms, p99 $(pct "$TMP/lat" 1 99) ms; longest thread stop p50 $(pct "$TMP/lat" 3 50) us, p99 $(pct "$TMP/lat" 3 99) us; the borrowed thread held p50 $(pct "$TMP/lat" 2 50) ms, p99 $(pct "$TMP/lat" 2 99) ms ($(uptime))"
