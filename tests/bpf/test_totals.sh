#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Exact span totals (docs/profile-format.md "Exact span totals"): the
# target counts every allocator call it makes after SIGUSR1 and prints the
# truth (tests/targets/span_totals.c); the profile must carry exactly that,
# sampled or not, whatever the rate.
. tests/lib.sh

# totals_of PROFILE: "PATH SELF_B SELF_C INCL_B INCL_C INSTANCES OPEN" per span path
totals_of() {
	"$PROFDUMP" "$1" | sed -n 's/^# comment span\.total\.\(.*\)=\([0-9,]*\)$/\1 \2/p' |
		awk '{ n = split($2, v, ","); printf "%s %s %s %s %s %s %s\n", $1, v[1], v[2], v[3], v[4], v[5], v[6] }'
}

# profile span_totals at RATE to its "done" (still_open stays open), check every exact line
check_exact() {
	rate=$1
	profile_until_done span_totals 20 attach "--rate $rate" "$TARGETS/span_totals" || return
	totals_of "$TMP/span_totals.pb.gz" >"$TMP/got"
	grep '^exact ' "$TMP/span_totals.out" | cut -d' ' -f2- >"$TMP/want"
	sort "$TMP/want" | diff - "$(sort "$TMP/got" >"$TMP/got.s"; echo "$TMP/got.s")" >"$TMP/d" ||
		{ fail "rate $rate: totals differ (- truth, + profile): $(tr '\n' ' ' <"$TMP/d")"; return; }
	want=$(sed -n 's/^outside //p' "$TMP/span_totals.out")
	got=$("$PROFDUMP" "$TMP/span_totals.pb.gz" |
		sed -n 's/^# comment span\.totals\.outside=\([0-9]*\),\([0-9]*\)$/\1 \2/p')
	[ "$got" = "$want" ] || fail "rate $rate: outside any span $got, allocated $want"
	# the exit of an id never entered is counted, and changes no total (checked above)
	"$PROFDUMP" "$TMP/span_totals.pb.gz" | grep -q '^# comment span_unmatched_exits=1$' ||
		fail "rate $rate: the unmatched exit is not counted"
	"$PROFDUMP" "$TMP/span_totals.pb.gz" | grep -q '^# comment span\.totals\.inexact=0$' ||
		fail "rate $rate: totals said to be inexact"
}

# default rate: a handful of samples at most, the totals exact all the same
test_totals_default_rate() {
	need_root || return
	check_exact 512KiB
	# any pprof reader reads the file: the totals are comments it ignores
	go_totals_agree "$TMP/span_totals.pb.gz"
}

test_totals_every_call() {
	need_root || return
	check_exact 1
}

# bytes per request 1000 i + 1536, i = 1..200: each quantile the middle of
# its bucket, within 12.5% of the truth (a bucket is at most 25% of its
# lower bound wide); the max exact
test_totals_spread() {
	need_root || return
	[ -s "$TMP/span_totals.pb.gz" ] || profile_until_done span_totals 20 attach "" \
		"$TARGETS/span_totals" || return
	"$BIN_CLI" report "$TMP/span_totals.pb.gz" --format json >"$TMP/r.json" ||
		{ fail "report --format json failed"; return; }
	read -r _ _ p50 p99 max <<-EOF2
	$(grep '^spread request ' "$TMP/span_totals.out")
	EOF2
	for q in p50 p99 max; do
		eval want=\$$q
		got=$(/usr/bin/python3 -c 'import json,sys
s = [s for s in json.load(open(sys.argv[1]))["exact"]["spans"] if s["path"] == "request"][0]
print(s["per_instance"][sys.argv[2]])' "$TMP/r.json" "$q")
		case $q in
		max) [ "$got" = "$want" ] || fail "max per request $got, truth $want" ;;
		*) within_pct "$got" "$want" 12.5 || fail "$q per request $got, truth $want (12.5%)" ;;
		esac
	done
}

# --no-exact: no totals in the profile, spans sampled as ever (--rate 1: every call a sample)
test_totals_off() {
	need_root || return
	profile_until_done span_totals 20 attach "--rate 1 --no-exact" "$TARGETS/span_totals" ||
		return
	"$PROFDUMP" "$TMP/span_totals.pb.gz" | grep -q '^# comment span\.tota' &&
		fail "--no-exact profile has exact totals"
	want=$(awk '$1 == "exact" && $2 == "request" { print $3 }' "$TMP/span_totals.out")
	got=$(by_span_path "$TMP/span_totals.pb.gz" | awk '$1 == "request" { print $2 }')
	[ "$got" = "$want" ] || fail "--no-exact, --rate 1: request's own bytes $got, allocated $want"
	rm -f "$TMP/span_totals.pb.gz"
}

# span_abc allocates the same every run: its USDT spans and the same functions as
# --span-fn spans (span_abc_plain, no probes) must give the same exact totals, paths and all
test_totals_span_fn() {
	need_root || return
	profile usdt 512KiB "" "$TARGETS/span_abc" || return
	profile fn 512KiB "--span-fn request --span-fn parse --span-fn json --span-fn validate \
		--span-fn worker" "$TARGETS/span_abc_plain" || return
	totals_of "$TMP/usdt.pb.gz" | sort >"$TMP/usdt.t"
	totals_of "$TMP/fn.pb.gz" | sort >"$TMP/fn.t"
	[ "$(wc -l <"$TMP/usdt.t")" -eq 5 ] || fail "USDT: $(tr '\n' ';' <"$TMP/usdt.t")"
	diff "$TMP/usdt.t" "$TMP/fn.t" >"$TMP/d" ||
		fail "--span-fn totals differ from USDT's (- USDT, + fn): $(tr '\n' ' ' <"$TMP/d")"
}

run_test bpf/totals/span_fn test_totals_span_fn
run_test bpf/totals/off test_totals_off
run_test bpf/totals/default_rate test_totals_default_rate
run_test bpf/totals/every_call test_totals_every_call
run_test bpf/totals/spread test_totals_spread
