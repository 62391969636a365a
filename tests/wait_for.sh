# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# wait_for FILE PATTERN SECONDS: until FILE contains PATTERN; 1 if it does
# not within SECONDS.  Sourced by tests/lib.sh and by jobs that run without
# it (tests/tools/cgroup_limit_drive.sh, in a VM's busybox sh).
wait_for() {
	_i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ "$_i" -gt $(($3 * 20)) ] && return 1
		sleep 0.05
	done
	return 0
}

# wait_until SECONDS CMD...: until CMD succeeds, tried every 50 ms; 1 if it
# does not within SECONDS (CMD: a test's own predicate, a counter reaching a
# mark, a file appearing)
wait_until() {
	_w=$(($1 * 20))
	shift
	until "$@"; do
		_w=$((_w - 1))
		[ "$_w" -lt 0 ] && return 1
		sleep 0.05
	done
	return 0
}
