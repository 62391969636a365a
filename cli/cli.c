// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "units.h"

int cli_one_file(int argc, char **argv, const char **file)
{
	if (opt_operands(argc, argv, 1, 1, "profile"))
		return -EINVAL;
	*file = argv[optind];
	return 0;
}

struct view *cli_load(const char *path, const struct view_opts *opts)
{
	const char *env = getenv("CULPERT_MAX_MEMORY");
	struct view_opts o = *opts;
	uint64_t max = 0;
	struct view *v;
	char err[512];

	/* the limit of reading one profile (pprof.h), for a file that needs more */
	if (env && env[0] && (parse_size(env, &max) || !max || max > SIZE_MAX)) {
		pr_error("CULPERT_MAX_MEMORY='%s' is not a size (e.g. 8GiB); fix or unset it\n", env);
		return NULL;
	}
	o.max_memory = (size_t)max;
	err[0] = '\0';
	v = view__load(path, &o, err, sizeof(err));
	if (!v)
		pr_error("%s: %s\n", path, err[0] ? err : strerror(errno));
	return v;
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
