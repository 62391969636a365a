#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Target-side overhead of culpert-bpf attach at the default rate, next to
# the bare uprobe floor (an empty BPF program on the same probe points,
# attached the same way) and to the unprofiled workload.  The three are
# interleaved run by run; each figure is the median of BENCH_RUNS runs.
# Then the profiler's own RSS over a BENCH_RSS_SECONDS capture.
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-7}
THREADS=${BENCH_THREADS:-4}
OPS=${BENCH_OPS:-150000}
RSS_SECONDS=${BENCH_RSS_SECONDS:-60}

[ "$(id -u)" = 0 ] || { echo "bench_overhead: needs root"; exit 1; }

# one run of the workload under MODE (none | floor | culpert); prints ns/op
run_once() {
	case "$1" in
	none) workload "$THREADS" "$OPS" ;;
	floor) workload "$THREADS" "$OPS" "floor: attached" "$BENCH/floor_attach" PID ;;
	culpert) workload "$THREADS" "$OPS" "culpert-bpf: profiling" \
		"$BIN_BPF" attach --pid PID -o "$TMP/b.pb.gz" ;;
	esac
}

echo "workload: $THREADS threads x $OPS x (malloc 16 B..8 KiB + free), $RUNS runs each, interleaved"
interleave "$RUNS" none floor culpert
none=$(median <"$TMP/none")
floor=$(median <"$TMP/floor")
cul=$(median <"$TMP/culpert")
awk -v n="$none" -v f="$floor" -v c="$cul" 'BEGIN {
	printf "  %-34s %9.1f ns/op\n", "unprofiled", n
	printf "  %-34s %9.1f ns/op  (%.2fx unprofiled)\n", "floor: empty uprobe, same points", f, f / n
	printf "  %-34s %9.1f ns/op  (%.2fx unprofiled)\n", "culpert-bpf attach, rate 512KiB", c, c / n
	printf "  culpert / floor = %.3f   (goal <= 1.10)\n", c / f
	printf "  BPF work per malloc beyond the floor: %.0f ns\n", c - f
}'
echo "  runs (ns/op): none [$(tr '\n' ' ' <"$TMP/none")] floor [$(tr '\n' ' ' <"$TMP/floor")] culpert [$(tr '\n' ' ' <"$TMP/culpert")]"

echo
echo "profiler RSS over a ${RSS_SECONDS}s capture of demo_service at --rate 64KiB:"
"$OUTPUT/examples/demo_service" $((RSS_SECONDS + 10)) >/dev/null &
svc=$!
track "$svc"
"$BIN_BPF" attach --pid "$svc" --rate 64KiB --duration "${RSS_SECONDS}s" -o "$TMP/rss.pb.gz" \
	2>"$TMP/rss.err" &
prof=$!
wait_for "$TMP/rss.err" "culpert-bpf: profiling" 10
step=$((RSS_SECONDS / 6))
[ "$step" -gt 0 ] || step=1
t=0
line=""
while kill -0 "$prof" 2>/dev/null && [ $t -lt "$RSS_SECONDS" ]; do
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$prof/status" 2>/dev/null)
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$prof/status" 2>/dev/null)
	[ -n "$rss" ] && line="$line ${t}s:$((rss / 1024))MiB"
	sleep "$step"
	t=$((t + step))
done
wait "$prof"
echo "  VmRSS at:$line"
echo "  peak (VmHWM) ${hwm:-?} KiB = $(( ${hwm:-0} / 1024 )) MiB   (goal: flat, < 32 MiB)"
echo "  $(grep 'wrote' "$TMP/rss.err")"
