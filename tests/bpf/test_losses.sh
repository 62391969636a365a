#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A capture that loses records: the ring buffer is small and its reader
# stopped (SIGSTOP) while the target allocates and then frees everything.
# The loss is stated where the profile is read (report, diff), and the live
# heap comes from the kernel's table, so the frees whose records were lost
# do not become leaks.
. tests/lib.sh

test_ring_full() {
	need_root || return
	start_target "$TMP/fl.out" "$TARGETS/free_later" 20000 || return
	attach_bg "$TMP/fl.err" --pid "$target_pid" -o "$TMP/fl.pb.gz" --rate 1 --inuse \
		--ringbuf-size 64KiB || return
	kill -STOP "$attach_pid"
	kill -USR1 "$target_pid"
	wait "$target_pid" || fail "the target exited with $?"
	kill -CONT "$attach_pid"
	wait "$attach_pid" || { fail "attach failed: $(tail -2 "$TMP/fl.err")"; return; }
	"$PROFDUMP" "$TMP/fl.pb.gz" >"$TMP/fl.dump"
	lost=$(sed -n 's/^# comment lost_samples=//p' "$TMP/fl.dump")
	frees=$(sed -n 's/^# comment inuse_lost_frees=//p' "$TMP/fl.dump")
	[ "${lost:-0}" -gt 0 ] && [ "${frees:-0}" -gt 0 ] ||
		{ fail "the ring did not overflow: lost_samples=$lost inuse_lost_frees=$frees"; return; }
	live=$(grep -v '^#' "$TMP/fl.dump" | awk '{ s += $4 } END { printf "%.0f", s }')
	[ "$live" = 0 ] || fail "$live bytes live in a program that freed everything ($frees free records lost)"
	"$BIN_CLI" report --leaks "$TMP/fl.pb.gz" >"$TMP/leaks" 2>&1 || fail "report --leaks: $(cat "$TMP/leaks")"
	grep -q 'hold' "$TMP/leaks" && fail "phantom leak: $(grep hold "$TMP/leaks")"
	grep -q "^Lost:    $lost of [0-9]* sampled allocations" "$TMP/leaks" ||
		fail "report --leaks does not say the loss: $(head -3 "$TMP/leaks")"
	"$BIN_CLI" report "$TMP/fl.pb.gz" | grep -q "^Lost:    $lost of" || fail "report does not say the loss"
	"$BIN_CLI" diff "$TMP/fl.pb.gz" "$TMP/fl.pb.gz" --no-fail | grep -q "^Lost:    $TMP/fl.pb.gz: $lost of" ||
		fail "diff does not say the loss"
}

run_test bpf/losses/ring_full test_ring_full
