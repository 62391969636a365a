#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The composite action .github/actions/culpert-diff, end to end: its steps run in order as
# the runner would run them (tests/tools/action_runner.py: `${{ }}` and `if:` evaluated from
# a simulated github context and event file, each `run:` under `bash --noprofile --norc -eo
# pipefail` with GITHUB_OUTPUT, GITHUB_ENV and GITHUB_STEP_SUMMARY files), against the real
# archive Worker on loopback and profiles of our writer (tests/cli/data/ci_*.spec), with the
# real culpert.  Ground truth: the archive's own answers, and culpert diff run directly.
. tests/lib.sh
. tests/archive/serve.inc

RUNNER=tests/tools/action_runner.py
ACTION=.github/actions/culpert-diff/action.yml
WORKFLOW=deploy/github/culpert-diff.yml
MKPROF=$OUTPUT/tests/tools/mkprof
TOKEN=action-test-token-3e8d
PUSH_SHA=aaaaaaa1111111111111111111111111111111aa
PUSH2_SHA=aaaaaaa2222222222222222222222222222222aa
MERGE_SHA=bbbbbbb3333333333333333333333333333333bb
HEAD_SHA=ccccccc4444444444444444444444444444444cc

unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
unset CULPERT_ARCHIVE CULPERT_TOKEN CULPERT_PROJECT CULPERT_MIN_SPAN_BYTES GITHUB_SHA \
	GITHUB_REF_NAME CF_ACCESS_CLIENT_ID CF_ACCESS_CLIENT_SECRET

ROOT=$(pwd)
"$MKPROF" -o "$TMP/base.pb.gz" tests/cli/data/ci_base.spec || echo "FAIL mkprof ci_base.spec"
"$MKPROF" -o "$TMP/regressed.pb.gz" tests/cli/data/ci_regressed.spec ||
	echo "FAIL mkprof ci_regressed.spec"
# another rate: culpert diff refuses the pair (exit 2)
"$MKPROF" -o "$TMP/other_rate.pb.gz" tests/cli/data/basic.spec || echo "FAIL mkprof basic.spec"

# culpert on PATH (the action's default culpert-cli) and, for the example workflow, at
# .output/culpert of the workspace
mkdir -p "$TMP/bin"
ln -s "$ROOT/$BIN_CLI" "$TMP/bin/culpert"
PATH=$TMP/bin:$PATH
export PATH

cat >"$TMP/push.json" <<EOF
{"ref": "refs/heads/main", "after": "$PUSH_SHA", "repository": {"full_name": "acme/shop"}}
EOF
cat >"$TMP/pull_request.json" <<EOF
{"action": "synchronize", "number": 7,
 "pull_request": {"number": 7, "head": {"sha": "$HEAD_SHA", "ref": "feature/x"},
                  "base": {"sha": "$PUSH_SHA", "ref": "main"}},
 "repository": {"full_name": "acme/shop"}}
EOF

# workspace NAME PROFILE: a fresh checkout-like directory with PROFILE as prof.pb.gz; sets $WS
workspace() {
	WS=$TMP/ws-$1
	rm -rf "$WS"
	mkdir -p "$WS/.output"
	cp "$2" "$WS/prof.pb.gz"
	ln -s "$ROOT/$BIN_CLI" "$WS/.output/culpert"
}

# act NAME EVENT SHA REF [RUNNER ARGS...]: the action in $WS; $TMP/NAME.log is the job's log,
# $TMP/NAME.json the runner's account; sets $act_rc
act() {
	_n=$1 _ev=$2 _sha=$3 _ref=$4
	shift 4
	"$PY" "$RUNNER" run "$ACTION" --event "$_ev" --event-file "$TMP/$_ev.json" --sha "$_sha" \
		--ref "$_ref" --work "$WS" --result "$TMP/$_n.json" "$@" >"$TMP/$_n.log" 2>&1
	act_rc=$?
}

# the usual inputs, for act
inputs() {
	echo --with "archive-url=$ARCHIVE_URL" --with "archive-token=$TOKEN" \
		--with profile=prof.pb.gz
}

# res NAME PYEXPR: a value of NAME's account (r), as it is (no newline added)
res() {
	"$PY" -c 'import json, sys; r = json.load(open(sys.argv[1]))
sys.stdout.write(str(eval(sys.argv[2])))' "$TMP/$1.json" "$2"
}

