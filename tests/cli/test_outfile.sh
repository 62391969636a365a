#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert's -o (symbolize, flamegraph) onto what a path can name: a device
# node, a FIFO, a symbolic link, a directory, "", a 0600 file, a new file
# under umask 077 (lib/outfile.c; culpert-bpf's side is in
# tests/bpf/test_outfile.sh).
. tests/lib.sh

MKPROF=$OUTPUT/tests/tools/mkprof
D=$TMP/out

setup() {
	mkdir -p "$D"
	[ -s "$TMP/p.pb.gz" ] || "$MKPROF" -o "$TMP/p.pb.gz" tests/cli/data/basic.spec ||
		fail "mkprof failed"
	# what each command writes to a plain file: the content every other kind must get
	"$BIN_CLI" symbolize "$TMP/p.pb.gz" -o "$TMP/want.pb.gz" 2>/dev/null &&
		"$BIN_CLI" flamegraph "$TMP/p.pb.gz" -o "$TMP/want.folded" ||
		fail "plain -o failed"
}

# out CMD DEST: culpert CMD's output to DEST (symbolize: a profile, flamegraph: folded lines)
out() {
	case "$1" in
	symbolize) "$BIN_CLI" symbolize "$TMP/p.pb.gz" -o "$2" 2>"$TMP/o.err" ;;
	flamegraph) "$BIN_CLI" flamegraph "$TMP/p.pb.gz" -o "$2" 2>"$TMP/o.err" ;;
	esac
}

want_of() {
	[ "$1" = symbolize ] && echo "$TMP/want.pb.gz" || echo "$TMP/want.folded"
}

# a private character device like /dev/null (never the real one): written
# through, still the device afterwards
test_device_node() {
	need_root "to make a device node (mknod)" || return
	setup
	rm -f "$D/null"
	mknod "$D/null" c 1 3 || { fail "mknod"; return; }
	for c in symbolize flamegraph; do
		out "$c" "$D/null" || fail "$c -o a device: $(cat "$TMP/o.err")"
		[ -c "$D/null" ] || { fail "$c replaced the device node: $(ls -l "$D/null")"; return; }
	done
}

# a FIFO with a reader gets the bytes a file would, and stays a FIFO
test_fifo() {
	setup
	for c in symbolize flamegraph; do
		rm -f "$D/fifo" "$D/fifo.got"
		mkfifo "$D/fifo" || { fail "mkfifo"; return; }
		cat "$D/fifo" >"$D/fifo.got" &
		reader=$!
		track "$reader"
		out "$c" "$D/fifo" || fail "$c -o a FIFO: $(cat "$TMP/o.err")"
		# replaced, the FIFO would never get a writer: its reader is let go of
		[ -p "$D/fifo" ] || { kill "$reader"; fail "$c replaced the FIFO"; return; }
		wait "$reader"
		cmp -s "$D/fifo.got" "$(want_of "$c")" || fail "$c: the reader of the FIFO got other bytes"
	done
}

# a symbolic link is written through, as cp does: the file it names gets
# the content and keeps its mode, the link stays; a dangling one is refused
test_symlink() {
	setup
	for c in symbolize flamegraph; do
		rm -f "$D/target" "$D/link" "$D/dangling"
		echo old >"$D/target"
		chmod 0640 "$D/target"
		ln -s target "$D/link"
		out "$c" "$D/link" || fail "$c -o a symlink: $(cat "$TMP/o.err")"
		[ -L "$D/link" ] && [ "$(readlink "$D/link")" = target ] ||
			fail "$c replaced the symlink: $(ls -l "$D/link")"
		cmp -s "$D/target" "$(want_of "$c")" || fail "$c: the link's target has other bytes"
		[ "$(stat -c %a "$D/target")" = 640 ] || fail "$c: target mode $(stat -c %a "$D/target")"
		ln -s missing "$D/dangling"
		case "$c" in
		symbolize) expect_error 2 "cannot write $D/dangling: it is a symbolic link to missing, which does not exist" \
			"$BIN_CLI" symbolize "$TMP/p.pb.gz" -o "$D/dangling" ;;
		flamegraph) expect_error 2 "cannot write $D/dangling: it is a symbolic link to missing" \
			"$BIN_CLI" flamegraph "$TMP/p.pb.gz" -o "$D/dangling" ;;
		esac
		[ -L "$D/dangling" ] && [ ! -e "$D/missing" ] || fail "$c wrote through a dangling link"
	done
}

# a directory and "" are refused with one line, and nothing is left behind
test_directory_and_empty() {
	setup
	mkdir -p "$D/dir"
	for c in symbolize flamegraph; do
		expect_error 2 "cannot write $D/dir: it is a directory" \
			"$BIN_CLI" "$c" "$TMP/p.pb.gz" -o "$D/dir"
		expect_error 2 'cannot write "": an empty path' "$BIN_CLI" "$c" "$TMP/p.pb.gz" -o ""
		[ -z "$(ls -A "$D/dir")" ] || fail "$c left files in the directory: $(ls -A "$D/dir")"
	done
	ls "$D" | grep -q '\.tmp\.' && fail "temporary files left: $(ls "$D")"
	return 0
}

# an existing file keeps its mode (a 0600 file stays private); a new one
# gets 0666 less the umask
test_modes() {
	setup
	for c in symbolize flamegraph; do
		rm -f "$D/private" "$D/new077" "$D/new022"
		echo secret >"$D/private"
		chmod 0600 "$D/private"
		out "$c" "$D/private" || fail "$c -o a 0600 file: $(cat "$TMP/o.err")"
		[ "$(stat -c %a "$D/private")" = 600 ] ||
			fail "$c: a 0600 file became $(stat -c %a "$D/private")"
		cmp -s "$D/private" "$(want_of "$c")" || fail "$c: the 0600 file has other bytes"
		(umask 077 && out "$c" "$D/new077") || fail "$c under umask 077: $(cat "$TMP/o.err")"
		[ "$(stat -c %a "$D/new077")" = 600 ] || fail "$c: umask 077 gave $(stat -c %a "$D/new077")"
		(umask 022 && out "$c" "$D/new022") || fail "$c under umask 022"
		[ "$(stat -c %a "$D/new022")" = 644 ] || fail "$c: umask 022 gave $(stat -c %a "$D/new022")"
	done
}

run_test cli/outfile/device_node test_device_node
run_test cli/outfile/fifo test_fifo
run_test cli/outfile/symlink test_symlink
run_test cli/outfile/directory_and_empty test_directory_and_empty
run_test cli/outfile/modes test_modes
