/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Option values the culpert-bpf commands share; each prints its own "error: ..." line. */
#ifndef CULPERT_CMD_COMMON_H
#define CULPERT_CMD_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DEFAULT_MAX_SPAN_FNS 64

/* --pid: a positive process id; 0 or -EINVAL */
int opt_pid(const char *arg, pid_t *out);
/* a count in [min, max] for option `opt`; 0 or -EINVAL */
int opt_count(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out);
enum session_unwind;
/* --unwind fp|dwarf|auto; 0 or -EINVAL */
int opt_unwind(const char *arg, enum session_unwind *out);
/* an option getopt did not know: point at --help; -EINVAL */
int opt_unknown(const char *cmd);
/*
 * After getopt: no stray argument, and the --pid (what it is for, e.g. "the
 * process to profile") was given.  0 or -EINVAL with the error printed.
 */
int opt_finish(const char *cmd, int argc, char **argv, pid_t pid, const char *what);
/* append a repeatable option's value; 0 or -ENOMEM */
int opt_append(char ***v, size_t *n, const char *arg);

#endif /* CULPERT_CMD_COMMON_H */
