#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert upload / culpert pull against the real archive Worker, under the
# Workers runtime (deploy/archive/serve.mjs: miniflare, workerd) on a loopback port: round
# trips byte for byte, by sha and by branch, with and without a project; the Worker's
# refusals (401, 404, 413) as one clear error line.  Then what the Worker cannot be made to
# do, with a small stand-in server (tests/tools/archive_standin.py, loopback, bounded
# lifetime): 5xx then success (retried, a bounded number of times), a slow answer past the
# timeout, a body cut short, a 415, a redirect; and with nothing listening, a name that does
# not resolve.  The token never shows in the output, even at -vvv.
. tests/lib.sh
. tests/archive/serve.inc

MKPROF=$OUTPUT/tests/tools/mkprof
STANDIN=tests/tools/archive_standin.py
C=$BIN_CLI
TOKEN=client-test-token-9d41c7
SHA_A=1111111aaaa
SHA_B=2222222bbbb

# the client must reach loopback directly, and see only what each test gives it
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
unset CULPERT_ARCHIVE CULPERT_TOKEN CULPERT_PROJECT GITHUB_SHA GITHUB_REF_NAME \
	CF_ACCESS_CLIENT_ID CF_ACCESS_CLIENT_SECRET

# two different profiles of our own writer, and what is not one
"$MKPROF" -o "$TMP/a.pb.gz" tests/cli/data/basic.spec || echo "FAIL mkprof basic.spec"
"$MKPROF" -o "$TMP/b.pb.gz" tests/cli/data/inuse.spec || echo "FAIL mkprof inuse.spec"
printf 'not a profile\n' >"$TMP/text.txt"
printf 'gzip, but no profile inside\n' | gzip -c >"$TMP/notpprof.gz"
head -c 400 "$TMP/a.pb.gz" >"$TMP/cut.pb.gz"

test_npm_deps() {
	sh deploy/archive/npm-deps.sh >"$TMP/npm.log" 2>&1 ||
		fail "npm-deps.sh: $(tail -5 "$TMP/npm.log")"
}
run_test_once archive_client/npm_deps test_npm_deps

# standin_start NAME MODE [ARGS...]: sets $STANDIN_URL; $TMP/NAME.log gets its requests
standin_start() {
	_n=$1
	shift
	: >"$TMP/$_n.out"
	: >"$TMP/$_n.log"
	"$PY" "$STANDIN" --log "$TMP/$_n.log" --lifetime 60 --mode "$@" \
		>"$TMP/$_n.out" 2>"$TMP/$_n.err" &
	track $!
	wait_for "$TMP/$_n.out" 'listening on' 10 || {
		fail "stand-in $_n did not start: $(cat "$TMP/$_n.err")"
		return 1
	}
	STANDIN_URL=$(sed -n 's/^archive-standin: listening on //p' "$TMP/$_n.out")
}

# requests NAME: how many requests the stand-in NAME received
requests() {
	wc -l <"$TMP/$1.log" | tr -d ' '
}

# --- against the Worker -------------------------------------------------------------------