# outcomes NAME: "id=outcome ..." of every step
outcomes() {
	res "$1" '" ".join("%s=%s" % (s["id"] or s["name"], s["outcome"]) for s in r["steps"])'
}

# in_archive ARGS...: what culpert pull gets (exit status; the bytes in $TMP/pulled)
in_archive() {
	rm -f "$TMP/pulled"
	CULPERT_ARCHIVE=$ARCHIVE_URL CULPERT_TOKEN=$TOKEN "$BIN_CLI" pull "$@" -o "$TMP/pulled" \
		2>"$TMP/pulled.err"
}

# expected_diff BASE NEW FORMAT [ARGS]: culpert diff, run directly, on files named as the
# action names them (main.pb.gz, prof.pb.gz)
expected_diff() {
	rm -rf "$TMP/exp"
	mkdir "$TMP/exp"
	cp "$1" "$TMP/exp/main.pb.gz"
	cp "$2" "$TMP/exp/prof.pb.gz"
	_fmt=$3
	shift 3
	(cd "$TMP/exp" && "$ROOT/$BIN_CLI" diff main.pb.gz prof.pb.gz --threshold-bytes 1048576 \
		--threshold-pct 10.0 --format "$_fmt" "$@")
}

test_npm_deps() {
	sh deploy/archive/npm-deps.sh >"$TMP/npm.log" 2>&1 ||
		fail "npm-deps.sh: $(tail -5 "$TMP/npm.log")"
}
run_test_once action/npm_deps test_npm_deps

# --- the file -----------------------------------------------------------------------------

# the original culpert action's inputs, with its defaults, and ours
test_inputs() {
	"$PY" - "$ACTION" <<-'EOF' >"$TMP/inputs.out" 2>&1 || fail "$(tail -3 "$TMP/inputs.out")"
	import sys, yaml
	a = yaml.safe_load(open(sys.argv[1]))
	ins = a["inputs"]
	original = {"archive-url": None, "archive-token": None, "profile": None,
	            "culpert-cli": "culpert", "baseline-branch": "main",
	            "threshold-bytes": "1048576", "threshold-pct": "10.0",
	            "fail-on-regression": "false", "sticky-comment": "true",
	            "sticky-header": "culpert-diff", "commit-sha": "", "branch": "",
	            "access-client-id": "", "access-client-secret": ""}
	ours = {"min-span-bytes": "", "min-confidence": "", "upload": "true"}
	for name, default in {**original, **ours}.items():
	    assert name in ins, "no input " + name
	    if default is None:
	        assert ins[name].get("required") is True, name + " is not required"
	    else:
	        assert ins[name].get("default") == default, (name, ins[name].get("default"))
	assert set(ins) == set(original) | set(ours), sorted(set(ins) - set(original) - set(ours))
	assert a["runs"]["using"] == "composite"
	# the steps in the original's order: info, pull (before the upload), diff, comment,
	# gate, upload
	steps = a["runs"]["steps"]
	def at(pred):
	    return [i for i, s in enumerate(steps) if pred(s)]
	order = [at(lambda s: '" info ' in s.get("run", "")),
	         at(lambda s: "pull --latest-of" in s.get("run", "")),
	         at(lambda s: '--format markdown' in s.get("run", "")),
	         at(lambda s: s.get("uses", "").startswith("marocchino/sticky-pull-request-comment@")),
	         at(lambda s: "fail-on-regression" in str(s.get("if", ""))),
	         at(lambda s: '" upload ' in s.get("run", ""))]
	assert all(len(o) == 1 for o in order), order
	assert [o[0] for o in order] == sorted(o[0] for o in order), order
	EOF
}
run_test_once action/inputs test_inputs

