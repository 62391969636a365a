#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert on crafted profiles (tests/tools/craft.py): deep span paths, deep
# stacks, location and span floods, files that decode to huge tables,
# lying length fields, extreme and negative values, hostile names.  Every
# command on each: exit 0 with valid, bounded output, or exit 2 with one
# "error:" line; within a memory limit (ulimit -v; the sanitizer run uses
# ASan's RSS limit, as ASan reserves terabytes of address space) and a time
# limit.  Outputs are checked by independent parsers (tests/cli/check_output.py:
# Python's json and XML parsers, GitHub's cmark-gfm).
. tests/lib.sh

CRAFT="/usr/bin/python3 tests/tools/craft.py"
CHECK="/usr/bin/python3 tests/cli/check_output.py"
MKPROF=$OUTPUT/tests/tools/mkprof
# 768 MiB of address space: the budget's 256 MiB floor, the libraries, slack
LIMIT_KB=786432

# bounded NAME ARGS...: culpert ARGS under the limits; $TMP/NAME.out, .err, and $rc
bounded() {
	_n=$1
	shift
	if [ -n "${CULPERT_SANITIZED:-}" ]; then
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=2048" \
			timeout 120 "$BIN_CLI" "$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err"
	else
		(ulimit -v $LIMIT_KB && exec timeout 120 "$BIN_CLI" "$@") >"$TMP/$_n.out" 2>"$TMP/$_n.err"
	fi
	rc=$?
}

# the CLI's contract for one run: 0 (or 1 for diff) with nothing on stderr, or 2 with one error line
contract() {
	_n=$1
	_ok=$2
	case " $_ok " in
	*" $rc "*) ;;
	*) fail "$_n: exit $rc (want one of $_ok): $(head -c 300 "$TMP/$_n.err")"; return 1 ;;
	esac
	if [ "$rc" = 2 ]; then
		[ "$(wc -l <"$TMP/$_n.err")" = 1 ] && grep -q '^error: ' "$TMP/$_n.err" ||
			{ fail "$_n: exit 2 without one 'error:' line: $(head -c 300 "$TMP/$_n.err")"; return 1; }
		[ -s "$TMP/$_n.out" ] && { fail "$_n: wrote to stdout on error"; return 1; }
	elif [ -s "$TMP/$_n.err" ]; then
		fail "$_n: unexpected stderr: $(head -c 300 "$TMP/$_n.err")"
		return 1
	fi
	return 0
}

# the name all_commands gives the run of CMD with prefix X (its output is $TMP/NAME.out)
run_name() {
	echo "$1-$(echo "$2" | sed "s|$TMP/||g; s|@||g" | tr -c 'a-z0-9\n' _)"
}

# out X CMD: the output file of that run
out() {
	echo "$TMP/$(run_name "$1" "$2").out"
}

# every command on profile P (NAME prefix N), each output checked by its parser when exit 0
all_commands() {
	_p=$1
	_x=$2
	while read -r kind cmd; do
		_n=$(run_name "$_x" "$cmd")
		# split into words, never globbed (--skip w_*)
		set -f
		# shellcheck disable=SC2086
		bounded "$_n" $(echo "$cmd" | sed "s|@|$_p|g")
		set +f
		case "$cmd" in diff*) contract "$_n" "0 1 2" ;; *) contract "$_n" "0 2" ;; esac || continue
		[ "$rc" = 0 ] || continue
		$CHECK "$kind" "$TMP/$_n.out" 2>"$TMP/$_n.chk" ||
			fail "$_n: $kind output: $(head -c 300 "$TMP/$_n.chk")"
	done <<-EOF
	text report @
	text report @ --flat
	text report @ --no-span
	text report @ --leaks
	text report @ --no-span --skip w_* --wide
	json report @ --format json
	json report @ --flat --format json
	json report @ --no-span --format json
	json report @ --no-span --skip w_* --format json
	text info @
	text diff @ @
	md diff @ @ --format markdown
	json diff @ @ --format json
	text diff @ @ --tree
	text diff @ @ --by callsite --skip w_*
	md diff @ @ --by callsite --format markdown
	json diff $TMP/other.pb.gz @ --by callsite --format json
	md diff @ @ --tree --format markdown
	json diff $TMP/other.pb.gz @ --format json
	md diff $TMP/other.pb.gz @ --format markdown
	folded flamegraph @
	folded flamegraph @ --skip w_*
	svg flamegraph @ --format svg
	EOF
}