test_roundtrip() {
	archive_start rt "$TOKEN" || return
	export CULPERT_ARCHIVE="$ARCHIVE_URL" CULPERT_TOKEN="$TOKEN"
	"$C" upload "$TMP/a.pb.gz" --commit-sha "$SHA_A" --branch main >"$TMP/receipt" \
		2>"$TMP/up.err" || { fail "upload a: $(cat "$TMP/up.err")"; return; }
	"$PY" -c 'import json, sys; r = json.load(open(sys.argv[1]))
assert r["sha"] == sys.argv[2] and r["branch"] == "main" and r["size"] == int(sys.argv[3]), r' \
		"$TMP/receipt" "$SHA_A" "$(wc -c <"$TMP/a.pb.gz")" 2>"$TMP/receipt.err" ||
		fail "receipt on stdout: $(cat "$TMP/receipt") $(tail -1 "$TMP/receipt.err")"
	# from the CI's variables, a trailing / on the endpoint
	GITHUB_SHA=$SHA_B GITHUB_REF_NAME=main CULPERT_ARCHIVE="$ARCHIVE_URL/" \
		"$C" upload "$TMP/b.pb.gz" >/dev/null 2>"$TMP/up.err" ||
		{ fail "upload b from GITHUB_SHA: $(cat "$TMP/up.err")"; return; }

	"$C" pull --sha "$SHA_A" -o "$TMP/got_a" 2>"$TMP/pull.err" ||
		fail "pull --sha: $(cat "$TMP/pull.err")"
	cmp -s "$TMP/a.pb.gz" "$TMP/got_a" || fail "pull --sha $SHA_A: bytes differ from the upload"
	"$C" pull --latest-of main -o "$TMP/got_latest" 2>"$TMP/pull.err" ||
		fail "pull --latest-of: $(cat "$TMP/pull.err")"
	cmp -s "$TMP/b.pb.gz" "$TMP/got_latest" || fail "pull --latest-of main: not b, the last upload"
	"$C" upload - --commit-sha 3333333 --branch other <"$TMP/a.pb.gz" >/dev/null 2>"$TMP/up.err" &&
		"$C" pull --latest-of other -o "$TMP/got_stdin" 2>/dev/null &&
		cmp -s "$TMP/a.pb.gz" "$TMP/got_stdin" || fail "upload - (stdin): $(cat "$TMP/up.err")"
	"$C" pull --latest-of main >"$TMP/got_stdout" 2>"$TMP/pull.err" || fail "pull to stdout"
	cmp -s "$TMP/b.pb.gz" "$TMP/got_stdout" || fail "pull to stdout: bytes differ"
	# an independent reader: what curl gets from the Worker is the file uploaded
	acurl -H "Authorization: Bearer $TOKEN" -o "$TMP/curl_a" "$ARCHIVE_URL/v1/profiles/$SHA_A"
	cmp -s "$TMP/a.pb.gz" "$TMP/curl_a" || fail "the Worker does not hold a's bytes"

	# a project is its own scope: by flag, and by CULPERT_PROJECT
	"$C" upload "$TMP/a.pb.gz" --project acme/shop --commit-sha "$SHA_B" --branch main \
		>/dev/null 2>"$TMP/up.err" || { fail "upload --project: $(cat "$TMP/up.err")"; return; }
	"$C" pull --latest-of main --project acme/shop -o "$TMP/got_p" 2>"$TMP/pull.err" ||
		fail "pull --project: $(cat "$TMP/pull.err")"
	cmp -s "$TMP/a.pb.gz" "$TMP/got_p" || fail "pull --latest-of main --project: not a"
	CULPERT_PROJECT=acme/shop "$C" pull --sha "$SHA_B" -o "$TMP/got_pe" 2>/dev/null &&
		cmp -s "$TMP/a.pb.gz" "$TMP/got_pe" || fail "CULPERT_PROJECT=acme/shop: not a"
	"$C" pull --sha "$SHA_B" -o "$TMP/got_d" 2>/dev/null && cmp -s "$TMP/b.pb.gz" "$TMP/got_d" ||
		fail "the default scope's $SHA_B changed with the project's upload"
	# an explicit empty --project is the default scope, whatever the variable says
	CULPERT_PROJECT=acme/shop "$C" pull --sha "$SHA_B" --project '' -o "$TMP/got_d2" \
		2>/dev/null && cmp -s "$TMP/b.pb.gz" "$TMP/got_d2" || fail "--project '' is not the default scope"
	ls "$TMP" | grep -q '\.tmp\.' && fail "temporary files left: $(ls "$TMP" | grep '\.tmp\.')"
	unset CULPERT_ARCHIVE CULPERT_TOKEN
	archive_stop rt
}
run_test archive_client/roundtrip test_roundtrip

