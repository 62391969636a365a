#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What culpert-bpf says when there is little or nothing to sample, and why
# it cannot attach: an empty profile explained at the end of attach and by
# culpert report/info, probes' warnings, the errors of a stripped static
# binary and of a Go program, what a process was started as.
. tests/lib.sh

# comment VALUE of key $2 in profile $1
comment_of() {
	"$PROFDUMP" "$1" | sed -n "s/^# comment $2=//p"
}

# attach_quiet NAME "ARGS" CMD...: CMD under attach for 1 s after it was let go
attach_quiet() {
	_n=$1
	_a=$2
	shift 2
	start_profiled "$_n" attach "-d 1s $_a" "$@" || return 1
	wait "$attach_pid" || { fail "attach failed: $(cat "$TMP/$_n.err")"; return 1; }
}

# A process that never calls the allocator: probes warns, attach and report say
# why the profile is empty, with the count of calls the probes saw: 0.
test_never_allocates() {
	need_root || return
	start_target "$TMP/q.out" "$TARGETS/quiet" || return
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/probes" 2>&1 || fail "probes failed: $(cat "$TMP/probes")"
	grep -q '^warning:    no object of pid [0-9]* calls the probed entry points' "$TMP/probes" ||
		fail "probes does not warn: $(cat "$TMP/probes")"
	grep -q '^status:     ok, attach would work, but see the warning' "$TMP/probes" ||
		fail "probes' status ignores its warning"
	kill "$target_pid"
	attach_quiet q "" "$TARGETS/quiet" || return
	grep -q "^culpert-bpf: the profile is empty: no allocator call was seen in " "$TMP/q.err" ||
		fail "attach does not say why: $(cat "$TMP/q.err")"
	[ "$(comment_of "$TMP/q.pb.gz" alloc_calls)" = 0 ] || fail "alloc_calls is not 0"
	"$BIN_CLI" report "$TMP/q.pb.gz" >"$TMP/q.report" || fail "report failed"
	grep -q "^The profile is empty: no allocator call was seen" "$TMP/q.report" ||
		fail "report does not say why: $(cat "$TMP/q.report")"
	"$BIN_CLI" info "$TMP/q.pb.gz" | grep -q '^Empty:         no allocator call' ||
		fail "info does not say why"
}

# 64 calls of 64 bytes at one sample per 16 MiB: P(a sample) = 1 - e^(-4096/2^24) = 0.02%.
# The probes count every call: exactly 64 and 4096 bytes, and with no more than
# ~100 calls the hint is rate 1, which samples each of them.
test_too_few_to_sample() {
	need_root || return
	attach_quiet little "--rate 16MiB" "$TARGETS/quiet_little" 64 || return
	grep -q "^culpert-bpf: the profile is empty: 64 allocator calls for 4.00 KiB in .* try --rate 1 (every call: 64 samples at this load) " \
		"$TMP/little.err" || fail "attach does not say why: $(cat "$TMP/little.err")"
	[ "$(comment_of "$TMP/little.pb.gz" alloc_calls)" = 64 ] &&
		[ "$(comment_of "$TMP/little.pb.gz" alloc_bytes)" = 4096 ] ||
		fail "calls seen: $(comment_of "$TMP/little.pb.gz" alloc_calls) for $(comment_of "$TMP/little.pb.gz" alloc_bytes) bytes, want 64 for 4096"
	"$BIN_CLI" report "$TMP/little.pb.gz" --format json >"$TMP/little.json"
	/usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert "64 allocator calls for 4.00 KiB" in r["empty_reason"] and r["records"] == 0, r' \
		"$TMP/little.json" || fail "report JSON has no empty_reason: $(cat "$TMP/little.json")"
}

# The calls the probes count are the calls made: alloc_abc says how many it made
# (every one through malloc, calloc or realloc; glibc's own few on top).
test_calls_seen() {
	need_root || return
	profile abc 64KiB "" "$TARGETS/alloc_abc" || return
	truth=$(awk '$1 == "total" { c += $4; b += $3 } END { printf "%d %d", c, b }' "$TMP/abc.out")
	seen="$(comment_of "$TMP/abc.pb.gz" alloc_calls) $(comment_of "$TMP/abc.pb.gz" alloc_bytes)"
	# glibc's own allocations (thread start-up, stdio) add a few hundred bytes at most
	echo "$truth $seen" | awk '{ exit !($3 >= $1 && $3 <= $1 + 64 && $4 >= $2 && $4 <= $2 + 65536) }' ||
		fail "calls and bytes made: $truth; seen by the probes: $seen"
	# and the report counts sampled allocations as the collector did
	n=$(sed -n 's/.* (\([0-9]*\) samples, .*/\1/p' "$TMP/abc.err")
	"$BIN_CLI" report "$TMP/abc.pb.gz" | grep -q "^Samples: $n allocations in [0-9]* records  Rate: 64.00 KiB/alloc" ||
		fail "report's header does not count the $n samples: $("$BIN_CLI" report "$TMP/abc.pb.gz" | head -2)"
}

