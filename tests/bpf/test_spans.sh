#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Span attribution through the culpert:span_* USDT probes.
. tests/lib.sh

# profile TARGET with RATE (+ args) until it exits; profile in $TMP/$name.pb.gz
profile_target() {
	name=$1
	rate=$2
	shift 2
	profile "$name" "$rate" "-v $*" "$TARGETS/$name"
}

# Rate 4 KiB; each path allocates >= 32 MiB in 64..1024-byte blocks, so the
# standard error is at most sqrt(4096 * 32 MiB) = 1.1% of it and +-5% is
# 4.5 sigma.  "request" allocates nothing itself: it has no samples of its own.
test_span_ground_truth() {
	need_root || return
	profile_target span_abc 4KiB || return
	grep -q "6 culpert span probe sites" "$TMP/span_abc.err" ||
		fail "span probe sites not found: $(head -3 "$TMP/span_abc.err")"
	check_paths span_abc 5
	awk '$1 == "request" { exit 1 }' "$TMP/span_abc.est" || fail "request has samples of its own"
	# the worker span ran on three threads: three thread ids carry it
	n=$("$PROFDUMP" "$TMP/span_abc.pb.gz" | grep 'span_name=worker' |
		sed 's/.*thread_id=\([0-9]*\).*/\1/' | sort -u | wc -l)
	[ "$n" -eq 3 ] || fail "worker span seen on $n threads, want 3"
}

# A span name holding the path's separator is one span: "semi;colon" is
# escaped in span_path (docs/profile-format.md), and the sampled tree, the
# exact totals and diff name the same spans with the same bytes (--rate 1)
test_span_semicolon() {
	need_root || return
	profile_target span_semi 1 || return
	"$PROFDUMP" "$TMP/span_semi.pb.gz" | grep -q 'span_path=semi\\;colon;frame' ||
		fail "span_path labels: $("$PROFDUMP" "$TMP/span_semi.pb.gz" | grep -o 'span_path=[^,]*' | sort -u)"
	"$BIN_CLI" report "$TMP/span_semi.pb.gz" --format json >"$TMP/semi.report.json" || fail "report"
	"$BIN_CLI" diff "$TMP/span_semi.pb.gz" "$TMP/span_semi.pb.gz" --format json \
		>"$TMP/semi.diff.json" || fail "diff exited $?"
	/usr/bin/python3 - "$TMP/semi.report.json" "$TMP/semi.diff.json" <<-'EOF' || fail "report and diff disagree"
	import json, sys
	r, d = (json.load(open(f)) for f in sys.argv[1:])
	def walk(spans, out, key):
	    for s in spans:
	        if not s["no_span"]:
	            out[s["path"]] = s[key]
	        walk(s["children"], out, key)
	    return out
	rep = walk(r["spans"], {}, "bytes")
	want = {"semi\\;colon": 3000000, "semi\\;colon;frame": 1000000, "back\\\\slash": 4000000}
	assert rep == want, rep
	# diff's rows are each path's own bytes
	dif = {x["key"]: x["after"] for x in d["rows"] if x["key"] != "(no span)"}
	assert dif == walk(r["spans"], {}, "self_bytes"), (dif, rep)
	exact = {s["path"]: s["bytes"] for s in r["exact"]["spans"]}
	assert exact == rep, (exact, rep)
	EOF
	"$BIN_CLI" report "$TMP/span_semi.pb.gz" >"$TMP/semi.report" || fail "report text"
	grep -q '^semi;colon  ' "$TMP/semi.report" && grep -q '^  frame  ' "$TMP/semi.report" ||
		fail "report: $(cat "$TMP/semi.report")"
	"$BIN_CLI" report "$TMP/span_semi.pb.gz" --span 'semi\;colon;frame' >"$TMP/semi.span" ||
		fail "--span with the escaped path: $(cat "$TMP/semi.span")"
}

