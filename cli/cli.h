/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every culpert command shares beyond the options (opt.h) and exit
 * codes (cmd.h): the one profile operand, loading a profile with the file
 * named in the error, and the formats of rates and percentages.
 */
#ifndef CULPERT_CLI_H
#define CULPERT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd.h"
#include "opt.h"
#include "view.h"

/* the one FILE operand left after the options; 0, or -EINVAL with the error printed */
int cli_one_file(int argc, char **argv, const char **file);

/* CULPERT_MAX_MEMORY (0 when unset: the file's default), or an error: line and -EINVAL */
int cli_max_memory(size_t *out);
/* load a view, or print "error: PATH: reason" and return NULL */
struct view *cli_load(const char *path, const struct view_opts *opts);

/* widest name column when stdout is no terminal; on one, the row fits the terminal */
#define CLI_NAME_CAP 120
struct table;
/* columns of the terminal stdout is; 0 when it is none */
size_t cli_term_width(void);
/* fit column col of t to the terminal, or to CLI_NAME_CAP; --wide (wide) keeps it whole */
void cli_fit_names(struct table *t, size_t col, bool wide);

/*
 * What the profile's count is: "159 allocations in 23 records" where the
 * records say how many sampled allocations they stand for, else "23 records".
 */
char *format_counts(char *buf, size_t len, const struct view *v);
/* a row's count, sampled allocations or records as format_counts() chose, and its heading */
uint64_t cli_count(const struct view *v, uint64_t records, uint64_t sampled);
const char *cli_count_heading(const struct view *v);

/* "64.00 KiB/alloc"; "unknown rate" when the profile has none */
char *format_rate(char *buf, size_t len, int64_t rate);
/* "12.34%" of part in whole; "-" when whole is 0 */
char *format_pct(char *buf, size_t len, double part, double whole);

#endif /* CULPERT_CLI_H */
