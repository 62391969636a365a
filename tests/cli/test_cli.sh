#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert CLI: golden outputs of every mode on synthetic profiles written by
# our own writer (tests/cli/data/*.spec -> mkprof), the diff classification
# boundaries, errors on bad input, and profiles written by other tools.
#   UPDATE_GOLDEN=1 sh tests/cli/test_cli.sh    rewrite tests/cli/golden/ (review the diff!)
. tests/lib.sh

MKPROF=$OUTPUT/tests/tools/mkprof
DATA=tests/cli/data
GOLDEN=tests/cli/golden

# profiles of the specs, by spec name, in the current directory (golden outputs name them)
cd "$TMP" || exit 1
OLDPWD_ROOT=$OLDPWD
for s in "$OLDPWD_ROOT"/$DATA/*.spec; do
	"$OLDPWD_ROOT/$MKPROF" -o "$(basename "$s" .spec).pb.gz" "$s" || echo "FAIL mkprof: $s"
done
C="$OLDPWD_ROOT/$BIN_CLI"

# golden NAME EXIT ARGS...: stdout equals golden/NAME.out, exit status EXIT, stderr empty
golden() {
	_name=$1 _want=$2
	shift 2
	"$C" "$@" >"$_name.out" 2>"$_name.err"
	_rc=$?
	[ "$_rc" = "$_want" ] || { fail "culpert $*: exit $_rc, want $_want: $(head -c 300 "$_name.err")"; return; }
	[ -s "$_name.err" ] && { fail "culpert $*: unexpected stderr: $(head -c 300 "$_name.err")"; return; }
	if [ -n "${UPDATE_GOLDEN:-}" ]; then
		cp "$_name.out" "$OLDPWD_ROOT/$GOLDEN/$_name.out"
		return
	fi
	diff -u "$OLDPWD_ROOT/$GOLDEN/$_name.out" "$_name.out" >"$_name.diff" ||
		fail "culpert $* differs from $GOLDEN/$_name.out: $(head -c 600 "$_name.diff")"
}

# one_error ARGS...: exit 2, nothing on stdout, one line on stderr starting "error: "
one_error() {
	"$C" "$@" >err.out 2>err.err
	_rc=$?
	[ "$_rc" = 2 ] || { fail "culpert $*: exit $_rc, want 2"; return 1; }
	[ "$(wc -l <err.err)" = 1 ] || { fail "culpert $*: want one stderr line, got: $(cat err.err)"; return 1; }
	grep -q '^error: ' err.err || { fail "culpert $*: stderr is not 'error: ...': $(cat err.err)"; return 1; }
	[ -s err.out ] && { fail "culpert $*: wrote to stdout on error"; return 1; }
	return 0
}

# --- report ----------------------------------------------------------------------

test_report_tree() {
	golden report_tree 0 report basic.pb.gz
	golden report_tree_top1 0 report basic.pb.gz --top 1
	golden report_tree_ids 0 report ids.pb.gz
	golden report_tree_json 0 report basic.pb.gz --format json
}

# --by-process: the pid and comm labels of attach --children; a profile without is its target's
test_report_by_process() {
	golden report_by_process 0 report procs.pb.gz --by-process
	golden report_by_process_json 0 report procs.pb.gz --by-process --top 2 --format json
	golden report_by_process_nolabels 0 report basic.pb.gz --by-process
	one_error report procs.pb.gz --by-process --flat
}

test_report_flat() {
	golden report_flat 0 report basic.pb.gz --flat
	golden report_flat_json 0 report basic.pb.gz --flat --top 2 --format json
}

test_report_callsites() {
	golden report_span 0 report basic.pb.gz --span handle_request
	golden report_span_path 0 report basic.pb.gz --span 'handle_request;parse'
	golden report_no_span 0 report basic.pb.gz --no-span
	golden report_span_json 0 report basic.pb.gz --span handle_request --format json
}

test_report_inuse() {
	golden report_inuse 0 report inuse.pb.gz --inuse
	golden report_leaks 0 report inuse.pb.gz --leaks
	golden report_leaks_age 0 report inuse.pb.gz --leaks --min-age 30s
	golden report_leaks_json 0 report inuse.pb.gz --leaks --min-age 30s --format json
	golden flame_inuse 0 flamegraph inuse.pb.gz --inuse
	one_error report basic.pb.gz --inuse && grep -q 'no in-use data' err.err ||
		fail "--inuse without in-use data: $(cat err.err)"
	one_error report basic.pb.gz --leaks && grep -q 'no in-use data' err.err ||
		fail "--leaks without in-use data: $(cat err.err)"
}

# every JSON output parses, has sorted keys at every level; diff JSON validates against its schema
test_json_contract() {
	for f in report_tree_json report_flat_json report_span_json report_leaks_json diff_json \
		report_wrappers_json report_before_attach_json; do
		[ -f "$f.out" ] || { fail "$f.out missing: its golden test did not run"; continue; }
		/usr/bin/python3 - "$f.out" <<-'EOF' || fail "$f: keys not sorted or not JSON"
		import json, sys
		def check(pairs):
		    keys = [k for k, _ in pairs]
		    assert keys == sorted(keys), keys
		    return dict(pairs)
		json.load(open(sys.argv[1]), object_pairs_hook=check)
		EOF
	done
	"$C" diff base.pb.gz new.pb.gz --format json --no-fail >diff_all.json
	"$C" diff base.pb.gz new.pb.gz --format json --by name --min-confidence 3sigma --no-fail >diff_named.json
	"$C" diff wrappers.pb.gz wrappers_after.pb.gz --by callsite --skip proj_alloc --format json >diff_callsite.json
	for f in diff_json.out diff_all.json diff_named.json diff_callsite.json; do
		/usr/bin/python3 - "$OLDPWD_ROOT/docs/diff-schema.json" "$f" <<-'EOF' || fail "$f does not validate against docs/diff-schema.json"
		import json, sys, jsonschema
		schema = json.load(open(sys.argv[1]))
		jsonschema.Draft202012Validator.check_schema(schema)
		jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))
		EOF
	done
	# the schema is not vacuous: a row of an unknown kind must fail it
	sed 's/"kind": "regression"/"kind": "worse"/' diff_json.out >bad.json
	/usr/bin/python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' \
		"$OLDPWD_ROOT/docs/diff-schema.json" bad.json 2>/dev/null && fail "the schema accepts kind 'worse'"
}

# callsites behind wrappers: the default list (zmalloc, vector growth) and --skip for a
# project's own; the frames looked through are named; long C++ names shortened in the
# table (no row past 120 columns off a terminal), whole in JSON and with --wide
test_report_wrappers() {
	golden report_wrappers 0 report wrappers.pb.gz --no-span
	# no span labels: the one-row tree says where the callsites are
	golden report_nospan_hint 0 report wrappers.pb.gz
	golden report_wrappers_flat 0 report wrappers.pb.gz --flat
	golden report_wrappers_skip 0 report wrappers.pb.gz --no-span --skip proj_alloc
	golden report_wrappers_wide 0 report wrappers.pb.gz --no-span --wide
	golden report_wrappers_json 0 report wrappers.pb.gz --no-span --format json
	# the name column: what is left of a row without its four numbers (columns, not bytes)
	/usr/bin/python3 - report_wrappers.out report_wrappers_skip.out <<-'EOF' || fail "a name is wider than 120 columns"
	import re, sys
	for f in sys.argv[1:]:
	    for line in open(f, encoding="utf-8"):
	        m = re.match(r"(.*?) +\d+ +\d+ +[\d.]+ (?:[KMGTPE]iB|B) +[\d.]+% +[\d.]+%$", line.rstrip("\n"))
	        assert not m or len(m.group(1)) <= 120, (f, line)
	EOF
	awk 'length($0) > 200 { found = 1 } END { exit !found }' report_wrappers_wide.out ||
		fail "--wide does not keep the long names"
	# a hashtable's node insertion is a wrapper: named, shortened, in the line of wrappers
	grep -q '^callsites skip wrappers: .*std::_Hashtable<…>::_M_insert_unique_node(…) (1.98%)' \
		report_wrappers.out || fail "the hashtable wrapper is not shortened"
	/usr/bin/python3 - report_wrappers_json.out <<-'EOF' || fail "JSON does not keep the full names"
	import json, sys
	r = json.load(open(sys.argv[1]))
	names = [w["name"] for w in r["wrappers"]]
	assert any(n.startswith("std::_Hashtable<std::__cxx11::basic_string<char") and len(n) > 1000 for n in names), names
	assert [w["name"] for w in r["wrappers"]][:1] == ["zmalloc"], r["wrappers"]
	EOF
	# on a terminal, the row fits the terminal
	script -qec "stty cols 80; $C report wrappers.pb.gz --no-span" /dev/null >tty.out </dev/null ||
		{ fail "report under script failed"; return; }
	tr -d '\r' <tty.out >tty.txt
	/usr/bin/python3 -c 'import sys; sys.exit(any(len(l.rstrip("\n")) > 80 for l in open(sys.argv[1], encoding="utf-8")))' tty.txt ||
		fail "rows wider than an 80-column terminal: $(head -c 600 tty.txt)"
	grep -q '^dictAdd (dict.c:330) ' tty.txt || fail "no table on the terminal: $(head -c 300 tty.txt)"
	# the flame graph keeps every frame unless told: the wrapper is in the folded stacks
	golden flame_wrappers 0 flamegraph wrappers.pb.gz
	grep -q ';dictAdd;zmalloc;ztrymalloc_usable ' flame_wrappers.out || fail "zmalloc frame missing"
	golden flame_wrappers_skip 0 flamegraph wrappers.pb.gz --skip 'ztry*' --skip zmalloc
	grep -q ';dictAdd 62914560$' flame_wrappers_skip.out ||
		fail "--skip did not give zmalloc's bytes to dictAdd: $(cat flame_wrappers_skip.out)"
}

# children of a span entered before attach: under "(entered before attach)", not roots;
# a recursive span stays a root
test_report_before_attach() {
	golden report_before_attach 0 report before_attach.pb.gz
	golden report_before_attach_flat 0 report before_attach.pb.gz --flat
	golden report_before_attach_json 0 report before_attach.pb.gz --format json
	grep -q '^(entered before attach)  ' report_before_attach.out &&
		grep -q '^  build_response  .*(3.00 MiB)$' report_before_attach.out &&
		grep -q '^walk  ' report_before_attach.out ||
		fail "no before-attach marker over build_response: $(cat report_before_attach.out)"
	"$C" report before_attach.pb.gz --span build_response >ba_span.out &&
		grep -q '^span build_response: 35.00 MiB' ba_span.out ||
		fail "--span by name no longer finds both: $(cat ba_span.out)"
	# the flame graph groups alike
	"$C" flamegraph before_attach.pb.gz >ba.folded
	grep -q '^(entered before attach);build_response;main;render 3145728$' ba.folded &&
		! grep -q '^build_response;' ba.folded ||
		fail "the flame graph does not group under the marker: $(cat ba.folded)"
}

# diff --tree of two captures that began mid-request: the merged tree has the marker over
# build_response, as each side's tree does (the marker is the last span made, after the
# spans it holds: merging takes parents first by depth, not by index)
test_diff_tree_before_attach() {
	sed 's/^sample 2 2MiB \(.*\)sampled_allocs=#2$/sample 9 9MiB \1sampled_allocs=#9/' \
		"$OLDPWD_ROOT/$DATA/before_attach.spec" >ba_after.spec
	"$OLDPWD_ROOT/$MKPROF" -o ba_after.pb.gz ba_after.spec
	# how much ran before the attach is the attach's doing: no regression
	golden diff_tree_before_attach 0 diff before_attach.pb.gz ba_after.pb.gz --tree
	awk '/^\(entered before attach\) / { m = NR } /^  build_response .*12.00 MiB/ { b = NR }
	     /^    json .*9.00 MiB/ { j = NR } END { exit !(m && b == m + 1 && j == b + 1) }' \
		diff_tree_before_attach.out ||
		fail "build_response (and json) not under the marker: $(cat diff_tree_before_attach.out)"
	"$C" diff before_attach.pb.gz ba_after.pb.gz --format json >ba_diff.json
	grep -q '"key": "(entered before attach);build_response;json"' ba_diff.json ||
		fail "the json row's key is not under the marker: $(grep '"key"' ba_diff.json)"
	/usr/bin/python3 - ba_diff.json <<-'EOF' || fail "the marker's rows are not quiet (above)"
	import json, sys
	rows = {r["key"]: r for r in json.load(open(sys.argv[1]))["rows"]}
	r = rows["(entered before attach);build_response;json"]
	assert r["kind"] == "quiet" and r["quiet_reason"] == "before_attach", r
	EOF
	# a profile that saw no whole request shows build_response as a root: the other one's
	# nesting puts it under the marker too, so it is no new span (the requests it did
	# not see are gone, which fails nothing)
	grep -v 'span_path=handle_request' "$OLDPWD_ROOT/$DATA/before_attach.spec" |
		sed 's/^sample 3 3MiB \(.*\)sampled_allocs=#3$/sample 30 30MiB \1sampled_allocs=#30/' >ba_alone.spec
	"$OLDPWD_ROOT/$MKPROF" -o ba_alone.pb.gz ba_alone.spec
	for pair in "before_attach ba_alone"; do
		set -- $pair
		"$C" diff "$1.pb.gz" "$2.pb.gz" >ba_pair.out 2>&1 ||
			fail "diff $1 $2 failed (exit $?): $(cat ba_pair.out)"
		"$C" diff "$1.pb.gz" "$2.pb.gz" --format json >ba_pair.json
		grep -q '"key": "(entered before attach);build_response"' ba_pair.json ||
			fail "diff $1 $2: build_response not under the marker: $(grep '"key"' ba_pair.json)"
		grep -q '"key": "build_response"' ba_pair.json &&
			fail "diff $1 $2: build_response still a root: $(grep '"key"' ba_pair.json)"
	done
}

# diff --by callsite: what --skip looks through changes what is matched
test_diff_callsites() {
	sed 's/^sample 16 8MiB \(stack=proj_alloc.*\)sampled_allocs=#16$/sample 48 24MiB \1sampled_allocs=#48/' \
		"$OLDPWD_ROOT/$DATA/wrappers.spec" >wrappers_after.spec
	"$OLDPWD_ROOT/$MKPROF" -o wrappers_after.pb.gz wrappers_after.spec
	golden diff_callsite 1 diff wrappers.pb.gz wrappers_after.pb.gz --by callsite
	golden diff_callsite_skip 1 diff wrappers.pb.gz wrappers_after.pb.gz --by callsite --skip proj_alloc
	grep -q '^regression  proj_alloc (proj.c:12) ' diff_callsite.out ||
		fail "without --skip the wrapper is the row"
	grep -q '^regression  load_users (users.c:40) ' diff_callsite_skip.out ||
		fail "with --skip proj_alloc, load_users is the row"
	one_error diff wrappers.pb.gz wrappers_after.pb.gz --by callsite --tree
}

# span ids per instance (one per request), linked by span_parent_id only: one tree by name
test_report_span_instances() {
	awk 'BEGIN { print "rate 1"
		for (i = 1; i <= 2000; i++) {
			printf "sample 1 100 stack=handler@h.c:1 span_name=request span_id=#%d\n", i
			printf "sample 1 50 stack=db@d.c:1 span_name=query span_id=#%d span_parent_id=#%d\n", 100000 + i, i
		} }' | "$OLDPWD_ROOT/$MKPROF" -o inst.pb.gz
	"$C" report inst.pb.gz --format json >inst.json || { fail "report failed"; return; }
	/usr/bin/python3 - inst.json <<-'EOF' || fail "2000 instances do not make request 300000 B > query 100000 B"
	import json, sys
	r = json.load(open(sys.argv[1]))
	assert len(r["spans"]) == 1, r["spans"]
	req = r["spans"][0]
	assert (req["name"], req["bytes"], req["self_bytes"]) == ("request", 300000, 200000), req
	q = req["children"]
	assert len(q) == 1 and (q[0]["path"], q[0]["bytes"]) == ("request;query", 100000), q
	EOF
}

# --- diff ------------------------------------------------------------------------

# a one-span profile of N MiB (N may be fractional)
span_prof() {
	_b=$(awk -v m="$2" 'BEGIN { printf "%.0f", m * 1048576 }')
	if [ "$_b" = 0 ]; then
		printf 'sample 1 1MiB stack=other@o.c:1 span_path=other\n' | "$OLDPWD_ROOT/$MKPROF" -o "$1"
	else
		printf 'sample 1 %s stack=work@w.c:1 span_path=work\nsample 1 1MiB stack=other@o.c:1 span_path=other\n' \
			"$_b" | "$OLDPWD_ROOT/$MKPROF" -o "$1"
	fi
}

# diff's boundary table (docs/cli.md), --min-span-bytes 20MiB: before after kind exit [options]
test_diff_boundaries() {
	while read -r before after kind want opts; do
		span_prof b.pb.gz "$before"
		span_prof a.pb.gz "$after"
		# shellcheck disable=SC2086
		"$C" diff b.pb.gz a.pb.gz --min-span-bytes 20MiB $opts --format json >d.json
		rc=$?
		got=$(/usr/bin/python3 -c 'import json,sys; print([r["kind"] for r in json.load(open(sys.argv[1]))["rows"] if r["key"] == "work"][0])' d.json)
		[ "$got" = "$kind" ] || fail "$before -> $after MiB $opts: kind $got, want $kind"
		[ "$rc" = "$want" ] || fail "$before -> $after MiB $opts: exit $rc, want $want"
	done <<-EOF
	19 19.5 quiet 0
	19 20 regression 1
	20 19 improvement 0
	0 19 quiet 0
	0 20 new 1
	20 0 gone 0
	30 31 quiet 0
	19 20 quiet 0 --threshold-bytes 2MiB
	EOF
}

test_diff_env() {
	span_prof b.pb.gz 19
	span_prof a.pb.gz 20
	CULPERT_MIN_SPAN_BYTES=21MiB "$C" diff b.pb.gz a.pb.gz >/dev/null ||
		fail "env CULPERT_MIN_SPAN_BYTES=21MiB should make 19 -> 20 MiB quiet (exit 0)"
	CULPERT_MIN_SPAN_BYTES=21MiB "$C" diff b.pb.gz a.pb.gz --min-span-bytes 0 >/dev/null
	[ $? = 1 ] || fail "an explicit --min-span-bytes 0 must win over the environment"
	CULPERT_MIN_SPAN_BYTES=lots one_error diff b.pb.gz a.pb.gz
	"$C" diff b.pb.gz a.pb.gz --no-fail >/dev/null || fail "--no-fail must exit 0 on a regression"
}

test_diff_outputs() {
	sed -e 's/40 40MiB/44 44MiB/' -e '/stack=load_config/d' -e '/span_path=gc/d' \
		"$OLDPWD_ROOT/$DATA/basic.spec" >new.spec
	echo 'sample 6 6MiB stack=cache_fill@cache.c:9;main@main.c:5 span_path=handle_request;cache' >>new.spec
	cp basic.pb.gz base.pb.gz
	"$OLDPWD_ROOT/$MKPROF" -o new.pb.gz new.spec
	golden diff_text 1 diff base.pb.gz new.pb.gz
	golden diff_markdown 1 diff base.pb.gz new.pb.gz --format markdown
	golden diff_json 1 diff base.pb.gz new.pb.gz --format json
	golden diff_tree 1 diff base.pb.gz new.pb.gz --tree
	golden diff_tree_markdown 1 diff base.pb.gz new.pb.gz --tree --format markdown
	golden diff_by_name 1 diff base.pb.gz new.pb.gz --by name --top 1
	golden diff_same 0 diff base.pb.gz base.pb.gz
	# --tree does not change JSON (docs/cli.md)
	golden diff_json 1 diff base.pb.gz new.pb.gz --format json --tree
	# --inuse: live bytes, serve 18 -> 21 MiB (session_new 6 -> 9 MiB)
	sed 's/^sample 6 6MiB 6 6MiB stack=session_new/sample 9 9MiB 9 9MiB stack=session_new/' \
		"$OLDPWD_ROOT/$DATA/inuse.spec" >inuse2.spec
	"$OLDPWD_ROOT/$MKPROF" -o inuse2.pb.gz inuse2.spec
	golden diff_inuse 1 diff inuse.pb.gz inuse2.pb.gz --inuse
}

# exact span totals (exact_*.spec): report shows them beside the estimate; diff compares
# them, so a 1% change sampling cannot resolve (standard error 5% of the span) is a
# regression, while the same profiles' sampled rows (--by name) call it noise; a p99 per
# instance that grew is one too with --threshold-p99-pct
test_exact_totals() {
	golden report_exact_before_attach 0 report exact_before_attach.pb.gz
	awk '/^Exact/ { e = 1 } e && /^\(entered before attach\) +2\.00 Mi?B +2\.00 Mi?B / { m = NR }
	     e && /^  build_response +2\.00 Mi?B / { b = NR } END { exit !(m && b == m + 1) }' \
		report_exact_before_attach.out ||
		fail "exact rows not under the marker: $(cat report_exact_before_attach.out)"
	"$C" report exact_before_attach.pb.gz --format json >eba.json
	/usr/bin/python3 - eba.json <<-'EOF' || fail "exact JSON paths not under the marker (above)"
	import json, sys
	r = json.load(open(sys.argv[1]))
	paths = [s["path"] for s in r["exact"]["spans"]]
	assert "(entered before attach);build_response;json" in paths, paths
	assert "build_response" not in paths, paths
	m = [s for s in r["spans"] if s["name"] == "(entered before attach)"][0]
	assert m["exact"]["bytes"] == 2097152, m
	EOF
	# the same program attached between requests: no span is new, either way
	grep -v 'span_path=build_response\|span.total.build_response' \
		"$OLDPWD_ROOT/$DATA/exact_before_attach.spec" >eba_clean.spec
	"$OLDPWD_ROOT/$MKPROF" -o eba_clean.pb.gz eba_clean.spec
	"$C" diff eba_clean.pb.gz exact_before_attach.pb.gz >eba_diff.out ||
		fail "a span entered before attach made the exact diff fail: $(cat eba_diff.out)"
	"$C" diff exact_before_attach.pb.gz eba_clean.pb.gz >eba_diff.out ||
		fail "a span entered before attach made the exact diff fail: $(cat eba_diff.out)"
	golden report_exact 0 report exact_base.pb.gz
	golden report_exact_json 0 report exact_base.pb.gz --format json
	golden diff_exact 1 diff exact_base.pb.gz exact_1pct.pb.gz --threshold-pct 0.5 \
		--min-confidence 3sigma
	golden diff_exact_sampled 0 diff exact_base.pb.gz exact_1pct.pb.gz --threshold-pct 0.5 \
		--min-confidence 3sigma --by name
	golden diff_exact_p99 1 diff exact_base.pb.gz exact_1pct.pb.gz --threshold-p99-pct 10 \
		--format markdown
	golden diff_exact_json 1 diff exact_base.pb.gz exact_1pct.pb.gz --threshold-p99-pct 10 \
		--format json
	/usr/bin/python3 - "$OLDPWD_ROOT/docs/diff-schema.json" diff_exact_json.out <<-'EOF' ||
	import json, sys, jsonschema
	jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(json.load(open(sys.argv[2])))
	EOF
		fail "diff_exact_json.out does not validate against docs/diff-schema.json"
	# without the p99 threshold parse's bytes did not move: quiet
	"$C" diff exact_base.pb.gz exact_1pct.pb.gz --format json >p99off.json
	/usr/bin/python3 -c 'import json,sys
r = [r for r in json.load(open(sys.argv[1]))["rows"] if r["key"] == "handle_request;parse"][0]
sys.exit(not (r["kind"] == "quiet" and r["p99_pct"] > 10 and not r["p99_regressed"]))' p99off.json ||
		fail "parse without --threshold-p99-pct: $(cat p99off.json)"
	# a profile with totals against one without: sampled rows, as before
	grep -v '^comment span\.' "$OLDPWD_ROOT/$DATA/exact_1pct.spec" >noexact.spec
	"$OLDPWD_ROOT/$MKPROF" -o noexact.pb.gz noexact.spec
	"$C" diff exact_base.pb.gz noexact.pb.gz --format json --no-fail >mixed.json
	grep -q '"exact": true' mixed.json && fail "rows called exact with one profile without totals"
	# a malformed totals comment: one error line, exit 2
	sed 's/^comment span.total.handle_request=.*/comment span.total.handle_request=1,2,x/' \
		"$OLDPWD_ROOT/$DATA/exact_base.spec" >bad_exact.spec
	"$OLDPWD_ROOT/$MKPROF" -o bad_exact.pb.gz bad_exact.spec
	one_error report bad_exact.pb.gz
}

