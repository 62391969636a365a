#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert-bpf capture: attach --inuse --stats in one command, with the
# heap-vs-RSS gap and a summary.
. tests/lib.sh

# capture heap_shape MODE until it is done; profile $TMP/MODE.pb.gz, summary $TMP/MODE.err
capture_shape() {
	profile_until_done "$1" 30 capture "--rate 64KiB" "$TARGETS/heap_shape" "$1"
}

# the gap as a percentage of the resident heap, from the profile's mem.gap comments
gap_pct() {
	"$PROFDUMP" "$1" | awk -F= '/^# comment mem\.gap\.gap_bytes=/ { g = $2 }
		/^# comment mem\.gap\.heap_rss_bytes=/ { h = $2 }
		END { if (h) printf "%.1f\n", 100 * g / h }'
}

# heap_shape keeps 32 MB live out of 64 MB allocated in 1000-byte blocks.
# At 64 KiB the live estimate's error is sqrt(65536 * 32 MB) = 1.45 MB
# (4.5%); a fragmented heap leaves about half the resident heap unused
# (a gap near 50%), a compact one next to nothing: 35% and 15% are > 4
# sigma from either.
test_capture_gap() {
	need_root || return
	capture_shape fragment || return
	grep -q '^capture summary:' "$TMP/fragment.err" || fail "no summary: $(cat "$TMP/fragment.err")"
	grep -q '^  top live callsites:' "$TMP/fragment.err" || fail "no live callsites in the summary"
	grep -A1 '^  top live callsites:' "$TMP/fragment.err" | grep -q 'fill ' ||
		fail "fill is not the top live callsite"
	grep -q 'gap .*allocator overhead and fragmentation' "$TMP/fragment.err" ||
		fail "no gap in the summary"
	frag=$(gap_pct "$TMP/fragment.pb.gz")
	go_totals_agree "$TMP/fragment.pb.gz"
	capture_shape compact || return
	compact=$(gap_pct "$TMP/compact.pb.gz")
	awk -v f="$frag" -v c="$compact" 'BEGIN { exit !(f != "" && c != "" && f > 35 && c < 15) }' ||
		fail "gap: fragmented ${frag:-none}%, compact ${compact:-none}%"
	"$PROFDUMP" "$TMP/compact.pb.gz" | grep '^#' >"$TMP/compact.head"
	for k in mem.start.rollup.rss_bytes mem.end.rollup.rss_bytes mem.gap.live_heap_bytes; do
		grep -q "^# comment $k=" "$TMP/compact.head" || fail "no $k comment"
	done
	grep -q '^# sample_type inuse_space/bytes' "$TMP/compact.head" || fail "capture did not track in-use"
}

# --duration ends it by default; a target that exits still gets its profile, without a gap
test_capture_target_exits() {
	need_root || return
	"$OUTPUT/examples/demo_service" 2 >/dev/null &
	svc=$!
	track "$svc"
	sleep 0.2
	"$BIN_BPF" capture --pid "$svc" --rate 64KiB -o "$TMP/exit.pb.gz" 2>"$TMP/exit.err" ||
		fail "capture failed: $(cat "$TMP/exit.err")"
	grep -q "exited; writing" "$TMP/exit.err" || fail "exit not reported"
	grep -q '^capture summary:' "$TMP/exit.err" || fail "no summary"
	grep -q 'heap vs RSS' "$TMP/exit.err" && fail "a gap without an end picture"
	"$PROFDUMP" "$TMP/exit.pb.gz" | grep -q '^# comment mem.start.rollup.rss_bytes=' ||
		fail "no memory picture at the start"
	return 0
}

test_capture_usage() {
	need_root || return
	expect_error 2 "--pid is required" "$BIN_BPF" capture
	"$BIN_BPF" capture --help >"$TMP/help" || fail "--help failed"
	grep -q 'One-shot incident capture' "$TMP/help" || fail "no help"
	grep -q -- '--unwind MODE' "$TMP/help" || fail "capture --help lists no options"
	grep -q 'Usage: culpert-bpf attach' "$TMP/help" && fail "capture --help shows attach's usage"
	return 0
}

run_test bpf/capture/gap test_capture_gap
run_test bpf/capture/target_exits test_capture_target_exits
run_test bpf/capture/usage test_capture_usage
