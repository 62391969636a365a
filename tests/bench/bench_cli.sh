#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert report/diff/flamegraph on a large profile (BENCH_SAMPLES samples,
# 50k locations, 1k spans, culpert-bpf's labels; nearly every stack
# distinct), next to go tool pprof -top and -tags on the same file: wall time
# (median of BENCH_RUNS runs, hyperfine) and peak RSS against the profile's
# decompressed size.  flamegraph must scale like report: its memory is the
# records' order, not a node per distinct stack prefix.
. tests/lib.sh

SAMPLES=${BENCH_SAMPLES:-200000}
RUNS=${BENCH_RUNS:-5}
GO_TOP_RUNS=${BENCH_GO_TOP_RUNS:-2}	# go tool pprof -top takes tens of seconds here
MKPROF=$OUTPUT/tests/tools/mkprof
P=$TMP/large.pb.gz
Q=$TMP/large2.pb.gz

"$MKPROF" -o "$P" --large "$SAMPLES" 50000 1000 42 || exit 1
"$MKPROF" -o "$Q" --large "$SAMPLES" 50000 1000 43 || exit 1
decoded=$(gzip -dc "$P" | wc -c)
echo "profile: $SAMPLES samples, 50000 locations, 1000 spans;" \
	"$(wc -c <"$P") bytes gzip'd, $decoded bytes decompressed"

# median wall time in seconds of a command, over N runs
median() {
	n=$1
	shift
	hyperfine -N --runs "$n" --export-json "$TMP/h.json" "$*" >/dev/null 2>&1 || { echo "nan"; return; }
	/usr/bin/python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$TMP/h.json"
}

# peak RSS in KiB of one run
peak_kb() {
	/usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1
}

go tool pprof -top "$P" >/dev/null 2>&1 || { echo "go tool pprof cannot read the profile"; exit 1; }
t_report=$(median "$RUNS" "$BIN_CLI" report "$P")
t_flat=$(median "$RUNS" "$BIN_CLI" report "$P" --flat)
t_diff=$(median "$RUNS" "$BIN_CLI" diff "$P" "$Q" --no-fail)
t_fold=$(median "$RUNS" "$BIN_CLI" flamegraph "$P" -o /dev/null)
t_svg=$(median "$RUNS" "$BIN_CLI" flamegraph "$P" --format svg -o /dev/null)
t_tags=$(median "$RUNS" go tool pprof -tags "$P")
t_top=$(median "$GO_TOP_RUNS" go tool pprof -top "$P")
m_report=$(peak_kb "$BIN_CLI" report "$P")
m_diff=$(peak_kb "$BIN_CLI" diff "$P" "$Q" --no-fail)
m_fold=$(peak_kb "$BIN_CLI" flamegraph "$P" -o /dev/null)
m_svg=$(peak_kb "$BIN_CLI" flamegraph "$P" --format svg -o /dev/null)
m_top=$(peak_kb go tool pprof -top "$P")

awk -v d="$decoded" -v tr="$t_report" -v tf="$t_flat" -v td="$t_diff" -v tg="$t_tags" \
	-v tt="$t_top" -v mr="$m_report" -v md="$m_diff" -v mt="$m_top" -v to="$t_fold" \
	-v ts="$t_svg" -v mo="$m_fold" -v ms="$m_svg" 'BEGIN {
	printf "%-34s %9s %12s %14s\n", "command", "median s", "peak RSS MB", "RSS/decoded"
	printf "%-34s %9.3f %12.1f %14.2f\n", "culpert report", tr, mr / 1024, mr * 1024 / d
	printf "%-34s %9.3f %12s %14s\n", "culpert report --flat", tf, "", ""
	printf "%-34s %9.3f %12.1f %14.2f\n", "culpert diff (two such profiles)", td, md / 1024, md * 1024 / (2 * d)
	printf "%-34s %9.3f %12.1f %14.2f\n", "culpert flamegraph (folded)", to, mo / 1024, mo * 1024 / d
	printf "%-34s %9.3f %12.1f %14.2f\n", "culpert flamegraph --format svg", ts, ms / 1024, ms * 1024 / d
	printf "%-34s %9.3f %12s %14s\n", "go tool pprof -tags", tg, "", ""
	printf "%-34s %9.3f %12.1f %14.2f\n", "go tool pprof -top", tt, mt / 1024, mt * 1024 / d
	printf "culpert report is %.1fx faster than go tool pprof -top, %.1fx faster than -tags\n", tt / tr, tg / tr
	printf "flamegraph --format svg takes %.1fx the time and %.1fx the memory of report\n", ts / tr, ms / mr
}'
