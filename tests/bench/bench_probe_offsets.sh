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
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-7}
OPS=${BENCH_OPS:-100000}

[ "$(id -u)" = 0 ] || { echo "bench_probe_offsets: needs root"; exit 1; }

# one run with probes placed by MODE (none | zero | chosen); prints ns per malloc+free
run_once() {
	case "$1" in
	none) workload 1 "$OPS" ;;
	zero) workload 1 "$OPS" "floor: attached" "$BENCH/floor_attach" PID --entry free --at-zero ;;
	chosen) workload 1 "$OPS" "floor: attached" "$BENCH/floor_attach" PID --entry free ;;
	esac
}

echo "workload: 1 thread x $OPS x (malloc 16 B..8 KiB + free), $RUNS runs each, interleaved"
interleave "$RUNS" none zero chosen
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
