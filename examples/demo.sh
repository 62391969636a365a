#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The demo: start the example service, profile it with culpert-bpf for a few
# seconds, print where it allocates: per span, then inside the heaviest one.
#   demo.sh OUTPUT_DIR SECONDS
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

echo "== culpert-bpf attach --pid $svc --duration ${secs}s --rate 64KiB --inuse -o $prof"
"$out/culpert-bpf" attach --pid "$svc" --duration "${secs}s" --rate 64KiB --inuse -o "$prof"

echo
echo "== culpert report $prof            (the span tree: where the bytes went)"
"$out/culpert" report "$prof"

echo
echo "== culpert report --span json --top 3 $prof   (callsites inside one span)"
"$out/culpert" report --span json --top 3 "$prof"

echo
echo "== culpert report --leaks --min-age 1s $prof   (live at the end, allocated >= 1 s before)"
"$out/culpert" report --leaks --min-age 1s "$prof"
