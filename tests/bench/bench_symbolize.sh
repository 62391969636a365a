#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Symbolization cost: a profile with >= 50k distinct locations across >= 20
# objects (objprof: addresses inside their functions; objects with DWARF --
# ours, Rust, glibc with libc6-dbg -- and system libraries with symbols
# only), symbolized by 'culpert symbolize' and, for comparison, by
# 'addr2line -f -i -C' over the same addresses, one process per object.
# Medians of 3 runs; peak RSS of the largest process.
set -u
OUTPUT=${OUTPUT:-.output}
RUNS=3
L=/usr/lib/x86_64-linux-gnu
T=$(mktemp -d /tmp/culpert-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT

objs=""
for f in "$OUTPUT/tests/targets/sym_cpp" "$OUTPUT/tests/targets/sym_rust_v0" \
	"$OUTPUT/tests/targets/sym_rust_legacy" "$OUTPUT/culpert" "$OUTPUT/culpert-bpf" \
	"$OUTPUT/tests/unit/test_symbolize" "$OUTPUT/tests/tools/profdump" \
	"$OUTPUT/tests/tools/objprof" "$L/libc.so.6" "$L/libm.so.6" "$L/ld-linux-x86-64.so.2" \
	"$L/libstdc++.so.6" "$L/libcrypto.so.3" "$L/libssl.so.3" "$L/libLLVM-14.so.1" \
	"$L/libgnutls.so.30" "$L/libsqlite3.so.0" "$L/libxml2.so.2" "$L/libglib-2.0.so.0" \
	"$L/libicuuc.so.72" "$L/libbpf.so.1" "$L/libdw.so.1" "$L/libsystemd.so.0" \
	"$L/libarchive.so.13"; do
	[ -e "$f" ] && objs="$objs $f"
done

# shellcheck disable=SC2086
"$OUTPUT/tests/tools/objprof" "$T/prof.pb.gz" --per-object 4000 --samples 60000 $objs \
	>"$T/addrs" || { echo "objprof failed" >&2; exit 1; }
n_objs=$(cut -d' ' -f1 "$T/addrs" | sort -u | wc -l)
n_locs=$(wc -l <"$T/addrs")
n_dwarf=0
for f in $(cut -d' ' -f1 "$T/addrs" | sort -u); do
	# DWARF in the object or in Debian's /usr/lib/debug
	b=$(eu-readelf -n "$f" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	if readelf -S "$f" 2>/dev/null | grep -q '\.debug_info' ||
	   [ -e "/usr/lib/debug/.build-id/$(echo "$b" | cut -c1-2)/$(echo "$b" | cut -c3-).debug" ]; then
		n_dwarf=$((n_dwarf + 1))
	fi
done
echo "profile: $n_locs distinct locations in $n_objs objects ($n_dwarf with DWARF)"
[ "$n_locs" -ge 50000 ] && [ "$n_objs" -ge 20 ] ||
	echo "!!! fewer than 50000 locations or 20 objects on this machine"

# median of a column of numbers
median() {
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

for i in $(seq $RUNS); do
	/usr/bin/time -f '%e %M' -o "$T/t-culpert.$i" \
		"$OUTPUT/culpert" symbolize "$T/prof.pb.gz" -o "$T/out.pb.gz" 2>"$T/report" ||
		{ echo "culpert symbolize failed: $(cat "$T/report")" >&2; exit 1; }
done
cs=$(cat "$T"/t-culpert.* | cut -d' ' -f1 | median)
cm=$(cat "$T"/t-culpert.* | cut -d' ' -f2 | sort -n | tail -n 1)
frames=$("$OUTPUT/tests/tools/profdump" --raw "$T/out.pb.gz" | grep -c '^frame')

for f in $(cut -d' ' -f1 "$T/addrs" | sort -u); do
	awk -v f="$f" '$1 == f { print $2 }' "$T/addrs" >"$T/addrs.$(echo "$f" | tr / _)"
done
cat >"$T/a2l.sh" <<EOF
for f in \$(cut -d' ' -f1 "$T/addrs" | sort -u); do
	addr2line -f -i -C -e "\$f" <"$T/addrs.\$(echo "\$f" | tr / _)" >/dev/null
done
EOF
for i in $(seq $RUNS); do
	/usr/bin/time -f '%e %M' -o "$T/t-a2l.$i" sh "$T/a2l.sh"
done
as=$(cat "$T"/t-a2l.* | cut -d' ' -f1 | median)
am=$(cat "$T"/t-a2l.* | cut -d' ' -f2 | sort -n | tail -n 1)

echo "culpert symbolize: ${cs}s, peak RSS $((cm / 1024)) MiB, $frames frames (median of $RUNS)"
echo "addr2line -f -i -C: ${as}s, peak RSS $((am / 1024)) MiB, one process per object (median of $RUNS)"
awk -v a="$as" -v c="$cs" 'BEGIN { if (c > 0) printf "culpert symbolize is %.1fx the speed of addr2line\n", a / c }'