# Labels as docs/profile-format.md says: name, id, parent id, path; innermost span's parent is the enclosing one
# (in ground_truth's capture when it made one)
test_span_labels() {
	need_root || return
	[ -s "$TMP/span_abc.pb.gz" ] || profile_target span_abc 4KiB || return
	"$PROFDUMP" "$TMP/span_abc.pb.gz" | grep -v '^#' >"$TMP/labels"
	line=$(grep 'span_name=json' "$TMP/labels" | head -1)
	case "$line" in
	*span_path=request\;parse\;json*span_id=*span_parent_id=*) ;;
	*) fail "json sample labels: $line" ;;
	esac
	json_parent=$(echo "$line" | sed 's/.*span_parent_id=\([0-9]*\).*/\1/')
	parse_id=$(grep 'span_name=parse' "$TMP/labels" | head -1 | sed 's/.*span_id=\([0-9]*\).*/\1/')
	[ "$json_parent" = "$parse_id" ] || fail "json's parent $json_parent is not parse's id $parse_id"
	grep -v 'span_' "$TMP/labels" | grep -q 'thread_id=' || fail "no sample outside any span"
	go tool pprof -tags "$TMP/span_abc.pb.gz" >"$TMP/tags" 2>&1 || fail "go tool pprof -tags failed"
	for k in span_name span_path span_id span_parent_id thread_id; do
		grep -q "$k" "$TMP/tags" || fail "go tool pprof -tags shows no $k"
	done
	# -tagfocus selects exactly the json samples: their total is ours
	want=$(by_span_path "$TMP/span_abc.pb.gz" | awk '$1 == "request;parse;json" { print $2 }')
	go tool pprof -raw -tagfocus=span_name:json "$TMP/span_abc.pb.gz" >"$TMP/focus" 2>/dev/null
	got=$(awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
		on && $2 ~ /^[0-9]+:$/ { s += $2 + 0 } END { printf "%d", s }' "$TMP/focus")
	[ "$got" = "$want" ] || fail "-tagfocus=span_name:json gives $got bytes, want $want"
}

# Async-style misuse leaves later attribution exact (--rate 1: every allocation).
test_span_misuse() {
	need_root || return
	profile_target span_misuse 1 || return
	check_paths span_misuse 0
	grep -q "outer\|inner" "$TMP/span_misuse.est" && fail "popped spans still attributed"
	# the 8 spans past the 32 kept are an error said on stderr and in the profile
	"$PROFDUMP" "$TMP/span_misuse.pb.gz" | grep -q '^# comment span_overflow=8$' ||
		fail "$("$PROFDUMP" "$TMP/span_misuse.pb.gz" | grep span_overflow)"
	grep -q '^warning: 8 spans were entered deeper than 32 open spans' "$TMP/span_misuse.err" ||
		fail "overflow not said: $(tail -3 "$TMP/span_misuse.err")"
	return 0
}

# C++17 RAII spans, a name that is freed while its span is open, an explicit
# parent that is not the open span
test_span_cxx() {
	need_root || return
	profile_target span_cxx 1 || return
	check_paths span_cxx 0
	# cxx_child is opened inside cxx_stage_2 with cxx_request as its explicit
	# parent: the implicit one would be cxx_stage_2's id
	"$PROFDUMP" "$TMP/span_cxx.pb.gz" | grep -v '^#' >"$TMP/cxx.labels"
	stage=$(grep 'span_name=cxx_stage_2' "$TMP/cxx.labels" | head -1)
	req=$(echo "$stage" | sed -n 's/.*span_parent_id=\([0-9]*\).*/\1/p')
	stage_id=$(echo "$stage" | sed -n 's/.*span_id=\([0-9]*\).*/\1/p')
	[ -n "$req" ] && [ -n "$stage_id" ] || { fail "cxx_stage_2 sample labels: $stage"; return; }
	grep 'span_name=cxx_child' "$TMP/cxx.labels" | sed -n 's/.*span_parent_id=\([0-9]*\).*/\1/p' |
		sort -u >"$TMP/cxx.parents"
	[ "$(cat "$TMP/cxx.parents")" = "$req" ] ||
		fail "cxx_child's parents: $(tr '\n' ' ' <"$TMP/cxx.parents"), want cxx_request's $req (cxx_stage_2 is $stage_id)"
}

# Unprofiled, the semaphores read 0 and no site evaluates its arguments;
# attached they count, detached they are 0 again.
test_span_semaphores() {
	need_root || return
	check_semaphores sem evals "$TARGETS/span_sem"
}

# The same program without the header, spans from --span-fn: the same tree and totals
# (same statistics as test_span_ground_truth), with and without uprobe_multi links.
# Each function's end is seen at its return instructions: no return probe.
test_span_fn() {
	need_root || return
	fns="--span-fn request --span-fn parse --span-fn js?n --span-fn validate --span-fn worker"
	for mode in "" --no-multi; do
		# its own name: labels reads ground_truth's span_abc profile
		profile span_plain 4KiB "-v $mode $fns" "$TARGETS/span_abc_plain" || return
		n=$(grep -c "^--span-fn [a-z]* in .*span_abc_plain: entry + [1-9][0-9]* return instructions$" \
			"$TMP/span_plain.err")
		[ "$n" -eq 5 ] || fail "$mode: $(grep span-fn "$TMP/span_plain.err")"
		check_paths span_plain 5
	done
}

