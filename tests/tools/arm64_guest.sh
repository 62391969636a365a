#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The aarch64 smoke test's job, inside the arm64 VM (tests/bpf/test_arm64.sh
# boots it with tests/tools/vmrun.sh): the cross-built culpert-bpf against
# cross-built targets on Debian's arm64 kernel, with the suite's own helpers.
# Prints PASS/FAIL lines as a test file does; profiles and logs go to /out.
#   arm64_guest.sh OUTPUT [PATTERN]   (the cross build's OUTPUT, relative to here;
#                                      only the tests whose name has PATTERN)
OUTPUT=$1
only=${2:-}
export OUTPUT
. tests/lib.sh

keep() {
	for f in "$@"; do
		[ -f "$TMP/$f" ] && cp "$TMP/$f" /out/
	done
}

# the dry run: glibc's allocator found, each entry point's probe placed by the arm64
# rules with the instruction and its class as evidence (glibc 2.36: malloc opens
# with stp x29, x30, single-stepped; free with cbz x0, simulated), and auto's
# unwinding judged by x29 frame records
test_probes() {
	start_target "$TMP/probes.out" "$TARGETS/alloc_exact" || return
	"$BIN_BPF" probes -v --pid "$target_pid" >"$TMP/probes.txt" 2>&1 ||
		fail "probes exited $?: $(tail -3 "$TMP/probes.txt")"
	keep probes.txt
	grep -q '^allocator: *glibc in .*/libc.so.6' "$TMP/probes.txt" ||
		fail "no glibc found: $(head -5 "$TMP/probes.txt")"
	grep -q '^  malloc .*(symbol +0: stp x29, x30, \[sp, #-0x[0-9a-f]*\]! (single-stepped))' \
		"$TMP/probes.txt" || fail "malloc: $(grep -m1 '^  malloc ' "$TMP/probes.txt")"
	grep -q '^  free .*(symbol +0: cbz x0, #0x[0-9a-f]* (simulated))' "$TMP/probes.txt" ||
		fail "free: $(grep -m1 '^  free ' "$TMP/probes.txt")"
	grep -q '^unwind: *fp (auto: .*alloc_exact .*keeps* frame pointers .*(.* set up x29)' \
		"$TMP/probes.txt" || fail "unwind: $(grep -m1 '^unwind' "$TMP/probes.txt")"
	kill "$target_pid"
	start_target "$TMP/probes2.out" "$TARGETS/alloc_nofp" || return
	"$BIN_BPF" probes --pid "$target_pid" >"$TMP/probes2.txt" 2>&1
	grep -q '^unwind: *dwarf (auto: .*alloc_nofp is built without frame pointers' \
		"$TMP/probes2.txt" || fail "nofp unwind: $(grep -m1 '^unwind' "$TMP/probes2.txt")"
}

# --rate 1 with frame pointers: every function's bytes and calls exactly, and each
# leaf called from main, the caller lr pointed at
test_rate_one_fp() {
	rate_one_exact ex_fp --unwind fp || return
	keep ex_fp.pb.gz ex_fp.err
	"$PROFDUMP" "$TMP/ex_fp.pb.gz" | grep -v '^#' | awk -F'\t' '
		{ split($2, f, ";") }
		f[1] ~ /^f_|^make_mmapped$/ && f[2] == "main" { ok++; next }
		{ bad++; if (!first) first = $2 }
		END { printf "%d %d %s\n", ok, bad, first }' >"$TMP/leaf"
	read -r ok bad first <"$TMP/leaf"
	[ "$bad" -eq 0 ] && [ "$ok" -gt 0 ] ||
		fail "$bad stacks not f_*/make_mmapped <- main (first: $first), $ok good"
}

test_rate_one_dwarf() {
	rate_one_exact ex_dwarf --unwind dwarf
	keep ex_dwarf.pb.gz ex_dwarf.err
}

# --inuse at --rate 1: allocated and live bytes of each function exactly, through
# a return probe on every call (6.1 has no uprobe sessions)
test_inuse_exact() {
	live_exact || return
	keep live1.pb.gz live1.err
}

