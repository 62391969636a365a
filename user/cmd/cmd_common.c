// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>

#include "cmd_common.h"
#include "session.h"

int opt_unwind(const char *arg, enum session_unwind *out)
{
	static const char *const modes[] = { "fp", "dwarf", "auto", NULL };
	static const enum session_unwind values[] = {
		SESSION_UNWIND_FP, SESSION_UNWIND_DWARF, SESSION_UNWIND_AUTO,
	};
	int i = opt_choice("--unwind", arg, modes);

	if (i < 0)
		return i;
	*out = values[i];
	return 0;
}

int opt_need_pid(int argc, char **argv, pid_t pid, const char *what)
{
	if (opt_operands(argc, argv, 0, 0, NULL))
		return -EINVAL;
	if (!pid)
		return opt_error("--pid is required: %s", what);
	return 0;
}
