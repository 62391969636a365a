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

# the growth the live heap does not explain, as a percentage of the growth of the
# resident heap over the capture, from the profile's mem.gap comments
gap_pct() {
	"$PROFDUMP" "$1" | awk -F= '/^# comment mem\.gap\.growth_gap_bytes=/ { g = $2 }
		/^# comment mem\.gap\.growth_bytes=/ { h = $2 }
		END { if (h) printf "%.1f\n", 100 * g / h }'
}

# heap_shape keeps 32 MB live out of 64 MB allocated in 1000-byte blocks, all
# after attach.  At 64 KiB the live estimate's error is sqrt(65536 * 32 MB) =
# 1.45 MB (4.5% of the 32 MB); a fragmented heap leaves about half of its
# growth unused (a gap near 50% of the growth), a compact one next to
# nothing: 35% and 15% are > 4 sigma from either.
test_capture_gap() {
	need_root || return
	capture_shape fragment || return
	grep -q '^capture summary:' "$TMP/fragment.err" || fail "no summary: $(cat "$TMP/fragment.err")"
	grep -q '^  top live callsites:' "$TMP/fragment.err" || fail "no live callsites in the summary"
	grep -A1 '^  top live callsites:' "$TMP/fragment.err" | grep -q 'fill ' ||
		fail "fill is not the top live callsite"
	grep -A1 '^  growth beyond the new live blocks ' "$TMP/fragment.err" |
		grep -q 'RSS grew more than the blocks still live' || fail "no gap in the summary"
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

# 48 MiB allocated before attach and 32 MiB during the capture, in 4 KiB blocks
# kept live.  At --rate 16KiB the live estimate's standard error is
# sqrt(16384 * 32 MiB) = 0.72 MiB: the live heap is the 32 MiB within 4 sigma
# (2.9 MiB).  The resident [heap] + anonymous grows by the 32 MiB plus malloc's
# 16-byte chunk headers (0.4%) and brk and page rounding (< 1 MiB): within 1% +
# 1 MiB of it, so the growth the live heap leaves unexplained is within 4 sigma
# + 1% + 1 MiB of 0.  The 48 MiB from before attach are resident at attach and
# said to be older memory, not fragmentation.
test_capture_gap_truth() {
	need_root || return
	profile_until_done known 30 capture "--rate 16KiB" "$TARGETS/heap_before" 48 32 || return
	"$PROFDUMP" "$TMP/known.pb.gz" | sed -n 's/^# comment mem\.gap\.//p' >"$TMP/known.gap"
	awk -F= '{ v[$1] = $2 } END {
		mib = 1048576; during = 32 * mib; before = 48 * mib
		sigma = v["live_heap_stderr_bytes"]; live = v["live_heap_bytes"]
		growth = v["growth_bytes"]; gap = v["growth_gap_bytes"]; start = v["heap_rss_start_bytes"]
		bad = ""
		if (sigma <= 0 || sigma > 1.5 * sqrt(16384 * during)) bad = bad " sigma=" sigma
		if (live - during > 4 * sigma || during - live > 4 * sigma) bad = bad " live=" live
		if (growth < during || growth > during * 1.01 + mib) bad = bad " growth=" growth
		if (gap > 4 * sigma + during * 0.01 + mib || -gap > 4 * sigma) bad = bad " gap=" gap
		if (start < before) bad = bad " start=" start
		if (bad != "") { print bad; exit 1 } }' "$TMP/known.gap" >"$TMP/known.bad" ||
		fail "the gap off the truth:$(cat "$TMP/known.bad") ($(tr '\n' ' ' <"$TMP/known.gap"))"
	grep -q '^heap vs RSS (the live heap counts only blocks allocated since attach)' "$TMP/known.err" ||
		fail "the summary does not say what the live heap covers: $(cat "$TMP/known.err")"
	grep -A1 '^  resident at attach ' "$TMP/known.err" | grep -q '^    memory from before attach' ||
		fail "the memory from before attach is not called older memory"
	grep -A1 '^  resident at attach ' "$TMP/known.err" | grep -q 'fragmentation' &&
		fail "the memory from before attach is called fragmentation"
	return 0
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
run_test bpf/capture/gap_truth test_capture_gap_truth
run_test bpf/capture/target_exits test_capture_target_exits
run_test bpf/capture/usage test_capture_usage