setup() {
	printf 'sample 1 1MiB stack=work@w.c:1 span_path=a;b\n' | "$MKPROF" -o "$TMP/other.pb.gz"
}

# 20 000 segments: the tree keeps 127 levels and a "…" span with the rest
test_deep_span() {
	$CRAFT deep-span 20000 -o "$TMP/ds.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/ds.pb.gz" ds
	# --wide: the rows whole (without it the 254 columns of indentation are cut to the cap)
	bounded ds-tree report "$TMP/ds.pb.gz" --wide
	[ "$(grep -c '4.00 KiB  100.00%' "$TMP/ds-tree.out")" = 128 ] ||
		fail "report: $(grep -c '4.00 KiB  100.00%' "$TMP/ds-tree.out") span rows, want 128"
	tail -1 "$TMP/ds-tree.out" | grep -q "^ \{254\}…  *4.00 KiB" ||
		fail "the deepest row is not '…' at depth 127: $(tail -1 "$TMP/ds-tree.out" | head -c 300)"
	/usr/bin/python3 - "$(out ds "report @ --format json")" <<-'EOF' || fail "report json: the chain is not 128 spans ending in …"
	import json, sys
	s, n = json.load(open(sys.argv[1]))["spans"][0], 1
	while s["children"]:
	    s, n = s["children"][0], n + 1
	assert n == 128 and s["name"] == "\u2026" and s["path"].count(";") == 127, (n, s["name"])
	assert s["path"].startswith("s0;s1;s2;") and s["bytes"] == 4096, s["path"][:50]
	EOF
}

# 20 000 spans chained by span_parent_id: resolved once each, the same bound
test_deep_named() {
	$CRAFT deep-named 20000 -o "$TMP/dn.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/dn.pb.gz" dn
	/usr/bin/python3 - "$(out dn "report @ --format json")" <<-'EOF' || fail "report json of a 20000-deep named chain"
	import json, sys
	r = json.load(open(sys.argv[1]))
	assert r["total_bytes"] == 20000 * 4096, r["total_bytes"]
	s, n = r["spans"][0], 1
	while s["children"]:
	    s, n = s["children"][0], n + 1
	assert n == 128 and s["name"] == "\u2026", (n, s["name"])
	# n1..n127, then … holds n128..n20000
	assert s["bytes"] == (20000 - 127) * 4096, s["bytes"]
	EOF
}

# one stack of 200 000 frames: flamegraph keeps 512 levels, the last "…"
# a root also seen nested goes under "(entered before attach)", one level deeper: up to the
# bound; a subtree already at the last level stays a root (docs/cli.md)
test_deep_orphan() {
	for n in 126 300; do
		$CRAFT deep-orphan $n -o "$TMP/do$n.pb.gz" || { fail "craft"; return; }
		all_commands "$TMP/do$n.pb.gz" do$n
		/usr/bin/python3 - "$(out do$n "report @ --format json")" $n <<-'EOF' ||
		import json, sys
		spans, n = json.load(open(sys.argv[1]))["spans"], int(sys.argv[2])
		def deepest(s, d=1):
		    return max([deepest(c, d + 1) for c in s["children"]] or [(d, s)], key=lambda x: x[0])
		roots = {s["name"]: deepest(s) for s in spans}
		want = "(entered before attach)" if n < 127 else "R"
		assert sorted(roots) == sorted([want, "top"]), sorted(roots)
		d, leaf = roots[want]
		assert d == 128 and leaf["path"].count(";") == 127, (d, leaf["path"][:80])
		assert leaf["path"].startswith(want + ";"), leaf["path"][:80]
		EOF
			fail "deep-orphan $n: not under the marker up to 128 levels, or past them"
	done
}

test_deep_stack() {
	$CRAFT deep-stack 200000 -o "$TMP/dk.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/dk.pb.gz" dk
	$CHECK folded "$(out dk "flamegraph @")" 4096 || fail "folded weights"
	awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";") } END { exit !(NR == 1 && n == 512 && f[1] == "deep" && f[2] == "work" && f[512] == "…") }' \
		"$(out dk "flamegraph @")" || fail "folded: not deep;work;...;… in 512 names"
}