test_worker_refusals() {
	archive_start refuse "$TOKEN" || return
	export CULPERT_ARCHIVE="$ARCHIVE_URL" CULPERT_TOKEN="$TOKEN"
	"$C" upload "$TMP/a.pb.gz" --commit-sha "$SHA_A" --branch main >/dev/null 2>&1 ||
		{ fail "upload"; return; }
	_want='pull of the latest profile of branch main .*: token rejected (HTTP 401: bearer token'
	CULPERT_TOKEN=wrong-token expect_error 2 "$_want rejected)" "$C" pull --latest-of main \
		-o "$TMP/w"
	[ -e "$TMP/w" ] && fail "a refused pull wrote $TMP/w"
	expect_error 2 'upload of .* failed: token rejected (HTTP 401' \
		"$C" upload "$TMP/a.pb.gz" --token wrong-token --commit-sha "$SHA_A" --branch main

	# missing: exit 2, or 0 with --allow-missing, a note, and nothing written either way
	expect_error 2 'not found (HTTP 404: no profile for branch nope).*--allow-missing' \
		"$C" pull --latest-of nope -o "$TMP/m"
	[ -e "$TMP/m" ] && fail "a 404 wrote $TMP/m"
	"$C" pull --latest-of nope --allow-missing -o "$TMP/m" >"$TMP/m.out" 2>"$TMP/m.err" ||
		fail "--allow-missing on a 404: exit $?"
	grep -q 'is not in the archive (HTTP 404).*nothing written (--allow-missing)' "$TMP/m.err" ||
		fail "--allow-missing: no note on stderr: $(cat "$TMP/m.err")"
	grep -q '^error' "$TMP/m.err" && fail "--allow-missing printed an error: $(cat "$TMP/m.err")"
	[ -e "$TMP/m" ] || [ -s "$TMP/m.out" ] && fail "--allow-missing wrote something"
	"$C" pull --sha 3333333 --allow-missing >"$TMP/m.out" 2>/dev/null && [ ! -s "$TMP/m.out" ] ||
		fail "--allow-missing to stdout: exit $? or output"
	# an existing file is left as it was
	cp "$TMP/b.pb.gz" "$TMP/keep"
	"$C" pull --latest-of nope --allow-missing -o "$TMP/keep" 2>/dev/null &&
		cmp -s "$TMP/b.pb.gz" "$TMP/keep" || fail "--allow-missing changed an existing file"
	# only a missing profile: a wrong endpoint is an error even so
	expect_error 2 'no such endpoint (HTTP 404: no such endpoint)' \
		"$C" pull --latest-of main --allow-missing --endpoint "$ARCHIVE_URL/api" -o "$TMP/m"
	# the Worker's 400 on a branch it refuses, not retried
	expect_error 2 'refused the request (HTTP 400: invalid branch' \
		"$C" upload "$TMP/a.pb.gz" --commit-sha "$SHA_A" --branch 'has space'
	grep -q 'trying again' "$TMP/err.txt" && fail "a 400 was retried"
	unset CULPERT_ARCHIVE CULPERT_TOKEN
	archive_stop refuse
}
run_test archive_client/worker_refusals test_worker_refusals

test_worker_413() {
	archive_start small "$TOKEN" --max-bytes 100 || return
	_want='too large for the archive (HTTP 413: profile too large: the limit is 100 bytes)'
	CULPERT_TOKEN=$TOKEN expect_error 2 "$_want" \
		"$C" upload "$TMP/a.pb.gz" --endpoint "$ARCHIVE_URL" --commit-sha "$SHA_A" --branch main
	grep -q 'trying again' "$TMP/err.txt" && fail "a 413 was retried"
	archive_stop small
}
run_test archive_client/worker_413 test_worker_413

# --- the client's own checks ----------------------------------------------------------------

# a file that is not a whole profile is refused before anything is sent
test_refuses_non_profiles() {
	standin_start np status --status 500 || return
	for f in "text.txt:not gzip-compressed" "notpprof.gz:not a pprof profile" \
		"cut.pb.gz:truncated gzip data"; do
		CULPERT_TOKEN=$TOKEN expect_error 2 "${f%%:*}: ${f#*:}.*: nothing uploaded" \
			"$C" upload "$TMP/${f%%:*}" --endpoint "$STANDIN_URL" --commit-sha "$SHA_A" \
			--branch main
	done
	CULPERT_TOKEN=$TOKEN expect_error 2 'nosuch.pb.gz: No such file' "$C" upload \
		"$TMP/nosuch.pb.gz" --endpoint "$STANDIN_URL" --commit-sha "$SHA_A" --branch main
	# over the 1 GiB bound: refused from its size, not read (a sparse file)
	truncate -s 1025M "$TMP/huge.pb.gz"
	CULPERT_TOKEN=$TOKEN expect_error 2 'huge.pb.gz: larger than 1024 MiB' "$C" upload \
		"$TMP/huge.pb.gz" --endpoint "$STANDIN_URL" --commit-sha "$SHA_A" --branch main
	rm -f "$TMP/huge.pb.gz"
	[ "$(requests np)" = 0 ] || fail "$(requests np) requests sent for files that are not profiles"
}
run_test archive_client/refuses_non_profiles test_refuses_non_profiles