# every input used, every expression one the runner implements; and the lint can fail
test_lint() {
	"$PY" "$RUNNER" lint "$ACTION" >"$TMP/lint.out" 2>&1 || fail "lint: $(cat "$TMP/lint.out")"
	sed 's/^  upload:$/  upload:\n    description: x\n    default: ""\n  unused-one:/' "$ACTION" \
		>"$TMP/unused.yml"
	"$PY" "$RUNNER" lint "$TMP/unused.yml" >"$TMP/lint.out" 2>&1 &&
		fail "lint passed an input never used"
	grep -q 'input unused-one is never used' "$TMP/lint.out" || fail "lint: $(cat "$TMP/lint.out")"
	sed 's/inputs.sticky-header/inputs.sticky-headr/' "$ACTION" >"$TMP/typo.yml"
	"$PY" "$RUNNER" lint "$TMP/typo.yml" >"$TMP/lint.out" 2>&1 && fail "lint passed a typo"
	grep -q 'inputs.sticky-headr is not declared' "$TMP/lint.out" ||
		fail "lint: $(cat "$TMP/lint.out")"
	sed "s/github.event_name == 'pull_request'/startsWith(github.event_name, 'pull')/" \
		"$ACTION" >"$TMP/func.yml"
	"$PY" "$RUNNER" lint "$TMP/func.yml" >"$TMP/lint.out" 2>&1 &&
		fail "lint passed a function it does not implement"
	grep -q 'function startsWith() is not implemented' "$TMP/lint.out" ||
		fail "lint: $(cat "$TMP/lint.out")"
}
run_test_once action/lint test_lint

# GitHub's documented semantics, on the operators the action uses
test_evaluator() {
	echo '{"github": {"event_name": "push", "sha": "abc", "head_ref": "",
		"event": {"after": "abc"}}, "inputs": {"x": "", "y": "true"}}' >"$TMP/ctx.json"
	# EXPR => VALUE (as JSON)
	while read -r line; do
		expr=${line% => *}
		want=${line##* => }
		got=$("$PY" "$RUNNER" eval "$expr" --contexts "$TMP/ctx.json" 2>&1)
		[ "$got" = "$want" ] || fail "eval $expr: $got, want $want"
	done <<-'EOF'
	inputs.x || github.event.pull_request.head.sha || github.sha => "abc"
	inputs.x || github.head_ref || 'fallback' => "fallback"
	github.event_name == 'pull_request' && inputs.y == 'true' => false
	github.event_name == 'PUSH' => true
	inputs.y == 'TRUE' => true
	inputs.y && 'second' => "second"
	inputs.x && 'second' => ""
	!inputs.x => true
	github.event.pull_request.head.sha => null
	'it''s' => "it's"
	1 == '1' => true
	'' == 0 => true
	null == false => true
	'abc' == 0 => false
	(inputs.y == 'true') != false => true
	success() && !failure() => true
	EOF
	[ "$("$PY" "$RUNNER" eval 'failure() && !success()' --failed)" = true ] || fail "failure()"
	for bad in "contains(github.sha, 'a')" "github.event.commits[0]" "github.*" "1 < 2" \
		"format('{0}', 'x')" "github.sha =="; do
		"$PY" "$RUNNER" eval "$bad" --contexts "$TMP/ctx.json" >"$TMP/bad" 2>&1
		[ $? -eq 2 ] && grep -q 'refused' "$TMP/bad" || fail "eval $bad: $(cat "$TMP/bad")"
	done
}
run_test_once action/evaluator test_evaluator

# --- runs ---------------------------------------------------------------------------------

# no baseline yet: the run passes, says so in the log and the summary, uploads
test_first_run() {
	archive_start first "$TOKEN" || return
	workspace first "$TMP/base.pb.gz"
	# shellcheck disable=SC2046
	act first push "$PUSH_SHA" refs/heads/main $(inputs) --with fail-on-regression=true
	[ "$act_rc" = 0 ] || { fail "first run: exit $act_rc: $(tail -5 "$TMP/first.log")"; return; }
	grep -q '^culpert-diff: no baseline on main yet: nothing to diff, this run passes$' \
		"$TMP/first.log" || fail "the log does not say there is no baseline"
	res first 'r["summary"]' | grep -q '^_No baseline yet: the archive has no profile of `main`' ||
		fail "summary: $(res first 'r["summary"]')"
	[ "$(res first 'r["outputs"]["baseline-found"]')" = false ] &&
		[ "$(res first 'r["outputs"]["regression"]')" = false ] ||
		fail "outputs: $(res first 'r["outputs"]')"
	res first 'r["outputs"]["markdown-file"]' | grep -q "^$WS/.tmp/culpert-diff\.[^/]*/diff.md$" ||
		fail "markdown-file output: $(res first 'r["outputs"]')"
	[ "$(outcomes first)" = "info=success pull=success diff=success Sticky PR comment=skipped \
Gate on a regression=success Upload the profile=success" ] || fail "steps: $(outcomes first)"
	in_archive --sha "$PUSH_SHA" && cmp -s "$TMP/pulled" "$TMP/base.pb.gz" ||
		fail "not uploaded under $PUSH_SHA: $(cat "$TMP/pulled.err")"
	in_archive --latest-of main && cmp -s "$TMP/pulled" "$TMP/base.pb.gz" ||
		fail "not the latest of main"
	archive_stop first
}
run_test action/first_run test_first_run

