// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>

#include "cmd_common.h"

int opt_need_pid(int argc, char **argv, pid_t pid, const char *what)
{
	if (opt_operands(argc, argv, 0, 0, NULL))
		return -EINVAL;
	if (!pid)
		return opt_error("--pid is required: %s", what);
	return 0;
}
