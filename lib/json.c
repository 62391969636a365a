// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <math.h>

#include "json.h"

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
	j->after_key = false;
}

/* separator and indentation before a value or a key */
static void lead(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth) {
		fputs(j->first[j->depth] ? "\n" : ",\n", j->f);
		fprintf(j->f, "%*s", 2 * j->depth, "");
	}
	j->first[j->depth] = false;
}

void json_begin(struct json *j, char kind)
{
	lead(j);
	fputc(kind, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

void json_end(struct json *j, char kind)
{
	bool empty = j->first[j->depth];

	j->depth--;
	if (!empty)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	fputc(kind, j->f);
	if (!j->depth)
		fputc('\n', j->f);
}

/* length of the valid UTF-8 sequence at c, 0 if it is not one */
static int utf8_len(const unsigned char *c)
{
	int n, i;

	if (*c < 0x80)
		return 1;
	if (*c >= 0xc2 && *c <= 0xdf)
		n = 2;
	else if (*c >= 0xe0 && *c <= 0xef)
		n = 3;
	else if (*c >= 0xf0 && *c <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((c[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* JSON text is UTF-8: other bytes (names from binaries can be anything) become U+FFFD */
void json_put_str(FILE *f, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;
	int n;

	fputc('"', f);
	while (*c) {
		n = utf8_len(c);
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c == '\n')
			fputs("\\n", f);
		else if (*c == '\t')
			fputs("\\t", f);
		else if (*c < 0x20 || *c == 0x7f)
			fprintf(f, "\\u%04x", *c);
		else if (!n)
			fputs("\\ufffd", f);
		else
			fwrite(c, 1, (size_t)n, f);
		c += n ? n : 1;
	}
	fputc('"', f);
}

void json_key(struct json *j, const char *key)
{
	lead(j);
	json_put_str(j->f, key);
	fputs(": ", j->f);
	j->after_key = true;
}

void json_str(struct json *j, const char *s)
{
	lead(j);
	json_put_str(j->f, s);
}

void json_int(struct json *j, int64_t v)
{
	lead(j);
	fprintf(j->f, "%" PRId64, v);
}

void json_round(struct json *j, double v)
{
	lead(j);
	/* "-0" is valid JSON but surprising */
	fprintf(j->f, "%.0f", fabs(v) < 0.5 ? 0.0 : v);
}

void json_num(struct json *j, double v, int decimals)
{
	lead(j);
	if (!isfinite(v))
		fputs("null", j->f);
	else
		fprintf(j->f, "%.*f", decimals, fabs(v) < 0.5 * pow(10, -decimals) ? 0.0 : v);
}

void json_bool(struct json *j, bool v)
{
	lead(j);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
	lead(j);
	fputs("null", j->f);
}
