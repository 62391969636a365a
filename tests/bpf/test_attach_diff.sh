#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A CI gate must not depend on when the attach landed.  30 brief attaches at
# random moments to one unchanged server (tests/targets/span_serve.c, most
# of whose time is inside a request): many land inside a request and see
# its inner spans as roots, which go under "(entered before attach)" in the
# sampled tree and the exact totals alike, so no diff of any two of them
# calls a span new.  How much work a brief capture holds varies with the
# machine's load, so byte changes are left out (--threshold-pct 1000000):
# new spans are what the attach moment made, and what this asserts.
. tests/lib.sh

N=30

test_random_attaches() {
	need_root || return
	: >"$TMP/serve.out"
	"$TARGETS/span_serve" >"$TMP/serve.out" &
	track $!
	wait_for "$TMP/serve.out" ready 5 || { fail "span_serve did not start"; return; }
	pid=$(sed -n 's/^pid \([0-9]*\) ready$/\1/p' "$TMP/serve.out")
	i=0
	while [ $i -lt $N ]; do
		i=$((i + 1))
		# a random moment: up to 3 ms, about one request, past the last capture's end
		"$PYTHON" -c 'import random, time; time.sleep(random.random() * 0.003)'
		"$BIN_BPF" attach --pid "$pid" -d 100ms --rate 1 -o "$TMP/p$i.pb.gz" \
			2>"$TMP/attach.err" || { fail "attach $i failed: $(cat "$TMP/attach.err")"; return; }
	done
	marked=0
	for a in $(seq $N); do
		"$BIN_CLI" report "$TMP/p$a.pb.gz" | grep -q '^(entered before attach)  ' &&
			marked=$((marked + 1))
	done
	# the gate is only tested by captures that landed inside a request
	[ "$marked" -ge 3 ] || { fail "only $marked of $N captures landed inside a request"; return; }
	for a in $(seq $N); do
		for b in $(seq $N); do
			[ "$a" = "$b" ] && continue
			"$BIN_CLI" diff "$TMP/p$a.pb.gz" "$TMP/p$b.pb.gz" --threshold-pct 1000000 \
				>"$TMP/d.out" 2>&1 ||
				{ fail "diff p$a p$b exited $? ($marked of $N captures inside a request): $(cat "$TMP/d.out")"; return; }
		done
	done
}

PYTHON=/usr/bin/python3
run_test bpf/attach_diff/random_attaches test_random_attaches