# without frame pointers: every chain_c sample walks by CFI up to main
test_dwarf_nofp() {
	profile nofp 16KiB "-v --unwind dwarf" "$TARGETS/alloc_nofp" || return
	keep nofp.pb.gz nofp.err
	pct=$(share_pct "$TMP/nofp.pb.gz" chain_leaf)
	awk -v p="$pct" 'BEGIN { exit !(p >= 99) }' || fail "dwarf: the chain to main in $pct% only"
	"$PROFDUMP" "$TMP/nofp.pb.gz" | grep -q '^# comment unwind_errors=0$' ||
		fail "unwind errors: $("$PROFDUMP" "$TMP/nofp.pb.gz" | grep unwind_errors)"
}

# --span-fn on C code: entry and return probes (6.1), each span closed at its return
# (sp as at entry on arm64); the paths' totals as test_spans.sh's span_fn, a
# quarter of them at 1 KiB (a quarter of the emulated traps; the smallest path,
# 8 MiB of 64-1024-byte blocks, has sigma 0.92%: +-5% is 5.4 sigma).  DWARF
# stacks run through the span functions, whose frame records hold the return
# probes' trampoline until the copy is repaired: every sample reaches main or
# its thread's start, without an unwind error.
test_span_fn_dwarf() {
	fns="--span-fn request --span-fn parse --span-fn js?n --span-fn validate --span-fn worker"
	# shallow stacks: 4 KiB copies; a ring that holds every sample (about 30,000 of
	# 4.2 KiB), as the slow reader of a one-CPU emulated guest may fall that far behind
	profile span_plain 1KiB "-v --unwind dwarf --stack-size 4KiB --ringbuf-size 256MiB $fns" \
		"$TARGETS/span_abc_plain" 4 || return
	keep span_plain.pb.gz span_plain.err
	# each function's end seen at its return instructions, as on x86 (test_spans.sh)
	n=$(grep -c "^--span-fn [a-z]* in .*span_abc_plain: entry + [1-9][0-9]* return instructions$" \
		"$TMP/span_plain.err")
	[ "$n" -eq 5 ] || fail "$(grep span-fn "$TMP/span_plain.err")"
	check_paths span_plain 5
	for c in unwind_errors unwind_truncated lost_samples; do
		"$PROFDUMP" "$TMP/span_plain.pb.gz" | grep -q "^# comment $c=0\$" ||
			fail "$("$PROFDUMP" "$TMP/span_plain.pb.gz" | grep "comment $c=")"
	done
	# the worker threads end in libc's start_thread and thread_start, unnamed without
	# libc's debug symbols: two frames under worker
	"$PROFDUMP" "$TMP/span_plain.pb.gz" | grep -v '^#' | awk -F'\t' '
		{ s = ";" $2 ";"; split($1, v, " "); all += v[2]
		  if (s ~ /;main;/ || s ~ /;worker;[^;]+;[^;]+;$/) good += v[2] }
		END { exit !(all > 0 && good >= 0.99 * all) }' ||
		fail "stacks short of main or the threads' start"
}

# C++ code gets entry probes only for --span-fn (exceptions must not unwind
# through a return probe); their ends are seen from an x86 return slot, so arm64
# refuses with one line saying what to use instead
test_span_fn_cxx_refused() {
	start_target "$TMP/cxx.out" "$TARGETS/span_cxx" || return
	expect_error 1 "span_cxx, C++ or Rust code .* cannot see on arm64 yet; mark its spans with" \
		"$BIN_BPF" attach --pid "$target_pid" --span-fn alloc_bytes -o "$TMP/cxx.pb.gz"
	kill "$target_pid"
}

echo "  guest: Linux $(uname -r) $(uname -m), BTF $(wc -c </sys/kernel/btf/vmlinux) bytes," \
	"booted in $(cut -d' ' -f1 /proc/uptime) s"
# each test's seconds: where the emulated guest's time goes
for t in probes rate_one_fp rate_one_dwarf inuse_exact dwarf_nofp span_fn_dwarf \
	span_fn_cxx_refused; do
	case "$t" in *"$only"*) ;; *) continue ;; esac
	_t0=$(date +%s)
	run_test "arm64/$t" "test_$t"
	echo "  arm64/$t: $(($(date +%s) - _t0)) s"
done
