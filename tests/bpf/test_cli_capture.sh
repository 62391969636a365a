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

# Wrappers (tests/targets/wrapped.c), every allocation recorded (--rate 1): the
# callsites are the wrappers' callers with exactly their bytes; the report names
# zmalloc as skipped; --skip proj_alloc splits proj_alloc into its callers; the
# flame graph keeps the wrapper frames.
test_wrappers_capture() {
	need_root || return
	profile w 1 "" "$TARGETS/wrapped" || return
	"$BIN_CLI" report "$TMP/w.pb.gz" --no-span --format json >"$TMP/w.json" &&
		"$BIN_CLI" report "$TMP/w.pb.gz" --no-span --skip proj_alloc --format json >"$TMP/ws.json" ||
		{ fail "report failed"; return; }
	/usr/bin/python3 - "$TMP/w.json" "$TMP/ws.json" <<-'EOF' || fail "callsites or wrappers off the truth (above)"
	import json, sys
	M = 1 << 20
	def rows(path):
	    r = json.load(open(path))
	    return ({c["callsite"].split(" (")[0]: c["bytes"] for c in r["callsites"]},
	            {w["name"]: w["bytes"] for w in r["wrappers"]})
	cs, wr = rows(sys.argv[1])
	want = {"dictAdd": 24 * M, "sdsnew": 8 * M, "proj_alloc": 16 * M, "direct": 2 * M}
	assert cs == want, cs
	assert wr == {"zmalloc": 32 * M}, wr
	cs, wr = rows(sys.argv[2])
	want = {"dictAdd": 24 * M, "sdsnew": 8 * M, "load_users": 12 * M, "load_items": 4 * M,
	        "direct": 2 * M}
	assert cs == want, cs
	assert wr == {"zmalloc": 32 * M, "proj_alloc": 16 * M}, wr
	EOF
	"$BIN_CLI" report "$TMP/w.pb.gz" --no-span | grep -q '^callsites skip wrappers: zmalloc (64.00% of the bytes)$' ||
		fail "the report does not name zmalloc: $("$BIN_CLI" report "$TMP/w.pb.gz" --no-span | head -8)"
	"$BIN_CLI" flamegraph "$TMP/w.pb.gz" >"$TMP/w.folded"
	grep -q ";main;dictAdd;zmalloc $((24 << 20))\$" "$TMP/w.folded" &&
		grep -q ";main;load_users;proj_alloc $((12 << 20))\$" "$TMP/w.folded" ||
		fail "the flame graph lost the wrapper frames: $(cat "$TMP/w.folded")"
}

# C++ templates (tests/targets/cxx_templates.cc): hundreds of characters per name in
# the profile; the table shortens them and keeps every name within 120 columns, JSON
# keeps them whole, --wide prints them whole.
test_cxx_names_capture() {
	need_root || return
	profile x 4KiB "" "$TARGETS/cxx_templates" || return
	"$BIN_CLI" report "$TMP/x.pb.gz" --no-span >"$TMP/x.txt" &&
		"$BIN_CLI" report "$TMP/x.pb.gz" --no-span --wide >"$TMP/xw.txt" &&
		"$BIN_CLI" report "$TMP/x.pb.gz" --no-span --format json >"$TMP/x.json" ||
		{ fail "report failed"; return; }
	/usr/bin/python3 - "$TMP/x.txt" "$TMP/xw.txt" "$TMP/x.json" <<-'EOF' || fail "long names (above)"
	import json, re, sys
	def names(path):
	    out = []
	    for line in open(path, encoding="utf-8"):
	        m = re.match(r"(.*?) +\d+ +\d+ +[\d.]+ (?:[KMGTPE]iB|B) +[\d.]+% +[\d.]+%$", line.rstrip("\n"))
	        if m:
	            out.append(m.group(1))
	    return out
	short, wide = names(sys.argv[1]), names(sys.argv[2])
	full = [c["callsite"] for c in json.load(open(sys.argv[3]))["callsites"]]
	assert short and all(len(n) <= 120 for n in short), short
	assert any(n.startswith("void fill_index<…>(…) (") for n in short), short
	assert max(len(n) for n in full) > 300, [len(n) for n in full]
	assert any(n.startswith("void fill_index<std::__cxx11::basic_string<char") for n in full), full
	assert max(len(n) for n in wide) > 300 and set(wide) == set(full), wide
	EOF
}

# A span open at attach (tests/targets/span_before.c), every allocation recorded: its
# child's bytes sit under "(entered before attach)", not beside the later requests
# as a root of their own.
test_before_attach_capture() {
	need_root || return
	profile sb 1 "" "$TARGETS/span_before" || return
	"$BIN_CLI" report "$TMP/sb.pb.gz" --flat --format json >"$TMP/sb.json" || { fail "report failed"; return; }
	sed -n 's/^total //p' "$TMP/sb.out" >"$TMP/sb.truth"
	/usr/bin/python3 - "$TMP/sb.json" "$TMP/sb.truth" <<-'EOF' || fail "spans off the truth (above)"
	import json, sys
	spans = {s["path"]: s["bytes"] for s in json.load(open(sys.argv[1]))["spans"]}
	truth = {l.rsplit(" ", 1)[0]: int(l.rsplit(" ", 1)[1]) for l in open(sys.argv[2])}
	got = {p: b for p, b in spans.items() if p != "(no span)"}
	assert got == truth, (got, truth)
	EOF
	"$BIN_CLI" report "$TMP/sb.pb.gz" | grep -q '^(entered before attach)  ' ||
		fail "no marker in the tree: $("$BIN_CLI" report "$TMP/sb.pb.gz")"
}

run_test cli/report_of_a_capture test_report_capture
run_test cli/before_attach_of_a_capture test_before_attach_capture
run_test cli/wrappers_of_a_capture test_wrappers_capture
run_test cli/cxx_names_of_a_capture test_cxx_names_capture
