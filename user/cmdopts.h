/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Option values the culpert-bpf commands share: parsed the same way, refused with the same words. */
#ifndef CULPERT_CMDOPTS_H
#define CULPERT_CMDOPTS_H

#include <sys/types.h>

/* --pid: a positive process id; otherwise prints the error and returns -EINVAL */
int opt_pid(const char *arg, pid_t *out);

#endif /* CULPERT_CMDOPTS_H */
