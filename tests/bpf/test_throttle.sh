#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The stack captures a process may cost are bounded (--max-stack-rate, a
# token bucket per process in the kernel): past it a random subset of the
# samples keeps their stacks, each weighed by 1 / p, scaled per span path
# to the kernel's census of all of them (docs/profile-format.md,
# "Throttling").  A storm of malloc(1 MiB)/free under --unwind dwarf, where
# nearly every call is sampled, keeps its totals and its stacks, and loses
# nothing to a full ring buffer; two functions thinned at different rates
# each keep their bytes.
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
	grep -q '^stack storm ' "$TMP/storm.kinds" || fail "no sample kept its stack"
	# [throttled] only for samples picked to keep a stack that found no token: few
	thr=$(awk '$1 == "throttled" { s += $3 } END { printf "%.0f", s }' "$TMP/storm.kinds")
	awk -v t="$thr" -v n="$total" 'BEGIN { exit !(t <= n / 100) }' ||
		fail "$thr of $total bytes under [throttled]"
	grep -v ' storm ' "$TMP/storm.kinds" | awk '$3 > 0' | grep -q . &&
		fail "bytes outside the storm span: $(grep -v ' storm ' "$TMP/storm.kinds" | tr '\n' ';')"
	"$PROFDUMP" "$TMP/storm.pb.gz" >"$TMP/storm.dump"
	grep -q '^# comment stack_rate=10000$' "$TMP/storm.dump" || fail "the rate is not in the profile"
	grep -q '^# comment thinned_samples=[1-9]' "$TMP/storm.dump" || fail "thinning not counted"
	grep -q '^# comment kept_weighted_samples=[1-9]' "$TMP/storm.dump" ||
		fail "no sample kept with a weight"
	grep -q '^# comment census_overflow=0$' "$TMP/storm.dump" || fail "census incomplete"
	grep -q '^# comment lost_samples=0$' "$TMP/storm.dump" ||
		fail "samples lost despite the bound: $(grep lost_samples "$TMP/storm.dump")"
	grep -q '^warning: [0-9]* samples came past the stack rate of 10000/s' "$TMP/storm.err" ||
		fail "throttling not said: $(tail -3 "$TMP/storm.err")"
	go_totals_agree "$TMP/storm.pb.gz"
}

# "leaf bytes variance" of PROFILE's samples by leaf function (first frame):
# the variance from the thinning_stddev labels
by_leaf() {
	"$PROFDUMP" "$1" | grep -v '^#' | awk -F'\t' '
		{ split($1, v, " "); split($2, f, ";"); s[f[1]] += v[2]
		  n = split($3, l, ",")
		  for (i = 1; i <= n; i++) if (l[i] ~ /^thinning_stddev=/) {
			sd = substr(l[i], 17); var[f[1]] += sd * sd } }
		END { for (x in s) printf "%s %.0f %.6g\n", x, s[x], var[x] }'
}

# fast() allocates 100000 MiB back to back, slow() 20000 MiB at a fraction
# of that rate: past the stack rate of 10000/s the kernel keeps
# p = 8750 / R of the R samples a second of each (7/8 of the rate), so
# fast() is thinned several times harder.  Each function's estimate must be
# its own bytes (unweighted, fast() would read low; before, [throttled]
# took nearly all of them).  Sigma, relative, for N calls of 1 MiB at
# 512 KiB: from sampling, (1 - q) / (q N) over the allocator (each sampled
# with q = 1 - e^-2), 1 / (2 N) under the preloaded sampler (its weight:
# the sampling points in the block, Poisson with mean 2, times 512 KiB);
# from thinning, the variance the profile states (thinning_stddev:
# sum of (1 - p) W^2 over the kept samples, W with the 1 / p in; about
# (1 - p) / (p N') relative for N' samples kept with p), carried through the
# scaling to the census: with both functions' estimates X, Y and H = X + Y,
# (Y / H)^2 var(X) / X^2 + var(Y) / H^2 for X.  5 sigma.
two_rates() {
	_name=$1
	_otel=$2
	shift 2
	profile "$_name" 512KiB "" "$@" "$TARGETS/alloc_phases" 100000 20000 || return
	by_leaf "$TMP/$_name.pb.gz" >"$TMP/$_name.leaves"
	total=$(awk '{ s += $2 } END { printf "%.0f", s }' "$TMP/$_name.leaves")
	truth=$(awk '$1 == "total" { s += $3 } END { printf "%.0f", s }' "$TMP/$_name.out")
	within_pct "$total" "$truth" 1 || fail "$_name: estimated $total bytes, allocated $truth"
	for fn in fast slow; do
		other=slow
		[ $fn = slow ] && other=fast
		set -- $(awk -v f=$fn -v o=$other '$1 == f { x = $2; vx = $3 } $1 == o { y = $2; vy = $3 }
			END { printf "%.0f %.6g %.0f %.6g\n", x, vx, y, vy }' "$TMP/$_name.leaves")
		awk -v f=$fn -v x="$1" -v vx="$2" -v y="$3" -v vy="$4" -v otel="$_otel" '
			$1 == "total" && $2 == f { bytes = $3; calls = $4 }
			END {
				q = 1 - exp(-2); h = x + y
				v = otel ? 0.5 / calls : (1 - q) / (q * calls)
				if (x > 0)
					v += (y / h) ^ 2 * vx / (x * x) + vy / (h * h)
				sigma = sqrt(v); d = (x - bytes) / bytes
				printf "%s: %.0f of %.0f bytes (%+.2f%%), sigma %.2f%%\n",
					f, x, bytes, 100 * d, 100 * sigma
				exit !(d <= 5 * sigma && d >= -5 * sigma)
			}' "$TMP/$_name.out" >"$TMP/$_name.$fn" ||
			fail "$_name: $(cat "$TMP/$_name.$fn"), not within 5 sigma"
	done
	thr=$(awk '$1 == "[throttled]" { print $2 }' "$TMP/$_name.leaves")
	awk -v t="${thr:-0}" -v n="$total" 'BEGIN { exit !(t <= n / 100) }' ||
		fail "$_name: $thr of $total bytes under [throttled]"
	"$PROFDUMP" "$TMP/$_name.pb.gz" | grep -q '^# comment kept_weighted_samples=[1-9]' ||
		fail "$_name: nothing thinned: $(grep calls_per_sec "$TMP/$_name.out" | tr '\n' ' ')"
}

test_two_rates() {
	need_root || return
	two_rates phases 0
}

# the same under the preloaded sampler at the same rate (its otel_memory probes)
test_two_rates_sampler() {
	need_root || return
	two_rates phases_otel 1 env LD_PRELOAD="$(realpath "$OUTPUT/libculpert-sampler.so")" \
		CULPERT_SAMPLER_RATE=524288 || return
	"$PROFDUMP" "$TMP/phases_otel.pb.gz" | grep -q '^# comment sampler=otel_memory$' ||
		fail "not through the sampler's probes"
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
run_test bpf/throttle/two_rates test_two_rates
run_test bpf/throttle/two_rates_sampler test_two_rates_sampler
run_test bpf/throttle/no_limit test_no_limit