test_usage_errors() {
	expect_error 2 'no archive endpoint: .*CULPERT_ARCHIVE' "$C" pull --latest-of main
	CULPERT_ARCHIVE=http://127.0.0.1:9 expect_error 2 'no archive token: set CULPERT_TOKEN' \
		"$C" pull --latest-of main
	CULPERT_ARCHIVE=ftp://example.com CULPERT_TOKEN=t expect_error 2 'want an https://' \
		"$C" pull --latest-of main
	CULPERT_ARCHIVE=http://127.0.0.1:9 CULPERT_TOKEN=t expect_error 2 'no commit sha: .*GITHUB_SHA' \
		"$C" upload "$TMP/a.pb.gz" --branch main
	CULPERT_ARCHIVE=http://127.0.0.1:9 CULPERT_TOKEN=t expect_error 2 'no branch: .*GITHUB_REF_NAME' \
		"$C" upload "$TMP/a.pb.gz" --commit-sha "$SHA_A"
	expect_error 2 "invalid commit sha 'xyz'" "$C" upload "$TMP/a.pb.gz" --commit-sha xyz
	expect_error 2 'want one of --sha SHA or --latest-of BRANCH' "$C" pull
	expect_error 2 'want one of --sha SHA or --latest-of BRANCH' "$C" pull --sha "$SHA_A" \
		--latest-of main
	expect_error 2 "invalid --sha 'abc'" "$C" pull --sha abc
	expect_error 2 "invalid --retries '11'" "$C" pull --sha "$SHA_A" --retries 11
	_nl='t
t'
	CULPERT_ARCHIVE=http://127.0.0.1:9 CULPERT_TOKEN=$_nl expect_error 2 \
		'token holds spaces or control characters' "$C" pull --sha "$SHA_A"
	CULPERT_ARCHIVE=http://127.0.0.1:9 CULPERT_TOKEN=t expect_error 2 \
		'token holds spaces or control characters' "$C" pull --sha "$SHA_A" --token 'a b'
	CULPERT_ARCHIVE=http://127.0.0.1:9 CULPERT_TOKEN=t CF_ACCESS_CLIENT_ID=id expect_error 2 \
		'needs both the client id and the client secret' "$C" pull --sha "$SHA_A"
	# -o is refused before the archive is asked (lib/outfile: tests/cli/test_outfile.sh)
	mkdir -p "$TMP/adir"
	CULPERT_ARCHIVE=http://127.0.0.1:9 CULPERT_TOKEN=t expect_error 2 \
		'cannot write .*adir: it is a directory.*nothing asked of the archive' \
		"$C" pull --sha "$SHA_A" -o "$TMP/adir"
	ln -sf "$TMP/nowhere.pb.gz" "$TMP/alink"
	CULPERT_ARCHIVE=http://127.0.0.1:9 CULPERT_TOKEN=t expect_error 2 \
		'cannot write .*alink: it is a symbolic link to .*nowhere.pb.gz, which does not exist' \
		"$C" pull --sha "$SHA_A" -o "$TMP/alink"
	# a binary profile is not written to a terminal (script(1) gives the command one)
	CULPERT_ARCHIVE=http://127.0.0.1:9 CULPERT_TOKEN=t script -qec "$C pull --sha $SHA_A" \
		/dev/null >"$TMP/tty.out" 2>&1
	grep -q 'error: not writing a binary profile to a terminal: pass -o FILE' "$TMP/tty.out" ||
		fail "pull to a terminal: $(cat "$TMP/tty.out")"
	for cmd in upload pull; do
		"$C" $cmd --help >"$TMP/help" 2>&1 || fail "$cmd --help: exit $?"
		grep -q '^EXAMPLES:' "$TMP/help" || fail "$cmd --help has no EXAMPLES"
		grep -q -- '--cf-access-client-secret' "$TMP/help" || fail "$cmd --help: no Access options"
	done
}
run_test archive_client/usage_errors test_usage_errors

# --- failure modes, with the stand-in -----------------------------------------------------