# a baseline on main, then a pull request that regresses
pr_setup() {
	archive_start "$1" "$TOKEN" || return 1
	CULPERT_ARCHIVE=$ARCHIVE_URL CULPERT_TOKEN=$TOKEN "$BIN_CLI" upload "$TMP/base.pb.gz" \
		--commit-sha "$PUSH_SHA" --branch main >/dev/null 2>"$TMP/setup.err" ||
		{ fail "baseline upload: $(cat "$TMP/setup.err")"; return 1; }
	workspace "$1" "$TMP/regressed.pb.gz"
}

test_pr_regression_warns() {
	pr_setup prwarn || return
	# shellcheck disable=SC2046
	act prwarn pull_request "$MERGE_SHA" refs/pull/7/merge $(inputs)
	[ "$act_rc" = 0 ] || { fail "warn-only run: exit $act_rc: $(tail -5 "$TMP/prwarn.log")"; return; }
	[ "$(res prwarn 'r["outputs"]["regression"]')" = true ] || fail "no regression output"
	[ "$(outcomes prwarn)" = "info=success pull=success diff=success Sticky PR comment=success \
Gate on a regression=skipped Upload the profile=success" ] || fail "steps: $(outcomes prwarn)"
	# the markdown, as culpert diff writes it, in the summary and as the comment's text
	expected_diff "$TMP/base.pb.gz" "$TMP/regressed.pb.gz" markdown >"$TMP/want.md"
	grep -q '^| `handle_request` | 10.00 MiB | 20.00 MiB | +10.00 MiB | +100.00% |' "$TMP/want.md" ||
		fail "the expected diff has no regression row: $(cat "$TMP/want.md")"
	res prwarn 'r["summary"]' >"$TMP/summary.md"
	cmp -s "$TMP/want.md" "$TMP/summary.md" ||
		fail "summary differs: $(diff "$TMP/want.md" "$TMP/summary.md" | head -5)"
	[ "$(res prwarn 'len(r["uses"])')" = 1 ] || fail "uses: $(res prwarn 'r["uses"]')"
	res prwarn 'r["uses"][0]["message"]' >"$TMP/comment.md"
	cmp -s "$TMP/want.md" "$TMP/comment.md" || fail "the comment is not the markdown diff"
	[ "$(res prwarn 'r["uses"][0]["with"]["header"]')" = culpert-diff ] ||
		fail "sticky header: $(res prwarn 'r["uses"][0]["with"]')"
	# the text diff in the log
	expected_diff "$TMP/base.pb.gz" "$TMP/regressed.pb.gz" text --no-fail >"$TMP/want.txt"
	grep -qF "$(grep '^regression' "$TMP/want.txt")" "$TMP/prwarn.log" ||
		fail "the text diff is not in the log"
	[ "$(res prwarn 'r["annotations"][0]["level"]')" = warning ] || fail "no warning annotation"
	# uploaded under the PR's head commit and source branch, not the merge commit or N/merge
	in_archive --sha "$HEAD_SHA" && cmp -s "$TMP/pulled" "$TMP/regressed.pb.gz" ||
		fail "not uploaded under the PR head $HEAD_SHA: $(cat "$TMP/pulled.err")"
	in_archive --latest-of feature/x && cmp -s "$TMP/pulled" "$TMP/regressed.pb.gz" ||
		fail "not the latest of feature/x: $(cat "$TMP/pulled.err")"
	in_archive --sha "$MERGE_SHA" && fail "uploaded under the merge commit"
	in_archive --latest-of 7/merge && fail "uploaded under 7/merge"
	in_archive --latest-of main && cmp -s "$TMP/pulled" "$TMP/base.pb.gz" ||
		fail "main's baseline changed by a pull request"
	archive_stop prwarn
}
run_test action/pr_regression_warns test_pr_regression_warns

