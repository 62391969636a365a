#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# --inuse: live heap against ground truth, through uprobe sessions and
# through a return probe on every call; leaks and their age; the bound.
. tests/lib.sh

# profile alloc_live with --inuse (+ args) until it says "done"; profile in $TMP/live.pb.gz
# The target is asked its ages (SIGUSR2) once attach has ended: bounds of the
# ages the profile counts to that end (tests/targets/alloc_live.c).
profile_live() {
	start_profiled live attach "--rate 4KiB --inuse -v $*" "$TARGETS/alloc_live" || return 1
	wait_for "$TMP/live.out" '^done' 60 || { fail "alloc_live did not finish"; return 1; }
	kill -INT "$attach_pid"
	wait "$attach_pid" || { fail "attach failed: $(cat "$TMP/live.err")"; return 1; }
	kill -USR2 "$target_pid"
	wait_for "$TMP/live.out" '^ages ' 10 || { fail "alloc_live did not say its ages"; return 1; }
	kill "$target_pid"
}

# Rate 4 KiB, blocks of 64..1024 bytes (128..2048 after grow's realloc).
# Each estimate's standard error is about sqrt(rate * bytes): for 32 MiB
# that is 1.1%, so +-5% is 4.5 sigma; leak_early's 8 MiB has 2.2%, so it
# gets +-10% (4.5 sigma).  churn frees every block: its live heap is 0.
check_live_totals() {
	# "leaf alloc_space inuse_space"
	by_leaf "$TMP/live.pb.gz" 2 4 >"$TMP/est"
	grep '^total ' "$TMP/live.out" | while read -r _ fn alloc live; do
		pct=5
		[ "$fn" = leak_early ] && pct=10
		read -r _ ea el <<EOF
$(awk -v f="$fn" '$1 == f' "$TMP/est")
EOF
		if [ -z "$ea" ]; then
			echo "$fn: no samples"
			continue
		fi
		within_pct "$ea" "$alloc" "$pct" || echo "$fn: alloc_space $ea, allocated $alloc"
		if [ "$live" -eq 0 ]; then
			[ "$el" -eq 0 ] || echo "$fn: inuse_space $el, but it freed everything"
		else
			within_pct "$el" "$live" "$pct" || echo "$fn: inuse_space $el, live $live"
		fi
	done >"$TMP/bad"
	[ -s "$TMP/bad" ] && fail "$(tr '\n' ';' <"$TMP/bad")"
	[ "$(grep -c '^total ' "$TMP/live.out")" -gt 0 ] || fail "alloc_live reported nothing"
	"$PROFDUMP" "$TMP/live.pb.gz" | grep -q '^# sample_type inuse_space/bytes' ||
		fail "no inuse_space sample type"
	return 0
}

test_inuse_session() {
	need_root || return
	profile_live || return
	grep -q "in-use tracking through uprobe sessions" "$TMP/live.err" ||
		fail "not the session path: $(grep in-use "$TMP/live.err")"
	check_live_totals
	# four sample types and age labels, read by an independent reader
	go_totals_agree "$TMP/live.pb.gz"
}

test_inuse_every_return() {
	need_root || return
	profile_live --no-session || return
	grep -q "in-use tracking through a return probe on every call" "$TMP/live.err" ||
		fail "not the every-return path: $(grep in-use "$TMP/live.err")"
	check_live_totals
}