test_token_never_printed() {
	_tok=tok-DISTINCT-5f9e0c1b
	_sec=cfsec-DISTINCT-77aa31
	archive_start tok "$TOKEN" || return
	standin_start echo echo || return
	: >"$TMP/all.txt"
	for url in "$ARCHIVE_URL" "$STANDIN_URL"; do
		for t in "$_tok" "$TOKEN"; do
			CULPERT_TOKEN=$t CF_ACCESS_CLIENT_ID=cfid CF_ACCESS_CLIENT_SECRET=$_sec \
				"$C" upload "$TMP/a.pb.gz" --endpoint "$url" --commit-sha "$SHA_A" \
				--branch main -vvv >>"$TMP/all.txt" 2>&1
			CULPERT_TOKEN=$t CF_ACCESS_CLIENT_ID=cfid CF_ACCESS_CLIENT_SECRET=$_sec \
				"$C" pull --sha "$SHA_A" --endpoint "$url" -o "$TMP/tok.out" -vvv \
				>>"$TMP/all.txt" 2>&1
		done
		"$C" pull --sha "$SHA_A" --endpoint "$url" --token "$_tok" -vv -o "$TMP/tok.out" \
			>>"$TMP/all.txt" 2>&1
	done
	# the trace did print the headers: the check below looks where the token would be
	grep -q '^> Authorization: <redacted>$' "$TMP/all.txt" || fail "no redacted header in the trace"
	grep -q '^> CF-Access-Client-Secret: <redacted>$' "$TMP/all.txt" ||
		fail "no redacted Access secret in the trace"
	grep -q 'rejected: Bearer \*\*\*' "$TMP/all.txt" || fail "the echoed token is not masked"
	for s in "$_tok" "$_sec" "$TOKEN"; do
		grep -n -F "$s" "$TMP/all.txt" >"$TMP/leak" && fail "'$s' in the output: $(head -3 "$TMP/leak")"
	done
	[ "$(requests echo)" = 5 ] || fail "the stand-in saw $(requests echo) requests, want 5"
	archive_stop tok
}
run_test archive_client/token_never_printed test_token_never_printed

test_access_headers() {
	standin_start hdr flaky --fail 0 --profile "$TMP/a.pb.gz" || return
	CULPERT_TOKEN=$TOKEN "$C" pull --sha "$SHA_A" --endpoint "$STANDIN_URL" -o "$TMP/h1" \
		--cf-access-client-id the-id --cf-access-client-secret the-secret 2>"$TMP/h.err" ||
		fail "pull with Access flags: $(cat "$TMP/h.err")"
	CULPERT_TOKEN=$TOKEN CF_ACCESS_CLIENT_ID=env-id CF_ACCESS_CLIENT_SECRET=env-secret \
		"$C" upload "$TMP/a.pb.gz" --endpoint "$STANDIN_URL" --commit-sha "$SHA_A" \
		--branch feature/x --project acme/shop >/dev/null 2>"$TMP/h.err" ||
		fail "upload with Access variables: $(cat "$TMP/h.err")"
	CULPERT_TOKEN=$TOKEN "$C" pull --latest-of main --endpoint "$STANDIN_URL" -o "$TMP/h3" \
		2>"$TMP/h.err" || fail "pull without Access: $(cat "$TMP/h.err")"
	"$PY" - "$TMP/hdr.log" "$TOKEN" <<-'EOF' >"$TMP/h.check" 2>&1 || fail "$(tail -3 "$TMP/h.check")"
	import json, sys
	reqs = [json.loads(l) for l in open(sys.argv[1])]
	assert len(reqs) == 3, reqs
	h = [{k.lower(): v for k, v in r["headers"].items()} for r in reqs]
	for x in h:
	    assert x["authorization"] == "Bearer " + sys.argv[2], x
	assert h[0]["cf-access-client-id"] == "the-id", h[0]
	assert h[0]["cf-access-client-secret"] == "the-secret", h[0]
	assert h[1]["cf-access-client-id"] == "env-id", h[1]
	assert h[1]["cf-access-client-secret"] == "env-secret", h[1]
	assert "cf-access-client-id" not in h[2] and "cf-access-client-secret" not in h[2], h[2]
	assert h[1]["content-type"] == "application/octet-stream", h[1]
	assert reqs[0]["method"] == "GET" and reqs[0]["path"] == "/v1/profiles/1111111aaaa", reqs[0]
	assert reqs[1]["method"] == "POST", reqs[1]
	want = "/v1/profiles/1111111aaaa?branch=feature%2Fx&project=acme%2Fshop"
	assert reqs[1]["path"] == want, reqs[1]
	assert reqs[2]["path"] == "/v1/profiles/latest?branch=main", reqs[2]
	EOF
}
run_test archive_client/access_headers test_access_headers

