#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert-bpf through the otel_memory contract (docs/otel.md): targets
# under LD_PRELOAD=libculpert-sampler.so over glibc, jemalloc and mimalloc,
# profiled through its probes (--sampler auto picks them), against the
# targets' own totals: exact at rate 1 (allocations and the live heap),
# within the sampling error at 4 KiB, next to the uprobe path on the same
# process; spans through the contract; forking and signal-handling targets
# unharmed while attached; a program with its own <sys/sdt.h> probe pair;
# what probes says and the errors of --sampler.
. tests/lib.sh

LIB=$(realpath "$OUTPUT/libculpert-sampler.so")
LIBDIR=/usr/lib/$(cc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
JEMALLOC=$LIBDIR/libjemalloc.so.2
MIMALLOC=$LIBDIR/libmimalloc.so.2.0

# under ALLOCATOR RATE: RUN_UNDER (tests/lib.sh) runs targets with the
# sampler over ALLOCATOR ("" for glibc) at RATE; ':' separates LD_PRELOAD's
# objects, so the words survive the shell's splitting
under() {
	RUN_UNDER="env LD_PRELOAD=$LIB${1:+:$1} CULPERT_SAMPLER_RATE=$2"
}

need_lib() {
	[ -z "$1" ] || [ -f "$1" ] && return 0
	fail "$1 missing: run 'make deps'"
	return 1
}

# expect_otel NAME: the profile was taken through the contract, at the sampler's rate
expect_otel() {
	"$PROFDUMP" "$TMP/$1.pb.gz" | grep '^# comment sampler' >"$TMP/$1.sampler"
	grep -q '^# comment sampler=otel_memory$' "$TMP/$1.sampler" &&
		grep -q "^# comment sampler.objects=.*libculpert-sampler.so" "$TMP/$1.sampler" &&
		grep -q '^# comment sampler.rate_from=sampler_page$' "$TMP/$1.sampler" ||
		fail "$1: not through the otel_memory probes: $(tr '\n' ';' <"$TMP/$1.sampler")"
}

# rate 1: every call is a sample with weight == size, so each function of
# alloc_exact has its calls and bytes exactly (the sampler's frames dropped:
# the function is the leaf), and alloc_live its allocated and live bytes
exact_under() {
	need_root && need_lib "$1" || return
	under "$1" 1
	rate_one_exact exact || return
	expect_otel exact
	# what alloc_exact checks of every returned block comes out as under the
	# sampler with no profiler (plain mimalloc fails some of its checks by
	# itself: the same must fail, no more; plain jemalloc crashes on glibc's
	# pvalloc, docs/sampler.md, so the sampler alone is the reference)
	# shellcheck disable=SC2086
	start_target "$TMP/alone.out" $RUN_UNDER "$TARGETS/alloc_exact" || return
	kill -USR1 "$target_pid"
	wait "$target_pid"
	[ "$(grep '^checks' "$TMP/exact.out")" = "$(grep '^checks' "$TMP/alone.out")" ] ||
		fail "alloc_exact: '$(grep '^checks' "$TMP/exact.out")' attached;" \
			"'$(grep '^checks' "$TMP/alone.out")' under the sampler alone"
	live_exact || return
	expect_otel live1
}

test_exact_glibc() { exact_under ""; }
test_exact_jemalloc() { exact_under "$JEMALLOC"; }
test_exact_mimalloc() { exact_under "$MIMALLOC"; }

# within_sigma NAME COL K: each "total FN BYTES" of the target against the
# profile's column COL for leaf FN, within K sigma of Poisson byte sampling
# at 4096: sigma = sqrt(4096 * BYTES) (blocks far below the rate; larger
# ones have less: the sampler counts points past 64 by their expectation,
# the uprobe path samples them with p ~ 1)
within_sigma() {
	by_leaf "$TMP/$1.pb.gz" "$2" >"$TMP/$1.est"
	grep '^total ' "$TMP/$1.out" | while read -r _ fn bytes _; do
		est=$(awk -v f="$fn" '$1 == f { print $2 }' "$TMP/$1.est")
		awk -v e="${est:-0}" -v t="$bytes" -v k="$3" 'BEGIN { d = e - t; if (d < 0) d = -d
			exit !(d <= k * sqrt(4096 * t)) }' ||
			echo "$fn: estimated ${est:-0} of $bytes bytes"
	done >"$TMP/$1.bad"
	[ -s "$TMP/$1.bad" ] && fail "$1 beyond $3 sigma: $(tr '\n' ';' <"$TMP/$1.bad")"
	[ "$(grep -c '^total ' "$TMP/$1.out")" -gt 0 ] || fail "$1: the target reported nothing"
	return 0
}