# markdown renders as intended: a heading, bullets, and tables whose rows all have the header's cells
test_diff_markdown_structure() {
	/usr/bin/python3 - diff_markdown.out <<-'EOF' || fail "markdown structure: see above"
	import re, sys
	lines = open(sys.argv[1]).read().split("\n")
	assert lines[0].startswith("## "), "first line is a level-2 heading"
	for b in ("**Before:**", "**After:**", "**Net Δ:**"):
	    assert any(l.startswith("- " + b) for l in lines), b
	heads = [i for i, l in enumerate(lines) if l in ("### Regressions", "### Improvements")]
	assert len(heads) == 2, heads
	for h in heads:
	    t = lines[h + 2:]
	    t = t[:next(i for i, l in enumerate(t) if not l.startswith("|"))]
	    cells = lambda l: len(re.split(r"(?<!\\)\|", l)) - 2
	    assert len(t) >= 3, t
	    assert re.fullmatch(r"\|(:?-+:?\|)+", t[1]), t[1]
	    assert all(cells(l) == cells(t[0]) for l in t), t
	assert "_new_" in open(sys.argv[1]).read() and "_gone_" in open(sys.argv[1]).read()
	assert lines[-2].startswith("_") and "suppressed" in lines[-2], lines[-2]
	EOF
}