test_server_down() {
	_port=$(free_port)
	_t0=$(date +%s)
	CULPERT_TOKEN=$TOKEN expect_error 2 'connection refused (.*) after 2 attempts: is the archive up' \
		"$C" pull --sha "$SHA_A" --endpoint "http://127.0.0.1:$_port" --retries 1 -o "$TMP/d"
	grep -q '^warning: attempt 1 of 2 failed (.*); trying again in 1s$' "$TMP/err.txt" ||
		fail "no retry note: $(cat "$TMP/err.txt")"
	[ $(($(date +%s) - _t0)) -le 5 ] || fail "refused connection: $(($(date +%s) - _t0)) s"
	[ -e "$TMP/d" ] && fail "wrote $TMP/d"
	CULPERT_TOKEN=$TOKEN expect_error 2 'upload of .* failed: connection refused' \
		"$C" upload "$TMP/a.pb.gz" --endpoint "http://127.0.0.1:$_port" --retries 0 \
		--commit-sha "$SHA_A" --branch main
}
run_test archive_client/server_down test_server_down

test_dns_failure() {
	# .invalid never resolves (RFC 6761)
	CULPERT_TOKEN=$TOKEN expect_error 2 'cannot resolve the archive.s host (DNS: .*archive.invalid' \
		"$C" pull --sha "$SHA_A" --endpoint "https://archive.invalid" --retries 0 -o "$TMP/d"
	grep -q 'plain http' "$TMP/err.txt" && fail "a warning about plain http for https"
	# plain http beyond loopback: said, since the token would cross the network in clear
	CULPERT_TOKEN=$TOKEN expect_error 2 'cannot resolve' "$C" pull --sha "$SHA_A" \
		--endpoint "http://archive.invalid" --retries 0 -o "$TMP/d"
	grep -q '^warning: archive.invalid is plain http: the token crosses the network' \
		"$TMP/err.txt" || fail "no plain http warning: $(cat "$TMP/err.txt")"
}
run_test archive_client/dns_failure test_dns_failure

test_timeout() {
	standin_start slow slow --delay 8 --profile "$TMP/a.pb.gz" || return
	_t0=$(date +%s)
	CULPERT_TOKEN=$TOKEN expect_error 2 'timed out (.*) after 2 attempts: raise --timeout' \
		"$C" pull --sha "$SHA_A" --endpoint "$STANDIN_URL" --timeout 1s --retries 1 -o "$TMP/s"
	_dt=$(($(date +%s) - _t0))
	# two attempts of 1 s and a 1 s pause; the server would have answered after 8 s
	[ "$_dt" -le 5 ] || fail "--timeout 1s --retries 1 took $_dt s"
	[ "$(requests slow)" = 2 ] || fail "$(requests slow) attempts, want 2"
	[ -e "$TMP/s" ] && fail "wrote $TMP/s"
}
run_test archive_client/timeout test_timeout

test_retry_5xx() {
	standin_start flaky flaky --fail 2 --profile "$TMP/a.pb.gz" || return
	CULPERT_TOKEN=$TOKEN "$C" upload "$TMP/a.pb.gz" --endpoint "$STANDIN_URL" \
		--commit-sha "$SHA_A" --branch main >"$TMP/r.out" 2>"$TMP/r.err" ||
		fail "500, 500, then 201: exit $?: $(cat "$TMP/r.err")"
	[ "$(requests flaky)" = 3 ] || fail "$(requests flaky) requests, want 3"
	_note='^warning: attempt [12] of 3 failed (HTTP 500: internal error); trying again in [12]s$'
	[ "$(grep -c "$_note" "$TMP/r.err")" = 2 ] || fail "retry notes: $(cat "$TMP/r.err")"
	grep -q '"size": *'"$(wc -c <"$TMP/a.pb.gz")" "$TMP/r.out" || fail "receipt: $(cat "$TMP/r.out")"

	# more failures than attempts: exactly 1 + --retries requests, then the error
	standin_start down status --status 503 || return
	_want='the archive failed (HTTP 503: stand-in answer 503) after 3 attempts'
	CULPERT_TOKEN=$TOKEN expect_error 2 "$_want" \
		"$C" pull --sha "$SHA_A" --endpoint "$STANDIN_URL" -o "$TMP/r"
	[ "$(requests down)" = 3 ] ||
		fail "503 every time: $(requests down) requests, want 3 (default --retries 2)"
	# a 4xx is not retried
	standin_start four status --status 403 || return
	CULPERT_TOKEN=$TOKEN expect_error 2 'token rejected (HTTP 403: stand-in answer 403)' \
		"$C" pull --sha "$SHA_A" --endpoint "$STANDIN_URL" -o "$TMP/r"
	[ "$(requests four)" = 1 ] || fail "403: $(requests four) requests, want 1"
	# 429 is retried like a 5xx
	standin_start busy status --status 429 || return
	CULPERT_TOKEN=$TOKEN expect_error 2 'rate limiting (HTTP 429: stand-in answer 429) after 2' \
		"$C" pull --sha "$SHA_A" --endpoint "$STANDIN_URL" --retries 1 -o "$TMP/r"
	[ "$(requests busy)" = 2 ] || fail "429: $(requests busy) requests, want 2"
}
run_test archive_client/retry_5xx test_retry_5xx