# no_losses NAME: nothing the estimate depends on was lost.  Without a
# trap per call the target allocates so fast that at 4 KiB (128 times the
# default rate's samples) the default 2 MiB ring overflows, counted and
# said: the runs here get a ring that holds them
no_losses() {
	"$PROFDUMP" "$TMP/$1.pb.gz" | grep -q '^# comment lost_samples=0$' &&
		"$PROFDUMP" "$TMP/$1.pb.gz" | grep -q '^# comment throttled_samples=0$' &&
		"$PROFDUMP" "$TMP/$1.pb.gz" | grep -q '^# comment thinned_samples=0$' ||
		fail "$1: $("$PROFDUMP" "$TMP/$1.pb.gz" |
			grep -E 'lost_samples|throttled_samples|thinned_samples' | tr '\n' ' ')"
}

# alloc_abc (a: 32 MiB of 16/64-byte blocks, b: 48 MiB of 1..16 KiB, c:
# 256 KiB and 1 MiB blocks) with the sampler at 4 KiB, profiled through its
# probes, and over the allocator alone through uprobes at --rate 4KiB: both
# within 5 sigma of the truth (sigma 1.1% of a, 0.9% of b), so they agree.
# The ring holds the whole run: ~20k samples of ~2 KiB (frames, spans), made in
# a fraction of a second once no call traps, while the reader may still be
# loading the target's objects; 32 MiB lost up to a quarter in full-suite runs.
sampled_under() {
	need_root && need_lib "$1" || return
	under "$1" 4096
	# shellcheck disable=SC2086
	profile abc_usdt 4KiB "--ringbuf-size 64MiB" $RUN_UNDER "$TARGETS/alloc_abc" 1 || return
	expect_otel abc_usdt
	no_losses abc_usdt
	within_sigma abc_usdt 2 5
	profile abc_uprobes 4KiB "--ringbuf-size 64MiB" env ${1:+LD_PRELOAD=$1} \
		"$TARGETS/alloc_abc" 1 || return
	"$PROFDUMP" "$TMP/abc_uprobes.pb.gz" | grep -q '^# comment sampler=uprobes$' ||
		fail "the allocator alone was not profiled through uprobes"
	no_losses abc_uprobes
	within_sigma abc_uprobes 2 5
}

test_sampled_glibc() { sampled_under ""; }
test_sampled_jemalloc() { sampled_under "$JEMALLOC"; }
test_sampled_mimalloc() { sampled_under "$MIMALLOC"; }

# --inuse at 4 KiB: alloc_live's live heap per function within 5 sigma
# (sigma = sqrt(4096 * live bytes), 1.1% of 32 MiB); churn frees all.
# --rate 64KiB, not the sampler's, is set aside with a warning
test_inuse_sampled() {
	need_root || return
	under "" 4096
	# shellcheck disable=SC2086
	profile_until_done live 60 attach "--inuse -v --ringbuf-size 32MiB --rate 64KiB" $RUN_UNDER \
		"$TARGETS/alloc_live" || return
	no_losses live
	# the sampler's rate wins over --rate, and the user is told
	grep -q -- "--rate 65536 is not used: pid [0-9]* samples its allocations itself, every 4096 bytes" \
		"$TMP/live.err" || fail "no word that --rate is not used: $(grep rate "$TMP/live.err")"
	"$PROFDUMP" "$TMP/live.pb.gz" | grep -q '^# period 4096 space/bytes$' ||
		fail "the period is not the sampler's rate: $("$PROFDUMP" "$TMP/live.pb.gz" | grep '^# period')"
	expect_otel live
	grep -q "in-use tracking through otel_memory probes" "$TMP/live.err" ||
		fail "not the otel_memory in-use path: $(grep in-use "$TMP/live.err")"
	by_leaf "$TMP/live.pb.gz" 4 >"$TMP/live.est"
	grep '^total ' "$TMP/live.out" | while read -r _ fn _ live; do
		est=$(awk -v f="$fn" '$1 == f { print $2 }' "$TMP/live.est")
		awk -v e="${est:-0}" -v t="$live" 'BEGIN { d = e - t; if (d < 0) d = -d
			exit !(d <= 5 * sqrt(4096 * t)) }' || echo "$fn: live ${est:-0}, truth $live"
	done >"$TMP/live.bad"
	[ -s "$TMP/live.bad" ] && fail "$(tr '\n' ';' <"$TMP/live.bad")"
	return 0
}