# --skip in the flame graph of a deep stack: the 512 levels are counted after the skipped
# frames, and the bound holds past them
test_deep_wrapped() {
	$CRAFT deep-wrapped 600 -o "$TMP/dw.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/dw.pb.gz" dw
	# 600 frames: 512 levels cut it; without w_alloc its 300 work frames fit
	awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";") } END { exit !(NR == 1 && n == 512 && f[2] == "work" && f[512] == "…") }' \
		"$(out dw "flamegraph @")" || fail "folded: not 512 names ending in …"
	[ "$(cat "$(out dw "flamegraph @ --skip w_*")")" = "deep$(printf ';work%.0s' $(seq 300)) 4096" ] ||
		fail "--skip w_*: not deep and 300 work frames: $(head -c 200 "$(out dw "flamegraph @ --skip w_*")")"
	bounded dw-span report "$TMP/dw.pb.gz" --span deep --skip 'w_*'
	contract dw-span 0 && grep -q '^callsites skip wrappers: w_alloc (100.00% of the bytes)$' "$TMP/dw-span.out" &&
		grep -q '^work (work.c:10) ' "$TMP/dw-span.out" ||
		fail "report --skip on the deep stack: $(cat "$TMP/dw-span.out")"
	$CRAFT deep-wrapped 200000 -o "$TMP/dw2.pb.gz" || { fail "craft"; return; }
	bounded dw2-fold flamegraph "$TMP/dw2.pb.gz" --skip 'w_*'
	contract dw2-fold 0 && $CHECK folded "$TMP/dw2-fold.out" 4096 || fail "folded weights"
	awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";") } END { exit !(NR == 1 && n == 512 && f[2] == "work" && f[511] == "work" && f[512] == "…") }' \
		"$TMP/dw2-fold.out" || fail "--skip on 200 000 frames: not deep, 510 work and …"
	bounded dw2-svg flamegraph "$TMP/dw2.pb.gz" --skip 'w_*' --format svg
	contract dw2-svg 0 && $CHECK svg "$TMP/dw2-svg.out" || fail "svg of the skipped deep stack"
	grep -q 'w_alloc' "$TMP/dw2-svg.out" && fail "the svg still draws w_alloc"
}

# a location of 3000 inline lines, 3000 times in one stack: 9 M frames, bounded the same
test_inline_flood() {
	$CRAFT inline-flood 3000 -o "$TMP/if.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/if.pb.gz" if
	awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";") } END { exit !(NR == 1 && n == 512 && f[1] == "(no span)" && f[512] == "…") }' \
		"$(out if "flamegraph @")" || fail "folded: not (no span) and 511 frames, the last …"
}

# 20 000 locations and functions, a sample each
test_loc_flood() {
	$CRAFT loc-flood 20000 -o "$TMP/lf.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/lf.pb.gz" lf
	# sum over i of 100 + i
	grep -q '"total_bytes": 202010000' "$(out lf "report @ --format json")" ||
		fail "loc flood: total_bytes is not 202010000"
	$CHECK folded "$(out lf "flamegraph @")" 202010000 || fail "folded weights"
}

# 2000 paths 100 deep sharing 99: diff keys are whole paths, written only when printed
test_span_flood() {
	$CRAFT span-flood 2000 -o "$TMP/sf.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/sf.pb.gz" sf
	/usr/bin/python3 - "$(out sf "diff @ @ --format json")" <<-'EOF' || fail "diff json keys of the span flood"
	import json, sys
	rows = json.load(open(sys.argv[1]))["rows"]
	base = ";".join("level%d" % i for i in range(99))
	assert sorted(r["key"] for r in rows) == sorted("%s;leaf%d" % (base, i) for i in range(2000))
	EOF
}