# a '|' in a span name is escaped in every markdown table, the span tree's included
test_diff_markdown_pipes() {
	printf 'sample 1 10MiB stack=f span_path=a|b;c\n' | "$OLDPWD_ROOT/$MKPROF" -o p1.pb.gz
	printf 'sample 1 20MiB stack=f span_path=a|b;c\n' | "$OLDPWD_ROOT/$MKPROF" -o p2.pb.gz
	for opt in "" --tree; do
		# shellcheck disable=SC2086
		"$C" diff p1.pb.gz p2.pb.gz --format markdown $opt >pipes.md
		/usr/bin/python3 - pipes.md <<-'EOF' || fail "diff $opt --format markdown: a '|' breaks a table"
		import re, sys
		rows = [l for l in open(sys.argv[1]).read().split("\n") if l.startswith("|")]
		cells = lambda l: len(re.split(r"(?<!\\)\|", l)) - 2
		assert rows and all(cells(l) == cells(rows[0]) for l in rows), rows
		assert any("a\\|b" in l for l in rows), rows
		EOF
	done
}

test_diff_noise() {
	# 100 -> 106 MiB at a 512 KiB rate: delta 6 MiB, sigma = sqrt(524288 B * 206 MiB) = 10.15 MiB, z = 0.59
	span_prof b.pb.gz 100
	span_prof a.pb.gz 106
	"$C" diff b.pb.gz a.pb.gz >/dev/null
	[ $? = 1 ] || fail "6% growth is a regression without --min-confidence"
	"$C" diff b.pb.gz a.pb.gz --min-confidence 0.5 >/dev/null
	[ $? = 1 ] || fail "0.6 sigma is above --min-confidence 0.5"
	"$C" diff b.pb.gz a.pb.gz --min-confidence 1sigma --format json >d.json
	[ $? = 0 ] || fail "0.6 sigma is within --min-confidence 1sigma: quiet"
	grep -q '"quiet_reason": "noise"' d.json || fail "the quiet row does not say noise"
}

