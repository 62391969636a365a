/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Options of every command of both binaries: getopt_long with our
 * messages, values in human units, and the one "error: ..." line of a bad
 * usage, which names the command's --help:
 *
 *   error: invalid --rate 'lots': use a size such as 4096, 64KiB or 20MiB;
 *          'culpert-bpf attach --help' shows the usage
 *
 * Each parser prints that line and returns -EINVAL on a bad value, 0
 * otherwise; the command then exits CMD_ERROR (cmd.h).
 */
#ifndef CULPERT_OPT_H
#define CULPERT_OPT_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* the command whose options are parsed, for the messages; cmd_main() sets it */
void opt_set_command(const char *prog, const char *cmd);

/* "error: <msg>; 'PROG CMD --help' shows the usage"; returns -EINVAL */
int opt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * getopt_long(3) with our messages: the option, -1 at the end, or '?'
 * after printing the error (unknown option, missing argument).  'v'
 * (-v, --verbose, where the command has it) is handled here: it raises
 * log_level and is not returned.
 */
int opt_next(int argc, char **argv, const char *shortopts, const struct option *longopts);

/* a byte size ("4096", "64KiB", "1.5MiB") in [min, max] */
int opt_size(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out);
/* a duration ("30s", "2m", "500ms") of at least min_ns */
int opt_duration(const char *opt, const char *arg, uint64_t min_ns, uint64_t *out_ns);
/* a whole number in [min, max]; "64k" is 65536 */
int opt_count(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out);
/* a number >= 0, with one of the optional suffixes (e.g. "%" or "sigma") */
int opt_number(const char *opt, const char *arg, const char *const *suffixes, double *out);
/* one of the NULL-terminated choices: its index, or -EINVAL ("use text, json or prometheus") */
int opt_choice(const char *opt, const char *arg, const char *const *choices);
/* a process id > 0 */
int opt_pid(const char *opt, const char *arg, pid_t *out);
/* append a repeatable option's value (not copied); 0 or -ENOMEM */
int opt_append(char ***v, size_t *n, const char *arg);
/*
 * The operands left after the options: between min and max of them (what
 * names one, e.g. "profile"), else the error and -EINVAL.
 */
int opt_operands(int argc, char **argv, int min, int max, const char *what);

#endif /* CULPERT_OPT_H */
