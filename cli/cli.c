// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "table.h"
#include "units.h"

int cli_one_file(int argc, char **argv, const char **file)
{
	if (opt_operands(argc, argv, 1, 1, "profile"))
		return -EINVAL;
	*file = argv[optind];
	return 0;
}

int cli_max_memory(size_t *out)
{
	const char *env = getenv("CULPERT_MAX_MEMORY");
	uint64_t max = 0;

	/* the limit of reading one profile (pprof.h), for a file that needs more */
	if (env && env[0] && (parse_size(env, &max) || !max || max > SIZE_MAX)) {
		pr_error("CULPERT_MAX_MEMORY='%s' is not a size (e.g. 8GiB); fix or unset it\n", env);
		return -EINVAL;
	}
	*out = (size_t)max;
	return 0;
}

struct view *cli_load(const char *path, const struct view_opts *opts)
{
	struct view_opts o = *opts;
	struct view *v;
	char err[512];

	if (cli_max_memory(&o.max_memory))
		return NULL;
	err[0] = '\0';
	v = view__load(path, &o, err, sizeof(err));
	if (!v)
		pr_error("%s: %s\n", path, err[0] ? err : strerror(errno));
	return v;
}

size_t cli_term_width(void)
{
	struct winsize ws;

	if (isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws))
		return ws.ws_col;
	return 0;
}

void cli_fit_names(struct table *t, size_t col, bool wide)
{
	size_t cols = cli_term_width();

	if (wide)
		return;
	if (cols)
		table__fit(t, col, cols, 0);
	else
		table__fit(t, col, 0, CLI_NAME_CAP);
}

char *format_counts(char *buf, size_t len, const struct view *v)
{
	if (v->has_sampled)
		snprintf(buf, len, "%" PRIu64 " allocations in %" PRIu64 " record%s", v->n_sampled,
			 v->n_value_samples, v->n_value_samples == 1 ? "" : "s");
	else
		snprintf(buf, len, "%" PRIu64 " record%s", v->n_value_samples,
			 v->n_value_samples == 1 ? "" : "s");
	return buf;
}

uint64_t cli_count(const struct view *v, uint64_t records, uint64_t sampled)
{
	return v->has_sampled ? sampled : records;
}

const char *cli_count_heading(const struct view *v)
{
	return v->has_sampled ? "SAMPLES" : "RECORDS";
}

char *format_rate(char *buf, size_t len, int64_t rate)
{
	char b[32];

	if (rate == 1)
		snprintf(buf, len, "1 B/alloc (every allocation)");
	else if (rate <= 0)
		snprintf(buf, len, "unknown rate");
	else
		snprintf(buf, len, "%s/alloc", format_bytes(b, sizeof(b), (double)rate));
	return buf;
}

char *format_pct(char *buf, size_t len, double part, double whole)
{
	if (!whole)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2f%%", 100.0 * part / whole);
	return buf;
}
