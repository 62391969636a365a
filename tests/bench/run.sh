#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make bench: run every tests/bench/bench_*.sh.  Benchmarks are measurements,
# not pass/fail tests: each prints its ratios (medians of repeated runs,
# measured side by side in this one run) for README.
#   run.sh [PATTERN]   only benchmarks whose name contains PATTERN
set -u
OUTPUT=${OUTPUT:-.output}
export OUTPUT
pattern=${1:-}
for b in tests/bench/bench_*.sh; do
	case "$b" in *"$pattern"*) ;; *) continue ;; esac
	echo "=== $b"
	sh "$b" || echo "!!! $b failed (exit $?)"
	echo
done