test_regression_gate() {
	pr_setup gate || return
	# shellcheck disable=SC2046
	act gate pull_request "$MERGE_SHA" refs/pull/7/merge $(inputs) --with fail-on-regression=true
	[ "$act_rc" = 1 ] || fail "gated regression: exit $act_rc, want 1: $(tail -3 "$TMP/gate.log")"
	[ "$(outcomes gate)" = "info=success pull=success diff=success Sticky PR comment=success \
Gate on a regression=failure Upload the profile=skipped" ] || fail "steps: $(outcomes gate)"
	res gate 'r["annotations"]' | grep -q "'level': 'error'.*fail-on-regression is true" ||
		fail "annotations: $(res gate 'r["annotations"]')"
	res gate 'r["summary"]' | grep -q '^### Regressions' || fail "no summary before the gate"
	in_archive --sha "$HEAD_SHA" && fail "uploaded after the gate failed"

	# the same with no regression: passes, uploads
	workspace gate2 "$TMP/base.pb.gz"
	# shellcheck disable=SC2046
	act gate2 push "$PUSH2_SHA" refs/heads/main $(inputs) --with fail-on-regression=true
	[ "$act_rc" = 0 ] || fail "no regression, gated: exit $act_rc: $(tail -3 "$TMP/gate2.log")"
	[ "$(res gate2 'r["outputs"]["regression"]')" = false ] || fail "regression output"
	grep -q '^culpert-diff: no regression against main$' "$TMP/gate2.log" || fail "gate's note"
	in_archive --latest-of main && [ "$(res gate2 'len(r["uses"])')" = 0 ] ||
		fail "a push commented, or did not upload"
	archive_stop gate
}
run_test action/regression_gate test_regression_gate

# inputs of ours and the original's optional ones, each with its effect
test_options() {
	pr_setup opts || return
	# min-span-bytes over every span: quiet; min-confidence passed through
	# shellcheck disable=SC2046
	act quiet pull_request "$MERGE_SHA" refs/pull/7/merge $(inputs) \
		--with min-span-bytes=100MiB --with min-confidence=3sigma --with upload=false \
		--with sticky-comment=false --with fail-on-regression=true
	[ "$act_rc" = 0 ] || fail "min-span-bytes 100MiB: exit $act_rc: $(tail -3 "$TMP/quiet.log")"
	res quiet 'r["summary"]' | grep -q 'min span 100.00 MiB' || fail "min-span-bytes not passed"
	expected_diff "$TMP/base.pb.gz" "$TMP/regressed.pb.gz" markdown --min-span-bytes 100MiB \
		--min-confidence 3sigma >"$TMP/want.md"
	res quiet 'r["summary"]' | cmp -s - "$TMP/want.md" ||
		fail "summary is not culpert diff --min-span-bytes 100MiB --min-confidence 3sigma"
	[ "$(res quiet 'len(r["uses"])')" = 0 ] || fail "sticky-comment false still commented"
	in_archive --sha "$HEAD_SHA" && fail "upload false still uploaded"
	# the job's CULPERT_MIN_SPAN_BYTES applies when min-span-bytes is empty
	export CULPERT_MIN_SPAN_BYTES=100MiB
	# shellcheck disable=SC2046
	act envmin pull_request "$MERGE_SHA" refs/pull/7/merge $(inputs) --with upload=false
	unset CULPERT_MIN_SPAN_BYTES
	res envmin 'r["outputs"]["regression"]' | grep -q false ||
		fail "CULPERT_MIN_SPAN_BYTES from the environment ignored"

	# commit-sha, branch, sticky-header, baseline-branch; a branch that is shell syntax
	# stays data (inputs reach the scripts as variables)
	_br='x$(touch${IFS}pwned)`touch${IFS}pwned2`'
	# shellcheck disable=SC2046
	act named pull_request "$MERGE_SHA" refs/pull/7/merge $(inputs) --with commit-sha=dddd123 \
		--with "branch=$_br" --with sticky-header=svc-a --with baseline-branch=nosuch
	[ "$act_rc" = 0 ] || fail "named run: exit $act_rc: $(tail -3 "$TMP/named.log")"
	[ -e "$WS/pwned" ] || [ -e "$WS/pwned2" ] && fail "an input ran as a command"
	in_archive --sha dddd123 || fail "commit-sha input: $(cat "$TMP/pulled.err")"
	in_archive --latest-of "$_br" && cmp -s "$TMP/pulled" "$TMP/regressed.pb.gz" ||
		fail "branch input: $(cat "$TMP/pulled.err")"
	[ "$(res named 'r["uses"][0]["with"]["header"]')" = svc-a ] || fail "sticky-header input"
	[ "$(res named 'r["outputs"]["baseline-found"]')" = false ] || fail "baseline-branch input"
	res named 'r["summary"]' | grep -q 'no profile of `nosuch`' || fail "baseline-branch summary"
	archive_stop opts
}
run_test action/options test_options