# Recursion nests a span per level; a longjmp out of five levels closes them all.
test_span_fn_recursion() {
	need_root || return
	for mode in "" --no-multi; do
		profile_target span_recursive 1 --span-fn descend $mode || return
		check_paths span_recursive 0
	done
}

# Patterns that match too much, or nothing, are refused with what to do
test_span_fn_refused() {
	need_root || return
	start_program /dev/null "$OUTPUT/examples/demo_service" 30 || return
	svc=$prog_pid
	"$BIN_BPF" attach --pid "$svc" --span-fn '*' 2>"$TMP/many.err"
	[ $? -eq 1 ] || fail "'*' not refused"
	grep -q '^error: --span-fn matches [0-9]* functions, more than --max-span-fns 64 .*handle_request' \
		"$TMP/many.err" || fail "no refusal listing the matches: $(head -c 300 "$TMP/many.err")"
	[ "$(wc -l <"$TMP/many.err")" -eq 1 ] || fail "refusal is not one line"
	"$BIN_BPF" attach --pid "$svc" --span-fn 'no_such_fn*' 2>"$TMP/none.err"
	[ $? -eq 1 ] || fail "a pattern matching nothing was accepted"
	grep -q "^error: --span-fn 'no_such_fn\*' matches no function" "$TMP/none.err" ||
		fail "$(cat "$TMP/none.err")"
	"$BIN_BPF" attach --pid "$svc" --span-fn 'handle_*' --span-fn 'build_*' --max-span-fns 1 \
		2>"$TMP/two.err"
	grep -q "matches 2 functions, more than --max-span-fns 1" "$TMP/two.err" ||
		fail "--max-span-fns not honoured: $(cat "$TMP/two.err")"
}

# "path pct bytes" of each span path of PROFILE, and a last line "(total)
# 100 TOTAL".  The demo's one root is
# handle_request: a span under "(entered before attach)" is the rest of a
# request that was running as the probes went in, and counts as the path of
# the demo's tree it finishes (json is only ever inside parse_payload).
span_shares() {
	"$BIN_CLI" report --flat --top 1000 --format json "$1" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
marker = "(entered before attach)"
tree = ["handle_request;" + t for t in
	("parse_payload", "parse_payload;json", "validate_payload", "build_response")]
paths = {}
for s in r["spans"]:
	p = "(no_span)" if s["no_span"] else s["path"]
	if p == marker or p.startswith(marker + ";"):
		rest = p[len(marker):]
		full = [t for t in tree if (";" + t).endswith(rest)] if rest else []
		p = full[0] if len(full) == 1 else "handle_request" + rest
	q = paths.setdefault(p.replace(" ", "_"), [0.0, 0])
	q[0] += s["pct"]
	q[1] += s["bytes"]
for p, (pct, b) in paths.items():
	print(p, "%.2f" % pct, b)
print("(total) 100", r["total_bytes"])' | sort
}

# the total bytes of a span_shares list
total_of() {
	awk '$1 == "(total)" { print $3 }' "$1"
}

