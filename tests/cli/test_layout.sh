#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The layering of the tree, and the CLI built without the BPF toolchain.
. tests/lib.sh

test_layers_hold() {
	sh scripts/check_layout.sh 2>"$TMP/layout.err" || fail "$(cat "$TMP/layout.err")"
}

# the check must catch what it is for: a cli/ and a proto/ file including a
# user/ header, proto/ including the query engine above it, and user/
# folders including a sibling's or a higher folder's header
test_violation_caught() {
	mkdir -p "$TMP/tree"
	cp -r Makefile lib proto cli user bpf include preload "$TMP/tree/"
	echo '#include "bpfobj.h"' >>"$TMP/tree/cli/table.h"
	echo '#include "memstats.h"' >>"$TMP/tree/proto/pprof.h"
	echo '#include "view.h"' >>"$TMP/tree/proto/codec.c"
	echo '#include "session.h"' >>"$TMP/tree/user/mem/memcg.c"
	echo '#include "collector.h"' >>"$TMP/tree/user/cmd/summary.c"
	echo '#include "unwind.h"' >>"$TMP/tree/user/probe/plt.c"
	sh scripts/check_layout.sh "$TMP/tree" 2>"$TMP/bad.err" && fail "forbidden includes passed"
	for want in 'cli/table.h includes "bpfobj.h" from user/collect/' \
		'proto/pprof.h includes "memstats.h" from user/mem/' \
		'proto/codec.c includes "view.h" from proto/query/' \
		'user/mem/memcg.c includes "session.h" from user/collect/' \
		'user/cmd/summary.c includes "collector.h" from user/agent/' \
		'user/probe/plt.c includes "unwind.h" from user/unwind/'; do
		grep -qF "$want" "$TMP/bad.err" || fail "not named: $want: $(cat "$TMP/bad.err")"
	done
	[ "$(wc -l <"$TMP/bad.err")" = 6 ] || fail "more than the six: $(cat "$TMP/bad.err")"
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

# the archive client is culpert's alone: culpert-bpf has none of its code.  Both
# link libcurl: culpert for the archive, culpert-bpf for the agent's Kubernetes
# API client (user/agent/kubeapi.c), and nothing else of culpert-bpf calls curl.
test_curl_in_cli_only() {
	readelf -d "$BIN_CLI" | grep NEEDED | grep -q 'libcurl\.so' || fail "culpert does not link libcurl"
	nm "$BIN_BPF" | grep -w 'archive_request\|archive_conn__init' >"$TMP/arch" &&
		fail "culpert-bpf holds the archive client: $(cat "$TMP/arch")"
	grep -l 'curl/curl.h' user/*.c user/*/*.c >"$TMP/curl"
	[ "$(cat "$TMP/curl")" = user/agent/kubeapi.c ] ||
		fail "libcurl used in culpert-bpf beyond the agent's API client: $(tr '\n' ' ' <"$TMP/curl")"
	return 0
}

run_test layout/layers_hold test_layers_hold
run_test layout/violation_caught test_violation_caught
run_test layout/cli_without_bpf_toolchain test_cli_without_bpf_toolchain
run_test layout/curl_in_cli_only test_curl_in_cli_only
