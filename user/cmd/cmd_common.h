/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Options only the culpert-bpf commands have; the rest is lib/opt.h. */
#ifndef CULPERT_CMD_COMMON_H
#define CULPERT_CMD_COMMON_H

#include <sys/types.h>

#include "cmd.h"
#include "opt.h"

/*
 * After the options: no operand, and the --pid (what it is for, e.g. "the
 * process to profile") was given.  0 or -EINVAL with the error printed.
 */
int opt_need_pid(int argc, char **argv, pid_t pid, const char *what);

#endif /* CULPERT_CMD_COMMON_H */
