#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What choosing each probe's offset saves.  malloc_bench (malloc + free
# pairs, one thread) unprofiled, then under the empty floor program on the
# plan's entry points plus free, all at their symbols' +0, then all at the
# offsets probe_offset chose.  The three are interleaved run by run; each
# figure is the median of BENCH_RUNS runs.  Then insn_cost: one hit's cost
# by the instruction the probe sits on, which is what the choice rests on.
. tests/lib.sh

RUNS=${BENCH_RUNS:-7}
OPS=${BENCH_OPS:-100000}
BENCH=$OUTPUT/tests/bench

[ "$(id -u)" = 0 ] || { echo "bench_probe_offsets: needs root"; exit 1; }

# one run with probes placed by MODE (none | zero | chosen); prints ns per malloc+free
run_once() {
	"$BENCH/malloc_bench" 1 "$OPS" >"$TMP/w.out" &
	w=$!
	wait_for "$TMP/w.out" ready 5 || return 1
	p=""
	case "$1" in
	zero | chosen)
		[ "$1" = zero ] && set -- --at-zero || set --
		"$BENCH/floor_attach" "$w" --entry free "$@" 2>"$TMP/a.err" &
		p=$!
		wait_for "$TMP/a.err" "floor: attached" 10 || return 1 ;;
	esac
	kill -USR1 "$w"
	wait "$w"
	[ -n "$p" ] && wait "$p"
	awk '/^ns_per_op/ { print $2 }' "$TMP/w.out"
}

echo "workload: 1 thread x $OPS x (malloc 16 B..8 KiB + free), $RUNS runs each, interleaved"
: >"$TMP/none"; : >"$TMP/zero"; : >"$TMP/chosen"
i=0
while [ $i -lt "$RUNS" ]; do
	run_once none >>"$TMP/none"
	run_once zero >>"$TMP/zero"
	run_once chosen >>"$TMP/chosen"
	i=$((i + 1))
done
echo "chosen offsets of the two functions the workload calls:"
grep -E 'floor: (malloc|free) ' "$TMP/a.err" | sed 's/^floor: */  /'
none=$(median <"$TMP/none")
zero=$(median <"$TMP/zero")
chosen=$(median <"$TMP/chosen")
awk -v n="$none" -v z="$zero" -v c="$chosen" 'BEGIN {
	printf "  %-40s %9.1f ns/op\n", "unprofiled", n
	printf "  %-40s %9.1f ns/op  (probes: %.0f ns per malloc+free)\n", "empty probes at +0", z, z - n
	printf "  %-40s %9.1f ns/op  (probes: %.0f ns per malloc+free)\n", "empty probes at the chosen offsets", c, c - n
	printf "  probe cost chosen / +0 = %.3f\n", (c - n) / (z - n)
}'
echo "  runs (ns/op): none [$(tr '\n' ' ' <"$TMP/none")] +0 [$(tr '\n' ' ' <"$TMP/zero")] chosen [$(tr '\n' ' ' <"$TMP/chosen")]"

echo
echo "one probe hit by the instruction it sits on (insn_cost: median of 5 x 20000 calls):"
"$BENCH/insn_cost" 20000 5
