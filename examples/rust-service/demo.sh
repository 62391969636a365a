#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make demo-rust: the tokio + hyper example service, its tracing spans made
# culpert spans by culpert-tracing, profiled while a bounded load runs on
# loopback; then the span tree next to what the handlers counted.
#   demo.sh OUTPUT_DIR RUST_OUT_DIR [REQUESTS]
set -eu

out=$1
rust=$2
requests=${3:-${DEMO_REQUESTS:-20000}}
prof=$out/demo-rust.pb.gz

if [ "$(id -u)" != 0 ]; then
	echo "error: the demo attaches BPF probes and needs root: run 'sudo make demo-rust'" >&2
	exit 1
fi

tmp=$(mktemp -d)
svc=""
att=""
trap 'kill $svc $att 2>/dev/null || true; rm -rf "$tmp"' EXIT

"$rust/culpert-rust-service" --workers 4 >"$tmp/svc" &
svc=$!
. tests/wait_for.sh
wait_for "$tmp/svc" ready 10 || { echo "error: the service did not start" >&2; exit 1; }
addr=$(awk '/^listening/ { print $2 }' "$tmp/svc")

echo "== culpert-bpf attach --pid $svc --rate 64KiB -o $prof"
"$out/culpert-bpf" attach --pid "$svc" --rate 64KiB -o "$prof" 2>"$tmp/att" &
att=$!
wait_for "$tmp/att" "culpert-bpf: profiling" 10 || { cat "$tmp/att" >&2; exit 1; }

echo "== culpert-rust-load $addr $requests 16   (a bounded load on loopback)"
"$rust/culpert-rust-load" "$addr" "$requests" 16 >"$tmp/stats"
kill -INT "$att"
wait "$att"
att=""
tail -1 "$tmp/att"

echo
echo "== culpert report $prof            (the span tree: where the bytes went)"
"$out/culpert" report "$prof"

echo
echo "== what the handlers counted (bytes per span path; the profile estimates them)"
awk '$1 == "total" { printf "  %-40s %10.2f MB\n", $2, $3 / 1048576 }' "$tmp/stats"
