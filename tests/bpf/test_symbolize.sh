#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Symbolization end to end: C++ and Rust targets (both manglings) with
# inlined functions are captured twice at once with --rate 1, symbolized at
# capture and --no-symbolize; the ground truth is the source itself (marker
# comments give the lines), the allocation counts the targets make, and
# addr2line on the same addresses.  Offline: the binary moved and stripped,
# its debug info split into a .build-id tree or served by debuginfod, a
# rebuild at the same path refused.
. tests/lib.sh
. tests/symlib.sh

CPP_SRC=$PWD/tests/targets/sym_cpp.cpp
RUST_SRC=$PWD/tests/targets/sym_rust.rs

# every test needs root and the captures
sym_ready() {
	need_root || return 1
	[ -z "${capture_failed:-}" ] || { fail "capture: $capture_failed"; return 1; }
}

# capture_pair TARGET DIR: run a copy of TARGET as DIR/app/NAME, attach twice with
# --rate 1 (DIR/sym.pb.gz symbolized at capture, DIR/raw.pb.gz --no-symbolize), let it
# allocate, detach both, end it
capture_pair() {
	mkdir -p "$2/app"
	cp "$1" "$2/app/"
	start_target "$2/target.out" "$2/app/$(basename "$1")" || return 1
	attach_bg "$2/sym.err" --pid "$target_pid" --rate 1 -v -o "$2/sym.pb.gz" || return 1
	_sym=$attach_pid
	attach_bg "$2/raw.err" --pid "$target_pid" --rate 1 --no-symbolize -o "$2/raw.pb.gz" ||
		return 1
	_raw=$attach_pid
	kill -USR1 "$target_pid"
	wait_for "$2/target.out" done 10 || { fail "$1 did not finish"; return 1; }
	kill -INT "$_sym" "$_raw"
	wait "$_sym" || { fail "attach failed: $(cat "$2/sym.err")"; return 1; }
	wait "$_raw" || { fail "attach --no-symbolize failed: $(cat "$2/raw.err")"; return 1; }
	kill -USR1 "$target_pid"
	wait "$target_pid"
}

# expect_frames PROFILE LEAF_PATTERN EXPECTED: the leaf location's frames, innermost
# first, as "name<TAB>system name<TAB>file<TAB>line" lines
expect_frames() {
	frames_of "$1" "$2" >"$TMP/frames.got"
	printf '%b' "$3" >"$TMP/frames.want"
	cmp -s "$TMP/frames.got" "$TMP/frames.want" ||
		fail "frames of $2 in $1: got [$(cat "$TMP/frames.got")], want [$(cat "$TMP/frames.want")]"
}

# values_at PROFILE LOCATION_ID: "objects bytes" summed over samples whose leaf is that location
values_at() {
	symdump "$1" | awk -F'\t' -v id="$2" '
		/^sample / { split($2, l, ","); if (l[1] == id) { split($1, v, " "); o += v[2]; b += v[3] } }
		END { print o + 0, b + 0 }'
}

# leaf_id PROFILE SYSTEM_NAME_PATTERN: the location whose innermost frame matches
leaf_id() {
	symdump "$1" | awk -F'\t' -v pat="$2" '
		/^frame / { split($1, h, " "); if (h[3] == 0 && $2 ~ pat) { print h[2]; exit } }'
}

# mapping_flags PROFILE PATH_SUFFIX: the has_* flags of the mapping of that file
mapping_flags() {
	symdump "$1" | awk -v s="$2" '/^mapping / && substr($5, length($5) - length(s) + 1) == s {
		print $7, $8, $9, $10; exit }'
}

