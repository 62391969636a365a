# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# cpu_ms TIMES: the CPU milliseconds (user + system) of the children in the
# output of `times` (second line, "0m1.50s 0m0.25s"); `times` itself must run
# in the shell whose children count, not in a subshell of $(...) or a pipe.
# cpu_secs TIMES: the same in whole seconds.  Sourced by tests/run.sh (per
# file) and tests/lib.sh (per test, and the agent's stop in agent_lib.sh).
cpu_ms() {
	sed -n 2p "$1" | awk '{ split($1, u, "m"); split($2, s, "m");
		printf "%.0f", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }'
}

cpu_secs() {
	echo $((($(cpu_ms "$1") + 500) / 1000))
}
