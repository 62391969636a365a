#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# report on real captures of Debian's programs (tests/cli/data/real/, each
# taken with 'culpert-bpf attach' under load, symbolized at capture: the
# stripped objects' static routines are unnamed, as a user sees them):
# the callsite is past each program's allocator wrappers and their unnamed
# internals, --by caller names the function to fix, CUM says where the
# inclusive bytes are, and the unnamed callsites are counted.
#   redis-server 7.0.15, redis-benchmark -t set,lpush,get -P 16 -d 100
#   sqlite3 3.40.1, ORDER BY over 600k rows with PRAGMA threads=4
#   nginx 1.22.1 worker, HTTP/1.1 GETs over short keep-alive connections
#   postgres 15.18 backend, pgbench -c 1 (TPC-B)
#   UPDATE_GOLDEN=1 sh tests/cli/test_real_services.sh    rewrite the goldens (review!)
. tests/lib.sh

DATA=tests/cli/data/real
GOLDEN=tests/cli/golden
C=$BIN_CLI

# golden NAME ARGS...: exit 0, stdout equals golden/NAME.out, stderr empty
golden() {
	_name=$1
	shift
	"$C" "$@" >"$TMP/$_name.out" 2>"$TMP/$_name.err" ||
		{ fail "culpert $*: exit $?: $(head -c 300 "$TMP/$_name.err")"; return 1; }
	[ -s "$TMP/$_name.err" ] && { fail "culpert $*: stderr: $(head -c 300 "$TMP/$_name.err")"; return 1; }
	if [ -n "${UPDATE_GOLDEN:-}" ]; then
		cp "$TMP/$_name.out" "$GOLDEN/$_name.out"
		return 0
	fi
	diff -u "$GOLDEN/$_name.out" "$TMP/$_name.out" >"$TMP/$_name.diff" ||
		{ fail "culpert $* differs from $GOLDEN/$_name.out: $(head -c 800 "$TMP/$_name.diff")"; return 1; }
}

# first_row FILE: the name of the first row of the callsite table
first_row() {
	sed -n '/^CALL\(SITE\|ER\) /{n;p;q}' "$1" | sed 's/  .*//'
}

test_redis() {
	golden real_redis report "$DATA/redis.pb.gz" --no-span || return
	golden real_redis_caller report "$DATA/redis.pb.gz" --by caller || return
	golden real_redis_skip report "$DATA/redis.pb.gz" --no-span --skip 'create*Object' \
		--skip _sdsnewlen || return
	# the string constructors allocate; processMultibulkBuffer is what calls them
	[ "$(first_row "$TMP/real_redis_caller.out")" = processMultibulkBuffer ] ||
		fail "--by caller: top is not processMultibulkBuffer: $(cat "$TMP/real_redis_caller.out")"
	# or, by callsite, with the constructors looked through as wrappers
	grep -q '^processMultibulkBuffer .*  94\.78%  94\.78%$' "$TMP/real_redis_skip.out" ||
		fail "--skip the constructors: not all of it on processMultibulkBuffer: $(cat "$TMP/real_redis_skip.out")"
	grep -q '^CUM beyond self by more than half of the bytes: processMultibulkBuffer (CUM 94.78%, self 14.57%)' \
		"$TMP/real_redis.out" || fail "no CUM hint naming processMultibulkBuffer: $(cat "$TMP/real_redis.out")"
}

test_sqlite3() {
	golden real_sqlite3 report "$DATA/sqlite3.pb.gz" --no-span || return
	golden real_sqlite3_caller report "$DATA/sqlite3.pb.gz" --by caller || return
	# the unnamed static routines under sqlite3Malloc and sqlite3Realloc are not callsites
	grep -q 'libsqlite3.so.0.8.6+0xa7503\|libsqlite3.so.0.8.6+0xa74b8' "$TMP/real_sqlite3.out" &&
		fail "sqlite3Malloc's internals are still callsites: $(cat "$TMP/real_sqlite3.out")"
	grep -q '^sqlite3VdbeSorterWrite ' "$TMP/real_sqlite3_caller.out" ||
		fail "--by caller does not name sqlite3VdbeSorterWrite: $(cat "$TMP/real_sqlite3_caller.out")"
	grep -q '^Unnamed callsites (no symbol at the address) hold 39.91% of the bytes, in libsqlite3.so.0.8.6\.$' \
		"$TMP/real_sqlite3.out" || fail "unnamed callsites not counted: $(cat "$TMP/real_sqlite3.out")"
	grep -q 'DEBUGINFOD_URLS' "$TMP/real_sqlite3.out" || fail "no hint at DEBUGINFOD_URLS"
}

