#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Allocator calls that cannot succeed (docs/profile-format.md, alloc_failed):
# malloc((size_t)-1), an overflowing calloc and C++'s new char[2^47], which
# throws bad_alloc, are counted apart and add nothing to any total, however
# they fail: NULL returned, or an exception through operator new.
. tests/lib.sh

# "Failed calls:  N" of culpert info
failed_of() {
	"$BIN_CLI" info "$1" | sed -n 's/^Failed calls:  \([0-9]*\) .*/\1/p'
}

# alloc_space of the whole profile, in bytes
total_of() {
	"$BIN_CLI" report "$1" --format json | sed -n 's/^  "total_bytes": \([-0-9]*\),*$/\1/p'
}

# At --rate 1 every call is seen: 9000 NULLs (3000 of malloc((size_t)-1),
# of an overflowing calloc and of realloc(p, (size_t)-1)) counted apart, the
# total exactly the successful calls' bytes; with --inuse, a failed realloc
# leaves its block live
test_null() {
	need_root || return
	for mode in "" --inuse; do
		name=null${mode}
		profile "$name" 1 "$mode" "$TARGETS/alloc_fail" 3000 || return
		grep -qx 'failed 9000' "$TMP/$name.out" || { fail "$name: $(cat "$TMP/$name.out")"; return; }
		want=$(sed -n 's/^total //p' "$TMP/$name.out")
		# good() tail-calls malloc; the program allocates nothing else after attach
		t=$(total_of "$TMP/$name.pb.gz")
		[ "$t" = "$want" ] || fail "$name: total '$t', want $want"
		[ "$(failed_of "$TMP/$name.pb.gz")" = 9000 ] ||
			fail "$name: info says $("$BIN_CLI" info "$TMP/$name.pb.gz" | grep Failed), want 9000"
		"$PROFDUMP" "$TMP/$name.pb.gz" | grep -qx '# comment alloc_calls=3000' ||
			fail "$name: $("$PROFDUMP" "$TMP/$name.pb.gz" | grep alloc_calls), want 3000"
		"$BIN_CLI" report "$TMP/$name.pb.gz" >"$TMP/$name.report" || fail "$name: report"
		grep -q '^Failed:  9000 allocator calls asked for more than can ever be allocated' \
			"$TMP/$name.report" || fail "$name: report says no failed calls: $(head -5 "$TMP/$name.report")"
		grep -q '^culpert-bpf: 9000 allocator calls asked for more than can ever be allocated and failed' \
			"$TMP/$name.err" || fail "$name: attach did not say: $(tail -3 "$TMP/$name.err")"
		if [ -n "$mode" ]; then
			live=$("$BIN_CLI" report "$TMP/$name.pb.gz" --inuse --format json |
				sed -n 's/^  "total_bytes": \([-0-9]*\),*$/\1/p')
			[ "$live" = "$want" ] || fail "$name: live $live, want $want (a failed realloc frees nothing)"
		fi
		"$PROFDUMP" "$TMP/$name.pb.gz" | grep -q 'bad_' &&
			fail "$name: a failed call was sampled: $("$PROFDUMP" "$TMP/$name.pb.gz" | grep bad_)"
	done
}

# new char[2^47] throws bad_alloc: counted as failed, not as 128 TiB
test_bad_alloc() {
	need_root || return
	for cmd in attach capture; do
		name=throw-$cmd
		start_profiled "$name" $cmd "--rate 1" "$TARGETS/throw_new" 100 || return
		wait "$target_pid" || { fail "$name: target exited with $?"; return; }
		wait "$attach_pid" || { fail "$name: $cmd failed: $(tail -2 "$TMP/$name.err")"; return; }
		grep -qx 'caught 300' "$TMP/$name.out" || { fail "$name: $(grep caught "$TMP/$name.out")"; return; }
		[ "$(failed_of "$TMP/$name.pb.gz")" = 100 ] ||
			fail "$name: $("$BIN_CLI" info "$TMP/$name.pb.gz" | grep Failed), want 100 failed"
		t=$(total_of "$TMP/$name.pb.gz")
		[ -n "$t" ] && [ "$t" -ge 0 ] && [ "$t" -lt 1073741824 ] || fail "$name: total $t bytes"
		"$BIN_CLI" info "$TMP/$name.pb.gz" | grep -q '^Total: .*[TPE]iB' &&
			fail "$name: $("$BIN_CLI" info "$TMP/$name.pb.gz" | grep Total)"
		grep -q 'summary: .*[TPE]iB allocated\|EB\| -[0-9]' "$TMP/$name.err" &&
			fail "$name: $(grep 'summary:' "$TMP/$name.err")"
	done
}

run_test bpf/failed_null test_null
run_test bpf/failed_bad_alloc test_bad_alloc
