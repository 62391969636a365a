# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Helpers of the benchmarks, sourced after tests/lib.sh.

BENCH=$OUTPUT/tests/bench

# workload THREADS OPS [READY CMD...]: malloc_bench under CMD, started once the
# workload waits and awaited until its stderr says READY; the word PID in CMD
# is the workload's pid.  Prints the workload's ns per malloc+free.
workload() {
	# truncated here: the children truncate only once they run, after wait_for
	# may have read the last run's "ready" or READY
	: >"$TMP/w.out"
	: >"$TMP/a.err"
	"$BENCH/malloc_bench" "$1" "$2" >"$TMP/w.out" &
	w=$!
	shift 2
	wait_for "$TMP/w.out" ready 5 || return 1
	p=""
	if [ $# -gt 0 ]; then
		ready=$1
		shift
		n=$#
		while [ "$n" -gt 0 ]; do
			a=$1
			shift
			[ "$a" = PID ] && a=$w
			set -- "$@" "$a"
			n=$((n - 1))
		done
		"$@" 2>"$TMP/a.err" &
		p=$!
		wait_for "$TMP/a.err" "$ready" 10 || return 1
	fi
	kill -USR1 "$w"
	wait "$w"
	[ -n "$p" ] && wait "$p"
	awk '/^ns_per_op/ { print $2 }' "$TMP/w.out"
}

# with_cpu CMD...: run CMD, then print "cpu_s S", the user + system seconds it
# and its children used (wait4's rusage), for a workload timed in CPU, not wall
with_cpu() {
	python3 -c 'import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
ru = os.wait4(pid, 0)[2]
print("cpu_s %.6f" % (ru.ru_utime + ru.ru_stime))' "$@"
}

# interleave RUNS MODE...: run_once MODE for every mode, round after round;
# the results of MODE, one a line, in $TMP/MODE
interleave() {
	runs=$1
	shift
	for m; do
		: >"$TMP/$m"
	done
	i=0
	while [ "$i" -lt "$runs" ]; do
		for m; do
			run_once "$m" >>"$TMP/$m"
		done
		i=$((i + 1))
	done
}

# pct FILE FIELD P: the P-th percentile (nearest rank) of the numbers in FIELD of FILE's lines
pct() {
	cut -d' ' -f"$2" "$1" | sort -n |
		awk -v p="$3" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }'
}