# INT64_MAX twice, INT64_MIN, negative: JSON saturates, never nan
test_extreme_values() {
	$CRAFT values -o "$TMP/xv.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/xv.pb.gz" xv
	for f in "$TMP"/xv-*json*.out; do
		grep -qi 'nan\|inf' "$f" && fail "$(basename "$f"): nan or inf"
	done
	grep -q '"total_bytes": 9223372036854775807' "$(out xv "report @ --format json")" ||
		fail "a sum past INT64_MAX does not saturate"
	/usr/bin/python3 -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' \
		docs/diff-schema.json "$(out xv "diff @ @ --format json")" ||
		fail "diff json of extreme values does not validate against docs/diff-schema.json"
	# saturated, and saying so, the same in every format; percentages of the same sums
	grep -q '^Total:   >=8.00 EiB alloc_space$' "$(out xv "report @")" ||
		fail "report: $(grep '^Total' "$(out xv "report @")"), want >=8.00 EiB"
	grep -q '^big  *>=8.00 EiB  50.00%  (>=8.00 EiB)$' "$(out xv "report @")" ||
		fail "report: $(grep '^big' "$(out xv "report @")")"
	grep -q '^Total: .*>=8.00 EiB alloc_space in >=9223372036854775807 objects$' \
		"$(out xv "info @")" || fail "info: $(grep '^Total' "$(out xv "info @")")"
	/usr/bin/python3 - "$(out xv "report @ --format json")" "$(out xv "diff @ @ --format json")" <<-'PY' ||
	import json, sys
	r, d = (json.load(open(f)) for f in sys.argv[1:])
	big = [s for s in r["spans"] if s["name"] == "big"][0]
	assert big["bytes"] == 2**63 - 1 and big["pct"] == 50.0, big
	assert d["before"]["total_bytes"] == 2**63 - 1, d["before"]
	PY
		fail "json of extreme values: not saturated the way the text says"
	"$OUTPUT/culpert" flamegraph "$TMP/xv.pb.gz" >"$TMP/xv.folded" || fail "flamegraph"
	grep -q '^big;work 9223372036854775807$' "$TMP/xv.folded" ||
		fail "folded: $(grep '^big' "$TMP/xv.folded"), want the saturated weight"
	# a rate the text calls unknown is null in JSON, not a negative number
	printf 'rate -524288\nsample 1 1MiB stack=work span_path=a\n' | "$MKPROF" -o "$TMP/negrate.pb.gz"
	"$OUTPUT/culpert" diff "$TMP/negrate.pb.gz" "$TMP/negrate.pb.gz" >"$TMP/negrate.txt"
	grep -q 'unknown' "$TMP/negrate.txt" || fail "diff text: $(grep Rate "$TMP/negrate.txt")"
	"$OUTPUT/culpert" diff "$TMP/negrate.pb.gz" "$TMP/negrate.pb.gz" --format json |
		grep -q '^  "rate": null,$' || fail "diff json: the unknown rate is not null"
	"$OUTPUT/culpert" report "$TMP/negrate.pb.gz" --format json |
		grep -q '^  "rate": null,$' || fail "report json: the unknown rate is not null"
}

# a span name holding ';' is one span, its path escaped (docs/profile-format.md):
# report, exact totals, diff, --span and folded output agree
test_semicolon_span() {
	printf '%s\n' 'sample 1 1MiB stack=work span_path=semi\;colon;frame span_name=frame' \
		'sample 1 2MiB stack=work span_path=semi\;colon span_name=semi;colon' \
		'comment span.total.semi\;colon=2097152,2,3145728,3,1,0,3145728,3145728' \
		'comment span.total.semi\;colon;frame=1048576,1,1048576,1,1,0,1048576,1048576' \
		'comment span.totals.outside=0,0' | "$MKPROF" -o "$TMP/semi.pb.gz" || { fail "mkprof"; return; }
	"$OUTPUT/culpert" report "$TMP/semi.pb.gz" >"$TMP/semi.txt" || fail "report"
	grep -q '^semi;colon  *3.00 MiB' "$TMP/semi.txt" && grep -q '^  frame  *1.00 MiB' "$TMP/semi.txt" ||
		fail "report: $(cat "$TMP/semi.txt")"
	grep -q '^ *colon\|^ *semi  ' "$TMP/semi.txt" && fail "report: nested at the ';': $(cat "$TMP/semi.txt")"
	"$OUTPUT/culpert" report "$TMP/semi.pb.gz" --format json >"$TMP/semi.json" || fail "report json"
	"$OUTPUT/culpert" diff "$TMP/semi.pb.gz" "$TMP/semi.pb.gz" --format json >"$TMP/semi.diff" ||
		fail "diff"
	/usr/bin/python3 - "$TMP/semi.json" "$TMP/semi.diff" <<-'PY' || fail "report and diff disagree"
	import json, sys
	r, d = (json.load(open(f)) for f in sys.argv[1:])
	top = [s for s in r["spans"] if not s["no_span"]]
	assert [(s["path"], s["bytes"]) for s in top] == [("semi\\;colon", 3 << 20)], top
	assert [c["path"] for c in top[0]["children"]] == ["semi\\;colon;frame"], top
	keys = sorted(x["key"] for x in d["rows"] if x["key"] != "(no span)")
	assert keys == ["semi\\;colon", "semi\\;colon;frame"], d["rows"]
	PY
	"$OUTPUT/culpert" report "$TMP/semi.pb.gz" --span 'semi\;colon;frame' | grep -q '^span semi\\;colon;frame: 1.00 MiB' ||
		fail "--span with the escaped path"
	"$OUTPUT/culpert" flamegraph "$TMP/semi.pb.gz" | grep -q '^semi:colon;frame;work 1048576$' ||
		fail "folded: $("$OUTPUT/culpert" flamegraph "$TMP/semi.pb.gz")"
}

