// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "units.h"

struct unit {
	const char *name;
	double mult;
};

/* parse "<number><unit>" against a table; the number may be fractional */
static int parse_with_units(const char *s, const struct unit *units, double *out)
{
	char *end;
	double v;

	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	for (; units->name; units++) {
		if (!strcasecmp(end, units->name)) {
			*out = v * units->mult;
			return 0;
		}
	}
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *out)
{
	static const struct unit units[] = {
		{ "", 1 }, { "b", 1 },
		{ "k", 1024.0 }, { "kb", 1024.0 }, { "kib", 1024.0 },
		{ "m", 1048576.0 }, { "mb", 1048576.0 }, { "mib", 1048576.0 },
		{ "g", 1073741824.0 }, { "gb", 1073741824.0 }, { "gib", 1073741824.0 },
		{ "t", 1099511627776.0 }, { "tb", 1099511627776.0 }, { "tib", 1099511627776.0 },
		{ NULL, 0 },
	};
	double v;

	if (parse_with_units(s, units, &v) || v >= 18446744073709551616.0 || v != floor(v))
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

int parse_duration(const char *s, uint64_t *out_ns)
{
	static const struct unit units[] = {
		{ "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 },
		{ "m", 60e9 }, { "min", 60e9 }, { "h", 3600e9 }, { "d", 86400e9 },
		{ NULL, 0 },
	};
	double v;

	if (parse_with_units(s, units, &v) || v >= 9.2e18)
		return -EINVAL;
	*out_ns = (uint64_t)llround(v);
	return 0;
}

char *format_bytes(char *buf, size_t len, double bytes)
{
	static const char *const names[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = fabs(bytes);
	const char *sign = bytes < 0 ? "-" : "";
	int i = -1;

	/*
	 * A pprof value is an int64: a sum at or past its largest (8 EiB - 1)
	 * is saturated, so it says "at least" rather than a number it is not.
	 */
	if (bytes_saturated(bytes)) {
		snprintf(buf, len, "%s8.00 EiB", bytes < 0 ? "<=-" : ">=");
		return buf;
	}
	if (v < 1024) {
		snprintf(buf, len, "%s%.0f B", sign, v);
		return buf;
	}
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	/* 1023.999 KiB would print as "1024.00 KiB": carry into the next unit */
	if (v >= 1023.995 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%s%.2f %s", sign, v, names[i]);
	return buf;
}

bool bytes_saturated(double v)
{
	return fabs(v) >= 9223372036854775807.0;
}

int64_t round_sat(double v)
{
	if (isnan(v))
		return 0;
	if (v >= 9223372036854775807.0)
		return INT64_MAX;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	return llround(v);
}

char *format_count(char *buf, size_t len, double n)
{
	if (bytes_saturated(n))
		snprintf(buf, len, "%s9223372036854775807", n < 0 ? "<=-" : ">=");
	else
		snprintf(buf, len, "%.0f", n);
	return buf;
}

char *format_bytes_signed(char *buf, size_t len, double bytes)
{
	char tmp[64];

	format_bytes(tmp, sizeof(tmp), bytes);
	if (bytes > 0 && strcmp(tmp, "0 B") && !bytes_saturated(bytes))
		snprintf(buf, len, "+%s", tmp);
	else if (!strcmp(tmp, "-0 B"))
		snprintf(buf, len, "0 B");
	else
		snprintf(buf, len, "%s", tmp);
	return buf;
}

char *format_duration(char *buf, size_t len, uint64_t ns)
{
	uint64_t s = ns / 1000000000ULL;

	if (ns < 1000000ULL)
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000));
	else if (ns < 1000000000ULL)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000));
	else if (s < 60)
		snprintf(buf, len, "%.1fs", ns / 1e9);
	else if (s < 3600)
		snprintf(buf, len, "%llum%llus", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	else
		snprintf(buf, len, "%lluh%llum%llus", (unsigned long long)(s / 3600),
			 (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
	return buf;
}
