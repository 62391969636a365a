#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert symbolize without a process: profiles over real objects made by
# objprof (addresses inside their functions), checked against addr2line on
# the same addresses, and every way debug info is found or refused.
. tests/lib.sh
. tests/symlib.sh

L=/usr/lib/x86_64-linux-gnu

# objects of every kind: C++, Rust (both manglings), glibc with Debian's split debug info
# (libc6-dbg), libstdc++ with symbols only
test_matches_addr2line() {
	"$OBJPROF" "$TMP/objs.pb.gz" --per-object 300 --samples 1000 "$TARGETS/sym_cpp" \
		"$TARGETS/sym_rust_v0" "$TARGETS/sym_rust_legacy" "$L/libc.so.6" "$L/libstdc++.so.6" \
		>/dev/null || { fail "objprof failed"; return; }
	"$BIN_CLI" symbolize "$TMP/objs.pb.gz" -o "$TMP/objs.sym.pb.gz" 2>"$TMP/objs.err" ||
		{ fail "symbolize failed: $(cat "$TMP/objs.err")"; return; }
	mkdir -p "$TMP/a2l"
	addr2line_diff "$TMP/objs.sym.pb.gz" "$TMP/a2l" /tests/targets/ >"$TMP/a2l/diff" ||
		fail "frames differ from addr2line: $(head -c 600 "$TMP/a2l/diff")"
	n=$(symdump "$TMP/objs.sym.pb.gz" | grep -c '^frame')
	[ "$n" -ge 1000 ] && [ "$(wc -l <"$TMP/a2l/ours")" -eq "$n" ] ||
		fail "compared $(wc -l <"$TMP/a2l/ours") of $n frames"
	# inline frames were there to compare
	symdump "$TMP/objs.sym.pb.gz" | grep -q '^frame [0-9]* 2 ' || fail "no inline frames"
	grep -q "^  $L/libstdc++.so.6 (build ID $(build_id "$L/libstdc++.so.6")): 300/300 with functions, 0/300 with file:line .*: no DWARF debug info" \
		"$TMP/objs.err" || fail "the report does not explain libstdc++: $(cat "$TMP/objs.err")"
}

# a second run changes no byte; in place and to stdout give the same file
test_idempotent() {
	[ -s "$TMP/objs.sym.pb.gz" ] || { fail "needs matches_addr2line"; return; }
	"$BIN_CLI" symbolize "$TMP/objs.sym.pb.gz" -o "$TMP/again.pb.gz" 2>/dev/null &&
		cmp -s "$TMP/objs.sym.pb.gz" "$TMP/again.pb.gz" || fail "a second run changed the profile"
	cp "$TMP/objs.pb.gz" "$TMP/inplace.pb.gz"
	"$BIN_CLI" symbolize "$TMP/inplace.pb.gz" 2>/dev/null &&
		cmp -s "$TMP/objs.sym.pb.gz" "$TMP/inplace.pb.gz" || fail "in place differs from -o"
	"$BIN_CLI" symbolize "$TMP/objs.pb.gz" -o - 2>/dev/null >"$TMP/stdout.pb.gz" &&
		cmp -s "$TMP/objs.sym.pb.gz" "$TMP/stdout.pb.gz" || fail "-o - differs from -o FILE"
}

# without a build ID nothing matches, even the very file at the very path
test_no_build_id_no_match() {
	objcopy --remove-section .note.gnu.build-id "$TARGETS/sym_cpp" "$TMP/nobid"
	"$OBJPROF" "$TMP/nobid.pb.gz" --per-object 20 --samples 20 "$TMP/nobid" >/dev/null &&
		"$BIN_CLI" symbolize "$TMP/nobid.pb.gz" -o "$TMP/nobid.sym.pb.gz" 2>"$TMP/nobid.err" ||
		{ fail "symbolize failed: $(cat "$TMP/nobid.err")"; return; }
	! symdump "$TMP/nobid.sym.pb.gz" | grep -q '^frame' || fail "matched by path alone"
	grep -q "$TMP/nobid: 0/[0-9]* with functions.*has no build ID" "$TMP/nobid.err" ||
		fail "the report does not say why: $(cat "$TMP/nobid.err")"
}

