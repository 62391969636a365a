#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# --unwind dwarf|fp|auto through real captures: a target built without
# frame pointers, a Debian binary nobody here wrote, truncated copies.
. tests/lib.sh

# profile_nofp NAME [ATTACH ARGS]: alloc_nofp at 16 KiB until it exits; profile in $TMP/NAME.pb.gz
profile_nofp() {
	_n=$1
	shift
	profile "$_n" 16KiB "-v $*" "$TARGETS/alloc_nofp"
}

# Without frame pointers: dwarf gets the whole chain to main for >= 99% of
# chain_c's samples, a frame-pointer walk does not; auto picks dwarf.
test_dwarf_vs_fp() {
	need_root || return
	profile_nofp nofp_auto || return
	grep -q "unwinding: dwarf (auto: .*alloc_nofp is built without frame pointers" \
		"$TMP/nofp_auto.err" || fail "auto did not choose dwarf: $(grep unwinding "$TMP/nofp_auto.err")"
	dwarf=$(share_pct "$TMP/nofp_auto.pb.gz" chain_leaf)
	awk -v p="$dwarf" 'BEGIN { exit !(p >= 99) }' || fail "dwarf: full chain in $dwarf% only"
	"$PROFDUMP" "$TMP/nofp_auto.pb.gz" | grep -q '^# comment unwind_errors=0$' ||
		fail "unwind errors: $("$PROFDUMP" "$TMP/nofp_auto.pb.gz" | grep unwind_errors)"
	profile_nofp nofp_fp --unwind fp || return
	fp=$(share_pct "$TMP/nofp_fp.pb.gz" chain_leaf)
	awk -v p="$fp" 'BEGIN { exit !(p < 99) }' || fail "fp also got the chain ($fp%): proves nothing"
}

# A copy shorter than the stack: the stack is marked, never silently cut
test_truncated_marked() {
	need_root || return
	profile_nofp nofp_1k --unwind dwarf --stack-size 1KiB || return
	"$PROFDUMP" "$TMP/nofp_1k.pb.gz" | grep -v '^#' | awk -F'\t' '
		{ n = split($2, f, ";") }
		f[1] == "deep" && f[n] != "[truncated]" { bad++ }
		f[1] == "deep" { deep++ }
		END { exit !(deep > 0 && bad == 0) }' ||
		fail "deep's samples are not all marked [truncated]"
	n=$("$PROFDUMP" "$TMP/nofp_1k.pb.gz" | sed -n 's/^# comment unwind_truncated=//p')
	[ "${n:-0}" -gt 0 ] || fail "truncations not counted"
	# [truncated] frames and all: go tool pprof reads it
	go_totals_agree "$TMP/nofp_1k.pb.gz"
	# every stack here is deeper than 1 KiB: each sample carried exactly that
	samples=$("$PROFDUMP" "$TMP/nofp_1k.pb.gz" | sed -n 's/^# comment samples=//p')
	copied=$("$PROFDUMP" "$TMP/nofp_1k.pb.gz" | sed -n 's/^# comment stack_copied_bytes=//p')
	[ "${samples:-0}" -gt 0 ] && [ "$copied" = $((samples * 1024)) ] ||
		fail "stack_copied_bytes=$copied for $samples samples of 1 KiB"
	# the default 16 KiB copies: dwarf_vs_fp's capture (auto chose dwarf) when it made one
	p=nofp_auto
	if ! [ -s "$TMP/$p.pb.gz" ] || ! grep -q 'unwinding: dwarf ' "$TMP/$p.err"; then
		p=nofp_dwarf
		profile_nofp "$p" --unwind dwarf || return
	fi
	"$PROFDUMP" "$TMP/$p.pb.gz" | grep -v '^#' | grep -q '^[^	]*	deep;.*\[truncated\]' &&
		fail "16 KiB copies still truncated 13 KiB stacks"
	return 0
}

