#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The DWARF unwinder on a real Debian binary built without frame pointers,
# before any BPF: Debian's sqlite3 (and its libsqlite3) runs a long query,
# unwindpid stops it with ptrace, takes the registers and a copy of the top
# of its stack (what a --unwind dwarf sample record carries) and unwinds.
. tests/lib.sh

UNWINDPID=$OUTPUT/tests/tools/unwindpid
# a recursive CTE: minutes of sqlite3VdbeExec under sqlite3_step, killed when the test ends
QUERY='WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000)
SELECT sum(x) FROM c;'

# sets $sq_pid
start_sqlite() {
	command -v sqlite3 >/dev/null || {
		fail "sqlite3 is not installed (make deps)"
		return 1
	}
	echo "$QUERY" >"$TMP/query.sql"
	sqlite3 :memory: <"$TMP/query.sql" >/dev/null &
	sq_pid=$!
	track "$sq_pid"
	# inside the query once it has run for a moment: 0.1 s of its own CPU
	# time (start-up and reading the script take a few ms)
	wait_cpu "$sq_pid" 10 10 || { fail "sqlite3 ran under 0.1 s of CPU in 10 s"; return 1; }
}

# unwind N samples of STACK_BYTES into $TMP/out
unwind_sqlite() {
	"$UNWINDPID" "$sq_pid" "$@" >"$TMP/out" 2>"$TMP/err" || {
		fail "unwindpid: $(cat "$TMP/err")"
		return 1
	}
}

# pct PART WHOLE
pct() { awk -v p="$1" -v w="$2" 'BEGIN {printf "%.1f", w ? 100 * p / w : 0}'; }

# at least 95% of the samples (the issue's bar) end at _start, through main and sqlite3_step
t_reaches_main() {
	need_root || return
	start_sqlite || return
	unwind_sqlite 200 || return
	total=$(grep -vc '^#' "$TMP/out")
	good=$(grep -v '^#' "$TMP/out" | grep '^end	' | grep ';sqlite3_step;' |
		grep -c ';__libc_start_main;')
	echo "  $good of $total samples reach _start through sqlite3_step and __libc_start_main" \
		"($(pct "$good" "$total")%)"
	grep '^#' "$TMP/out" | sed 's/^/  /'
	[ "$total" -eq 200 ] || fail "$total samples, want 200"
	[ $((good * 100)) -ge $((total * 95)) ] ||
		fail "only $good of $total reach main: $(grep -v '^end' "$TMP/out" | head -3)"
}

# eu-stack (elfutils, reading the live process) sees the same frames from sqlite3_step out
t_matches_eu_stack() {
	need_root || return
	command -v eu-stack >/dev/null || {
		fail "eu-stack is not installed (make deps)"
		return
	}
	start_sqlite || return
	eu-stack -p "$sq_pid" >"$TMP/eu" 2>&1 || {
		fail "eu-stack: $(head -3 "$TMP/eu")"
		return
	}
	want=$(awk '/ sqlite3_step$/ {on = 1} on' "$TMP/eu" | wc -l)
	[ "$want" -ge 4 ] || {
		fail "eu-stack shows no sqlite3_step frame: $(head -20 "$TMP/eu")"
		return
	}
	unwind_sqlite 100 || return
	# frames from sqlite3_step to the end of each of our samples
	grep -v '^#' "$TMP/out" | cut -f2 | awk -F';' '{
		for (i = 1; i <= NF; i++) if ($i == "sqlite3_step") break
		print (i <= NF) ? NF - i + 1 : 0 }' >"$TMP/counts"
	same=$(grep -cx "$want" "$TMP/counts")
	echo "  eu-stack: $want frames from sqlite3_step out; $same of 100 samples agree"
	[ "$same" -ge 95 ] || fail "only $same of 100 samples have eu-stack's $want outer frames:" \
		"$(sort "$TMP/counts" | uniq -c | tr '\n' ' ')"
}

# a copy far too short for sqlite3's stack (~9 KiB): every sample says so, none claims an end
t_short_copy_truncated() {
	need_root || return
	start_sqlite || return
	unwind_sqlite 100 1024 || return
	trunc=$(grep -c '^truncated	' "$TMP/out")
	ended=$(grep -c '^end	' "$TMP/out")
	echo "  1 KiB copies: $trunc of 100 samples truncated, $ended ended"
	[ "$ended" -eq 0 ] || fail "$ended samples claim a complete stack from 1 KiB"
	[ "$trunc" -ge 95 ] || fail "only $trunc of 100 samples flagged truncated"
}

run_test unwind/real/sqlite3_reaches_main t_reaches_main
run_test unwind/real/matches_eu_stack t_matches_eu_stack
run_test unwind/real/short_copy_truncated t_short_copy_truncated
