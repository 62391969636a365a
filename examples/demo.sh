#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The demo: start the example service, profile it with culpert-bpf for a few
# seconds, print where it allocates.   demo.sh OUTPUT_DIR SECONDS
set -eu

out=$1
secs=$2
prof=$out/demo.pb.gz

if [ "$(id -u)" != 0 ]; then
	echo "error: the demo attaches BPF probes and needs root: run 'sudo make demo'" >&2
	exit 1
fi

"$out/examples/demo_service" $((secs + 30)) >/dev/null &
svc=$!
trap 'kill $svc 2>/dev/null || true' EXIT
sleep 0.3

echo "== culpert-bpf attach --pid $svc --duration ${secs}s --rate 64KiB -o $prof"
"$out/culpert-bpf" attach --pid "$svc" --duration "${secs}s" --rate 64KiB -o "$prof"

echo
echo "== where demo_service allocates (go tool pprof -top -sample_index=alloc_space)"
GOCACHE=${GOCACHE:-/tmp/culpert-demo-gocache} go tool pprof -top -nodecount=10 \
	-sample_index=alloc_space "$prof" 2>/dev/null | sed -n '/^Showing nodes/,$p'