# Attaching to a service mid-request: span probes go live all at once, so no
# span is entered without its exit being seen (no overflow of the span
# stack, no dead span at the root of the tree), and every attach sees the
# tree of a capture started before the requests.  Rate R = 16 KiB, blocks
# far below it: a path of B bytes out of T has a standard error of
# sqrt(R B), so its share p = B / T one of 100 sqrt(R p / T) points; two
# profiles' shares may differ by 5 sigma, sqrt of the sum of both variances,
# which the bytes each profile holds decide, not the machine's speed (at
# ~150 MB/s, 2 s, about 3 points for the largest path).  Both variances
# from the share the two have if they agree, pooled by their bytes: a path
# absent from one profile (share 0, no variance of its own) is held to the
# same 5 sigma, which on a slow machine's few megabytes can allow it.  The
# "(no_span)" path is the demo's 1 MiB cache refills, one per 64 requests:
# blocks far above R, each seen whole, so a window holds a whole number of
# them and its share may be one block off the rate's (100 MiB / T points
# each: a 2 s window of a slow machine's 5.7 MB counted one refill, 18.8%
# against 7.7% before).
test_span_attach_midrun() {
	need_root || return
	# the reference: the probes go in while the service is stopped, once it has its libc
	start_program /dev/null "$OUTPUT/examples/demo_service" 300 || return
	svc=$prog_pid
	kill -STOP "$svc"
	attach_bg "$TMP/ref.err" --pid "$svc" -o "$TMP/ref.pb.gz" --rate 16KiB -d 6s || return
	kill -CONT "$svc"
	wait "$attach_pid" || { fail "reference attach: $(tail -2 "$TMP/ref.err")"; return; }
	span_shares "$TMP/ref.pb.gz" | cut -d' ' -f1,2,3 >"$TMP/ref.shares"
	t_ref=$(total_of "$TMP/ref.shares")
	grep -q '^handle_request;build_response ' "$TMP/ref.shares" ||
		fail "reference tree: $(tr '\n' ';' <"$TMP/ref.shares")"
	for i in $(seq 20); do
		"$BIN_BPF" attach --pid "$svc" -o "$TMP/mid.pb.gz" --rate 16KiB -d 2s 2>"$TMP/mid.err" ||
			{ fail "attach $i: $(tail -2 "$TMP/mid.err")"; return; }
		"$PROFDUMP" "$TMP/mid.pb.gz" | grep -q '^# comment span_overflow=0$' ||
			fail "attach $i: $("$PROFDUMP" "$TMP/mid.pb.gz" | grep span_overflow)"
		grep -q '^warning: .*span' "$TMP/mid.err" && fail "attach $i warned: $(grep span "$TMP/mid.err")"
		span_shares "$TMP/mid.pb.gz" >"$TMP/mid.shares"
		cut -d' ' -f1 "$TMP/mid.shares" | grep -v -e '^handle_request' -e '^(no' -e '^(total)' |
			while read -r root; do echo "attach $i: root $root"; done >"$TMP/mid.bad"
		# each path's bytes in both (0 where it has none), its shares in points
		join -a1 -a2 -e 0 -o 0,1.3,2.3 "$TMP/ref.shares" "$TMP/mid.shares" |
			awk -v i="$i" -v r=16384 -v t1="$t_ref" -v t2="$(total_of "$TMP/mid.shares")" '
			$1 == "(total)" { next }
			{ p = ($2 + $3) / (t1 + t2)
			  tol = 5 * 100 * sqrt(r * p * (1 / t1 + 1 / t2))
			  if ($1 == "(no_span)") tol += 100 * 1048576 * (1 / t1 + 1 / t2)
			  s1 = 100 * $2 / t1; s2 = 100 * $3 / t2
			  d = s1 - s2; if (d < 0) d = -d
			  if (d > tol) printf "attach %d: %s %.2f%% before, %.2f%% mid-run, over 5 sigma (%.2f)\n",
				i, $1, s1, s2, tol }' >>"$TMP/mid.bad"
		[ -s "$TMP/mid.bad" ] && { fail "$(head -3 "$TMP/mid.bad" | tr '\n' ';')"; return; }
	done
	kill "$svc"
}

# --max-stacks bounds distinct stacks, not requests: the demo has one span
# id per request but a handful of stacks, so with a bound above that count
# every stack is kept whole and only thread and span ids are dropped, with a
# warning; below it, stacks keep their leaf under [folded], with a warning.
# The totals are the same either way (go tool pprof reads them).
test_max_stacks() {
	need_root || return
	"$OUTPUT/examples/demo_service" 300 >/dev/null &
	svc=$!
	track "$svc"
	"$BIN_BPF" attach --pid "$svc" -o "$TMP/ms.pb.gz" --rate 64KiB -d 3s --max-stacks 16 \
		2>"$TMP/ms.err" || { fail "attach: $(tail -2 "$TMP/ms.err")"; return; }
	"$PROFDUMP" "$TMP/ms.pb.gz" | grep -v '^#' >"$TMP/ms.samples"
	n=$(cut -f2 "$TMP/ms.samples" | sort -u | wc -l)
	[ "$n" -gt 1 ] && [ "$n" -le 16 ] || fail "$n distinct stacks: the bound of 16 tests nothing"
	grep -q '\[unknown stack\]\|\[folded\]' "$TMP/ms.samples" &&
		fail "a stack was lost while $n distinct ones fit in 16: $(grep -m1 'unknown\|folded' "$TMP/ms.samples")"
	"$PROFDUMP" "$TMP/ms.pb.gz" | grep -q '^# comment aggregate_coarsened=[1-9]' ||
		fail "one span id per request did not fill 16 keys: $("$PROFDUMP" "$TMP/ms.pb.gz" | grep aggregate)"
	grep -q '^warning: [0-9]* samples lost their thread_id and span_id labels' "$TMP/ms.err" ||
		fail "coarsening not said: $(cat "$TMP/ms.err")"
	go_totals_agree "$TMP/ms.pb.gz"
	"$BIN_BPF" attach --pid "$svc" -o "$TMP/ms2.pb.gz" --rate 64KiB -d 3s --max-stacks 2 \
		2>"$TMP/ms2.err" || { fail "attach: $(tail -2 "$TMP/ms2.err")"; return; }
	"$PROFDUMP" "$TMP/ms2.pb.gz" | grep -v '^#' | grep -q '\[folded\]' ||
		fail "no stack cut to its leaf with --max-stacks 2"
	grep -q '^warning: [0-9]* samples kept only their leaf under \[folded\]' "$TMP/ms2.err" ||
		fail "folding not said: $(cat "$TMP/ms2.err")"
	"$PROFDUMP" "$TMP/ms2.pb.gz" | grep -q '^# comment aggregate_folded=[1-9]' ||
		fail "folding not counted in the profile"
	go_totals_agree "$TMP/ms2.pb.gz"
	kill "$svc"
}

