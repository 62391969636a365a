// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "opt.h"
#include "units.h"

static const char *opt_prog = "culpert";
static const char *opt_cmd = "";

void opt_set_command(const char *prog, const char *cmd)
{
	opt_prog = prog;
	opt_cmd = cmd;
}

int opt_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_error("%s; '%s%s%s --help' shows the usage\n", msg, opt_prog, opt_cmd[0] ? " " : "",
		 opt_cmd);
	return -EINVAL;
}

/*
 * getopt_long(3) with our messages: the option, -1 at the end, or '?'
 * after printing the error (unknown option, missing argument).  'v'
 * (-v, --verbose, where the command has it) is handled here: it raises
 * log_level and is not returned.
 */
static int opt_next(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	/* ':' and opt_spec_next()'s short options, each with its ':' */
	char opts[OPT_SPEC_MAX * 2 + 2];
	int c, prev = optind;

	/* a leading ':' tells a missing argument (':') from an unknown option ('?') */
	snprintf(opts, sizeof(opts), ":%s", shortopts);
	opterr = 0;
	/* -v, --verbose means the same everywhere: one more level of diagnostics */
	while ((c = getopt_long(argc, argv, opts, longopts, NULL)) == 'v')
		log_level++;
	if (c == ':') {
		opt_error("option '%s' needs a value", argv[optind - 1]);
		return '?';
	}
	if (c == '?') {
		/* short options in a cluster leave optind on the same word */
		const char *word = argv[optind > prev ? optind - 1 : prev];

		if (optopt && word[0] == '-' && word[1] != '-')
			opt_error("unknown option '-%c'", optopt);
		else
			opt_error("unknown option '%s'", word);
		return '?';
	}
	return c;
}

int opt_spec_next(int argc, char **argv, const struct opt_spec *const *tables)
{
	struct option longopts[OPT_SPEC_MAX + 1];
	char shortopts[OPT_SPEC_MAX * 2 + 1];
	const struct opt_spec *s;
	size_t n = 0, len = 0;

	for (; *tables; tables++) {
		for (s = *tables; s->name; s++) {
			if (!s->key)
				continue;
			/* a command's tables outgrew OPT_SPEC_MAX: say so rather than drop options */
			if (n == OPT_SPEC_MAX) {
				opt_error("more than %d options: raise OPT_SPEC_MAX", OPT_SPEC_MAX);
				return '?';
			}
			longopts[n++] = (struct option){ s->name, s->has_arg, NULL, s->key };
			if (s->key >= 256 || s->long_only)
				continue;
			shortopts[len++] = (char)s->key;
			if (s->has_arg == required_argument)
				shortopts[len++] = ':';
		}
	}
	longopts[n] = (struct option){ NULL, 0, NULL, 0 };
	shortopts[len] = '\0';
	return opt_next(argc, argv, shortopts, longopts);
}

const struct opt_spec *opt_spec_find(const struct opt_spec *const *tables, int key)
{
	const struct opt_spec *s;

	for (; *tables; tables++)
		for (s = *tables; s->name; s++)
			if (s->key == key)
				return s;
	return NULL;
}

void opt_spec_help(FILE *f, const struct opt_spec *const *tables, int indent, int width)
{
	const struct opt_spec *s;
	const char *h, *nl;
	char left[128];
	int n;

	for (; *tables; tables++) {
		for (s = *tables; s->name; s++) {
			if (!s->help)
				continue;
			if (s->key && s->key < 256 && !s->long_only)
				n = snprintf(left, sizeof(left), "  -%c, --%s%s%s", s->key, s->name,
					     s->arg ? " " : "", s->arg ?: "");
			else
				n = snprintf(left, sizeof(left), "%*s--%s%s%s%s", indent, "", s->name,
					     !s->arg ? "" : s->has_arg == optional_argument ? "[=" : " ",
					     s->arg ?: "",
					     s->arg && s->has_arg == optional_argument ? "]" : "");
			/* a help starting with a new line: the option's line is too long for one */
			if (s->help[0] == '\n')
				fputs(left, f);
			else
				fprintf(f, "%-*s%s", width, left, n >= width ? " " : "");
			for (h = s->help; (nl = strchr(h, '\n')); h = nl + 1)
				fprintf(f, "%.*s\n%*s", (int)(nl - h), h, width, "");
			fprintf(f, "%s\n", h);
		}
	}
}