test_diff_rates() {
	printf 'rate 65536\nsample 1 1MiB stack=f span_path=a\n' | "$OLDPWD_ROOT/$MKPROF" -o r1.pb.gz
	printf 'rate 524288\nsample 1 1MiB stack=f span_path=a\n' | "$OLDPWD_ROOT/$MKPROF" -o r2.pb.gz
	one_error diff r1.pb.gz r2.pb.gz && grep -q 'sample rates differ' err.err ||
		fail "different rates: $(cat err.err)"
}

# --- info and flamegraph ------------------------------------------------------------

test_info() {
	golden info_basic 0 info basic.pb.gz
	golden info_inuse 0 info inuse.pb.gz
	grep -q '^  mem.rss_bytes=104857600$' info_basic.out || fail "info does not print mem.* comments"
}

test_flamegraph() {
	golden flame_folded 0 flamegraph basic.pb.gz
	golden flame_span 0 flamegraph basic.pb.gz --span parse
	"$C" flamegraph basic.pb.gz --format svg -o fg.svg || { fail "svg: exit $?"; return; }
	xmllint --noout fg.svg || fail "the SVG is not well-formed XML"
	# every folded stack is a frame of the SVG, with its bytes
	grep -q '<title>parse_header (40.00 MiB, 40.00%)</title>' fg.svg || fail "svg lacks parse_header"
	grep -q 'http://www.w3.org/2000/svg' fg.svg && ! grep -q 'src=\|href=' fg.svg ||
		fail "the SVG is not self-contained"
	# the folded weights add up to the report's total
	total=$(awk '{ s += $NF } END { printf "%.0f", s }' flame_folded.out)
	[ "$total" = 104857600 ] || fail "folded weights sum to $total, want 104857600"
}