# .gnu_debuglink: next to the binary, then in its .debug/ directory
test_debuglink() {
	mkdir -p "$TMP/dl/.debug"
	cp "$TARGETS/sym_cpp" "$TMP/dl/sym_cpp"
	objcopy --only-keep-debug "$TMP/dl/sym_cpp" "$TMP/dl/sym_cpp.dbg"
	objcopy --strip-debug --add-gnu-debuglink="$TMP/dl/sym_cpp.dbg" "$TMP/dl/sym_cpp"
	"$OBJPROF" "$TMP/dl.pb.gz" --per-object 40 --samples 40 "$TMP/dl/sym_cpp" >/dev/null ||
		{ fail "objprof failed"; return; }
	for where in "" .debug/; do
		[ -z "$where" ] || mv "$TMP/dl/sym_cpp.dbg" "$TMP/dl/.debug/"
		"$BIN_CLI" symbolize "$TMP/dl.pb.gz" -v -o "$TMP/dl.sym.pb.gz" 2>"$TMP/dl.err" ||
			{ fail "symbolize failed: $(cat "$TMP/dl.err")"; return; }
		grep -q "$TMP/dl/sym_cpp .*from $TMP/dl/${where}sym_cpp.dbg" "$TMP/dl.err" ||
			fail "debuglink in '$where' not used: $(cat "$TMP/dl.err")"
		# addr2line follows the debuglink too
		mkdir -p "$TMP/dl-a2l"
		addr2line_diff "$TMP/dl.sym.pb.gz" "$TMP/dl-a2l" . >"$TMP/dl-a2l/diff" ||
			fail "debuglink frames differ from addr2line: $(head -c 400 "$TMP/dl-a2l/diff")"
		# not a vacuous comparison: every frame of the profile was compared
		n=$(symdump "$TMP/dl.sym.pb.gz" | grep -c '^frame')
		[ "$n" -gt 0 ] && [ "$(wc -l <"$TMP/dl-a2l/ours")" -eq "$n" ] ||
			fail "debuglink in '$where': compared $(wc -l <"$TMP/dl-a2l/ours") of $n frames"
	done
}

# dwz: DWARF shared by two builds moved to a supplementary file, found by its
# build ID; both builds are in the profile and share it
test_dwz_supplementary_file() {
	command -v dwz >/dev/null || { fail "dwz is not installed (Debian package dwz)"; return; }
	d=$TMP/dwz
	mkdir -p "$d/bin" "$d/dbg"
	cp "$TARGETS/sym_cpp" "$d/bin/sym_cpp"
	cp "$TARGETS/sym_cpp_rebuild" "$d/bin/rebuild"
	"$OBJPROF" "$d/p.pb.gz" --per-object 40 --samples 40 "$d/bin/sym_cpp" "$d/bin/rebuild" \
		>/dev/null ||
		{ fail "objprof failed"; return; }
	"$BIN_CLI" symbolize "$d/p.pb.gz" -o "$d/want.pb.gz" 2>/dev/null
	symdump "$d/want.pb.gz" >"$d/want.dump"
	for f in sym_cpp rebuild; do
		objcopy --only-keep-debug "$d/bin/$f" "$d/$f.debug"
		strip --strip-debug "$d/bin/$f"
	done
	(cd "$d" && dwz -m common.debug -M common.debug sym_cpp.debug rebuild.debug) ||
		{ fail "dwz failed"; return; }
	readelf -S "$d/sym_cpp.debug" 2>/dev/null | grep -q gnu_debugaltlink || { fail "dwz made no altlink"; return; }
	readelf -S "$d/rebuild.debug" 2>/dev/null | grep -q gnu_debugaltlink || { fail "dwz made no altlink"; return; }
	b=$(build_id "$d/bin/sym_cpp")
	r=$(build_id "$d/bin/rebuild")
	c=$(build_id "$d/common.debug")
	for id in "$b" "$r" "$c"; do
		mkdir -p "$(dirname "$(debug_path "$d/dbg" "$id")")"
	done
	mv "$d/sym_cpp.debug" "$(debug_path "$d/dbg" "$b")"
	mv "$d/rebuild.debug" "$(debug_path "$d/dbg" "$r")"
	# without the supplementary file: the report says which one is missing
	"$BIN_CLI" symbolize "$d/p.pb.gz" --debug-dir "$d/dbg" -o "$d/noalt.pb.gz" 2>"$d/noalt.err"
	grep -q "supplementary file common.debug (build ID $c) not found" "$d/noalt.err" ||
		fail "missing supplementary file not reported: $(cat "$d/noalt.err")"
	mv "$d/common.debug" "$(debug_path "$d/dbg" "$c")"
	"$BIN_CLI" symbolize "$d/p.pb.gz" --debug-dir "$d/dbg" -o "$d/got.pb.gz" 2>"$d/got.err" ||
		{ fail "symbolize failed: $(cat "$d/got.err")"; return; }
	symdump "$d/got.pb.gz" | diff "$d/want.dump" - >"$d/diff" ||
		fail "with dwz DWARF the frames differ: $(head -c 600 "$d/diff")"
}

