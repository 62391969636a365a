#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The profile archive Worker (deploy/archive) under the real Workers runtime (workerd, through
# miniflare from the npm registry): its npm packages installed if missing, its own tests
# (deploy/archive/test/, one PASS/FAIL line each here), then serve.mjs as the client tests
# start it, over loopback with curl: answers, round trip, persistence, stop on SIGTERM, and
# nothing left behind after SIGKILL.
. tests/lib.sh
. tests/archive/serve.inc

ARCHIVE=deploy/archive
TOKEN=archive-test-token

test_npm_deps() {
	sh "$ARCHIVE/npm-deps.sh" >"$TMP/npm.log" 2>&1 ||
		fail "npm-deps.sh: $(tail -5 "$TMP/npm.log")"
}
run_test archive_npm_deps test_npm_deps

# node's TAP, one "ok N - name" / "not ok N - name" per test at the top level, turned into
# PASS/FAIL lines, the first error line of a failure as its reason
worker_tests() {
	(cd "$ARCHIVE" && timeout 300 node --test --test-reporter=tap test/) \
		>"$TMP/worker.tap" 2>&1
	_rc=$?
	awk '
		function flush() {
			if (name != "")
				printf "FAIL worker: %s: %s\n", name, why
			name = ""
		}
		/^ok [0-9]+ - / {
			flush(); sub(/^ok [0-9]+ - /, ""); print "PASS worker: " $0; next }
		/^not ok [0-9]+ - / {
			flush(); sub(/^not ok [0-9]+ - /, ""); name = $0; why = "?"; next }
		# YAML: error: '"'"'one line'"'"', or error: |- and the message on the lines below
		name != "" && why == "|" { sub(/^ +/, ""); why = $0; next }
		name != "" && why == "?" && /^  error: / {
			sub(/^  error: /, ""); why = ($0 ~ /^[|>]/) ? "|" : $0 }
		END { flush() }' "$TMP/worker.tap"
	# a crash, a timeout or no test at all: not covered by a "not ok" line
	_n=$(grep -c '^ok [0-9]* - ' "$TMP/worker.tap")
	if { [ "$_rc" -ne 0 ] && ! grep -q '^not ok ' "$TMP/worker.tap"; } || [ "$_n" -eq 0 ]; then
		echo "FAIL worker_tests: node --test exited $_rc, $_n tests passed: \
$(tail -c 1500 "$TMP/worker.tap")"
	fi
}
worker_tests

# a gzip file as `culpert upload` sends one: incompressible, every byte value
head -c 20000 /dev/urandom | gzip -c >"$TMP/prof.pb.gz"

