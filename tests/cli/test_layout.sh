#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The layering of the tree, and the CLI built without the BPF toolchain.
. tests/lib.sh

test_layers_hold() {
	sh tests/check_layout.sh 2>"$TMP/layout.err" || fail "$(cat "$TMP/layout.err")"
}

# the check must catch what it is for: a cli/ and a proto/ file including a user/ header
test_violation_caught() {
	mkdir -p "$TMP/tree"
	cp -r lib proto cli user bpf include "$TMP/tree/"
	echo '#include "sampler.h"' >>"$TMP/tree/cli/table.h"
	echo '#include "memstats.h"' >>"$TMP/tree/proto/view.h"
	sh tests/check_layout.sh "$TMP/tree" 2>"$TMP/bad.err" && fail "a user/ header in cli/ passed"
	grep -q 'cli/table.h includes "sampler.h" from user/' "$TMP/bad.err" ||
		fail "cli/table.h not named: $(cat "$TMP/bad.err")"
	grep -q 'proto/view.h includes "memstats.h" from user/' "$TMP/bad.err" ||
		fail "proto/view.h not named: $(cat "$TMP/bad.err")"
}

# culpert needs neither clang nor bpftool nor libbpf: no BPF object, no skeleton
test_cli_without_bpf_toolchain() {
	make OUTPUT="$TMP/out" CLANG=/nonexistent/clang BPFTOOL=/nonexistent/bpftool culpert \
		>"$TMP/make.out" 2>&1 || fail "make culpert: $(tail -5 "$TMP/make.out")"
	[ -x "$TMP/out/culpert" ] || fail "no culpert built"
	ls "$TMP/out"/*.skel.h "$TMP/out"/*.bpf.o 2>/dev/null && fail "BPF objects were built"
	"$TMP/out/culpert" --help | grep -q '^  report' || fail "the CLI does not run"
	! ldd "$TMP/out/culpert" | grep -q libbpf || fail "culpert links libbpf"
}

# libcurl (the archive client) is culpert's alone: culpert-bpf does not name it
test_curl_in_cli_only() {
	readelf -d "$BIN_CLI" | grep NEEDED | grep -q 'libcurl\.so' || fail "culpert does not link libcurl"
	readelf -d "$BIN_BPF" | grep NEEDED | grep 'libcurl' >"$TMP/curl" &&
		fail "culpert-bpf links $(cat "$TMP/curl")"
	return 0
}

run_test layout/layers_hold test_layers_hold
run_test layout/violation_caught test_violation_caught
run_test layout/cli_without_bpf_toolchain test_cli_without_bpf_toolchain
run_test layout/curl_in_cli_only test_curl_in_cli_only