test_errors() {
	expect_error 2 "cannot read $TMP/missing.pb.gz" "$BIN_CLI" symbolize "$TMP/missing.pb.gz"
	printf 'not a profile' >"$TMP/junk.pb.gz"
	expect_error 2 "cannot read $TMP/junk.pb.gz" "$BIN_CLI" symbolize "$TMP/junk.pb.gz"
	"$OBJPROF" "$TMP/small.pb.gz" --per-object 5 --samples 5 "$TARGETS/sym_cpp" >/dev/null
	expect_error 2 "--debug-dir $TMP/nodir: No such file or directory" \
		"$BIN_CLI" symbolize "$TMP/small.pb.gz" --debug-dir "$TMP/nodir"
	expect_error 2 "--binary-dir $TMP/small.pb.gz: not a directory" \
		"$BIN_CLI" symbolize "$TMP/small.pb.gz" --binary-dir "$TMP/small.pb.gz"
	expect_error 2 "cannot write $TMP/nodir/out.pb.gz" \
		"$BIN_CLI" symbolize "$TMP/small.pb.gz" -o "$TMP/nodir/out.pb.gz"
	expect_error 2 "no profile given; 'culpert symbolize --help' shows the usage" "$BIN_CLI" symbolize
	expect_error 2 "one profile at a time ('extra' is one too many)" "$BIN_CLI" symbolize "$TMP/small.pb.gz" extra
	expect_error 2 "unknown option '--frobnicate'; 'culpert symbolize --help'" \
		"$BIN_CLI" symbolize --frobnicate "$TMP/small.pb.gz"
	"$BIN_CLI" symbolize --help | grep -q '^Usage: culpert symbolize' || fail "no usage in --help"
}

# the memory budget of every command (docs/cli.md): the whole heap, libdw's
# and libelf's included, within CULPERT_MAX_MEMORY, or one error line, exit
# 2 and the input untouched; by default within 32x the file (>= 256 MiB)
test_memory_budget() {
	"$OBJPROF" "$TMP/big.pb.gz" --per-object 4000 --samples 20000 "$TARGETS/sym_cpp" \
		"$L/libc.so.6" "$L/libstdc++.so.6" "$L/libcrypto.so.3" "$L/libsqlite3.so.0" \
		>/dev/null || { fail "objprof failed"; return; }
	cp "$TMP/big.pb.gz" "$TMP/big.orig.pb.gz"
	CULPERT_MAX_MEMORY=8MiB "$BIN_CLI" symbolize "$TMP/big.pb.gz" >"$TMP/budget.out" \
		2>"$TMP/budget.err"
	rc=$?
	[ "$rc" = 2 ] || fail "exit $rc under CULPERT_MAX_MEMORY=8MiB, want 2"
	[ "$(cat "$TMP/budget.err")" = "error: cannot symbolize $TMP/big.pb.gz: symbolizing it takes more than the 8.00 MiB of memory CULPERT_MAX_MEMORY allows" ] ||
		fail "stderr: $(head -c 400 "$TMP/budget.err")"
	cmp -s "$TMP/big.pb.gz" "$TMP/big.orig.pb.gz" || fail "the refused input was changed"
	expect_error 2 "CULPERT_MAX_MEMORY='lots' is not a size" \
		env CULPERT_MAX_MEMORY=lots "$BIN_CLI" symbolize "$TMP/big.pb.gz"
	# the default: RSS (the heap and the mapped objects) within the 256 MiB floor
	/usr/bin/time -f '%M' -o "$TMP/rss" "$BIN_CLI" symbolize "$TMP/big.pb.gz" \
		-o "$TMP/big.sym.pb.gz" 2>/dev/null || fail "symbolize under the default budget failed"
	[ "$(tail -1 "$TMP/rss")" -le $((256 * 1024)) ] || fail "peak RSS $(tail -1 "$TMP/rss") KiB"
}

for t in matches_addr2line idempotent no_build_id_no_match debuglink dwz_supplementary_file \
	errors memory_budget; do
	run_test "symbolize_$t" "test_$t"
done
