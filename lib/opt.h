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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* the command whose options are parsed, for the messages; cmd_main() sets it */
void opt_set_command(const char *prog, const char *cmd);

/* "error: <msg>; 'PROG CMD --help' shows the usage"; returns -EINVAL */
int opt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * One option of a command: what getopt_long needs, and its line in the
 * command's --help.  A command's options are a list of tables (each ending
 * with a NULL name), so that commands sharing options share a table.
 */
struct opt_spec {
	const char *name;	/* the long name; NULL ends the table */
	int has_arg;		/* no_argument, required_argument, optional_argument */
	int key;		/* what opt_spec_next() returns: a short option's letter, or >= 256;
				 * 0: one more help line of the option before (OPT_MORE) */
	const char *arg;	/* the argument in the help ("BYTES"), NULL for none */
	const char *help;	/* its help; '\n' starts a line under the first; NULL: not listed */
	uint64_t min, max;	/* the range of a number, for opt_spec_size() and opt_spec_count() */
	bool long_only;		/* a key below 256 that is no short option (culpert's letters) */
};

/* the entries of a table: a flag, an option with a value, one with a number, the end */
#define OPT_FLAG(name, key, help)	{ name, no_argument, key, NULL, help, 0, 0, false }
#define OPT_ARG(name, key, arg, help)	{ name, required_argument, key, arg, help, 0, 0, false }
#define OPT_NUM(name, key, arg, min, max, help) \
	{ name, required_argument, key, arg, help, min, max, false }
#define OPT_OPTIONAL(name, key, arg, help) \
	{ name, optional_argument, key, arg, help, 0, 0, false }
#define OPT_MORE(name, arg, help)	{ name, required_argument, 0, arg, help, 0, 0, false }
/* long options whose key is a letter that is no short option */
#define OPT_LFLAG(name, key, help)	{ name, no_argument, key, NULL, help, 0, 0, true }
#define OPT_LARG(name, key, arg, help)	{ name, required_argument, key, arg, help, 0, 0, true }
#define OPT_END				{ NULL, 0, 0, NULL, NULL, 0, 0, false }

/* the most options of one command, all its tables together */
#define OPT_SPEC_MAX	64

/*
 * opt_next() over the tables (NULL-terminated): the short options are the
 * keys below 256.
 */
int opt_spec_next(int argc, char **argv, const struct opt_spec *const *tables);
/* the spec of the option key in the tables, NULL if none */
const struct opt_spec *opt_spec_find(const struct opt_spec *const *tables, int key);
/*
 * The options' lines of a --help: "  -p, --pid PID", or "--name ARG" from
 * column indent (culpert-bpf: 6, under the long name of a short option;
 * culpert: 2), the help from column width (one space after a longer
 * option, the next line after one whose help starts with a new line)
 */
void opt_spec_help(FILE *f, const struct opt_spec *const *tables, int indent, int width);
/* opt_size() and opt_count() with the option's name and range from its spec */
int opt_spec_size(const struct opt_spec *s, const char *arg, uint64_t *out);
int opt_spec_count(const struct opt_spec *s, const char *arg, uint64_t *out);

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
