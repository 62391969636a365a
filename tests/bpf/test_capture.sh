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

MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
SAMPLER=$OUTPUT/libculpert-sampler.so
JEMALLOC=/usr/lib/$MULTIARCH/libjemalloc.so.2
# heap_decomp's parts (tests/targets/heap_decomp.c): 48 MiB in 4 KiB blocks before
# attach and an 8 MiB mapping of its own; during the capture 16 MiB live in 4 KiB
# blocks with a freed 4 KiB block after each, 4 blocks of 1 MiB and a thread's 8 MiB
DECOMP="48 16 8 4 8"

# capture_decomp NAME [ENV...]: heap_decomp under capture (ENV: VAR=value for the target);
# $TMP/NAME.decomp holds the mem.decomp.* comments and the start's bins and mmapped
# bytes as key=value, $live and $holes what the target says it did.  The capture
# stops once the target says "fresh": libculpert-sampler.so refreshes the allocator's
# figures at most once a second, on a sampled call (the target's ticks: 1000 bytes
# every 20 ms, 22% of them sampled at 4 KiB), and the target watches its page for a
# refresh after "done", so the end picture's figures are from after.
capture_decomp() {
	_n=$1
	shift
	# shellcheck disable=SC2086 # DECOMP is words
	start_profiled "$_n" capture "--rate 16KiB" env "$@" "$TARGETS/heap_decomp" $DECOMP tick ||
		return 1
	wait_for "$TMP/$_n.out" '^done' 30 || { fail "heap_decomp did not finish"; return 1; }
	wait_for "$TMP/$_n.out" '^fresh' 10 ||
		{ fail "the allocator's figures were not refreshed after done"; return 1; }
	stop_profiled "$_n" capture || return 1
	# the next capture starts once this target is gone, not while it exits
	wait "$target_pid" 2>/dev/null
	"$PROFDUMP" "$TMP/$_n.pb.gz" | sed -n 's/^# comment mem\.decomp\.//p
		s/^# comment mem\.start\.allocator\.glibc\.\(bin_free_bytes\|mmapped_bytes\)=/start_\1=/p' \
		>"$TMP/$_n.decomp"
	live=$(awk '$1 == "live" { print $2 }' "$TMP/$_n.out")
	holes=$(awk '$1 == "holes" { print $2 }' "$TMP/$_n.out")
}

# culpert-bpf with /usr/lib/debug hidden (a mount namespace of its own): no libc DWARF.
# unshare without --fork and the execs keep the pid, which stop_profiled signals.
nodebug_bpf() {
	cat >"$TMP/nodebug-bpf" <<EOF
#!/bin/sh
exec unshare -m sh -c 'mount -t tmpfs none /usr/lib/debug || exit 9; exec "\$0" "\$@"' \
	"$PWD/$BIN_BPF" "\$@"
EOF
	chmod +x "$TMP/nodebug-bpf"
}

