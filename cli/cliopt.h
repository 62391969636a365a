/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every culpert command shares: option errors in one line with the way
 * out, option values in human units, loading a profile with the file named
 * in the error, and the formats of rates and percentages.
 */
#ifndef CULPERT_CLI_CLIOPT_H
#define CULPERT_CLI_CLIOPT_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "view.h"

#define CLI_OK		0
#define CLI_FAIL	1	/* diff: a regression or a new span */
#define CLI_ERROR	2	/* any error, printed once as "error: ..." */

/* "error: <msg>; 'culpert CMD --help' shows the usage" and CLI_ERROR */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * getopt_long(3) with our messages: returns the option, -1 at the end, or
 * '?' after printing the error (unknown option, missing argument).
 */
int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts);
/* the one FILE operand left after the options, or print why not and return CLI_ERROR */
int cli_one_file(const char *cmd, int argc, char **argv, const char **file);
/* parse an option value; on error print it and return CLI_ERROR */
int cli_opt_size(const char *cmd, const char *opt, const char *arg, uint64_t *out);
int cli_opt_duration(const char *cmd, const char *opt, const char *arg, uint64_t *out_ns);
int cli_opt_uint(const char *cmd, const char *opt, const char *arg, uint64_t *out);
/* a number >= 0, with an optional suffix (e.g. "%" or "sigma") */
int cli_opt_number(const char *cmd, const char *opt, const char *arg, const char *const *suffixes,
		   double *out);

/* load a view, or print "error: PATH: reason" and return NULL */
struct view *cli_load(const char *path, const struct view_opts *opts);

/* "64.00 KB/alloc"; "unknown rate" when the profile has none */
char *format_rate(char *buf, size_t len, int64_t rate);
/* "12.34%" of part in whole; "-" when whole is 0 */
char *format_pct(char *buf, size_t len, double part, double whole);

#endif /* CULPERT_CLI_CLIOPT_H */
