#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A long capture of the demo service (one span id per request, ~5000
# requests a second) with the default options: the share of bytes whose
# stack was lost ([unknown stack]) or cut to its leaf ([folded]), the samples
# coarsened (thread and span ids dropped past --max-stacks keys), the
# profiler's peak RSS.  BENCH_LONG_SECONDS (default 600).
. tests/lib.sh

SECS=${BENCH_LONG_SECONDS:-600}

[ "$(id -u)" = 0 ] || { echo "bench_long: needs root"; exit 1; }
"$OUTPUT/examples/demo_service" $((SECS + 60)) >/dev/null &
svc=$!
track "$svc"
/usr/bin/time -f 'rss_kib %M' "$BIN_BPF" attach --pid "$svc" -d "${SECS}s" -o "$TMP/long.pb.gz" \
	2>"$TMP/long.err" || { echo "bench_long: attach failed: $(tail -2 "$TMP/long.err")"; exit 1; }
"$PROFDUMP" "$TMP/long.pb.gz" >"$TMP/long.dump"
awk -F'\t' -v secs="$SECS" '
	/^# comment (samples|aggregate_coarsened|aggregate_folded)=/ { sub(/^# comment /, ""); split($0, kv, "="); c[kv[1]] = kv[2] }
	/^#/ { next }
	{ split($1, v, " "); all += v[2]; if ($2 ~ /^\[unknown stack\]/) unk += v[2]; if ($2 ~ /\[folded\]/) fold += v[2] }
	END {
		printf "bench_long: %d s, %d samples, %.2f%% of bytes under [unknown stack], %.2f%% under [folded], %d samples coarsened (%.1f%%)\n",
			secs, c["samples"], all ? 100 * unk / all : 0, all ? 100 * fold / all : 0,
			c["aggregate_coarsened"], c["samples"] ? 100 * c["aggregate_coarsened"] / c["samples"] : 0
	}' "$TMP/long.dump"
grep '^rss_kib' "$TMP/long.err" | sed 's/^/bench_long: profiler peak /'