test_serve() {
	archive_start serve "$TOKEN" || return
	case "$ARCHIVE_URL" in
	http://127.0.0.1:[0-9]*) ;;
	*) fail "serve.mjs listens on '$ARCHIVE_URL', not on loopback"; return ;;
	esac
	_body=$(acurl "$ARCHIVE_URL/healthz") || { fail "GET /healthz: curl failed"; return; }
	[ "$_body" = '{"ok":true}' ] || fail "GET /healthz answered '$_body'"

	_code=$(acurl -o "$TMP/receipt" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/octet-stream' --data-binary "@$TMP/prof.pb.gz" \
		"$ARCHIVE_URL/v1/profiles/0123abc?branch=main")
	[ "$_code" = 201 ] || fail "POST: status $_code: $(cat "$TMP/receipt")"
	grep -q '"sha":"0123abc"' "$TMP/receipt" || fail "receipt: $(cat "$TMP/receipt")"
	_code=$(acurl -o "$TMP/pulled" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
		"$ARCHIVE_URL/v1/profiles/latest?branch=main")
	[ "$_code" = 200 ] || fail "GET latest: status $_code"
	cmp -s "$TMP/prof.pb.gz" "$TMP/pulled" || fail "GET latest: bytes differ from the upload"
	_code=$(acurl -o "$TMP/denied" -w '%{http_code}' -H "Authorization: Bearer wrong" \
		"$ARCHIVE_URL/v1/profiles/0123abc")
	[ "$_code" = 401 ] || fail "wrong token: status $_code, want 401"
	grep -q '^{"error":"bearer token rejected"}$' "$TMP/denied" ||
		fail "wrong token: body $(cat "$TMP/denied")"

	# a second server on the same port: one clear error, exit 1
	_port=${ARCHIVE_URL##*:}
	ARCHIVE_TOKEN=$TOKEN timeout 30 node "$ARCHIVE/serve.mjs" --port "$_port" \
		>"$TMP/dup.out" 2>"$TMP/dup.err"
	_rc=$?
	[ "$_rc" -eq 1 ] || fail "second server on port $_port: exit $_rc, want 1"
	grep -q '^error: cannot start the archive on 127.0.0.1:' "$TMP/dup.err" ||
		fail "second server on port $_port: $(tail -2 "$TMP/dup.err")"

	_work=$(sed -n 's/^culpert-archive: data in \(.*\)\/data (removed when it stops)$/\1/p' \
		"$TMP/serve.err")
	[ -d "$_work" ] || { fail "no work directory in: $(cat "$TMP/serve.err")"; return; }
	archive_stop serve || return
	acurl -o /dev/null "$ARCHIVE_URL/healthz" 2>/dev/null && fail "still answers after SIGTERM"
	[ -e "$_work" ] && fail "work directory $_work left behind"
	return 0
}
run_test archive_serve test_serve

test_serve_args() {
	ARCHIVE_TOKEN='' timeout 30 node "$ARCHIVE/serve.mjs" --port 0 >/dev/null 2>"$TMP/args.err"
	[ $? -eq 1 ] && grep -q '^error: no token' "$TMP/args.err" ||
		fail "no token: $(cat "$TMP/args.err")"
	ARCHIVE_TOKEN=$TOKEN timeout 30 node "$ARCHIVE/serve.mjs" >/dev/null 2>"$TMP/args.err"
	[ $? -eq 1 ] && grep -q '^error: --port PORT is required' "$TMP/args.err" ||
		fail "no port: $(cat "$TMP/args.err")"
}
run_test archive_serve_args test_serve_args

# --persist DIR: what was uploaded is there after a restart
test_serve_persist() {
	_dir=$TMP/persist
	archive_start persist1 "$TOKEN" --persist "$_dir" || return
	_code=$(acurl -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
		--data-binary "@$TMP/prof.pb.gz" \
		"$ARCHIVE_URL/v1/profiles/4567def?branch=b&project=p")
	[ "$_code" = 201 ] || { fail "POST: status $_code"; return; }
	archive_stop persist1 || return
	archive_start persist2 "$TOKEN" --persist "$_dir" || return
	_code=$(acurl -o "$TMP/pulled2" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
		"$ARCHIVE_URL/v1/profiles/4567def?project=p")
	[ "$_code" = 200 ] || fail "GET after restart: status $_code"
	cmp -s "$TMP/prof.pb.gz" "$TMP/pulled2" || fail "GET after restart: bytes differ"
	archive_stop persist2
	[ -d "$_dir/d1" ] && [ -d "$_dir/r2" ] || fail "--persist $_dir: no d1/ and r2/ in it"
}
run_test archive_serve_persist test_serve_persist

# lib.sh's cleanup kills tracked pids with SIGKILL: workerd must not outlive serve.mjs
test_serve_sigkill() {
	archive_start killed "$TOKEN" || return
	_work=$(sed -n 's/^culpert-archive: data in \(.*\)\/data (removed when it stops)$/\1/p' \
		"$TMP/killed.err")
	[ -n "$_work" ] || { fail "no work directory in: $(cat "$TMP/killed.err")"; return; }
	kill -9 "$archive_pid"
	wait "$archive_pid" 2>/dev/null
	_i=0
	while acurl -o /dev/null "$ARCHIVE_URL/healthz" 2>/dev/null || [ -e "$_work" ]; do
		_i=$((_i + 1))
		if [ "$_i" -gt 100 ]; then
			fail "5 s after SIGKILL: port still answers or $_work remains"
			return
		fi
		sleep 0.05
	done
}
run_test archive_serve_sigkill test_serve_sigkill
