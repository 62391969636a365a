#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert-bpf's -o (attach, capture) onto what a path can name: a device
# node, a FIFO, a symbolic link, a directory, "", a 0600 file, a new file
# under umask 077, and a destination that fails only once the capture is
# over (lib/outfile.c; culpert's side is in tests/cli/test_outfile.sh).
. tests/lib.sh

D=$TMP/out

# a service to profile for the whole file
start_service() {
	[ -n "${svc:-}" ] && kill -0 "$svc" 2>/dev/null && return 0
	start_program /dev/null "$OUTPUT/examples/demo_service" 120 || return
	svc=$prog_pid
	mkdir -p "$D"
}

# attach_to DEST [OPTION...]: a short attach writing to DEST; its stderr in $TMP/a.err
attach_to() {
	_dest=$1
	shift
	"$BIN_BPF" attach --pid "$svc" --duration 300ms --rate 16KiB -o "$_dest" "$@" 2>"$TMP/a.err"
}

# FILE holds a profile of the service: profdump reads it, its spans are there
is_profile() {
	"$PROFDUMP" "$1" 2>/dev/null | grep -q 'handle_request' || { fail "$2: no profile in $1"; return 1; }
}

test_device_node() {
	need_root || return
	start_service
	rm -f "$D/null"
	mknod "$D/null" c 1 3 || { fail "mknod"; return; }
	attach_to "$D/null" || fail "attach -o a device: $(cat "$TMP/a.err")"
	[ -c "$D/null" ] || fail "attach replaced the device node: $(ls -l "$D/null")"
}

test_fifo() {
	need_root || return
	start_service
	rm -f "$D/fifo"
	mkfifo "$D/fifo"
	cat "$D/fifo" >"$D/fifo.got" &
	reader=$!
	track "$reader"
	attach_to "$D/fifo" || fail "attach -o a FIFO: $(cat "$TMP/a.err")"
	[ -p "$D/fifo" ] || { kill "$reader"; fail "attach replaced the FIFO"; return; }
	wait "$reader"
	is_profile "$D/fifo.got" "the FIFO's reader"
}

test_symlink() {
	need_root || return
	start_service
	rm -f "$D/target" "$D/link"
	echo old >"$D/target"
	chmod 0600 "$D/target"
	ln -s target "$D/link"
	attach_to "$D/link" || fail "attach -o a symlink: $(cat "$TMP/a.err")"
	[ -L "$D/link" ] || fail "attach replaced the symlink: $(ls -l "$D/link")"
	is_profile "$D/target" "the link's target"
	[ "$(stat -c %a "$D/target")" = 600 ] || fail "the target became $(stat -c %a "$D/target")"
}

# refused before attaching: no "profiling" line, nothing written
test_refused_up_front() {
	need_root || return
	start_service
	mkdir -p "$D/dir"
	for cmd in attach capture; do
		expect_error 1 "cannot write the profile to $D/dir: it is a directory" \
			"$BIN_BPF" "$cmd" --pid "$svc" -o "$D/dir"
		grep -q 'profiling' "$TMP/err.txt" && fail "$cmd -o DIR attached first"
		expect_error 1 'cannot write the profile to "": an empty path' \
			"$BIN_BPF" "$cmd" --pid "$svc" -o ""
		grep -q 'profiling' "$TMP/err.txt" && fail "$cmd -o \"\" attached first"
	done
	[ -z "$(ls -A "$D/dir")" ] || fail "files left in the directory: $(ls -A "$D/dir")"
	return 0
}

test_modes() {
	need_root || return
	start_service
	rm -f "$D/private" "$D/new077"
	echo secret >"$D/private"
	chmod 0600 "$D/private"
	attach_to "$D/private" || fail "attach -o a 0600 file: $(cat "$TMP/a.err")"
	[ "$(stat -c %a "$D/private")" = 600 ] || fail "a 0600 file became $(stat -c %a "$D/private")"
	is_profile "$D/private" "the 0600 file"
	(umask 077 && attach_to "$D/new077") || fail "attach under umask 077: $(cat "$TMP/a.err")"
	[ "$(stat -c %a "$D/new077")" = 600 ] || fail "umask 077 gave $(stat -c %a "$D/new077")"
}

# The directory goes away during the capture: the profile goes to $TMPDIR
# under its default name, the one error line says where, exit 1.
test_late_failure() {
	need_root || return
	start_service
	mkdir -p "$D/gone" "$TMP/fallback"
	export TMPDIR="$TMP/fallback"
	attach_bg "$TMP/late.err" --pid "$svc" --rate 16KiB -o "$D/gone/p.pb.gz"
	unset TMPDIR
	[ -n "$attach_pid" ] || return
	rmdir "$D/gone" || { fail "rmdir"; return; }
	kill -INT "$attach_pid"
	wait "$attach_pid"
	rc=$?
	[ "$rc" -eq 1 ] || fail "exit status $rc, want 1"
	[ "$(grep -c '^error: ' "$TMP/late.err")" -eq 1 ] || fail "not one error line: $(cat "$TMP/late.err")"
	grep -q "^error: cannot write the profile to $D/gone/p.pb.gz: No such file or directory; wrote it to $TMP/fallback/culpert-demo_service-$svc-[0-9TZ]*\.pb\.gz instead$" \
		"$TMP/late.err" || fail "no fallback named: $(cat "$TMP/late.err")"
	set -- "$TMP"/fallback/culpert-demo_service-"$svc"-*.pb.gz
	[ -f "$1" ] && is_profile "$1" "the fallback"
}

run_test bpf/outfile/device_node test_device_node
run_test bpf/outfile/fifo test_fifo
run_test bpf/outfile/symlink test_symlink
run_test bpf/outfile/refused_up_front test_refused_up_front
run_test bpf/outfile/modes test_modes
run_test bpf/outfile/late_failure test_late_failure