# --- usage and bad input ------------------------------------------------------------

test_help() {
	for cmd in report diff info flamegraph; do
		"$C" "$cmd" --help >h.out 2>&1 || fail "$cmd --help: exit $?"
		grep -q '^Usage: culpert' h.out && grep -q '^EXAMPLES:' h.out ||
			fail "$cmd --help lacks Usage or EXAMPLES"
	done
	"$C" --help | grep -q '^  flamegraph' || fail "culpert --help does not list the commands"
}

test_bad_usage() {
	one_error
	one_error frobnicate
	one_error report
	one_error report basic.pb.gz --bogus
	one_error report basic.pb.gz --top
	one_error report basic.pb.gz --top many
	one_error report basic.pb.gz --format xml
	one_error report basic.pb.gz --span a --no-span
	one_error report basic.pb.gz --flat --span a
	one_error report basic.pb.gz --min-age 30s
	one_error report inuse.pb.gz --leaks --min-age soon
	one_error report basic.pb.gz --span nosuchspan && grep -q "no span named 'nosuchspan'" err.err ||
		fail "unknown span: $(cat err.err)"
	one_error diff basic.pb.gz
	one_error diff basic.pb.gz basic.pb.gz --threshold-bytes 4q
	one_error diff basic.pb.gz basic.pb.gz --threshold-pct -5
	one_error diff basic.pb.gz basic.pb.gz --by color
	one_error diff - - <basic.pb.gz
	one_error info
	one_error flamegraph basic.pb.gz --format png
	one_error flamegraph basic.pb.gz --span nosuchspan
	one_error flamegraph basic.pb.gz -o /nonexistent/dir/fg.svg
}