# pprof -diff_base output: negative spans are changes by their sign (docs/cli.md)
test_diff_base() {
	$CRAFT diff-base -o "$TMP/db.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/db.pb.gz" db
	printf 'sample 1 1MiB stack=work@w.c:1 span_path=request;steady\n' | "$MKPROF" -o "$TMP/base.pb.gz"
	bounded db-kinds diff "$TMP/base.pb.gz" "$TMP/db.pb.gz" --format json --threshold-bytes 1
	contract db-kinds "1" || return
	/usr/bin/python3 - "$TMP/db-kinds.out" <<-'EOF' || fail "diff of a -diff_base profile: kinds"
	import json, sys
	k = {r["key"]: (r["kind"], r["delta"], r["stderr_delta"]) for r in json.load(open(sys.argv[1]))["rows"]}
	M = 1 << 20
	assert k["request;grow"][:2] == ("new", 10 * M), k
	assert k["request;shrink"][:2] == ("improvement", -20 * M), k
	assert k["only_base"][:2] == ("improvement", -M), k
	assert k["request;steady"][:2] == ("gone", -M), k
	# noise of a negative estimate: sqrt(rate * |bytes|), rate 524288
	assert abs(k["request;shrink"][2] - (524288 * 20 * M) ** 0.5) <= 1, k
	EOF
	grep -q '^Total:   -11.00 MiB' "$(out db "report @")" || fail "report total of -diff_base is not -11.00 MiB"
	# --by callsite: the same rules on callsites, summed over the spans (shrink: two spans)
	bounded db-cs diff "$TMP/base.pb.gz" "$TMP/db.pb.gz" --by callsite --format json --threshold-bytes 1
	contract db-cs "1" || return
	/usr/bin/python3 - "$TMP/db-cs.out" <<-'EOF' || fail "diff --by callsite of a -diff_base profile: kinds"
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["by"] == "callsite", d["by"]
	k = {r["key"]: (r["kind"], r["before"], r["after"], r["pct"], r["stderr_delta"]) for r in d["rows"]}
	M = 1 << 20
	assert k["grow (work.c:10)"][:3] == ("new", 0, 10 * M), k
	# from nothing to below zero: no new callsite, an improvement, no pct
	assert k["shrink (work.c:10)"][:4] == ("improvement", 0, -21 * M, None), k
	assert k["work (w.c:1)"][:3] == ("gone", M, 0), k
	# noise of a negative estimate: sqrt(rate * |bytes|), rate 524288
	assert abs(k["shrink (work.c:10)"][4] - (524288 * 21 * M) ** 0.5) <= 1, k
	EOF
	bounded db-cst diff "$TMP/base.pb.gz" "$TMP/db.pb.gz" --by callsite --threshold-bytes 1
	contract db-cst "1" && grep -q '^improvement  shrink (work.c:10)  *0 B  *-21.00 MiB  *-21.00 MiB  *- ' \
		"$TMP/db-cst.out" || fail "diff --by callsite text: $(cat "$TMP/db-cst.out")"
	[ "$(cat "$(out db "flamegraph @")")" = "request;grow;grow $((10 << 20))" ] ||
		fail "flamegraph draws other than the positive record: $(head -c 200 "$(out db "flamegraph @")")"
}

