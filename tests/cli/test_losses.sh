#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Profiles that say they are incomplete (culpert-bpf's loss comments) are
# presented as such by report and diff in every format, and --leaks refuses
# to call a block leaked when its free may have been missed.
. tests/lib.sh

MKPROF=$OUTPUT/tests/tools/mkprof
SCHEMA=docs/diff-schema.json
C=$BIN_CLI

# spec PATH COMMENTS...: an in-use profile with a leak-looking old block, these comments
spec() {
	_out=$1
	shift
	{
		echo "types alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes"
		echo "rate 524288"
		for c in "$@"; do echo "comment $c"; done
		echo "sample 10 10MiB 10 10MiB stack=cache_put@cache.c:30;serve@srv.c:5 span_path=serve age_ns=#64000000000"
		echo "sample 20 20MiB 0 0 stack=tmp_alloc@tmp.c:1;serve@srv.c:5 span_path=serve"
	} | "$MKPROF" -o "$_out" || fail "mkprof $_out"
}

# 58 of 100 sampled allocations lost: report and diff say so, in every format
test_lost_samples_said() {
	spec "$TMP/lost.pb.gz" samples=42 lost_samples=58 inuse=sessions inuse_live=kernel_table \
		inuse_untracked=7 inuse_frees_missed=0 probe_misses=0
	spec "$TMP/clean.pb.gz" samples=42 lost_samples=0 inuse=sessions inuse_live=kernel_table
	"$C" report "$TMP/lost.pb.gz" >"$TMP/r.txt" || fail "report failed"
	grep -q '^Lost:    58 of 100 sampled allocations (58.00%) were lost in the kernel' "$TMP/r.txt" ||
		fail "report does not say the loss: $(head -3 "$TMP/r.txt")"
	grep -q '^Lost:    7 sampled blocks were not tracked' "$TMP/r.txt" ||
		fail "report does not say the untracked blocks"
	"$C" report "$TMP/clean.pb.gz" | grep -q '^Lost:' && fail "a complete profile reported as lossy"
	"$C" report "$TMP/lost.pb.gz" --format json >"$TMP/r.json" || fail "report --format json failed"
	$PYTHON - "$TMP/r.json" <<-'EOF' || fail "report json: $(cat "$TMP/r.json" | head -c 300)"
	import json, sys
	l = json.load(open(sys.argv[1]))["losses"]
	assert l["lost_samples"] == 58 and l["lost_pct"] == 58.0 and l["untracked_blocks"] == 7, l
	assert l["frees_doubtful"] is False, l
	EOF
	"$C" diff "$TMP/clean.pb.gz" "$TMP/lost.pb.gz" --no-fail >"$TMP/d.txt" || fail "diff failed"
	grep -q "^Lost:    $TMP/lost.pb.gz: 58 of 100 sampled" "$TMP/d.txt" ||
		fail "diff does not say the loss: $(tail -3 "$TMP/d.txt")"
	grep -q "clean.pb.gz: " "$TMP/d.txt" && fail "diff blames the complete profile"
	"$C" diff "$TMP/clean.pb.gz" "$TMP/lost.pb.gz" --no-fail --format markdown >"$TMP/d.md"
	grep -q "^> \*\*Incomplete data in $TMP/lost.pb.gz:\*\* 58 of 100" "$TMP/d.md" ||
		fail "markdown diff does not say the loss: $(tail -4 "$TMP/d.md")"
	"$C" diff "$TMP/clean.pb.gz" "$TMP/lost.pb.gz" --no-fail --format json >"$TMP/d.json"
	$PYTHON - "$SCHEMA" "$TMP/d.json" <<-'EOF' || fail "diff json: $(head -c 400 "$TMP/d.json")"
	import json, sys, jsonschema
	d = json.load(open(sys.argv[2]))
	jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(d)
	assert "losses" not in d["before"], d["before"]
	assert d["after"]["losses"]["lost_samples"] == 58, d["after"]
	EOF
}

# Frees the profiler may have missed: no block is called leaked
test_leaks_refused() {
	spec "$TMP/missed.pb.gz" samples=30 lost_samples=0 inuse=sessions inuse_live=kernel_table \
		inuse_frees_missed=3
	# before the live heap came from the kernel's table, a lost free record meant the same
	spec "$TMP/old.pb.gz" samples=30 lost_samples=9 inuse=sessions inuse_lost_frees=9
	spec "$TMP/ok.pb.gz" samples=30 lost_samples=9 inuse=sessions inuse_live=kernel_table \
		inuse_lost_frees=9
	for f in missed old; do
		expect_error 2 'frees may have been missed.*no block is called leaked' \
			"$C" report "$TMP/$f.pb.gz" --leaks
		[ -s "$TMP/err.out" ] && fail "$f: --leaks still listed: $(head -3 "$TMP/err.out")"
		"$C" report "$TMP/$f.pb.gz" --inuse | grep -q '^Lost:    [0-9]* frees may have been missed' ||
			fail "$f: report --inuse does not say the frees may be missed"
	done
	# lost free records are harmless once the kernel's table is the truth
	"$C" report "$TMP/ok.pb.gz" --leaks >"$TMP/ok.txt" 2>&1 || fail "--leaks refused: $(cat "$TMP/ok.txt")"
	grep -q 'cache_put' "$TMP/ok.txt" || fail "the old block is not listed: $(cat "$TMP/ok.txt")"
}

PYTHON=/usr/bin/python3
run_test cli/losses/lost_samples_said test_lost_samples_said
run_test cli/losses/leaks_refused test_leaks_refused
