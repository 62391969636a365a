# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# cpu_secs TIMES: the CPU seconds (user + system) of the children in the
# output of `times` (second line, "0m1.50s 0m0.25s"); `times` itself must run
# in the shell whose children count, not in a subshell of $(...) or a pipe.
# Sourced by tests/run.sh (per file) and tests/lib.sh (per test).
cpu_secs() {
	sed -n 2p "$1" | awk '{ split($1, u, "m"); split($2, s, "m");
		printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }'
}