# capture (attach --inuse --stats): through the probes too, its summary written
test_capture() {
	need_root || return
	under "" 4096
	# shellcheck disable=SC2086
	profile_until_done cap 60 capture "--ringbuf-size 32MiB" $RUN_UNDER "$TARGETS/alloc_live" ||
		return
	expect_otel cap
	"$PROFDUMP" "$TMP/cap.pb.gz" | grep -q '^# sample_type inuse_space/bytes' ||
		fail "capture without inuse_space"
	"$PROFDUMP" "$TMP/cap.pb.gz" | grep -q '^# comment inuse=otel_memory probes' ||
		fail "capture's live heap not through otel_memory:free"
	by_leaf "$TMP/cap.pb.gz" 4 | awk '$1 == "keep_all" { exit !($2 > 0) }' ||
		fail "capture: no live heap for keep_all"
}

# span_abc's span paths through the contract, as test_spans.sh checks them
# on the uprobe path: >= 32 MiB each in 64..1024-byte blocks at 4 KiB,
# sigma <= 1.1%, +-5% is 4.5 sigma
test_spans() {
	need_root || return
	under "" 4096
	# shellcheck disable=SC2086
	profile span_abc 4KiB "--ringbuf-size 32MiB" $RUN_UNDER "$TARGETS/span_abc" || return
	expect_otel span_abc
	no_losses span_abc
	check_paths span_abc 5
}

# attach_during NAME CMD...: CMD runs under the sampler while attach (with
# --inuse: both probes) comes and goes; its exit status and output are checked by the caller
attach_during() {
	_n=$1
	shift
	"$@" >"$TMP/$_n.out" 2>&1 &
	_t=$!
	track "$_t"
	bpf_bg "$TMP/$_n.err" attach --pid "$_t" --inuse -d 3s -o "$TMP/$_n.pb.gz" || return 1
	wait "$_t"
	_rc=$?
	wait "$attach_pid" || fail "$_n: attach failed: $(tail -3 "$TMP/$_n.err")"
	expect_otel "$_n"
	return $_rc
}

# fork (a Linux 6.18 child must not run an optimized site it inherited) and
# exec while attached, and a signal handler that allocates
test_unharmed() {
	need_root || return
	attach_during fork env LD_PRELOAD="$LIB" CULPERT_SAMPLER_RATE=4096 \
		"$TARGETS/sampler_fork" 100 || fail "sampler_fork attached: exit $?: $(tail -2 "$TMP/fork.out")"
	grep -q '^children 100 ok 100$' "$TMP/fork.out" && grep -q '^checks [0-9]* failed 0$' "$TMP/fork.out" ||
		fail "sampler_fork attached: $(tr '\n' ';' <"$TMP/fork.out")"
	attach_during sig env LD_PRELOAD="$LIB:$(realpath "$TARGETS/libsigmask_alloc.so")" \
		CULPERT_SAMPLER_RATE=64 "$TARGETS/sampler_signal" 500000 ||
		fail "sampler_signal attached: exit $?: $(tail -2 "$TMP/sig.out")"
	grep -q '^checks [0-9]* failed 0$' "$TMP/sig.out" || fail "sampler_signal attached: $(cat "$TMP/sig.out")"
}

# A program without frame pointers (alloc_nofp): auto unwinds with DWARF,
# from the probe site inside the sampler through its wrappers' CFI; the
# sampler's frames dropped, chain_c is the leaf and the chain reaches main
# for >= 99% of its samples, as test_unwind.sh asks of the uprobe path
test_dwarf() {
	need_root || return
	under "" 16384
	# shellcheck disable=SC2086
	profile nofp 16KiB "-v --ringbuf-size 32MiB" $RUN_UNDER "$TARGETS/alloc_nofp" || return
	expect_otel nofp
	grep -q "unwinding: dwarf" "$TMP/nofp.err" || fail "not DWARF: $(grep unwinding "$TMP/nofp.err")"
	pct=$(share_pct "$TMP/nofp.pb.gz" chain_leaf)
	awk -v p="$pct" 'BEGIN { exit !(p >= 99) }' || fail "dwarf: full chain in $pct% only"
	"$PROFDUMP" "$TMP/nofp.pb.gz" | grep -q '^# comment unwind_errors=0$' ||
		fail "unwind errors: $("$PROFDUMP" "$TMP/nofp.pb.gz" | grep unwind_errors)"
}