# a 250 KB file that decodes to 256 MB of locations, and a view past CULPERT_MAX_MEMORY
test_memory_budget() {
	$CRAFT bomb 64000000 -o "$TMP/bomb.pb.gz" || { fail "craft"; return; }
	for cmd in report info flamegraph; do
		bounded bomb-$cmd $cmd "$TMP/bomb.pb.gz"
		contract bomb-$cmd 2 && grep -q 'profile too large: reading it takes more than 256.00 MiB' \
			"$TMP/bomb-$cmd.err" || fail "bomb $cmd: $(cat "$TMP/bomb-$cmd.err")"
	done
	$CRAFT sample-bomb 100000 -o "$TMP/sb.pb.gz" || { fail "craft"; return; }
	export CULPERT_MAX_MEMORY=2MiB
	bounded sb-small report "$TMP/sb.pb.gz"
	contract sb-small 2 && grep -q 'more than the 2.00 MiB of memory CULPERT_MAX_MEMORY allows' \
		"$TMP/sb-small.err" || fail "CULPERT_MAX_MEMORY=2MiB: $(cat "$TMP/sb-small.err")"
	unset CULPERT_MAX_MEMORY
	bounded sb report "$TMP/sb.pb.gz"
	contract sb 0 && grep -q '^Records: 100000 ' "$TMP/sb.out" || fail "100000 records: $(head -3 "$TMP/sb.out")"
	export CULPERT_MAX_MEMORY=lots
	bounded sb-bad report "$TMP/sb.pb.gz"
	unset CULPERT_MAX_MEMORY
	contract sb-bad 2 && grep -q "CULPERT_MAX_MEMORY='lots' is not a size" "$TMP/sb-bad.err" ||
		fail "a bad CULPERT_MAX_MEMORY: $(cat "$TMP/sb-bad.err")"
}

# length fields that claim more than there is, up to 2^62; many sample types; long names
test_lengths() {
	for n in 2147483647 2147483648 4611686018427387904 268435456; do
		$CRAFT long-string $n -o "$TMP/ls$n.pb.gz" || { fail "craft"; return; }
		for cmd in report info flamegraph; do
			bounded ls$n-$cmd $cmd "$TMP/ls$n.pb.gz"
			contract ls$n-$cmd 2 || break
		done
	done
	$CRAFT many-types 20000 -o "$TMP/mt.pb.gz" && all_commands "$TMP/mt.pb.gz" mt
	$CRAFT long-name 1000000 -o "$TMP/ln.pb.gz" && all_commands "$TMP/ln.pb.gz" ln
	grep -q "\"name\": \"$(printf '%0255d' 0 | tr 0 s)\"" "$(out ln "report @ --format json")" ||
		fail "a 1 MiB span name is not cut to 255 bytes"
}

# the hostile-name corpus as allocation wrappers: the report's "callsites skip wrappers" line
# (the five with the most bytes, all control characters) under the text rule, JSON whole
test_hostile_wrappers() {
	$CRAFT wrappers -o "$TMP/hw.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/hw.pb.gz" hw
	for wide in "" --wide; do
		bounded hw-line$wide report "$TMP/hw.pb.gz" --no-span --skip 'w_*' $wide
		contract hw-line$wide 0 && $CHECK text "$TMP/hw-line$wide.out" ||
			fail "report --skip $wide: $(head -c 300 "$TMP/hw-line$wide.out")"
		grep -q '^callsites skip wrappers: w_ev\\x1b\[2J\\x1b\[31mred (8.00% of the bytes), w_bell\\x07back\\x08space (7.67%), w_carriage\\rreturn (7.33%), w_new\\nline (7.00%), w_tab\\there (6.67%), 19 more (63.33%)$' \
			"$TMP/hw-line$wide.out" || fail "the wrappers line $wide: $(grep wrappers "$TMP/hw-line$wide.out")"
		# every row a callsite: no name broke a line
		[ "$(grep -c '^caller[0-9]* (src[0-9]*.c:[0-9]*) ' "$TMP/hw-line$wide.out")" = 20 ] ||
			fail "report --skip $wide: not 20 caller rows"
	done
	/usr/bin/python3 - "$(out hw "report @ --no-span --skip w_* --format json")" <<-'EOF' || fail "wrappers json: see above"
	import json, sys
	sys.path.insert(0, "tests/tools")
	from craft import NAMES
	got = [w["name"] for w in json.load(open(sys.argv[1]))["wrappers"]]
	assert len(got) == len(NAMES), got
	# JSON keeps every valid name exactly (the invalid ones as U+FFFD), largest first
	for g, n in zip(got, NAMES):
	    try:
	        r = ("w_" + n).encode("utf-8", "surrogateescape").decode("utf-8")
	    except UnicodeDecodeError:
	        assert "\ufffd" in g, g
	        continue
	    assert g == r, (g, r)
	EOF
}