# the Cloudflare Access inputs reach every request (the stand-in records the headers)
test_access_inputs() {
	workspace access "$TMP/regressed.pb.gz"
	: >"$TMP/access.out"
	"$PY" tests/tools/archive_standin.py --mode flaky --profile "$TMP/base.pb.gz" \
		--log "$TMP/access.reqs" --lifetime 60 >"$TMP/access.out" 2>&1 &
	track $!
	wait_for "$TMP/access.out" 'listening on' 10 || { fail "stand-in did not start"; return; }
	_url=$(sed -n 's/^archive-standin: listening on //p' "$TMP/access.out")
	act access push "$PUSH_SHA" refs/heads/main --with "archive-url=$_url" \
		--with "archive-token=$TOKEN" --with profile=prof.pb.gz \
		--with access-client-id=cf-id-1 --with access-client-secret=cf-secret-1
	[ "$act_rc" = 0 ] || fail "exit $act_rc: $(tail -3 "$TMP/access.log")"
	"$PY" - "$TMP/access.reqs" <<-'EOF' >"$TMP/access.chk" 2>&1 ||
		fail "$(tail -2 "$TMP/access.chk")"
	import json, sys
	reqs = [json.loads(l) for l in open(sys.argv[1])]
	assert [r["method"] for r in reqs] == ["GET", "POST"], reqs
	for r in reqs:
	    h = {k.lower(): v for k, v in r["headers"].items()}
	    assert h["cf-access-client-id"] == "cf-id-1", h
	    assert h["cf-access-client-secret"] == "cf-secret-1", h
	EOF
	grep -q 'cf-secret-1' "$TMP/access.log" && fail "the Access secret is in the log"
	grep -q "$TOKEN" "$TMP/access.log" && fail "the token is in the log"
	return 0
}
run_test action/access_inputs test_access_inputs

# culpert diff failing for another reason than a regression fails the job at the diff
test_diff_error() {
	pr_setup differr || return
	workspace differr "$TMP/other_rate.pb.gz"
	# shellcheck disable=SC2046
	act differr push "$PUSH2_SHA" refs/heads/main $(inputs)
	[ "$act_rc" = 1 ] || fail "rates differ: exit $act_rc, want 1"
	grep -q '^error: sample rates differ' "$TMP/differr.log" || fail "no diff error in the log"
	[ "$(outcomes differr)" = "info=success pull=success diff=failure Sticky PR comment=skipped \
Gate on a regression=skipped Upload the profile=skipped" ] || fail "steps: $(outcomes differr)"
	archive_stop differr
}
run_test action/diff_error test_diff_error

# the runner refuses what it cannot check: a uses: input the action does not have
test_uses_inputs_checked() {
	sed 's/^        path: \${{ steps.diff.outputs.markdown-file }}$/        file: x/' "$ACTION" \
		>"$TMP/badwith.yml"
	grep -q '^        file: x$' "$TMP/badwith.yml" || { fail "sed did not apply"; return; }
	workspace badwith "$TMP/base.pb.gz"
	"$PY" "$RUNNER" run "$TMP/badwith.yml" --event pull_request \
		--event-file "$TMP/pull_request.json" --sha "$MERGE_SHA" --ref refs/pull/7/merge \
		--work "$WS" --result "$TMP/badwith.json" --with archive-url=http://127.0.0.1:9 \
		--with archive-token=t --with profile=prof.pb.gz --with upload=false \
		>"$TMP/badwith.log" 2>&1
	[ $? -eq 2 ] || fail "an unknown input of marocchino/sticky-pull-request-comment@v2 passed"
	grep -q "has no input \['file'\]" "$TMP/badwith.log" || fail "$(tail -2 "$TMP/badwith.log")"
}
run_test_once action/uses_inputs_checked test_uses_inputs_checked