test_bad_input() {
	: >empty.pb.gz
	head -c 100 /dev/urandom | sed 's/^\x1f//' >random.bin
	gzip -dc basic.pb.gz >plain.pb
	printf 'not a profile\n' | gzip >text.pb.gz
	head -c $(($(wc -c <basic.pb.gz) / 2)) basic.pb.gz >truncated.pb.gz
	# flip a byte in the middle of the deflate data: the CRC or the stream breaks
	cp basic.pb.gz flipped.pb.gz
	printf '\377' | dd of=flipped.pb.gz bs=1 seek=200 conv=notrunc 2>/dev/null
	{ cat basic.pb.gz; printf 'trailing junk'; } >junk.pb.gz
	# a string table entry claiming 1 GiB: field 6, length varint 0x80 0x80 0x80 0x80 0x04
	printf '\062\200\200\200\200\004abc' | gzip >hugestr.pb.gz
	# a profile without the leading "" string
	printf '\062\001x' | gzip >nostr.pb.gz
	for f in missing.pb.gz "$TMP" empty.pb.gz random.bin plain.pb text.pb.gz truncated.pb.gz \
		flipped.pb.gz junk.pb.gz hugestr.pb.gz nostr.pb.gz; do
		for cmd in report info flamegraph; do
			one_error $cmd "$f" || break
		done
		one_error diff basic.pb.gz "$f"
	done
	one_error report plain.pb && grep -q 'uncompressed pprof' err.err || fail "plain protobuf: $(cat err.err)"
	one_error report truncated.pb.gz && grep -q 'truncated' err.err || fail "truncated: $(cat err.err)"
	one_error report empty.pb.gz && grep -q 'empty' err.err || fail "empty: $(cat err.err)"
	one_error report random.bin && grep -q 'not gzip' err.err || fail "random: $(cat err.err)"
	"$C" report - <basic.pb.gz >stdin.out || fail "report - (stdin) failed"
}

