// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "cmdopts.h"
#include "log.h"

int opt_pid(const char *arg, pid_t *out)
{
	char *end;
	long pid;

	errno = 0;
	pid = strtol(arg, &end, 10);
	if (errno || end == arg || *end || pid <= 0 || pid > INT_MAX) {
		pr_error("invalid --pid '%s': give the numeric id of a running process\n", arg);
		return -EINVAL;
	}
	*out = (pid_t)pid;
	return 0;
}
