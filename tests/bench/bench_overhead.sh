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
OPS=${BENCH_OPS:-1000000}
RSS_SECONDS=${BENCH_RSS_SECONDS:-60}

[ "$(id -u)" = 0 ] || { echo "bench_overhead: needs root"; exit 1; }

# one run of the workload under MODE; prints ns per malloc+free
run_once() {
	case "$1" in
	none) workload "$THREADS" "$OPS" ;;
	floor) workload "$THREADS" "$OPS" "floor: attached" "$BENCH/floor_attach" PID ;;
	floor_free) workload "$THREADS" "$OPS" "floor: attached" "$BENCH/floor_attach" PID \
		--entry free ;;
	attach) workload "$THREADS" "$OPS" "culpert-bpf: profiling" \
		"$BIN_BPF" attach --pid PID -o "$TMP/b.pb.gz" ;;
	dwarf) workload "$THREADS" "$OPS" "culpert-bpf: profiling" \
		"$BIN_BPF" attach --pid PID --unwind dwarf -o "$TMP/b.pb.gz" ;;
	inuse) workload "$THREADS" "$OPS" "culpert-bpf: profiling" \
		"$BIN_BPF" attach --pid PID --inuse -o "$TMP/b.pb.gz" ;;
	inuse_nosession) workload "$THREADS" "$OPS" "culpert-bpf: profiling" \
		"$BIN_BPF" attach --pid PID --inuse --no-session -o "$TMP/b.pb.gz" ;;
	esac
}

MODES="none floor attach dwarf floor_free inuse inuse_nosession"
echo "workload: $THREADS threads x $OPS x (malloc 16 B..8 KiB + free), $RUNS runs each, interleaved"
interleave "$RUNS" $MODES
for m in $MODES; do
	eval "$m=\$(median <\"\$TMP/$m\")"
done
awk -v n="$none" -v f="$floor" -v a="$attach" -v d="$dwarf" -v ff="$floor_free" -v i="$inuse" \
    -v ins="$inuse_nosession" 'BEGIN {
	printf "  %-44s %9.1f ns/op\n", "unprofiled", n
	printf "  %-44s %9.1f ns/op\n", "floor: empty uprobe on the malloc family", f
	printf "  %-44s %9.1f ns/op  %.3fx the floor (goal <= 1.10)\n", "attach, rate 512KiB (fp)", a, a / f
	printf "  %-44s %9.1f ns/op  %.3fx the floor (goal <= 1.10)\n", "attach --unwind dwarf", d, d / f
	printf "  %-44s %9.1f ns/op\n", "floor: empty uprobe on the malloc family + free", ff
	printf "  %-44s %9.1f ns/op  %.3fx that floor (goal <= 1.10)\n", "attach --inuse (uprobe sessions)", i, i / ff
	printf "  %-44s %9.1f ns/op  %.3fx that floor\n", "attach --inuse --no-session (every return)", ins, ins / ff
	printf "  sessions save %.0f ns per malloc+free over a return probe on every call\n", ins - i
}'
for m in $MODES; do
	echo "  runs $m (ns/op): $(tr '\n' ' ' <"$TMP/$m")"
done

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
