#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A short run of one fuzz harness, as a test (tests/run.sh under CI): from
# the seeds only, SECONDS long (a corpus grown by `make fuzz` would take
# longer than that just to be read); a finding fails it and is kept in
# artifacts/ (reproduce: FUZZ_STDERR=1 FUZZER ARTIFACT).
#   short.sh FUZZER SECONDS
f=$1
secs=$2
name=$(basename "$f")
dir=$(dirname "$f")
log=$(mktemp)
corpus=$(mktemp -d)
trap 'rm -rf "$log" "$corpus"' EXIT
mkdir -p "$dir/artifacts"
if "$f" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=60 \
	-artifact_prefix="$dir/artifacts/$name-" -print_final_stats=1 \
	"$corpus" "$dir/seeds" >"$log" 2>&1; then
	grep '^stat::number_of_executed_units\|^Done' "$log"
	echo "PASS fuzz/$name"
else
	tail -40 "$log"
	echo "FAIL fuzz/$name: a finding in $dir/artifacts/ (see above)"
fi
