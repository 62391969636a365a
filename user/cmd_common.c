// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_common.h"
#include "log.h"
#include "session.h"
#include "units.h"

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

int opt_count(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < min || v > max) {
		pr_error("invalid %s '%s': use a number from %llu to %llu\n", opt, arg,
			 (unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int opt_unwind(const char *arg, enum session_unwind *out)
{
	if (!strcmp(arg, "fp"))
		*out = SESSION_UNWIND_FP;
	else if (!strcmp(arg, "dwarf"))
		*out = SESSION_UNWIND_DWARF;
	else if (!strcmp(arg, "auto"))
		*out = SESSION_UNWIND_AUTO;
	else {
		pr_error("invalid --unwind '%s': use fp, dwarf or auto\n", arg);
		return -EINVAL;
	}
	return 0;
}

int opt_unknown(const char *cmd)
{
	fprintf(stderr, "Try 'culpert-bpf %s --help'.\n", cmd);
	return -EINVAL;
}

int opt_finish(const char *cmd, int argc, char **argv, pid_t pid, const char *what)
{
	if (optind < argc) {
		pr_error("unexpected argument '%s'; see 'culpert-bpf %s --help'\n", argv[optind], cmd);
		return -EINVAL;
	}
	if (!pid) {
		pr_error("--pid is required: %s\n", what);
		return -EINVAL;
	}
	return 0;
}

int opt_append(char ***v, size_t *n, const char *arg)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(char *));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[(*n)++] = (char *)arg;
	return 0;
}