test_cpp_inline_frames() {
	sym_ready || return
	d=$TMP/cpp
	g=$(line_of "$CPP_SRC" '@grab')
	m=$(line_of "$CPP_SRC" '@make_buffer')
	h=$(line_of "$CPP_SRC" '@handle_order')
	expect_frames "$d/sym.pb.gz" '^_ZN4shop4PoolIcE4grabEm$' \
"shop::Pool<char>::grab(unsigned long)\t_ZN4shop4PoolIcE4grabEm\t$CPP_SRC\t$g
shop::make_buffer(unsigned long)\t_ZN4shop11make_bufferEm\t$CPP_SRC\t$m
shop::handle_order(int)\t_ZN4shop12handle_orderEi\t$CPP_SRC\t$h\n"
	# handle_order makes 100 allocations of 100..199 bytes: every one at --rate 1
	id=$(leaf_id "$d/sym.pb.gz" '^_ZN4shop4PoolIcE4grabEm$')
	[ "$(values_at "$d/sym.pb.gz" "$id")" = "100 14950" ] ||
		fail "handle_order: $(values_at "$d/sym.pb.gz" "$id"), want 100 objects, 14950 bytes"
	# add_items: 50 operator new of a 64-byte Order; libstdc++'s operator new is an
	# allocator entry point, so the leaf is its caller, a weak template-class member
	id=$(leaf_id "$d/sym.pb.gz" '^_ZN4shop4Cart9add_itemsEi$')
	symdump "$d/sym.pb.gz" | grep -q "^frame $id 0 shop::Cart::add_items(int)	_ZN4shop4Cart9add_itemsEi	" ||
		fail "add_items, the caller of operator new, is not its leaf, demangled"
	[ "$(values_at "$d/sym.pb.gz" "$id")" = "50 3200" ] ||
		fail "add_items: $(values_at "$d/sym.pb.gz" "$id"), want 50 objects, 3200 bytes"
	[ "$(mapping_flags "$d/sym.pb.gz" /app/sym_cpp)" = \
	  "functions=1 filenames=1 lines=1 inline=1" ] ||
		fail "flags of the executable: $(mapping_flags "$d/sym.pb.gz" /app/sym_cpp)"
	[ "$(mapping_flags "$d/raw.pb.gz" /app/sym_cpp)" = \
	  "functions=0 filenames=0 lines=0 inline=0" ] ||
		fail "flags of the unsymbolized executable: $(mapping_flags "$d/raw.pb.gz" /app/sym_cpp)"
	! grep -q '^frame' "$d/raw.pb.gz.dump" || fail "--no-symbolize wrote frames"
}

# rust_frames DIR KIND RESERVE STOCK RESTOCK: the inline chain of restock, ground truth
rust_frames() {
	r=$(line_of "$RUST_SRC" '@reserve')
	s=$(line_of "$RUST_SRC" '@stock')
	t=$(line_of "$RUST_SRC" '@restock')
	frames_of "$1/sym.pb.gz" "$3" | cut -f1,3,4 >"$TMP/frames.got"
	printf '%s\t%s\t%s\n' "$2" "$RUST_SRC" "$r" "sym_rust::warehouse::stock$4" "$RUST_SRC" "$s" \
		"sym_rust::warehouse::restock" "$RUST_SRC" "$t" >"$TMP/frames.want"
	cmp -s "$TMP/frames.got" "$TMP/frames.want" ||
		fail "restock frames: got [$(cat "$TMP/frames.got")], want [$(cat "$TMP/frames.want")]"
	id=$(leaf_id "$1/sym.pb.gz" "$3")
	# restock: 100 allocations of (100 + i + 4) * 8 bytes
	[ "$(values_at "$1/sym.pb.gz" "$id")" = "100 122800" ] ||
		fail "restock: $(values_at "$1/sym.pb.gz" "$id"), want 100 objects, 122800 bytes"
	# display names carry no hash: legacy ::h0123456789abcdef, v0 crate disambiguators [...]
	! symdump "$1/sym.pb.gz" | grep '^frame' | cut -f1 |
		grep -q -e '::h[0-9a-f]\{16\}$' -e 'sym_rust\[' ||
		fail "hash left in a display name: $(symdump "$1/sym.pb.gz" | grep '^frame' | cut -f1 |
			grep -m1 -e '::h[0-9a-f]\{16\}$' -e 'sym_rust\[')"
}