# sdt_otel fires the pair from its own <sys/sdt.h> sites, at rate 1 (weight
# == size) and without a page: --rate 1 says so; each function exactly
test_sdt_program() {
	need_root || return
	profile sdt 1 "--inuse" "$TARGETS/sdt_otel" || return
	"$PROFDUMP" "$TMP/sdt.pb.gz" | grep -q '^# comment sampler=otel_memory$' ||
		fail "sdt_otel not profiled through its probes"
	grep -q "publishes no rate" "$TMP/sdt.err" || fail "no word that the rate is --rate's"
	by_leaf "$TMP/sdt.pb.gz" 2 1 | sed 's/^/total /' >"$TMP/sdt.est"
	grep '^total ' "$TMP/sdt.out" | sort | diff - "$TMP/sdt.est" >"$TMP/sdt.diff" ||
		fail "sdt_otel inexact: $(tr '\n' ';' <"$TMP/sdt.diff")"
	# everything it allocated it freed
	by_leaf "$TMP/sdt.pb.gz" 4 | awk '$2 != 0 { exit 1 }' || fail "sdt_otel: freed blocks live"
}

test_probes_and_errors() {
	need_root || return
	start_target "$TMP/p.out" env LD_PRELOAD="$LIB" "$TARGETS/alloc_abc" || return
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/p.probes" 2>&1 || fail "probes: $(cat "$TMP/p.probes")"
	grep -q '^sampler:    otel_memory probes (auto): 1 alloc site in 1 object' "$TMP/p.probes" &&
		grep -q "libculpert-sampler.so: 1 otel_memory:alloc site (semaphore), 1 otel_memory:free site (semaphore), culpert_sampler_page" "$TMP/p.probes" &&
		grep -q '^  rate 512.00 KiB (the sampler' "$TMP/p.probes" ||
		fail "probes: $(grep -A2 '^sampler:' "$TMP/p.probes" | tr '\n' ';')"
	"$BIN_BPF" probes --pid "$target_pid" --sampler uprobes >"$TMP/p2.probes" 2>&1
	grep -q '^sampler:    uprobes on the allocator (as asked' "$TMP/p2.probes" ||
		fail "probes --sampler uprobes: $(grep '^sampler:' "$TMP/p2.probes")"
	kill "$target_pid"
	start_target "$TMP/q.out" "$TARGETS/alloc_abc" || return
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/q.probes" 2>&1
	grep -q '^sampler:    uprobes on the allocator (auto): no mapped object has otel_memory' \
		"$TMP/q.probes" || fail "probes without a sampler: $(grep '^sampler:' "$TMP/q.probes")"
	expect_error 1 "sampler usdt cannot be had: no mapped object has otel_memory:alloc probes.*LD_PRELOAD=libculpert-sampler.so" \
		"$BIN_BPF" probes --pid "$target_pid" --sampler usdt
	expect_error 1 "sampler usdt cannot be had: no mapped object has otel_memory:alloc probes.*LD_PRELOAD=libculpert-sampler.so" \
		"$BIN_BPF" attach --pid "$target_pid" --sampler usdt -o "$TMP/never.pb.gz"
	expect_error 2 "invalid --sampler 'x': use auto, usdt, uprobes or inject" \
		"$BIN_BPF" attach --pid "$target_pid" --sampler x
	[ ! -e "$TMP/never.pb.gz" ] || fail "a failed attach wrote a profile"
}

run_test bpf/otel/exact_glibc test_exact_glibc
run_test bpf/otel/exact_jemalloc test_exact_jemalloc
run_test bpf/otel/exact_mimalloc test_exact_mimalloc
run_test bpf/otel/sampled_glibc test_sampled_glibc
run_test bpf/otel/sampled_jemalloc test_sampled_jemalloc
run_test bpf/otel/sampled_mimalloc test_sampled_mimalloc
run_test bpf/otel/inuse_sampled test_inuse_sampled
run_test bpf/otel/capture test_capture
run_test bpf/otel/spans test_spans
run_test bpf/otel/unharmed test_unharmed
run_test bpf/otel/dwarf test_dwarf
run_test bpf/otel/sdt_program test_sdt_program
run_test bpf/otel/probes_and_errors test_probes_and_errors