# The leak allocated 3 s before the rest is what --leaks --min-age shows.
# Ages are stored as power-of-two buckets of seconds (docs/profile-format.md)
# and counted to the end of the capture.  What the target measured bounds
# them: leak_early's blocks are at least since_leak_ns old at "done", the
# younger functions' (keep_all and after) at most since_keep_ns when asked
# after the capture ended.  Each bucket is checked against those bounds, and
# --min-age at leak_early's bucket lists leak_early, and the younger ones
# only if their bucket reaches it: on a quiet machine it does not, and a
# late stop on a loaded one moves the buckets, not the verdict.
test_leaks_and_age() {
	need_root || return
	[ -s "$TMP/live.pb.gz" ] || profile_live || return
	since=$(awk '$1 == "since_leak_ns" { print $2 }' "$TMP/live.out")
	kmax=$(awk '$1 == "ages" { print $5 }' "$TMP/live.out")
	[ -n "$since" ] && [ -n "$kmax" ] || { fail "alloc_live did not say its ages"; return; }
	[ "$since" -ge 3000000000 ] || fail "alloc_live: since_leak_ns $since, under its 3 s sleep"
	# "leaf oldest youngest" of the live samples' age_ns labels
	"$PROFDUMP" "$TMP/live.pb.gz" | grep -v '^#' | awk -F'\t' '
		{ split($2, f, ";"); split($1, v, " "); age = -1; n = split($3, l, ",")
		  for (i = 1; i <= n; i++) if (l[i] ~ /^age_ns=/) age = substr(l[i], 8) + 0
		  if (v[4] <= 0) next
		  if (age < 0) { print "none " f[1]; next }
		  if (!(f[1] in lo) || age < lo[f[1]]) lo[f[1]] = age
		  if (!(f[1] in hi) || age > hi[f[1]]) hi[f[1]] = age }
		END { for (k in lo) printf "%s %.0f %.0f\n", k, hi[k], lo[k] }' >"$TMP/ages"
	grep '^none ' "$TMP/ages" | sort -u | sed 's/^none /no age on live /' >"$TMP/age.bad"
	# the bucket of N ns: 0 under a second, else the power of two of seconds within
	bucket() { awk -v n="$1" 'BEGIN { b = 0; if (n >= 1e9) { b = 1e9; while (b * 2 <= n) b *= 2 }
		printf "%.0f\n", b }'; }
	thr=$(awk '$1 == "leak_early" { print $3 }' "$TMP/ages")
	young=$(awk '$1 ~ /^(keep_all|keep_half|grow)$/ { if ($2 > m) m = $2 } END { printf "%.0f\n", m }' \
		"$TMP/ages")
	[ -n "$thr" ] || { fail "no live leak_early samples: $(tr '\n' ';' <"$TMP/ages")"; return; }
	[ "$thr" -ge "$(bucket "$since")" ] ||
		echo "leak_early aged $thr, at least $since when the target said done" >>"$TMP/age.bad"
	[ "$young" -le "$(bucket "$kmax")" ] ||
		echo "keep_all and after aged $young, at most $kmax at the end" >>"$TMP/age.bad"
	[ -s "$TMP/age.bad" ] && fail "$(tr '\n' ';' <"$TMP/age.bad")"
	min=$((thr / 1000000))
	"$BIN_CLI" report --leaks --min-age "${min}ms" "$TMP/live.pb.gz" >"$TMP/leaks" 2>&1 ||
		fail "report --leaks: $(cat "$TMP/leaks")"
	grep -q 'leak_early' "$TMP/leaks" || fail "leak_early not reported: $(cat "$TMP/leaks")"
	if [ "$young" -lt "$thr" ]; then
		grep -q 'keep_all\|keep_half\|grow' "$TMP/leaks" &&
			fail "younger blocks reported as leaks (--min-age ${min}ms): $(cat "$TMP/leaks")"
	else
		grep -q 'keep_all' "$TMP/leaks" ||
			fail "keep_all aged $young, not reported at --min-age ${min}ms: $(cat "$TMP/leaks")"
		echo "  the capture ended $((kmax / 1000000)) ms after keep_all began: its bucket is leak_early's"
	fi
	return 0
}

# both return paths (sessions, a return probe on every call) see every call
test_inuse_exact() {
	need_root || return
	for path in "" --no-session; do
		live_exact "$path" || return
	done
	return 0
}

# A live table smaller than the live set: the capture goes on, the
# overflow is counted and said, and the table the running profiler holds in
# the kernel is the 1000 entries asked for, however many blocks are live.
test_live_table_bound() {
	need_root || return
	start_profiled live attach "--rate 4KiB --inuse -v --max-live 1000" "$TARGETS/alloc_live" || return
	wait_for "$TMP/live.out" '^done' 60 || { fail "alloc_live did not finish"; return; }
	# the table the running profiler holds (its fds' map ids) has the bound
	ids=$(grep -h '^map_id:' /proc/"$attach_pid"/fdinfo/* 2>/dev/null | awk '{print $2}' | tr '\n' ' ')
	bpftool map show -j | $PY -c 'import json, sys
ids = sys.argv[1].split()
for m in json.load(sys.stdin):
    if str(m["id"]) in ids and m.get("name") == "live_allocs":
        print(m["max_entries"])' "$ids" >"$TMP/live.max"
	[ "$(cat "$TMP/live.max")" = 1000 ] || fail "live_allocs of pid $attach_pid: max_entries '$(cat "$TMP/live.max")', want 1000"
	stop_profiled live attach || return
	"$PROFDUMP" "$TMP/live.pb.gz" |
		grep -qx '# comment inuse_covers=blocks allocated before attach are not included' ||
		fail "the --inuse profile does not say what its live heap covers"
	"$PROFDUMP" "$TMP/live.pb.gz" | grep '^# comment inuse_untracked=' >"$TMP/untracked"
	n=$(sed 's/.*=//' "$TMP/untracked")
	[ "${n:-0}" -gt 1000 ] || fail "overflow not counted: $(cat "$TMP/untracked")"
	grep -q "not tracked for --inuse.*--max-live" "$TMP/live.err" ||
		fail "overflow not said: $(tail -3 "$TMP/live.err")"
}

run_test bpf/inuse/session test_inuse_session
run_test bpf/inuse/leaks_and_age test_leaks_and_age
run_test bpf/inuse/every_return test_inuse_every_return
run_test bpf/inuse/exact test_inuse_exact
run_test bpf/inuse/live_table_bound test_live_table_bound
