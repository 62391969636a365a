#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# culpert on a real culpert-bpf capture: the span tree and flat view against
# the allocations the target made, and the callsite of its allocations.
. tests/lib.sh

# Rate 4 KiB; each span path allocates >= 32 MiB in 64..1024-byte blocks, so
# the standard error is at most sqrt(4096 * 32 MiB) = 1.1% of it: +-5% is 4.5 sigma.
test_report_capture() {
	need_root || return
	profile c 4KiB "" "$TARGETS/span_abc" || return
	"$BIN_CLI" report "$TMP/c.pb.gz" --flat --format json >"$TMP/flat.json" ||
		{ fail "culpert report --flat failed"; return; }
	# ground truth: "total PATH BYTES" lines of the target; (no-span) is our (no span)
	sed -n 's/^total (no-span) /total (no span) /; s/^total //p' "$TMP/c.out" >"$TMP/truth"
	/usr/bin/python3 - "$TMP/flat.json" "$TMP/truth" <<-'EOF' || fail "flat view off the ground truth (above)"
	import json, sys
	spans = {s["path"]: s["bytes"] for s in json.load(open(sys.argv[1]))["spans"]}
	bad = []
	for line in open(sys.argv[2]):
	    path, truth = line.rsplit(" ", 1)
	    est = spans.get(path, 0)
	    if abs(est - int(truth)) > 0.05 * int(truth):
	        bad.append(f"{path}: estimated {est}, allocated {truth}")
	# request allocates nothing itself: no flat row
	if "request" in spans:
	    bad.append(f"request has {spans['request']} bytes of its own")
	if bad:
	    print("\n".join(bad))
	    sys.exit(1)
	EOF
	# the tree: request holds parse (32 + 48 MiB with json) and validate (32 MiB): 112 MiB
	"$BIN_CLI" report "$TMP/c.pb.gz" --format json >"$TMP/tree.json"
	/usr/bin/python3 - "$TMP/tree.json" <<-'EOF' || fail "tree: request is not ~112 MiB over parse and validate"
	import json, sys
	req = [s for s in json.load(open(sys.argv[1]))["spans"] if s["name"] == "request"][0]
	assert abs(req["bytes"] - 112 * 2**20) <= 0.05 * 112 * 2**20, req["bytes"]
	assert sorted(c["name"] for c in req["children"]) == ["parse", "validate"], req["children"]
	EOF
	# the leaf of culpert-bpf's stacks is the function that called malloc (ELF symbols: no line)
	"$BIN_CLI" report "$TMP/c.pb.gz" --span request --top 1 >"$TMP/cs.out"
	awk 'f { exit $1 != "alloc_bytes" } /^CALLSITE/ { f = 1 } END { exit !f }' "$TMP/cs.out" ||
		fail "the top callsite inside request is not alloc_bytes: $(cat "$TMP/cs.out")"
}

run_test cli/report_of_a_capture test_report_capture