# --- other tools' profiles -------------------------------------------------------------

# go tool pprof rewrites ours (-proto: renumbered ids, its own string table): same report
test_go_rewritten() {
	go tool pprof -proto basic.pb.gz >go.pb.gz 2>go.err || { fail "go tool pprof -proto: $(head -c 300 go.err)"; return; }
	"$C" report go.pb.gz | tail -n +2 >go.report && "$C" report basic.pb.gz | tail -n +2 >our.report ||
		{ fail "report of go's rewrite failed"; return; }
	diff -u our.report go.report >go.diff || fail "go's rewrite reports differently: $(head -c 500 go.diff)"
	# go simplifies C++ names (no template arguments): the wrappers line names them its way
	"$C" report go.pb.gz --span handle_request | tail -n +2 | grep -v '^callsites skip wrappers:' >go.span
	"$C" report basic.pb.gz --span handle_request | tail -n +2 | grep -v '^callsites skip wrappers:' >our.span
	cmp -s go.span our.span || fail "go's rewrite: --span callsites differ"
	# and go reads ours with the same total
	go tool pprof -sample_index=alloc_space -top basic.pb.gz 2>/dev/null | grep -q 'of 100MB total' ||
		fail "go tool pprof -top does not see 100MB in ours"
}

# a Go heap profile (runtime/pprof): allocator frames are Go's runtime, values exact at rate 1
test_go_heap_profile() {
	mkdir -p goheap
	cat >goheap/main.go <<-'EOF'
	package main

	import (
		"os"
		"runtime"
		"runtime/pprof"
	)

	var sink [][]byte

	//go:noinline
	func allocBlocks() {
		for i := 0; i < 100; i++ {
			sink = append(sink, make([]byte, 65536))
		}
	}

	func main() {
		runtime.MemProfileRate = 1
		sink = make([][]byte, 0, 100)
		allocBlocks()
		runtime.GC()
		f, _ := os.Create(os.Args[1])
		pprof.WriteHeapProfile(f)
		f.Close()
	}
	EOF
	(cd goheap && printf 'module goheap\n\ngo 1.19\n' >go.mod &&
		GOPATH=$TMP/gopath GOFLAGS=-mod=mod go build -o goheap . 2>../gobuild.err) ||
		{ fail "go build: $(head -c 300 gobuild.err)"; return; }
	./goheap/goheap goheap.pb.gz || { fail "the Go program failed"; return; }
	"$C" report goheap.pb.gz --no-span --format json >goheap.json || { fail "report of a Go heap profile failed"; return; }
	/usr/bin/python3 - goheap.json <<-'EOF' || fail "Go heap profile: allocBlocks is not the top callsite with 100 x 64 KiB"
	import json, sys
	r = json.load(open(sys.argv[1]))
	top = r["callsites"][0]
	assert top["callsite"].startswith("main.allocBlocks ("), top
	# 100 blocks of 64 KiB, exact at MemProfileRate 1; the Go runtime now and then
	# allocates a small object of its own while allocBlocks runs (seen: one of 96 B),
	# which is allocBlocks' too: allow those, never a 101st block
	assert 100 * 65536 <= top["bytes"] < 101 * 65536, top
	assert 100 <= top["objects"] <= 102, top
	EOF
	"$C" report goheap.pb.gz --inuse --no-span | grep -q '^main.allocBlocks (.*  6.25 MiB ' ||
		fail "Go heap profile: in-use of allocBlocks is not 6.25 MiB"
}

