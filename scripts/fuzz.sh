#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The fuzzers' seeds, and the fuzzers run on them (tests/Makefile.inc calls this).
#   fuzz.sh seeds FUZZ_DIR MKPROF SPEC...   the golden-test profiles and crafted ones, raw
#                                           (the harnesses gzip them)
#   fuzz.sh run FUZZ_DIR SECONDS TARGET...  each harness for SECONDS; FUZZ_FLAGS for more
#                                           (e.g. -print_coverage=1)
set -e
mode=$1 dir=$2
shift 2

# crafted seeds: hostile names (as wrappers too), a deep span path, extreme and negative
# values (tests/tools/craft.py)
CRAFTED="names deep-span:300 values diff-base deep-stack:600 inline-flood:40 wrappers
	deep-wrapped:600"

case $mode in
seeds)
	mkprof=$1
	shift
	mkdir -p "$dir/seeds" "$dir/artifacts"
	for s in "$@"; do
		"$mkprof" -o "$dir/seed.pb.gz" "$s"
		gzip -dc "$dir/seed.pb.gz" >"$dir/seeds/seed-$(basename "$s" .spec)"
	done
	for c in $CRAFTED; do
		# shellcheck disable=SC2046 # "name:arg" is two arguments
		/usr/bin/python3 tests/tools/craft.py $(echo "$c" | tr : ' ') \
			-o "$dir/seeds/crafted-$(echo "$c" | tr : -).pb"
	done
	;;
run)
	seconds=$1
	shift
	for t in "$@"; do
		mkdir -p "$dir/corpus-$t"
		echo "  FUZZ      $t for ${seconds}s"
		# shellcheck disable=SC2086 # FUZZ_FLAGS: several flags
		"$dir/$t" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
			-artifact_prefix="$dir/artifacts/$t-" -print_final_stats=1 ${FUZZ_FLAGS:-} \
			"$dir/corpus-$t" "$dir/seeds"
	done
	;;
*)
	echo "error: fuzz.sh: unknown mode '$mode'; use seeds or run" >&2
	exit 2
	;;
esac
