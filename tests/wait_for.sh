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
# does not within SECONDS of the clock (CMD: a test's own predicate, a
# counter reaching a mark, a file appearing; one that asks a server can take
# longer than the pause, so tries are not counted)
wait_until() {
	_end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.05
	done
	return 0
}