test_nginx() {
	golden real_nginx report "$DATA/nginx.pb.gz" --no-span || return
	golden real_nginx_caller report "$DATA/nginx.pb.gz" --by caller || return
	# the pool's unnamed internals (ngx_palloc_large, ngx_palloc_block) are looked through
	grep -q 'nginx+0x278c4\|nginx+0x277b1' "$TMP/real_nginx.out" &&
		fail "the pool's internals are still callsites: $(cat "$TMP/real_nginx.out")"
	# an unnamed frame is named by --skip as object+0xoffset, or object+*
	"$C" report "$DATA/nginx.pb.gz" --no-span --skip 'nginx+0x70d1d' >"$TMP/skip1.out" ||
		{ fail "--skip nginx+0x70d1d failed"; return; }
	grep -q '^nginx+0x70d1d ' "$TMP/skip1.out" && fail "--skip nginx+0x70d1d kept it: $(cat "$TMP/skip1.out")"
	grep -q 'callsites skip wrappers: .*nginx+0x70d1d' "$TMP/skip1.out" ||
		fail "--skip nginx+0x70d1d not named among the wrappers: $(cat "$TMP/skip1.out")"
	"$C" report "$DATA/nginx.pb.gz" --no-span --skip 'nginx+*' >"$TMP/skip2.out" ||
		{ fail "--skip nginx+* failed"; return; }
	grep -q '^nginx+0x' "$TMP/skip2.out" && fail "--skip 'nginx+*' kept unnamed frames: $(cat "$TMP/skip2.out")"
	grep -q '^Unnamed callsites' "$TMP/skip2.out" && fail "unnamed callsites counted after --skip 'nginx+*'"
	# and flamegraph --skip leaves them out, their bytes going to the caller
	"$C" flamegraph "$DATA/nginx.pb.gz" --skip 'nginx+*' >"$TMP/f.folded" || { fail "flamegraph failed"; return; }
	grep -q 'nginx+0x' "$TMP/f.folded" && fail "flamegraph --skip 'nginx+*' kept unnamed frames: $(head -3 "$TMP/f.folded")"
	"$C" flamegraph "$DATA/nginx.pb.gz" | grep -q ';nginx+0x278c4;ngx_alloc ' ||
		fail "without --skip, the flame graph does not keep every frame"
}

test_postgres() {
	golden real_postgres report "$DATA/postgres.pb.gz" --no-span || return
	golden real_postgres_caller report "$DATA/postgres.pb.gz" --by caller || return
	# the memory context under palloc is no callsite: the code calling palloc is
	grep -q 'postgres+0x5c785f\|postgres+0x5c78fb' "$TMP/real_postgres.out" &&
		fail "palloc's memory context is still a callsite: $(cat "$TMP/real_postgres.out")"
	grep -q '^callsites skip wrappers: palloc (55.99% of the bytes), MemoryContextAllocZeroAligned (44.01%)$' \
		"$TMP/real_postgres.out" || fail "palloc not among the wrappers: $(cat "$TMP/real_postgres.out")"
}

test_json() {
	"$C" report "$DATA/redis.pb.gz" --by caller --format json >"$TMP/r.json" || { fail "json failed"; return; }
	"$C" report "$DATA/nginx.pb.gz" --no-span --format json >"$TMP/n.json" || { fail "json failed"; return; }
	/usr/bin/python3 - "$TMP/r.json" "$TMP/n.json" <<-'PY' || fail "JSON rows (above)"
	import json, sys
	r = json.load(open(sys.argv[1]))
	assert r["by"] == "caller", r["by"]
	top = r["callsites"][0]
	assert top["callsite"] == "processMultibulkBuffer", top
	assert top["cum_bytes"] >= top["bytes"], top
	assert r["unnamed_bytes"] == 0, r["unnamed_bytes"]
	n = json.load(open(sys.argv[2]))
	assert n["by"] == "callsite"
	un = sum(c["bytes"] for c in n["callsites"] if c["callsite"].startswith("nginx+0x"))
	assert un > 0 and abs(n["unnamed_bytes"] - un) <= 1, (n["unnamed_bytes"], un)
	PY
}

test_bad_by() {
	expect_error 2 "--by" "$C" report "$DATA/redis.pb.gz" --by function
	expect_error 2 "--flat lists spans" "$C" report "$DATA/redis.pb.gz" --flat --by caller
}

run_test cli/real/redis test_redis
run_test cli/real/sqlite3 test_sqlite3
run_test cli/real/nginx test_nginx
run_test cli/real/postgres test_postgres
run_test cli/real/json test_json
run_test cli/real/bad_by test_bad_by