test_rust_v0_inline_frames() {
	sym_ready || return
	rust_frames "$TMP/v0" '<sym_rust::warehouse::Shelf>::reserve' \
		'^_RNvMNtCs[0-9A-Za-z_]+8sym_rust9warehouseNtB2_5Shelf7reserve$' '::<u32>'
}

test_rust_legacy_inline_frames() {
	sym_ready || return
	rust_frames "$TMP/legacy" 'sym_rust::warehouse::Shelf::reserve' \
		'^_ZN8sym_rust9warehouse5Shelf7reserve17h[0-9a-f]+E$' ''
}

# offline symbolization of the --no-symbolize capture is the capture-time result, and
# symbolizing again changes no byte
test_offline_equals_capture() {
	sym_ready || return
	for t in cpp v0 legacy; do
		d=$TMP/$t
		"$BIN_CLI" symbolize "$d/raw.pb.gz" -o "$d/off.pb.gz" 2>"$d/off.err" ||
			{ fail "$t: symbolize failed: $(cat "$d/off.err")"; return; }
		symdump_same "$d/off.pb.gz" >"$d/off.dump"
		diff "$d/sym.pb.gz.dump" "$d/off.dump" >"$d/off.diff" ||
			fail "$t: offline differs from capture time: $(head -c 600 "$d/off.diff" | tr '\n' ';')"
		go_totals_agree "$d/off.pb.gz"
		"$BIN_CLI" symbolize "$d/off.pb.gz" -o "$d/off2.pb.gz" 2>/dev/null &&
			cmp -s "$d/off.pb.gz" "$d/off2.pb.gz" || fail "$t: symbolizing twice changed the file"
		"$BIN_CLI" symbolize "$d/sym.pb.gz" -o "$d/sym2.pb.gz" 2>/dev/null &&
			cmp -s "$d/sym.pb.gz" "$d/sym2.pb.gz" ||
			fail "$t: symbolizing a capture-time profile changed it"
	done
}

# move the binary away (DIR/moved), strip it, split its debug info into DIR/dbg/.build-id;
# keep an unstripped copy as DIR/NAME.unstripped; sets $bid
split_debug() {
	d=$1
	exe=$d/app/$2
	[ -d "$d/moved" ] && { bid=$(build_id "$d/moved/$2"); return 0; }
	bid=$(build_id "$exe")
	mkdir -p "$d/moved" "$(dirname "$(debug_path "$d/dbg" "$bid")")"
	mv "$exe" "$d/moved/"
	cp "$d/moved/$2" "$d/$2.unstripped"
	objcopy --only-keep-debug "$d/moved/$2" "$(debug_path "$d/dbg" "$bid")"
	strip --strip-all "$d/moved/$2"
}