# Debian's sqlite3 (no frame pointers, stripped) running a scripted workload:
# >= 95% of the samples reach the process entry through sqlite3_step.  The
# share is weighted by bytes: at a rate far above these allocations' sizes
# every sample stands for about `rate` bytes, so it counts samples.
test_debian_sqlite3() {
	need_root || return
	command -v sqlite3 >/dev/null || { fail "sqlite3 not installed (make deps)"; return; }
	mkfifo "$TMP/sql"
	sqlite3 :memory: <>"$TMP/sql" >"$TMP/sqlite.out" 2>&1 &
	sq=$!
	track "$sq"
	# its libraries mapped: what probes reads
	wait_running "$sq" sqlite3 5 && wait_for "/proc/$sq/maps" libsqlite3 5 ||
		{ fail "sqlite3 did not start"; return; }
	"$BIN_BPF" probes --pid "$sq" >"$TMP/sq.probes" 2>&1
	grep -q "^unwind: *dwarf (auto: .*sqlite3 is built without frame pointers" "$TMP/sq.probes" ||
		fail "probes: $(grep unwind "$TMP/sq.probes")"
	attach_bg "$TMP/sq.err" --pid "$sq" --rate 64KiB -o "$TMP/sq.pb.gz" || return
	cat >"$TMP/sql" <<'SQL'
CREATE TABLE t(a INTEGER, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
  INSERT INTO t SELECT x, hex(randomblob(48)) FROM c;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(length(b)) FROM t WHERE b > 'A';
.quit
SQL
	wait "$sq"
	wait "$attach_pid" || fail "attach failed: $(cat "$TMP/sq.err")"
	pct=$(share_pct "$TMP/sq.pb.gz" sqlite)
	awk -v p="$pct" 'BEGIN { exit !(p >= 95) }' ||
		fail "only $pct% of samples reach the entry through sqlite3_step"
}

# "leaf bytes calls to_main" of a --rate 1 profile, leaf by its outermost name
leaves() {
	"$PROFDUMP" "$1" | grep -v '^#' | awk -F'\t' '
		{ split($1, v, " "); split($2, f, ";"); n = split(f[1], fr, "|"); k = fr[n]
		  sub(/^.* index_by/, "index_by", k); sub(/\(.*$/, "", k)
		  b[k] += v[2]; c[k] += v[1]; if ($2 ~ /;main(;|$)/) m[k] += v[2] }
		END { for (k in b) printf "%s %.0f %.0f %.0f\n", k, b[k], c[k], m[k] }' | sort
}

# A C++17 program with frame pointers whose operator new is Debian's
# libstdc++ (without them): libstdc++'s operator new is an allocator entry
# point, so each allocation's caller -- template or not -- is its leaf, and
# the stack goes on to main; with fp, and with auto, which stays on fp:
# libstdc++'s own allocating code has no frame pointers, but the program
# calls none of it, only operator new, where a sample's walk starts.
test_cxx_through_libstdcxx() {
	need_root || return
	for mode in fp auto; do
		profile cxx_$mode 1 "--unwind $mode -v" "$TARGETS/cxx_index" || return
		leaves "$TMP/cxx_$mode.pb.gz" >"$TMP/cxx_$mode.leaves"
		grep '^total ' "$TMP/cxx_$mode.out" | while read -r _ fn bytes calls; do
			got=$(awk -v f="$fn" '$1 == f { print $2 "/" $3 "/" $4 }' "$TMP/cxx_$mode.leaves")
			[ "$got" = "$bytes/$calls/$bytes" ] || echo "$mode $fn: $bytes/$calls/$bytes (bytes/calls/to main), profile ${got:-none}"
		done >"$TMP/cxx.bad"
		[ -s "$TMP/cxx.bad" ] && fail "$(tr '\n' ';' <"$TMP/cxx.bad") leaves: $(tr '\n' ';' <"$TMP/cxx_$mode.leaves")"
	done
	grep -q 'unwinding: fp (auto: .*on no allocation path.*libstdc++' \
		"$TMP/cxx_auto.err" || fail "auto: $(grep unwinding "$TMP/cxx_auto.err")"
}

# A Rust binary whose own code has no frame pointers, std's has: auto judges
# the functions that call the allocator, picks dwarf, and the stacks reach
# main; a forced frame-pointer walk breaks, and says so.
test_rust_without_fp() {
	need_root || return
	profile rnofp 4KiB "-v" "$TARGETS/alloc_rust_nofp" 64 || return
	grep -q 'unwinding: dwarf (auto: .*alloc_rust_nofp calls the allocator from code built without frame pointers' \
		"$TMP/rnofp.err" || fail "auto: $(grep unwinding "$TMP/rnofp.err")"
	"$PROFDUMP" "$TMP/rnofp.pb.gz" | grep -v '^#' | awk -F'\t' '{ split($1, v, " "); all += v[2]
		if ($2 ~ /;main(;|$)/) m += v[2] } END { exit !(all && m >= 0.95 * all) }' ||
		fail "dwarf: less than 95% of the bytes reach main"
	profile rnofp_fp 4KiB "--unwind fp" "$TARGETS/alloc_rust_nofp" 64 || return
	grep -q '^warning: [0-9]* of [0-9]* frame-pointer stacks ([0-9.]*%) go through code without frame pointers (first: alloc_rust::' \
		"$TMP/rnofp_fp.err" || fail "broken fp stacks not said: $(grep warning "$TMP/rnofp_fp.err")"
	"$PROFDUMP" "$TMP/rnofp_fp.pb.gz" | grep -q '^# comment fp_broken_stacks=[1-9]' ||
		fail "broken fp stacks not counted"
}

# Frame-pointer code beside a library without frame pointers: one that never
# allocates, or one the executable calls only where it does not (as libgmp
# in Debian's postgres), is on no allocation path: auto stays on fp, -v
# names it, and no stack breaks; one whose allocating function the
# executable calls switches auto to dwarf.
test_beside_nofp_library() {
	need_root || return
	for t in alloc_beside alloc_beside_unused; do
		lib=libnofp_pure.so
		[ $t = alloc_beside_unused ] && lib=libnofp_alloc.so
		profile $t 16KiB "-v" "$TARGETS/$t" || return
		grep -q "unwinding: fp (auto: .*built without frame pointers [a-z]* on no allocation path.*$lib" \
			"$TMP/$t.err" || fail "$t: $(grep unwinding "$TMP/$t.err")"
		"$PROFDUMP" "$TMP/$t.pb.gz" | grep -q '^# comment fp_broken_stacks=0$' ||
			fail "$t: $("$PROFDUMP" "$TMP/$t.pb.gz" | grep fp_broken)"
	done
	profile beside_alloc 16KiB "-v" "$TARGETS/alloc_beside_alloc" || return
	grep -q 'unwinding: dwarf (auto: .*libnofp_alloc.so calls the allocator from code built without frame pointers' \
		"$TMP/beside_alloc.err" || fail "allocating: $(grep unwinding "$TMP/beside_alloc.err")"
}

# A caller of the allocator whose frame is set up after an early return
# (shrink-wrapped, 17 bytes in): auto judges it as keeping a frame pointer,
# and the walk through it gives every byte to sw_alloc <- main.
test_shrink_wrapped() {
	need_root || return
	profile sw 1 "-v" "$TARGETS/alloc_shrinkwrap" || return
	grep -q 'unwinding: fp (auto: .*alloc_shrinkwrap and 0 libraries keep frame pointers where they call the allocator (1 of 1 such functions' \
		"$TMP/sw.err" || { fail "auto: $(grep unwinding "$TMP/sw.err")"; return; }
	# shellcheck disable=SC2046 # "total sw_alloc BYTES CALLS"
	set -- $(grep '^total ' "$TMP/sw.out")
	bytes=$3
	calls=$4
	got=$("$PROFDUMP" "$TMP/sw.pb.gz" | grep -v '^#' | awk -F'\t' '
		{ split($1, v, " "); split($2, f, ";") }
		f[1] == "sw_alloc" && f[2] == "main" { c += v[1]; b += v[2] }
		END { printf "%d %d", b, c }')
	[ "$got" = "$bytes $calls" ] || fail "sw_alloc <- main: $got (bytes calls), allocated $bytes $calls"
}

run_test bpf/unwind/dwarf_vs_fp test_dwarf_vs_fp
run_test bpf/unwind/truncated_marked test_truncated_marked
run_test bpf/unwind/debian_sqlite3 test_debian_sqlite3

run_test bpf/unwind/cxx_through_libstdcxx test_cxx_through_libstdcxx
run_test bpf/unwind/rust_without_fp test_rust_without_fp
run_test bpf/unwind/beside_nofp_library test_beside_nofp_library
run_test bpf/unwind/shrink_wrapped test_shrink_wrapped