# deploy/github's example, and a workflow as written for the original action, unchanged
test_workflows() {
	"$PY" - "$WORKFLOW" <<-'EOF' >"$TMP/wf.chk" 2>&1 || fail "$(tail -2 "$TMP/wf.chk")"
	import sys, yaml
	wf = yaml.safe_load(open(sys.argv[1]))
	assert wf["permissions"]["pull-requests"] == "write", wf["permissions"]
	on = wf.get("on", wf.get(True))
	assert "pull_request" in on and "push" in on, on
	EOF
	pr_setup wf || return
	echo "{\"CULPERT_ARCHIVE\": \"$ARCHIVE_URL\"}" >"$TMP/vars.json"
	echo "{\"CULPERT_TOKEN\": \"$TOKEN\"}" >"$TMP/secrets.json"
	act wf pull_request "$MERGE_SHA" refs/pull/7/merge --workflow "$WORKFLOW" --job profile \
		--vars "$TMP/vars.json" --secrets "$TMP/secrets.json"
	[ "$act_rc" = 0 ] || fail "$WORKFLOW: exit $act_rc: $(tail -5 "$TMP/wf.log")"
	[ "$(res wf 'r["inputs"]["culpert-cli"]')" = .output/culpert ] ||
		fail "culpert-cli from the workflow"
	[ "$(res wf 'len(r["uses"])')" = 1 ] || fail "$WORKFLOW: no comment"
	in_archive --sha "$HEAD_SHA" || fail "$WORKFLOW: no upload"

	cat >"$TMP/original.yml" <<-'EOF'
	name: culpert
	on: [push, pull_request]
	jobs:
	  bench:
	    runs-on: ubuntu-latest
	    steps:
	      - uses: actions/checkout@v4
	      - name: Install culpert CLI
	        run: cargo install --locked culpert-cli
	      - name: Capture profile
	        run: ./run-my-bench > prof.pb.gz
	      - uses: someone/culpert/.github/actions/culpert-diff@v0.1.0
	        with:
	          archive-url:   ${{ vars.CULPERT_ARCHIVE }}
	          archive-token: ${{ secrets.CULPERT_TOKEN }}
	          profile:       prof.pb.gz
	EOF
	workspace orig "$TMP/regressed.pb.gz"
	act orig push "$PUSH2_SHA" refs/heads/main --workflow "$TMP/original.yml" --job bench \
		--vars "$TMP/vars.json" --secrets "$TMP/secrets.json"
	[ "$act_rc" = 0 ] || fail "the original's workflow: exit $act_rc: $(tail -5 "$TMP/orig.log")"
	[ "$(res orig 'r["outputs"]["regression"]')" = true ] || fail "the original's workflow: no diff"
	in_archive --latest-of main && cmp -s "$TMP/pulled" "$TMP/regressed.pb.gz" ||
		fail "the original's workflow: not uploaded on main"

	# CULPERT_PROJECT in the job's env scopes both the pull and the upload
	sed 's/^    runs-on: ubuntu-latest$/&\n    env:\n      CULPERT_PROJECT: acme\/shop/' \
		"$TMP/original.yml" >"$TMP/project.yml"
	grep -q 'CULPERT_PROJECT: acme/shop' "$TMP/project.yml" || { fail "sed did not apply"; return; }
	workspace proj "$TMP/base.pb.gz"
	act proj push "$PUSH_SHA" refs/heads/main --workflow "$TMP/project.yml" --job bench \
		--vars "$TMP/vars.json" --secrets "$TMP/secrets.json"
	[ "$act_rc" = 0 ] || fail "job env CULPERT_PROJECT: exit $act_rc: $(tail -5 "$TMP/proj.log")"
	[ "$(res proj 'r["outputs"]["baseline-found"]')" = false ] ||
		fail "job env CULPERT_PROJECT: main of the default scope was pulled"
	CULPERT_PROJECT=acme/shop in_archive --latest-of main &&
		cmp -s "$TMP/pulled" "$TMP/base.pb.gz" || fail "not uploaded in project acme/shop"
	archive_stop wf
}
run_test action/workflows test_workflows
