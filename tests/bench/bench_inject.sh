#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# --sampler inject (docs/inject.md), as root: the peer workload
# (malloc_bench: malloc of 16 B..4 KiB + free) unprofiled, under
# culpert-bpf attach on uprobes, under attach --sampler inject (rate 512
# KiB), and after an injection was released (the library mapped and
# dormant); modes interleaved run by run, the workload's CPU time per
# malloc+free (wait4's rusage), medians of BENCH_RUNS.  Then the
# injection's latency and the longest thread stop over BENCH_CYCLES
# inject/detach cycles on one process (p50, p99), as -v prints them.
. tests/lib.sh
. tests/inject_lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-7}
OPS=${BENCH_OPS:-3000000}
CYCLES=${BENCH_CYCLES:-100}

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