# The decomposition against what heap_decomp did, glibc's arenas read with libc6-dbg.
# Sampled (--rate 16KiB): the live heap of 24 MiB in 4 KiB blocks has a standard
# error of about sqrt(16384 * 24 MiB) = 642 KiB (the 1 MiB blocks, far above the
# rate, are sampled with weight ~1 and add nothing): within 4 sigma of the 28 MiB the
# target allocated.  Their chunk headers are 16 bytes a 4 KiB block (4096 + 8 rounded
# up to 16) and a page a 1 MiB block (1 MiB + 16 + 8 rounded up to pages):
# 6144 * 16 + 4 * 4096 = 112 KiB, whose sigma the comment gives, within 4 sigma + 1 KiB
# (glibc's own small blocks, such as the new thread's dtv, may be sampled).  Measured,
# exactly: the bins grew by the 4096 freed chunks of 4112 bytes, the mmapped bytes by
# 4 * 1052672; free = bins + fastbins + top + tcaches; in use = in the arenas +
# mmapped = live + headers + before attach; the parts add up to the anonymous RSS
# (to the byte, but for the rounding of each comment).  One thread arena's headers
# (heap_info and malloc_state: 2240 bytes in glibc 2.36) are between 2 and 4 KiB.
# What was in use at attach is the 48 MiB in 4112-byte chunks and libc's few blocks
# (stdio's buffer: < 64 KiB); inferred "before attach" is that within its 4 sigma +
# 4 KiB (the new thread's tcache, 656 bytes, comes from inside glibc, unsampled).
# Other anonymous memory is the 8 MiB mapping, the stacks' touched pages and the
# libraries' written data (~100 KiB), less the thread arena's reserve that was never
# touched (at most its top: 128 KiB of top pad and a page): 8 MiB - 256 KiB .. + 1 MiB.
test_capture_decomposition() {
	need_root || return
	capture_decomp glibc || return
	awk -F= -v live="$live" -v n="$holes" '{ v[$1] = $2 } END {
		mib = 1048576; bad = ""
		s = v["live_since_attach.stderr_bytes"]; so = v["live_overhead.stderr_bytes"]
		sb = v["before_attach.stderr_bytes"]
		est = v["live_since_attach.bytes"]; over = v["live_overhead.bytes"]
		before = v["before_attach.bytes"]; at = v["in_use_at_attach.bytes"]
		in_use = v["in_use.bytes"]; free = v["free.bytes"]; other = v["other_anon.bytes"]
		if (live != 29360128 || n != 4096) bad = bad " target=" live "/" n
		if (s <= 0 || s > 1.1 * sqrt(16384 * 24 * mib)) bad = bad " sigma=" s
		if (est - live > 4 * s || live - est > 4 * s) bad = bad " live=" est
		over_truth = (n + 8 * mib / 4096) * 16 + 4 * 4096
		if (over - over_truth > 4 * so + 1024 || over_truth - over > 4 * so + 1024)
			bad = bad " overhead=" over "+-" so
		if (v["bins.bytes"] != n * 4112 + v["start_bin_free_bytes"]) bad = bad " bins=" v["bins.bytes"]
		if (v["mmapped.bytes"] != 4 * 1052672 + v["start_mmapped_bytes"])
			bad = bad " mmapped=" v["mmapped.bytes"]
		if (free != v["bins.bytes"] + v["fastbins.bytes"] + v["top.bytes"] + v["tcache.bytes"])
			bad = bad " free=" free
		if (in_use != v["in_arenas.bytes"] + v["mmapped.bytes"]) bad = bad " in_use=" in_use
		d = in_use - est - over - before
		if (d > 2 || d < -2) bad = bad " split=" d
		d = in_use + free + v["allocator_headers.bytes"] + v["not_resident.bytes"] + other - \
		    v["anon_rss.bytes"]
		if (d > 4 || d < -4) bad = bad " sum=" d
		h = v["allocator_headers.bytes"]
		if (h < 2048 || h > 4096) bad = bad " headers=" h
		if (at < 48 * mib * 4112 / 4096 || at > 48 * mib * 4112 / 4096 + 65536) bad = bad " at=" at
		if (before - at > 4 * sb + 4096 || at - before > 4 * sb + 4096) bad = bad " before=" before
		if (other < 8 * mib - 262144 || other > 9 * mib) bad = bad " other=" other
		if (v["source"] != "glibc" || v["live_since_attach.kind"] != "estimated" ||
		    v["live_overhead.kind"] != "estimated" || v["before_attach.kind"] != "inferred" ||
		    v["bins.kind"] != "measured" || v["other_anon.kind"] != "measured")
			bad = bad " kinds"
		if (bad != "") { print bad; exit 1 } }' "$TMP/glibc.decomp" >"$TMP/glibc.bad" ||
		fail "off the truth:$(cat "$TMP/glibc.bad") ($(tr '\n' ' ' <"$TMP/glibc.decomp"))"
	grep -q "^anonymous RSS decomposed (glibc's 2 arenas, read from the target; m measured" \
		"$TMP/glibc.err" || fail "no decomposition in the summary: $(cat "$TMP/glibc.err")"
	grep -q '^    bins: holes between live blocks .* m  4096 chunks$' "$TMP/glibc.err" ||
		fail "no bins line: $(grep -A20 '^anonymous RSS' "$TMP/glibc.err")"
	grep -q '^    per arena (bins + fastbins + top): 0 main .*, 1 ' "$TMP/glibc.err" ||
		fail "no per-arena line"
	grep -q '^    live heap allocated since attach .* +- .* e  ' "$TMP/glibc.err" ||
		fail "the live heap is not labelled estimated"
	return 0
}

