#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The stack captures a process may cost are bounded (--max-stack-rate, a
# token bucket per process in the kernel): a storm of malloc(1 MiB)/free
# under --unwind dwarf, where nearly every call is sampled, keeps its
# totals -- the throttled samples are counted by size and span in the
# kernel and unbiased like the others, under a [throttled] frame -- and
# loses nothing to a full ring buffer.
. tests/lib.sh

N=100000

# "frame-or-(other) span bytes" of PROFILE's samples: [throttled] or the stack, by span path
by_kind() {
	"$PROFDUMP" "$1" | grep -v '^#' | awk -F'\t' '
		{ split($1, v, " "); k = ($2 ~ /^\[throttled\]/) ? "throttled" : "stack"
		  sp = "-"; n = split($3, l, ",")
		  for (i = 1; i <= n; i++) if (l[i] ~ /^span_path=/) sp = substr(l[i], 11)
		  s[k " " sp] += v[2] }
		END { for (x in s) printf "%s %.0f\n", x, s[x] }' | sort
}

# Rate 512 KiB, blocks of 1 MiB: each is sampled with p = 1 - e^-2 and
# weighs w = 1/p = 1.156; the estimate of N blocks has a relative standard
# error of sqrt(w (w - 1) / N) = 0.13%; +-1% is 7.5 sigma.
test_storm_totals() {
	need_root || return
	profile storm 512KiB "--unwind dwarf --span-fn storm" "$TARGETS/alloc_storm" "$N" || return
	truth=$(awk '$1 == "total" && $2 == "storm" { print $3 }' "$TMP/storm.out")
	by_kind "$TMP/storm.pb.gz" >"$TMP/storm.kinds"
	total=$(awk '{ s += $3 } END { printf "%.0f", s }' "$TMP/storm.kinds")
	within_pct "$total" "$truth" 1 || fail "storm: estimated $total bytes, allocated $truth"
	grep -q '^throttled storm ' "$TMP/storm.kinds" ||
		fail "no throttled bytes under the storm span: $(tr '\n' ';' <"$TMP/storm.kinds")"
	grep -q '^stack storm ' "$TMP/storm.kinds" || fail "no sample kept its stack"
	grep -v ' storm ' "$TMP/storm.kinds" | awk '$3 > 0' | grep -q . &&
		fail "bytes outside the storm span: $(grep -v ' storm ' "$TMP/storm.kinds" | tr '\n' ';')"
	"$PROFDUMP" "$TMP/storm.pb.gz" >"$TMP/storm.dump"
	grep -q '^# comment stack_rate=10000$' "$TMP/storm.dump" || fail "the rate is not in the profile"
	grep -q '^# comment throttled_samples=[1-9]' "$TMP/storm.dump" || fail "throttling not counted"
	grep -q '^# comment lost_samples=0$' "$TMP/storm.dump" ||
		fail "samples lost despite the bound: $(grep lost_samples "$TMP/storm.dump")"
	grep -q '^warning: [0-9]* samples came past the stack rate of 10000/s' "$TMP/storm.err" ||
		fail "throttling not said: $(tail -3 "$TMP/storm.err")"
	go_totals_agree "$TMP/storm.pb.gz"
}

# --max-stack-rate 0: no limit, every sample keeps its stack
test_no_limit() {
	need_root || return
	profile storm0 512KiB "--max-stack-rate 0 --ringbuf-size 64MiB" "$TARGETS/alloc_storm" 20000 ||
		return
	"$PROFDUMP" "$TMP/storm0.pb.gz" | grep -v '^#' | grep -q '\[throttled\]' &&
		fail "throttled without a limit"
	"$PROFDUMP" "$TMP/storm0.pb.gz" | grep -q '^# comment throttled_samples=0$' ||
		fail "$("$PROFDUMP" "$TMP/storm0.pb.gz" | grep throttled)"
}

run_test bpf/throttle/storm_totals test_storm_totals
run_test bpf/throttle/no_limit test_no_limit
