#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# --sampler inject (docs/inject.md), as root: the peer workload
# (malloc_bench: malloc of 16 B..4 KiB + free) unprofiled, under
# culpert-bpf attach on uprobes, under attach --sampler inject (rate 512
# KiB), and after an injection was released (the library mapped and
# dormant); modes interleaved run by run, the workload's CPU time per
# malloc+free (wait4's rusage), medians of BENCH_RUNS.  From the injected
# runs, the cost of one sample: on the target, in culpert-bpf, in its BPF
# programs (run-time statistics on).  Then the injection's latency and the
# longest thread stop over BENCH_CYCLES inject/detach cycles on one
# process (p50, p99), as -v prints them.
. tests/lib.sh
. tests/inject_lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-7}
OPS=${BENCH_OPS:-3000000}
CYCLES=${BENCH_CYCLES:-100}

[ "$(id -u)" = 0 ] || { echo "bench_inject: needs root"; exit 0; }

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

# bench MODE: one run of malloc_bench 1 OPS; prints its CPU ns per malloc+free, and for
# inject the samples (the probes' runs), culpert-bpf's CPU ns while the workload ran, and
# its BPF programs' run_time_ns and run_cnt
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
	c0=$(task_cpu_ns "${att:-0}")
	p0=$(prog_stats "${att:-0}")
	kill -USR1 "$pid"
	wait "$w"
	p1=$(prog_stats "${att:-0}")
	# culpert-bpf reads what is left in the ring buffer after the workload: until it idles
	c1=$(task_cpu_ns "${att:-0}")
	idle() {
		sleep 0.2
		_c=$(task_cpu_ns "${att:-0}")
		[ $((_c - c1)) -lt 1000000 ] || { c1=$_c; return 1; }
	}
	[ -z "$att" ] || wait_until 5 idle
	[ -z "$att" ] || { kill -INT "$att"; wait "$att"; }
	awk -v n="$OPS" '/^cpu_s/ { printf "%.1f", $2 * 1e9 / n }' "$TMP/w.out"
	# the samples: the runs of the otel_memory probes' programs, one per sampled call
	[ "$1" = inject ] && echo $((c1 - c0)) $p0 $p1 |
		awk '{ printf " %d %d %d %d", $5 - $3, $1, $4 - $2, $5 - $3 }'
	echo
}

run_once() { bench "$1"; }

echo "workload: 1 thread x $OPS x (malloc 16 B..4 KiB + free), $RUNS runs each, interleaved ($(uptime))"
stats_on || echo "  (no BPF run-time statistics: $(cat "$TMP/stats.out"))"
interleave "$RUNS" none uprobes inject detached
kill "$stats_pid"
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
# the cost of one sample, medians over the injected runs: the workload's CPU over the
# unprofiled median, culpert-bpf's CPU while the workload ran (its reader: not its start nor
# the profile's writing), and its BPF programs' own time (bpf_prog_info's run_time_ns); the
# rest of the target's is the trap into the kernel and the sampler's slow path
awk -v n="$none" -v ops="$OPS" '$2 > 0 {
	t[++k] = ($1 - n) * ops / $2 / 1e3; c[k] = $3 / $2 / 1e3; b[k] = $4 / $2 / 1e3
	r[k] = $5 / $2; s[k] = $2 }
	function med(a,   i, j, x, m) { m = k
		for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
	END { if (!k) { print "  no injected run had samples"; exit }
		ms = med(s); mt = med(t); mc = med(c); mb = med(b); mr = med(r)
		printf "  one sample (%d per run): the target %.2f us (goal <= 3), culpert-bpf %.2f us (goal <= 2);\n", ms, mt, mc
		printf "    its BPF programs %.2f us (%.2f runs a sample), the trap and the sampler'"'"'s slow path %.2f us\n", mb, mr, mt - mb }' \
	"$TMP/inject"

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
