#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The older kernels' paths on a real older kernel: Debian 12's own 6.1,
# booted under qemu (tests/tools/vmrun.sh).  It has no uprobe_multi links
# (one perf-event uprobe per site), no uprobe sessions (a return probe on
# every C allocator call for --inuse) and no run-time allocated hash maps
# for tracing programs (the live table is preallocated); the BPF programs
# must load there, and the counts be exact: alloc_exact at --rate 1,
# alloc_live at --rate 1 with --inuse, checked here against what each
# target printed.
. tests/lib.sh

DRIVE=tests/tools/oldkernel_drive.sh

test_debian_6_1() {
	need_root || return
	out=$TMP/vm/out
	VMRUN_TIMEOUT=600 sh tests/tools/vmrun.sh "$TMP/vm" -f tests/wait_for.sh -f "$BIN_BPF" \
		-f "$TARGETS/alloc_exact" -f "$TARGETS/alloc_live" \
		"$DRIVE" "$BIN_BPF" "$TARGETS/alloc_exact" "$TARGETS/alloc_live" /out 2>"$TMP/vm.err"
	rc=$?
	[ $rc -eq 125 ] && { fail "$(cat "$TMP/vm.err")"; return; }
	[ $rc -eq 0 ] || { fail "in the VM: $(tail -2 "$out/job.log")"; return; }
	case "$(cat "$out/kernel-release")" in
	6.1.*) echo "  the VM ran Linux $(cat "$out/kernel-release") under qemu" ;;
	*) fail "the VM ran $(cat "$out/kernel-release"), not Debian 12's 6.1"; return ;;
	esac
	grep -q '^kernel: .*uprobe_multi no, uprobe sessions no' "$out/probes.txt" ||
		fail "6.1 said to have newer features: $(grep '^kernel:' "$out/probes.txt")"
	grep -q '^attach:     one perf-event uprobe per site' "$out/probes.txt" ||
		fail "not the perf-event path: $(grep '^attach:' "$out/probes.txt")"
	grep -q 'live table preallocated (kernel before 6.1)' "$out/live.err" &&
		fail "6.1 has bpf_mem_alloc: the live table need not be preallocated"
	grep -q 'in-use tracking through a return probe on every call' "$out/live.err" ||
		fail "not the every-return path: $(grep in-use "$out/live.err")"
	# alloc_exact: every function its bytes and calls; alloc_live: bytes allocated and live
	by_leaf "$out/exact.pb.gz" 2 1 >"$TMP/exact.est"
	grep '^total ' "$out/exact.out" | while read -r _ fn bytes calls; do
		got=$(awk -v f="$fn" '$1 == f { print $2 "/" $3 }' "$TMP/exact.est")
		[ "$got" = "$bytes/$calls" ] || echo "$fn $bytes/$calls, profile ${got:-none}"
	done >"$TMP/exact.bad"
	[ -s "$TMP/exact.bad" ] && fail "alloc_exact on 6.1: $(tr '\n' ';' <"$TMP/exact.bad")"
	[ "$(grep -c '^total ' "$out/exact.out")" -gt 5 ] || fail "alloc_exact reported too little"
	by_leaf "$out/live.pb.gz" 2 4 >"$TMP/live.est"
	grep '^total ' "$out/live.out" | while read -r _ fn alloc live; do
		got=$(awk -v f="$fn" '$1 == f { print $2 "/" $3 }' "$TMP/live.est")
		[ "$got" = "$alloc/$live" ] || echo "$fn $alloc/$live, profile ${got:-none}"
	done >"$TMP/live.bad"
	[ -s "$TMP/live.bad" ] && fail "alloc_live --inuse on 6.1: $(tr '\n' ';' <"$TMP/live.bad")"
	[ "$(grep -c '^total ' "$out/live.out")" -eq 5 ] || fail "alloc_live did not report its 5 functions"
	return 0
}

run_test bpf/oldkernel/debian_6_1 test_debian_6_1