test_truncated_pull() {
	cp "$TMP/b.pb.gz" "$TMP/old.pb.gz"
	# announced whole, half sent, connection closed
	standin_start trunc truncate --profile "$TMP/a.pb.gz" || return
	_want='pull of the profile of .*: the connection broke before the answer was complete'
	CULPERT_TOKEN=$TOKEN expect_error 2 "$_want.*nothing written" \
		"$C" pull --sha "$SHA_A" --endpoint "$STANDIN_URL" --retries 0 -o "$TMP/old.pb.gz"
	cmp -s "$TMP/b.pb.gz" "$TMP/old.pb.gz" || fail "a truncated pull changed the existing file"
	CULPERT_TOKEN=$TOKEN "$C" pull --sha "$SHA_A" --endpoint "$STANDIN_URL" --retries 0 \
		>"$TMP/t.out" 2>/dev/null && fail "a truncated pull to stdout succeeded"
	[ -s "$TMP/t.out" ] && fail "a truncated pull wrote $(wc -c <"$TMP/t.out") bytes to stdout"
	# half a profile, announced as such: the decode refuses it
	standin_start short short --profile "$TMP/a.pb.gz" || return
	CULPERT_TOKEN=$TOKEN expect_error 2 'is not a complete profile: truncated gzip data' \
		"$C" pull --sha "$SHA_A" --endpoint "$STANDIN_URL" -o "$TMP/old.pb.gz"
	cmp -s "$TMP/b.pb.gz" "$TMP/old.pb.gz" || fail "a short profile changed the existing file"
	[ "$(requests short)" = 1 ] || fail "a complete but bad answer was retried"
	ls "$TMP" | grep -q '\.tmp\.' && fail "temporary files left: $(ls "$TMP" | grep '\.tmp\.')"
}
run_test archive_client/truncated_pull test_truncated_pull

test_server_answers() {
	standin_start u415 status --status 415 || return
	_want='refused the body as not gzip (HTTP 415: stand-in answer 415): upload the .pb.gz'
	CULPERT_TOKEN=$TOKEN expect_error 2 "$_want" \
		"$C" upload "$TMP/a.pb.gz" --endpoint "$STANDIN_URL" --commit-sha "$SHA_A" --branch main
	standin_start redir redirect || return
	_want='redirected to https://team.cloudflareaccess.com/.* (HTTP 302).*--cf-access-client-id'
	CULPERT_TOKEN=$TOKEN expect_error 2 "$_want" \
		"$C" pull --sha "$SHA_A" --endpoint "$STANDIN_URL" -o "$TMP/x"
	[ "$(requests redir)" = 1 ] || fail "the redirect was followed or retried"
	# a receipt that does not match what was sent
	standin_start liar liar || return
	CULPERT_TOKEN=$TOKEN expect_error 2 "the receipt's size differs from the [0-9]* bytes sent" \
		"$C" upload "$TMP/a.pb.gz" --endpoint "$STANDIN_URL" --commit-sha "$SHA_A" --branch main
	# TLS to a server that speaks plain HTTP: a TLS error, final
	CULPERT_TOKEN=$TOKEN expect_error 2 'TLS failed (.*): check the archive.s certificate' \
		"$C" pull --sha "$SHA_A" --endpoint "https://${STANDIN_URL#http://}" -o "$TMP/x"
	grep -q 'trying again' "$TMP/err.txt" && fail "a TLS failure was retried"
	return 0
}
run_test archive_client/server_answers test_server_answers