# Span names on a page the program never touched: the kernel cannot read
# them at enter, culpert-bpf reads them from the process (or, once it is
# gone, from its file).  Exact at --rate 1; then again with the reader
# stopped until the target exited, so that only the file is left.
test_span_cold_names() {
	need_root || return
	profile_target span_cold 1 || return
	check_paths span_cold 0
	"$PROFDUMP" "$TMP/span_cold.pb.gz" | grep -q '^# comment span_names_late=3$' ||
		fail "not read late: $("$PROFDUMP" "$TMP/span_cold.pb.gz" | grep span_names)"
	start_target "$TMP/span_cold.out" "$TARGETS/span_cold" || return
	attach_bg "$TMP/span_cold.err" --pid "$target_pid" -o "$TMP/span_cold.pb.gz" --rate 1 || return
	kill -STOP "$attach_pid"
	kill -USR1 "$target_pid"
	wait "$target_pid"
	kill -CONT "$attach_pid"
	wait "$attach_pid" || { fail "attach: $(tail -2 "$TMP/span_cold.err")"; return; }
	check_paths span_cold 0
	"$PROFDUMP" "$TMP/span_cold.pb.gz" | grep -q '^# comment span_names_unresolved=0$' ||
		fail "unresolved after the exit: $("$PROFDUMP" "$TMP/span_cold.pb.gz" | grep span_names)"
}

# Spans entered and exited in a tight loop while culpert-bpf attaches
# (tests/targets/span_loop.c): a span whose exit came before the exit probe
# listened would stay open, and every later tick would nest under it.  With
# the exit probes attached before the enter probes none can; before that
# order, one attach in five or so showed tick;tick...  Four attaches.
test_span_attach_while_running() {
	need_root || return
	"$TARGETS/span_loop" >"$TMP/loop.out" &
	lp=$!
	track "$lp"
	wait_for "$TMP/loop.out" ready 5 || { fail "span_loop did not start"; return; }
	for i in 1 2 3 4; do
		"$BIN_BPF" attach --pid "$lp" -d 500ms --rate 64KiB -o "$TMP/loop$i.pb.gz" 2>"$TMP/loop.err" ||
			{ fail "attach failed: $(cat "$TMP/loop.err")"; return; }
		"$BIN_CLI" report "$TMP/loop$i.pb.gz" --flat >"$TMP/loop.flat"
		grep -q '^tick;tick' "$TMP/loop.flat" && { fail "a missed exit nested ticks: $(head -8 "$TMP/loop.flat")"; return; }
		grep -q '^tick  ' "$TMP/loop.flat" || { fail "no tick span: $(head -8 "$TMP/loop.flat")"; return; }
	done
}

run_test bpf/spans/ground_truth test_span_ground_truth
run_test bpf/spans/semicolon test_span_semicolon
run_test bpf/spans/cold_names test_span_cold_names
run_test bpf/spans/max_stacks test_max_stacks
run_test bpf/spans/attach_midrun test_span_attach_midrun
run_test bpf/spans/span_fn test_span_fn
run_test bpf/spans/span_fn_recursion test_span_fn_recursion
run_test bpf/spans/span_fn_refused test_span_fn_refused
run_test bpf/spans/labels test_span_labels
run_test bpf/spans/misuse test_span_misuse
run_test bpf/spans/cxx test_span_cxx
run_test bpf/spans/semaphores test_span_semaphores
run_test bpf/spans/attach_while_running test_span_attach_while_running
