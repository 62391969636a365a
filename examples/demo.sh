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
# attach once the service's loader has mapped libc, whose allocator the probes go on
# (before, the pid may still run the shell that forked it); 10 s at most
i=0
until grep -q '/libc\.so' "/proc/$svc/maps" 2>/dev/null &&
	[ "$(readlink "/proc/$svc/exe")" = "$(readlink -f "$out/examples/demo_service")" ]; do
	i=$((i + 1))
	if [ $i -gt 200 ] || ! kill -0 $svc 2>/dev/null; then
		echo "error: the demo service did not start; run it by hand: $out/examples/demo_service" >&2
		exit 1
	fi
	sleep 0.05
done

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
