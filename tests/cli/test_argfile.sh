#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# @FILE arguments (lib/argfile.c), as the DaemonSet's ConfigMap gives the agent its
# options: the same output as the options on the command line; comments, blank lines
# and blanks around a line ignored; a line is one argument; errors say which file and why.
. tests/lib.sh

MKPROF=$OUTPUT/tests/tools/mkprof

test_argfile_same_as_argv() {
	"$MKPROF" -o "$TMP/basic.pb.gz" tests/cli/data/basic.spec || { fail "mkprof"; return; }
	"$BIN_CLI" report "$TMP/basic.pb.gz" --flat --format json >"$TMP/argv.out" 2>&1 ||
		{ fail "culpert report: $(cat "$TMP/argv.out")"; return; }
	printf '# the options of a report\n\n  --flat  \n\t--format=json\n' >"$TMP/opts"
	"$BIN_CLI" report "$TMP/basic.pb.gz" "@$TMP/opts" >"$TMP/file.out" 2>&1 ||
		{ fail "culpert report @FILE: $(cat "$TMP/file.out")"; return; }
	cmp -s "$TMP/argv.out" "$TMP/file.out" || fail "@FILE gave other output than the options"
	# the command itself may come from the file too, and a line with a blank is one argument
	printf 'report\n%s\n--span\nno such span\n' "$TMP/basic.pb.gz" >"$TMP/cmd"
	"$BIN_CLI" "@$TMP/cmd" >"$TMP/span.out" 2>&1
	grep -q "no such span" "$TMP/span.out" || fail "'no such span' was split: $(head -3 "$TMP/span.out")"
	# the image's culpert-bpf reads the DaemonSet's ConfigMap the same way
	printf -- '--version\n' >"$TMP/v"
	"$BIN_BPF" "@$TMP/v" | grep -q '^culpert-bpf ' || fail "culpert-bpf @FILE --version"
}

test_argfile_errors() {
	expect_error 2 'argument file /nonexistent/opts: No such file' "$BIN_CLI" @/nonexistent/opts
	expect_error 2 'not a regular file' "$BIN_CLI" @/dev/zero
	expect_error 2 'not a regular file' "$BIN_CLI" "@$TMP"
	head -c 70000 /dev/zero | tr '\0' 'a' >"$TMP/big"
	expect_error 2 'larger than 64 KiB' "$BIN_CLI" "@$TMP/big"
	yes -- -v | head -5000 >"$TMP/many"
	expect_error 2 'more than 4096 arguments' "$BIN_CLI" "@$TMP/many"
	# "@" alone and ./@name are plain arguments
	expect_error 2 "unknown command '@'" "$BIN_CLI" @
}

run_test argfile_same_as_argv test_argfile_same_as_argv
run_test argfile_errors test_argfile_errors
