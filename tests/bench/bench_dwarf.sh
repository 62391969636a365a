#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Cost per sample of --unwind dwarf next to --unwind fp, at a fixed sample
# rate: paced_alloc makes RATE allocations a second and culpert-bpf samples
# every one (--rate 1).  For each rate and mode, medians over BENCH_RUNS runs
# (interleaved): the profiler's CPU (all its threads' run time, from
# schedstat, over a window of the capture), the target's extra CPU per
# sample (where the BPF programs run: the stack copy is charged there), and
# the stack bytes each DWARF sample carried.
. tests/lib.sh
. tests/bench/common.sh

RUNS=${BENCH_RUNS:-3}
RATES=${BENCH_DWARF_RATES:-1000 10000}
SECONDS_RUN=${BENCH_DWARF_SECONDS:-7}
WINDOW=$((SECONDS_RUN - 3))	# from 2 s in to 1 s before the end

[ "$(id -u)" = 0 ] || { echo "bench_dwarf: needs root"; exit 1; }

# run time in ns of every thread of PID
cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ t += $1 } END { printf "%d\n", t }'
}

# run_once RATE MODE: appends to $TMP/RATE.MODE.{target,prof,copied} the
# target's CPU ns per allocation, the profiler's CPU share over the window
# (in % of a core) and the stack bytes per sample
run_once() {
	: >"$TMP/w.out"
	: >"$TMP/a.err"
	"$BENCH/paced_alloc" "$1" "$SECONDS_RUN" >"$TMP/w.out" &
	w=$!
	wait_for "$TMP/w.out" ready 5 || return 1
	p=
	if [ "$2" != none ]; then
		"$BIN_BPF" attach --pid "$w" --rate 1 --unwind "$2" -o "$TMP/p.pb.gz" 2>"$TMP/a.err" &
		p=$!
		wait_for "$TMP/a.err" "culpert-bpf: profiling" 10 || return 1
	fi
	kill -USR1 "$w"
	if [ -n "$p" ]; then
		sleep 2
		c0=$(cpu_ns "$p")
		sleep "$WINDOW"
		c1=$(cpu_ns "$p")
	fi
	wait "$w"
	[ -n "$p" ] && { wait "$p" || { echo "attach failed: $(cat "$TMP/a.err")"; return 1; }; }
	awk '/^allocs/ { a = $2 } /^cpu_ns/ { c = $2 } END { printf "%.1f\n", c / a }' \
		"$TMP/w.out" >>"$TMP/$1.$2.target"
	[ -n "$p" ] || return 0
	awk -v a="$c0" -v b="$c1" -v w="$WINDOW" 'BEGIN { printf "%.2f\n", 100 * (b - a) / (w * 1e9) }' \
		>>"$TMP/$1.$2.prof"
	"$PROFDUMP" "$TMP/p.pb.gz" | awk -F= '/^# comment samples=/ { s = $2 }
		/^# comment stack_copied_bytes=/ { b = $2 } END { printf "%d\n", s ? b / s : 0 }' \
		>>"$TMP/$1.$2.copied"
}

echo "paced_alloc: RATE x malloc(64)+free a second, 5 calls deep, every one sampled;"
echo "$RUNS runs of ${SECONDS_RUN}s per rate and mode, profiler CPU over ${WINDOW}s, medians:"
for rate in $RATES; do
	for m in none fp dwarf; do
		: >"$TMP/$rate.$m.target"
		: >"$TMP/$rate.$m.prof"
		: >"$TMP/$rate.$m.copied"
	done
	i=0
	while [ $i -lt "$RUNS" ]; do
		for m in none fp dwarf; do
			run_once "$rate" $m || exit 1
		done
		i=$((i + 1))
	done
	t0=$(median <"$TMP/$rate.none.target")
	tf=$(median <"$TMP/$rate.fp.target")
	td=$(median <"$TMP/$rate.dwarf.target")
	pf=$(median <"$TMP/$rate.fp.prof")
	pd=$(median <"$TMP/$rate.dwarf.prof")
	cf=$(median <"$TMP/$rate.fp.copied")
	cd=$(median <"$TMP/$rate.dwarf.copied")
	awk -v r="$rate" -v t0="$t0" -v tf="$tf" -v td="$td" -v pf="$pf" -v pd="$pd" -v cd="$cd" 'BEGIN {
		printf "  %d samples/s                              fp          dwarf\n", r
		printf "    target CPU per sample (BPF, copy)  %7.2f us   %7.2f us\n",
			(tf - t0) / 1000, (td - t0) / 1000
		printf "    stack bytes copied per sample      %7d      %7d\n", 0, cd
		printf "    profiler CPU, %% of a core          %7.2f %%    %7.2f %%\n", pf, pd
		printf "    profiler CPU per sample            %7.2f us   %7.2f us\n",
			10000 * pf / r, 10000 * pd / r
	}'
	for m in none fp dwarf; do
		echo "    runs $m: target ns/alloc $(tr '\n' ' ' <"$TMP/$rate.$m.target")" \
			"profiler % $(tr '\n' ' ' <"$TMP/$rate.$m.prof")"
	done
done
