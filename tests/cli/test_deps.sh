#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The Debian package lists (scripts/packages/) and scripts/install-deps.sh, which
# `make deps`, `make check-deps` and `make deps-list` run.
. tests/lib.sh

# what `make deps-list` prints is every package the lists name, and the suite runs
# after `make deps`: each is installed (dpkg's word, not the script's)
test_list_installed() {
	make -s deps-list >"$TMP/list" 2>"$TMP/list.err" || fail "make deps-list: $(cat "$TMP/list.err")"
	[ -s "$TMP/list" ] || { fail "make deps-list printed nothing"; return; }
	sort -u "$TMP/list" | cmp -s - "$TMP/list" || fail "the list is not sorted and unique"
	for set in cli build demo test image; do
		for p in $(sed 's/#.*//' "scripts/packages/$set.txt"); do
			grep -qx -- "$p" "$TMP/list" || fail "$p of $set.txt not in make deps-list"
		done
	done
	for p in $(cat "$TMP/list"); do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' ||
			fail "$p listed but not installed"
	done
}

# a missing package: one error line naming it and the command that installs it
test_check_names_missing() {
	mkdir -p "$TMP/s/packages"
	cp scripts/install-deps.sh "$TMP/s/"
	printf '# a set for the test\nmake\t\t# installed\nculpert-no-such-package\t# why\n' \
		>"$TMP/s/packages/fake.txt"
	DEPS_CMD="make deps" sh "$TMP/s/install-deps.sh" --check fake 2>"$TMP/err"
	rc=$?
	[ "$rc" = 1 ] || fail "exit status $rc, not 1"
	[ "$(wc -l <"$TMP/err")" = 1 ] || fail "not one line: $(cat "$TMP/err")"
	grep -q "^error: missing Debian packages: culpert-no-such-package; run 'sudo make deps'" \
		"$TMP/err" || fail "not named: $(cat "$TMP/err")"
}

# a set that does not exist: one error line naming it and the sets there are
test_unknown_set() {
	sh scripts/install-deps.sh --check no-such-set 2>"$TMP/err"
	rc=$?
	[ "$rc" = 2 ] || fail "exit status $rc, not 2"
	[ "$(wc -l <"$TMP/err")" = 1 ] || fail "not one line: $(cat "$TMP/err")"
	grep -q "^error: no package set 'no-such-set' .*: name one of: .*build" "$TMP/err" ||
		fail "not named: $(cat "$TMP/err")"
}

run_test_once deps/list_installed test_list_installed
run_test_once deps/check_names_missing test_check_names_missing
run_test_once deps/unknown_set test_unknown_set