# A Go program: with cgo (libc mapped, never Go's allocator) probes warns and the
# empty profile says why; static (no C library) attach refuses, naming Go.
test_go_program() {
	need_root || return
	start_target "$TMP/go.out" "$TARGETS/go_alloc_cgo" || return
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/goprobes" 2>&1 || fail "probes failed"
	grep -q '^warning:    .*go_alloc_cgo is a Go program' "$TMP/goprobes" ||
		fail "probes does not warn about Go: $(cat "$TMP/goprobes")"
	kill "$target_pid"
	attach_quiet go "" "$TARGETS/go_alloc_cgo" || return
	wait_for "$TMP/go.out" '^done' 10 || fail "the Go target did not allocate"
	grep -q "^culpert-bpf: the profile is empty: the program is written in Go" "$TMP/go.err" ||
		fail "attach does not name Go: $(cat "$TMP/go.err")"
	[ "$(comment_of "$TMP/go.pb.gz" target.runtime)" = go ] || fail "no target.runtime=go"
	"$BIN_CLI" report "$TMP/go.pb.gz" | grep -q "^The profile is empty: the program is written in Go" ||
		fail "report does not name Go"
	start_program /dev/null "$TARGETS/go_alloc_static" || return
	g=$prog_pid
	expect_error 1 "allocator not found: pid $g runs a Go program (.*go_alloc_static), and Go's runtime allocates without malloc" \
		"$BIN_BPF" attach --pid "$g"
	expect_error 1 "runs a Go program" "$BIN_BPF" probes --pid "$g"
}

# A static binary without a symbol table: the error names that, not a prefix.
test_stripped_static() {
	need_root || return
	start_program /dev/null "$TARGETS/quiet_static_stripped" || return
	s=$prog_pid
	expect_error 1 "quiet_static_stripped is a static executable without a symbol table (stripped)" \
		"$BIN_BPF" attach --pid "$s"
	grep -q "use --allocator PREFIX" "$TMP/err.txt" && fail "still suggests --allocator PREFIX"
	return 0
}

# Started through a symlink: target.exe is where it led, and argv0 says what was run.
test_started_as() {
	need_root || return
	ln -sf "$(realpath "$TARGETS/quiet_little")" "$TMP/kv-server"
	start_target "$TMP/sym.out" "$TMP/kv-server" 1 || return
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/symprobes" 2>&1
	grep -q "^            started as $TMP/kv-server, a symlink to .*/quiet_little" "$TMP/symprobes" ||
		fail "probes does not show the symlink: $(head -3 "$TMP/symprobes")"
	kill "$target_pid"
	attach_quiet sym "--rate 1" "$TMP/kv-server" 1 || return
	[ "$(comment_of "$TMP/sym.pb.gz" target.argv0)" = "$TMP/kv-server" ] || fail "no target.argv0"
	"$BIN_CLI" info "$TMP/sym.pb.gz" >"$TMP/syminfo"
	grep -q "^Target:        kv-server (pid [0-9]*) .*/quiet_little$" "$TMP/syminfo" &&
		grep -q "^Started as:    $TMP/kv-server, a symlink to .*/quiet_little$" "$TMP/syminfo" ||
		fail "info does not say what it was started as: $(head -4 "$TMP/syminfo")"
}

# CPython's objects of 512 bytes or less come from pymalloc's arenas: probes
# and attach say so, and the profile records it; not under PYTHONMALLOC=malloc
test_pymalloc() {
	need_root || return
	start_program "$TMP/py.out" /usr/bin/python3 -c 'import time; time.sleep(60)' || return
	"$BIN_BPF" probes --pid "$prog_pid" >"$TMP/py.probes" 2>&1
	grep -q "runs CPython: its objects of 512 bytes or less come from pymalloc's arenas" \
		"$TMP/py.probes" || fail "probes does not say pymalloc: $(grep -i warn "$TMP/py.probes")"
	"$BIN_BPF" attach --pid "$prog_pid" -d 500ms -o "$TMP/py.pb.gz" 2>"$TMP/py.err" ||
		{ fail "attach: $(tail -2 "$TMP/py.err")"; return; }
	grep -q "^warning: pid $prog_pid runs CPython" "$TMP/py.err" || fail "attach: $(cat "$TMP/py.err")"
	"$PROFDUMP" "$TMP/py.pb.gz" | grep -q '^# comment target.pymalloc=' ||
		fail "the profile does not record it"
	kill "$prog_pid"
	export PYTHONMALLOC=malloc
	start_program "$TMP/pym.out" /usr/bin/python3 -c 'import time; time.sleep(60)'
	_rc=$?
	unset PYTHONMALLOC
	[ $_rc -eq 0 ] || return
	"$BIN_BPF" probes --pid "$prog_pid" >"$TMP/pym.probes" 2>&1
	grep -q "CPython" "$TMP/pym.probes" && fail "warned under PYTHONMALLOC=malloc"
	kill "$prog_pid"
	return 0
}

run_test bpf/explain/never_allocates test_never_allocates
run_test bpf/explain/too_few_to_sample test_too_few_to_sample
run_test bpf/explain/calls_seen test_calls_seen
run_test bpf/explain/go_program test_go_program
run_test bpf/explain/stripped_static test_stripped_static
run_test bpf/explain/started_as test_started_as
run_test bpf/explain/pymalloc test_pymalloc