# the hostile-name corpus (craft.py NAMES) as spans, functions, files, comments, comm
test_hostile_names() {
	$CRAFT names -o "$TMP/hn.pb.gz" || { fail "craft"; return; }
	all_commands "$TMP/hn.pb.gz" hn
	# no row broken: as many table rows as JSON has spans
	bounded hn-flat report "$TMP/hn.pb.gz" --flat --top 100
	bounded hn-flatj report "$TMP/hn.pb.gz" --flat --top 100 --format json
	rows=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["spans"]))' "$TMP/hn-flatj.out")
	# the header is 5 lines (File, Samples, Total, a blank, the columns)
	[ "$(tail -n +6 "$TMP/hn-flat.out" | wc -l)" = "$rows" ] ||
		fail "report --flat: $(tail -n +6 "$TMP/hn-flat.out" | wc -l) lines for $rows spans"
	grep -q '^root;ev\\x1b\[2J\\x1b\[31mred  ' "$TMP/hn-flat.out" || fail "ESC is not shown as \\x1b"
	grep -q '^Target:        ev\\x1b\[2J\\x1b\[31mred (pid ?) /usr/bin/new\\nline$' "$(out hn "info @")" ||
		fail "info: target not escaped: $(grep Target "$(out hn "info @")")"
	grep -q '^Started as:    carriage\\rreturn, a symlink to bell\\x07back\\x08space$' "$(out hn "info @")" &&
		grep -q '^Allocator:     glibc ev\\x1b\[2J\\x1b\[31mred (mem.end)$' "$(out hn "info @")" &&
		grep -q '^               new\\nline arenas, ' "$(out hn "info @")" &&
		grep -q '^               bidi \\u202egnirts\\u202c end mmapped blocks' "$(out hn "info @")" &&
		grep -q '^               allocator figures absent: carriage\\rreturn$' "$(out hn "info @")" ||
		fail "info: argv0 or the allocator section not escaped: $(grep -A4 'Started\|Allocator' "$(out hn "info @")")"
	/usr/bin/python3 - "$TMP/hn-flatj.out" "$(out hn "flamegraph @")" \
		"$(out hn "diff $TMP/other.pb.gz @ --format markdown")" <<-'EOF' || fail "hostile names: see above"
	import json, sys
	sys.path.insert(0, "tests/tools")
	from craft import NAMES
	raw = [n.encode("utf-8", "surrogateescape") for n in NAMES]
	# JSON keeps every valid name exactly, and the folded lines have each path's frames
	names = {s["name"] for s in json.load(open(sys.argv[1]))["spans"]}
	for n, r in zip(NAMES, raw):
	    try:
	        ok = r.decode("utf-8") == n and ";" not in n
	    except UnicodeDecodeError:
	        ok = False
	    if ok and n.strip() == n:
	        assert n in names, (n, names)
	lines = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
	want = sorted(1 + n.count(";") + 1 + 2 for n in NAMES)
	got = sorted(len(l.rsplit(" ", 1)[0].split(";")) for l in lines)
	assert got == want, (got, want)
	# the markdown diff lists every span of the corpus, one row each
	md = open(sys.argv[3], encoding="utf-8").read()
	assert sum(1 for l in md.split("\n") if l.startswith("| `") and "root;" in l) == 20, md
	EOF
}

setup
run_test cli/crafted_deep_span test_deep_span
run_test cli/crafted_deep_named test_deep_named
run_test cli/crafted_deep_orphan test_deep_orphan
run_test cli/crafted_deep_stack test_deep_stack
run_test cli/crafted_deep_wrapped test_deep_wrapped
run_test cli/crafted_inline_flood test_inline_flood
run_test cli/crafted_loc_flood test_loc_flood
run_test cli/crafted_span_flood test_span_flood
run_test cli/crafted_extreme_values test_extreme_values
run_test cli/crafted_semicolon_span test_semicolon_span
run_test cli/crafted_diff_base test_diff_base
run_test cli/crafted_memory_budget test_memory_budget
run_test cli/crafted_lengths test_lengths
run_test cli/crafted_hostile_names test_hostile_names
run_test cli/crafted_hostile_wrappers test_hostile_wrappers