test_offline_stripped_debug_dir() {
	sym_ready || return
	for t in cpp:sym_cpp v0:sym_rust_v0; do
		d=$TMP/${t%%:*}
		split_debug "$d" "${t#*:}"
		# nothing to find: the executable stays unsymbolized, and the report says why
		"$BIN_CLI" symbolize "$d/raw.pb.gz" -o "$d/none.pb.gz" 2>"$d/none.err" ||
			fail "$t: symbolize without the binary failed: $(cat "$d/none.err")"
		grep -q "app/${t#*:} (build ID $bid).*no file with build ID $bid" "$d/none.err" ||
			fail "$t: report does not say why the executable stayed unsymbolized: $(cat "$d/none.err")"
		[ "$(mapping_flags "$d/none.pb.gz" "/app/${t#*:}")" = \
		  "functions=0 filenames=0 lines=0 inline=0" ] || fail "$t: flags claim frames"
		# only the split debug info, found by build ID
		"$BIN_CLI" symbolize "$d/raw.pb.gz" --debug-dir "$d/dbg" -o "$d/dbg.pb.gz" \
			2>"$d/dbg.err" || fail "$t: symbolize --debug-dir failed: $(cat "$d/dbg.err")"
		symdump_same "$d/dbg.pb.gz" | diff "$d/sym.pb.gz.dump" - >"$d/dbg.diff" ||
			fail "$t: --debug-dir result differs from capture time:" \
				"$(head -c 600 "$d/dbg.diff" | tr '\n' ';')"
		# the stripped binary, found by build ID in --binary-dir, with the debug info
		"$BIN_CLI" symbolize "$d/raw.pb.gz" --binary-dir "$d/moved" --debug-dir "$d/dbg" \
			-o "$d/bin.pb.gz" 2>"$d/bin.err" || fail "$t: --binary-dir failed: $(cat "$d/bin.err")"
		symdump_same "$d/bin.pb.gz" | diff "$d/sym.pb.gz.dump" - >"$d/bin.diff" ||
			fail "$t: --binary-dir result differs from capture time:" \
				"$(head -c 600 "$d/bin.diff" | tr '\n' ';')"
	done
}

# the program rebuilt at the same path is another build ID: refused, never half-used
test_rebuild_refused() {
	sym_ready || return
	d=$TMP/cpp
	split_debug "$d" sym_cpp
	exe=$d/app/sym_cpp
	cp "$TARGETS/sym_cpp_rebuild" "$exe"
	new=$(build_id "$exe")
	old=$(build_id "$d/sym_cpp.unstripped")
	[ -n "$new" ] && [ "$new" != "$old" ] || { fail "the rebuild has the same build ID"; return; }
	"$BIN_CLI" symbolize "$d/raw.pb.gz" --binary-dir "$d/app" -o "$d/rebuilt.pb.gz" \
		2>"$d/rebuilt.err" || fail "symbolize failed: $(cat "$d/rebuilt.err")"
	grep -q "$exe has build ID $new, a different build" "$d/rebuilt.err" ||
		fail "the report does not name the different build: $(cat "$d/rebuilt.err")"
	[ "$(mapping_flags "$d/rebuilt.pb.gz" /app/sym_cpp)" = \
	  "functions=0 filenames=0 lines=0 inline=0" ] || fail "the rebuild was used"
	! symdump "$d/rebuilt.pb.gz" | grep -q '^frame.*_ZN4shop' || fail "frames from the rebuild"
	rm -f "$exe"
}

test_debuginfod() {
	sym_ready || return
	d=$TMP/cpp
	split_debug "$d" sym_cpp
	mkdir -p "$d/served"
	cp "$(debug_path "$d/dbg" "$bid")" "$d/served/sym_cpp.debug"
	start_debuginfod "$d/served" "$bid" || return
	DEBUGINFOD_URLS=$dfd_url DEBUGINFOD_CACHE_PATH=$TMP/dfd-cache \
		"$BIN_CLI" symbolize "$d/raw.pb.gz" -o "$d/dfd.pb.gz" 2>"$d/dfd.err" ||
		fail "symbolize with debuginfod failed: $(cat "$d/dfd.err")"
	symdump_same "$d/dfd.pb.gz" | diff "$d/sym.pb.gz.dump" - >"$d/dfd.diff" ||
		fail "debuginfod result differs from capture time: $(head -c 600 "$d/dfd.diff" | tr '\n' ';')"
	# the server gone: one clear warning, the profile still written
	kill "$dfd_pid"
	wait "$dfd_pid" 2>/dev/null
	DEBUGINFOD_URLS=$dfd_url DEBUGINFOD_CACHE_PATH=$TMP/dfd-cache2 \
		"$BIN_CLI" symbolize "$d/raw.pb.gz" -o "$d/down.pb.gz" 2>"$d/down.err" ||
		fail "symbolize with debuginfod down failed: $(cat "$d/down.err")"
	[ "$(grep -c "^warning: debuginfod (DEBUGINFOD_URLS=$dfd_url).*Connection refused" \
		"$d/down.err")" = 1 ] || fail "no single clear warning: $(cat "$d/down.err")"
	[ -s "$d/down.pb.gz" ] && symdump "$d/down.pb.gz" >/dev/null || fail "no profile written"
}

test_addr2line_agrees() {
	sym_ready || return
	for t in cpp v0 legacy; do
		mkdir -p "$TMP/a2l-$t"
		addr2line_diff "$TMP/$t/sym.pb.gz" "$TMP/a2l-$t" /app/ >"$TMP/a2l-$t/diff" ||
			fail "$t: frames differ from addr2line: $(head -c 600 "$TMP/a2l-$t/diff")"
		# not a vacuous comparison: every frame of every located address, and there are frames
		n=$(grep -c '^frame' "$TMP/$t/sym.pb.gz.dump")
		[ "$n" -gt 0 ] && [ "$(wc -l <"$TMP/a2l-$t/ours")" -ge "$n" ] ||
			fail "$t: compared $(wc -l <"$TMP/a2l-$t/ours") of $n frames"
	done
}

# go tool pprof shows our frames, inline ones marked, with file:line, and does not try to
# symbolize again what we symbolized (it cannot for native code: its symbolizer reads Go
# line tables only, and it reads no build IDs, so PPROF_BINARY_PATH finds no native file)
test_pprof() {
	sym_ready || return
	d=$TMP/cpp
	command -v go >/dev/null || { fail "go is not installed (Debian package golang-go)"; return; }
	go tool pprof -traces -lines "$d/sym.pb.gz" >"$d/pprof.txt" 2>"$d/pprof.err" ||
		{ fail "go tool pprof failed: $(cat "$d/pprof.err")"; return; }
	g=$(line_of "$CPP_SRC" '@grab')
	h=$(line_of "$CPP_SRC" '@handle_order')
	grep -q "shop::Pool<char>::grab(unsigned long) $CPP_SRC:$g (inline)" "$d/pprof.txt" &&
		grep -q "shop::handle_order(int) $CPP_SRC:$h\$" "$d/pprof.txt" ||
		fail "pprof -traces -lines does not show the frames: $(head -c 600 "$d/pprof.txt")"
	! grep -qi 'symbolization failed' "$d/pprof.err" ||
		fail "pprof tried to symbolize again: $(cat "$d/pprof.err")"
}

# every file mapping carries the build ID the file itself has (eu-readelf, not culpert)
test_mapping_build_ids() {
	sym_ready || return
	for t in cpp v0; do
		# one line per mapping whose file is there to check: "ok FILE" or what differs
		awk '/^mapping / && $5 !~ /^\[/ { print $5, $6 }' "$TMP/$t/raw.pb.gz.dump" |
		while read -r f b; do
			[ -e "$f" ] || continue
			want=$(build_id "$f")
			if [ "$b" = "$want" ]; then
				echo "ok $f"
			else
				echo "$f: $b, file has $want"
			fi
		done >"$TMP/$t/bid.checked"
		grep -v '^ok ' "$TMP/$t/bid.checked" >"$TMP/$t/bid.diff"
		[ ! -s "$TMP/$t/bid.diff" ] || fail "$t: build IDs: $(cat "$TMP/$t/bid.diff")"
		[ -s "$TMP/$t/bid.checked" ] || fail "$t: no mapping's file was there to check its build ID"
	done
}

# the captures every test reads, made once
if [ "$(id -u)" = 0 ]; then
	capture_pair "$TARGETS/sym_cpp" "$TMP/cpp" &&
		capture_pair "$TARGETS/sym_rust_v0" "$TMP/v0" &&
		capture_pair "$TARGETS/sym_rust_legacy" "$TMP/legacy"
	capture_failed=$_failed
	for t in cpp v0 legacy; do
		symdump_same "$TMP/$t/sym.pb.gz" >"$TMP/$t/sym.pb.gz.dump" 2>/dev/null
		symdump "$TMP/$t/raw.pb.gz" >"$TMP/$t/raw.pb.gz.dump" 2>/dev/null
	done
	cleanup_pids
fi

# in this order: the tests after offline_stripped_debug_dir use its moved binaries
for t in cpp_inline_frames rust_v0_inline_frames rust_legacy_inline_frames \
	offline_equals_capture addr2line_agrees mapping_build_ids pprof offline_stripped_debug_dir \
	rebuild_refused debuginfod; do
	run_test "symbolize_$t" "test_$t"
done
