// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliopt.h"
#include "log.h"
#include "units.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_error("%s; 'culpert %s --help' shows the usage\n", msg, cmd);
	return CLI_ERROR;
}

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts)
{
	char opts[64];
	int c, prev = optind;

	/* a leading ':' tells a missing argument (':') from an unknown option ('?') */
	snprintf(opts, sizeof(opts), ":%s", shortopts);
	opterr = 0;
	c = getopt_long(argc, argv, opts, longopts, NULL);
	if (c == ':') {
		cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		return '?';
	}
	if (c == '?') {
		/* short options in a cluster leave optind on the same word */
		const char *word = argv[optind > prev ? optind - 1 : prev];

		if (optopt && word[0] == '-' && word[1] != '-')
			cli_usage_error(cmd, "unknown option '-%c'", optopt);
		else
			cli_usage_error(cmd, "unknown option '%s'", word);
		return '?';
	}
	return c;
}

int cli_one_file(const char *cmd, int argc, char **argv, const char **file)
{
	if (optind >= argc)
		return cli_usage_error(cmd, "no profile given");
	if (optind + 1 < argc)
		return cli_usage_error(cmd, "one profile at a time ('%s' is one too many)",
				       argv[optind + 1]);
	*file = argv[optind];
	return CLI_OK;
}

int cli_opt_size(const char *cmd, const char *opt, const char *arg, uint64_t *out)
{
	if (!parse_size(arg, out))
		return CLI_OK;
	return cli_usage_error(cmd, "--%s '%s' is not a size (e.g. 4096, 64KiB, 20MiB)", opt, arg);
}

int cli_opt_duration(const char *cmd, const char *opt, const char *arg, uint64_t *out_ns)
{
	if (!parse_duration(arg, out_ns))
		return CLI_OK;
	return cli_usage_error(cmd, "--%s '%s' is not a duration (e.g. 30s, 2m, 1h)", opt, arg);
}

int cli_opt_uint(const char *cmd, const char *opt, const char *arg, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(arg, &end, 10);
	if (arg[0] >= '0' && arg[0] <= '9' && !*end && !errno && *out <= INT32_MAX)
		return CLI_OK;
	return cli_usage_error(cmd, "--%s '%s' is not a whole number", opt, arg);
}

int cli_opt_number(const char *cmd, const char *opt, const char *arg, const char *const *suffixes,
		   double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (arg[0] >= '0' && arg[0] <= '9' && !errno && isfinite(*out)) {
		if (!*end)
			return CLI_OK;
		for (; suffixes && *suffixes; suffixes++)
			if (!strcmp(end, *suffixes))
				return CLI_OK;
	}
	return cli_usage_error(cmd, "--%s '%s' is not a number >= 0", opt, arg);
}

struct view *cli_load(const char *path, const struct view_opts *opts)
{
	struct view *v;
	char err[512];

	err[0] = '\0';
	v = view__load(path, opts, err, sizeof(err));
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