# Without libc's DWARF, the summary keeps the heap-vs-RSS gap and says why the RSS is
# not decomposed and what would do it; with libculpert-sampler.so preloaded the same
# capture decomposes from mallinfo2() (bins, fastbins and top as one free figure: the
# 4096 holes, plus at most two tops of 128 KiB of pad and a page each).
test_capture_decomposition_fallback() {
	need_root || return
	nodebug_bpf
	_bin=$BIN_BPF
	BIN_BPF=$TMP/nodebug-bpf
	capture_decomp nodbg
	capture_decomp mallinfo LD_PRELOAD="$SAMPLER" CULPERT_SAMPLER_RATE=4096
	BIN_BPF=$_bin
	[ -s "$TMP/mallinfo.decomp" ] || return
	_why='^RSS not decomposed: glibc.s arenas were not read: no debug info for libc '
	_why="$_why.*apt install libc6-dbg.*; or preload libculpert-sampler.so"
	grep -q "$_why" "$TMP/nodbg.err" || fail "no reason: $(cat "$TMP/nodbg.err")"
	grep -q '^heap vs RSS ' "$TMP/nodbg.err" || fail "the gap is gone without the decomposition"
	if ! grep -q '^unavailable=glibc.s arenas were not read' "$TMP/nodbg.decomp" ||
		grep -q '^source=' "$TMP/nodbg.decomp"; then
		fail "comments: $(cat "$TMP/nodbg.decomp")"
	fi
	awk -F= -v live="$live" -v n="$holes" '{ v[$1] = $2 } END {
		bad = ""
		s = v["live_since_attach.stderr_bytes"]; est = v["live_since_attach.bytes"]
		extra = v["free.bytes"] - n * 4112
		if (v["source"] != "glibc-mallinfo2") bad = bad " source=" v["source"]
		if (est - live > 4 * s || live - est > 4 * s) bad = bad " live=" est "+-" s
		if (extra < 0 || extra > 2 * (131072 + 4096)) bad = bad " free=" v["free.bytes"]
		d = v["in_use.bytes"] - est - v["live_overhead.bytes"] - v["before_attach.bytes"]
		if (d > 2 || d < -2) bad = bad " split=" d
		if (bad != "") { print bad; exit 1 } }' "$TMP/mallinfo.decomp" >"$TMP/mallinfo.bad" ||
		fail "mallinfo2:$(cat "$TMP/mallinfo.bad") ($(tr '\n' ' ' <"$TMP/mallinfo.decomp"))"
	return 0
}

# jemalloc under libculpert-sampler.so, dirty pages never purged (dirty_decay_ms:-1, so
# the holes stay): in use is stats.allocated, which holds the 48 MiB from before attach,
# the live heap (4 KiB and 1 MiB are size classes of their own: no rounding) and what
# its thread caches keep (at most 200 slots of a size class a thread: 800 KiB of 4 KiB
# blocks); the 16 MiB of holes are free in active pages or dirty, less what the
# caches keep; the parts add up.  Plain jemalloc: why not, and what to preload.
test_capture_decomposition_jemalloc() {
	need_root || return
	capture_decomp je LD_PRELOAD="$SAMPLER $JEMALLOC" CULPERT_SAMPLER_RATE=4096 \
		MALLOC_CONF=dirty_decay_ms:-1 || return
	awk -F= -v live="$live" '{ v[$1] = $2 } END {
		mib = 1048576; bad = ""
		s = v["live_since_attach.stderr_bytes"]; est = v["live_since_attach.bytes"]
		before = v["before_attach.bytes"]; holes = v["active_free.bytes"] + v["dirty.bytes"]
		if (v["source"] != "jemalloc") bad = bad " source=" v["source"]
		if (est - live > 4 * s || live - est > 4 * s) bad = bad " live=" est "+-" s
		if (v["live_overhead.bytes"] != 0) bad = bad " rounding=" v["live_overhead.bytes"]
		if (before < 48 * mib - 4 * s || before > 48 * mib + 4 * s + 1.5 * mib)
			bad = bad " before=" before
		if (holes < 16 * mib - 819200 || holes > 16 * mib + 1.5 * mib) bad = bad " holes=" holes
		d = v["in_use.bytes"] + v["free.bytes"] + v["allocator_headers.bytes"] + \
		    v["other_anon.bytes"] - v["anon_rss.bytes"]
		if (d > 4 || d < -4) bad = bad " sum=" d
		if (bad != "") { print bad; exit 1 } }' "$TMP/je.decomp" >"$TMP/je.bad" ||
		fail "jemalloc:$(cat "$TMP/je.bad") ($(tr '\n' ' ' <"$TMP/je.decomp"))"
	capture_decomp plainje LD_PRELOAD="$JEMALLOC" || return
	_why='^RSS not decomposed: no figures from jemalloc: .*preload libculpert-sampler.so ahead'
	grep -q "$_why" "$TMP/plainje.err" ||
		fail "plain jemalloc: $(grep -A2 '^heap vs' "$TMP/plainje.err")"
	return 0
}