int opt_spec_size(const struct opt_spec *s, const char *arg, uint64_t *out)
{
	char name[64];

	snprintf(name, sizeof(name), "--%s", s->name);
	return opt_size(name, arg, s->min, s->max, out);
}

int opt_spec_count(const struct opt_spec *s, const char *arg, uint64_t *out)
{
	char name[64];

	snprintf(name, sizeof(name), "--%s", s->name);
	return opt_count(name, arg, s->min, s->max, out);
}

int opt_size(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	char lo[32], hi[32];
	uint64_t v;

	if (!parse_size(arg, &v) && v >= min && v <= max) {
		*out = v;
		return 0;
	}
	if (min == 0 && max == UINT64_MAX)
		return opt_error("invalid %s '%s': use a size such as 4096, 64KiB or 20MiB", opt, arg);
	return opt_error("invalid %s '%s': use a size from %s to %s, such as 4096 or 64KiB", opt, arg,
			 format_bytes(lo, sizeof(lo), (double)min),
			 format_bytes(hi, sizeof(hi), (double)max));
}

int opt_duration(const char *opt, const char *arg, uint64_t min_ns, uint64_t *out_ns)
{
	char min[32], example[32];
	uint64_t v;

	if (!parse_duration(arg, &v) && v >= min_ns) {
		*out_ns = v;
		return 0;
	}
	/* the example is one the option takes: twice its minimum */
	if (min_ns > 1)
		return opt_error("invalid %s '%s': use a duration of %s or more, such as %s", opt,
				 arg, format_duration(min, sizeof(min), min_ns),
				 format_duration(example, sizeof(example), 2 * min_ns));
	return opt_error("invalid %s '%s': use a duration%s such as 30s, 2m or 1h", opt, arg,
			 min_ns ? " above 0," : "");
}

int opt_count(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (arg[0] >= '0' && arg[0] <= '9' && !parse_size(arg, &v) && v >= min && v <= max) {
		*out = v;
		return 0;
	}
	return opt_error("invalid %s '%s': use a whole number from %llu to %llu", opt, arg,
			 (unsigned long long)min, (unsigned long long)max);
}

int opt_number(const char *opt, const char *arg, const char *const *suffixes, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (arg[0] >= '0' && arg[0] <= '9' && !errno && isfinite(*out)) {
		if (!*end)
			return 0;
		for (; suffixes && *suffixes; suffixes++)
			if (!strcmp(end, *suffixes))
				return 0;
	}
	return opt_error("invalid %s '%s': use a number >= 0", opt, arg);
}

int opt_choice(const char *opt, const char *arg, const char *const *choices)
{
	char list[256];
	size_t n, i, len = 0;

	for (n = 0; choices[n]; n++)
		if (!strcmp(arg, choices[n]))
			return (int)n;
	list[0] = '\0';
	for (i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					i == 0 ? "" : i + 1 == n ? " or " : ", ", choices[i]);
	return opt_error("invalid %s '%s': use %s", opt, arg, list);
}

int opt_pid(const char *opt, const char *arg, pid_t *out)
{
	char *end;
	long pid;

	errno = 0;
	pid = strtol(arg, &end, 10);
	if (errno || end == arg || *end || pid <= 0 || pid > INT_MAX)
		return opt_error("invalid %s '%s': give the numeric id of a running process", opt, arg);
	*out = (pid_t)pid;
	return 0;
}

int opt_append(char ***v, size_t *n, const char *arg)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(char *));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[(*n)++] = (char *)arg;
	return 0;
}

int opt_operands(int argc, char **argv, int min, int max, const char *what)
{
	int n = argc - optind;

	if (n >= min && n <= max)
		return 0;
	if (max == 0)
		return opt_error("unexpected argument '%s'", argv[optind]);
	if (n == 0)
		return opt_error("no %s given", what);
	if (n > max && max == 1)
		return opt_error("one %s at a time ('%s' is one too many)", what, argv[optind + 1]);
	return opt_error("%s takes %d to %d %ss (got %d)", opt_cmd, min, max, what, n);
}