run_test cli/report_tree test_report_tree
run_test cli/report_by_process test_report_by_process
run_test cli/report_flat test_report_flat
run_test cli/report_callsites test_report_callsites
run_test cli/report_inuse_leaks test_report_inuse
run_test cli/report_span_instances test_report_span_instances
run_test cli/report_wrappers test_report_wrappers
run_test cli/report_before_attach test_report_before_attach
run_test cli/diff_callsites test_diff_callsites
run_test cli/diff_tree_before_attach test_diff_tree_before_attach
run_test cli/diff_boundaries test_diff_boundaries
run_test cli/diff_env test_diff_env
run_test cli/diff_outputs test_diff_outputs
run_test cli/diff_markdown_structure test_diff_markdown_structure
run_test cli/diff_markdown_pipes test_diff_markdown_pipes
run_test cli/diff_noise test_diff_noise
run_test cli/exact_totals test_exact_totals
run_test cli/diff_rates test_diff_rates
run_test cli/json_contract test_json_contract
run_test cli/info test_info
run_test cli/flamegraph test_flamegraph
run_test cli/help test_help
run_test cli/bad_usage test_bad_usage
run_test cli/bad_input test_bad_input
run_test cli/go_rewritten test_go_rewritten
run_test cli/go_heap_profile test_go_heap_profile