# --duration ends it by default; a target that exits still gets its profile, without a gap.
# A duration far beyond the target's run: under --inuse every call traps, and on a
# loaded machine alloc_abc's run comes near the default 30 s, which would end it first.
test_capture_target_exits() {
	need_root || return
	# the target works once capture is ready, then exits (no race with attaching)
	start_profiled exit capture "--rate 64KiB --duration 10m" "$TARGETS/alloc_abc" || return
	wait "$target_pid" || fail "alloc_abc exited with $?"
	wait "$attach_pid" || fail "capture failed: $(cat "$TMP/exit.err")"
	grep -q "exited; writing" "$TMP/exit.err" || fail "exit not reported"
	grep -q '^capture summary:' "$TMP/exit.err" || fail "no summary"
	grep -q 'heap vs RSS' "$TMP/exit.err" && fail "a gap without an end picture"
	"$PROFDUMP" "$TMP/exit.pb.gz" | grep -q '^# comment mem.start.rollup.rss_bytes=' ||
		fail "no memory picture at the start"
	return 0
}

# The target exits and the duration runs out before the capture looks again (it is
# stopped meanwhile): it ended by the exit, which it reports, and shows no gap for
# a process whose end picture cannot be taken
test_capture_exit_and_duration() {
	need_root || return
	start_target "$TMP/both.out" "$TARGETS/alloc_abc" || return
	# 5 s: time for this shell to stop it first, however slow the machine
	bpf_bg "$TMP/both.err" capture --pid "$target_pid" -o "$TMP/both.pb.gz" --rate 1MiB \
		--duration 5s || return
	# the capture's clock started before it said so: 5 s from now it has run out
	deadline=$(($(date +%s%N) + 5100000000))
	kill -STOP "$attach_pid"
	kill -USR1 "$target_pid"
	wait "$target_pid" || fail "alloc_abc exited with $?"
	_i=0
	while [ "$(date +%s%N)" -lt "$deadline" ] && [ "$_i" -lt 120 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	kill -CONT "$attach_pid"
	wait "$attach_pid" || { fail "capture failed: $(cat "$TMP/both.err")"; return; }
	grep -q "exited; writing" "$TMP/both.err" ||
		fail "not ended by the exit: $(grep -v '^  ' "$TMP/both.err" | tr '\n' ';')"
	grep -q 'heap vs RSS' "$TMP/both.err" && fail "a gap without an end picture"
	# and it was stopped while the target worked, not already done
	grep -q 'the profile is empty' "$TMP/both.err" && fail "the capture ended before it was stopped"
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
run_test bpf/capture/exit_and_duration test_capture_exit_and_duration
run_test bpf/capture/usage test_capture_usage
run_test bpf/capture/decomposition test_capture_decomposition
run_test bpf/capture/decomposition_fallback test_capture_decomposition_fallback
run_test bpf/capture/decomposition_jemalloc test_capture_decomposition_jemalloc
