#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Userspace cost of --unwind dwarf per sample, on Debian's sqlite3 (no frame
# pointers) running a query: unwindpid takes RUNS x SAMPLES ptrace snapshots
# (registers + 16 KiB of stack, as a sample record carries) and times the
# unwinder on them, with its per-object cache (one unwinder per capture)
# and without (a new unwinder per sample).  Medians over the runs.
#   RUNS=3 SAMPLES=300 sh tests/bench/bench_unwind.sh
set -u
OUTPUT=${OUTPUT:-.output}
RUNS=${RUNS:-3}
SAMPLES=${SAMPLES:-300}
UNWINDPID=$OUTPUT/tests/tools/unwindpid
TMP=$(mktemp -d /tmp/culpert-bench.XXXXXX)
sq_pid=
trap '[ -n "$sq_pid" ] && kill "$sq_pid" 2>/dev/null; rm -rf "$TMP"' EXIT

command -v sqlite3 >/dev/null || { echo "sqlite3 is not installed (make deps)"; exit 1; }
echo 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000)
SELECT sum(x) FROM c;' >"$TMP/query.sql"

for run in $(seq "$RUNS"); do
	sqlite3 :memory: <"$TMP/query.sql" >/dev/null &
	sq_pid=$!
	sleep 0.3
	"$UNWINDPID" "$sq_pid" "$SAMPLES" | grep '^#' >"$TMP/run$run" || exit 1
	kill "$sq_pid"
	wait "$sq_pid" 2>/dev/null
	sq_pid=
done

# median over the runs of field N (1-based, after '#') of the line starting with KEY
med() {
	cat "$TMP"/run* | awk -v k="$1" -v f="$2" '$2 == k {print $(f + 1)}' | sort -g |
		awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

frames=$(med samples 12)
warm=$(med unwind_us 3)
p90=$(med unwind_us 5)
cold=$(med unwind_uncached_us 3)
first=$(med unwind_first_us 2)
bytes=$(med stack_bytes_needed 3)
bytes_max=$(med stack_bytes_needed 5)
echo "sqlite3 (Debian, no frame pointers), $RUNS runs x $SAMPLES samples, medians:"
awk -v f="$frames" -v w="$warm" -v p="$p90" -v c="$cold" -v s="$first" -v b="$bytes" \
	-v bm="$bytes_max" 'BEGIN {
	printf "  frames per sample                     %.1f\n", f
	printf "  unwind per sample, objects cached     %.2f us (p90 %.2f), %.0f ns per frame\n",
		w, p, 1000 * w / f
	printf "  unwind per sample, nothing cached     %.2f us (%.1fx the cached cost)\n", c, c / w
	printf "  first sample of a capture (loads CFI) %.0f us\n", s
	# w us per sample: w ms of CPU per second at 1k samples/s, 10 w ms at 10k/s
	printf "  CPU spent unwinding                   %.1f%% of a core at 1k samples/s,", w / 10
	printf " %.1f%% at 10k/s\n", w
	printf "  stack bytes needed to reach _start    median %d, max %d (copy: 16 KiB)\n", b, bm
}'
