#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A storm of large allocations (alloc_storm: malloc(1 MiB)/free, nearly
# every call sampled at the default rate) under --unwind dwarf: calls per
# second unprofiled, with the bare uprobe floor on malloc, with the default
# stack rate (a token bucket per process, 10000 captures/s) and without a
# limit; medians of BENCH_RUNS interleaved runs.  The fraction of its
# unprofiled speed the target keeps, and samples lost.
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-3}
N=${BENCH_STORM_CALLS:-200000}
MODES="none floor bounded unbounded"

[ "$(id -u)" = 0 ] || { echo "bench_storm: needs root"; exit 1; }

# one run under MODE; prints calls per second (and remembers the losses)
run_once() {
	: >"$TMP/s.out"
	: >"$TMP/s.err"
	"$TARGETS/alloc_storm" "$N" >"$TMP/s.out" &
	w=$!
	wait_for "$TMP/s.out" ready 5 || return 1
	p=""
	case "$1" in
	floor) "$BENCH/floor_attach" "$w" 2>"$TMP/s.err" & p=$!; ready="floor: attached" ;;
	bounded) "$BIN_BPF" attach --pid "$w" --unwind dwarf -o "$TMP/s.pb.gz" 2>"$TMP/s.err" &
		p=$!; ready="culpert-bpf: profiling" ;;
	unbounded) "$BIN_BPF" attach --pid "$w" --unwind dwarf --max-stack-rate 0 -o "$TMP/s.pb.gz" \
		2>"$TMP/s.err" & p=$!; ready="culpert-bpf: profiling" ;;
	esac
	[ -n "$p" ] && { wait_for "$TMP/s.err" "$ready" 20 || return 1; }
	kill -USR1 "$w"
	wait "$w"
	[ -n "$p" ] && { [ "$1" = floor ] && kill -INT "$p"; wait "$p"; }
	[ "$1" = bounded ] || [ "$1" = unbounded ] &&
		"$PROFDUMP" "$TMP/s.pb.gz" | sed -n 's/^# comment lost_samples=//p' >>"$TMP/$1.lost"
	awk '/^calls_per_sec/ { print $2 }' "$TMP/s.out"
}

for m in $MODES; do : >"$TMP/$m.lost"; done
interleave "$RUNS" $MODES
for m in $MODES; do
	eval "$m=\$(median <\"\$TMP/$m\")"
	echo "  runs $m (calls/s): $(tr '\n' ' ' <"$TMP/$m")"
done
awk -v n="$none" -v f="$floor" -v b="$bounded" -v u="$unbounded" \
    -v lb="$(tr '\n' ' ' <"$TMP/bounded.lost")" -v lu="$(tr '\n' ' ' <"$TMP/unbounded.lost")" 'BEGIN {
	printf "  %-52s %12.0f calls/s\n", "unprofiled", n
	printf "  %-52s %12.0f calls/s  %.2f%% of unprofiled\n", "floor: empty uprobe on the malloc family", f, 100 * f / n
	printf "  %-52s %12.0f calls/s  %.2f%% of unprofiled, %.1f%% of the floor; lost %s\n",
		"attach --unwind dwarf (10000 stacks/s)", b, 100 * b / n, 100 * b / f, lb
	printf "  %-52s %12.0f calls/s  %.2f%% of unprofiled, %.1f%% of the floor; lost %s\n",
		"attach --unwind dwarf --max-stack-rate 0", u, 100 * u / n, 100 * u / f, lu
}'
