// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <math.h>

#include "escape.h"
#include "json.h"

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
	j->after_key = false;
}

/*
 * Whether the current container is still empty.  Callers nest less deeply
 * than JSON_MAX_DEPTH (the span tree is bounded); deeper levels share the
 * last flag, which can only misplace a comma, never write out of bounds.
 */
static bool *first(struct json *j)
{
	return &j->first[j->depth < JSON_MAX_DEPTH ? j->depth : JSON_MAX_DEPTH - 1];
}

/* separator and indentation before a value or a key */
static void lead(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth) {
		fputs(*first(j) ? "\n" : ",\n", j->f);
		fprintf(j->f, "%*s", 2 * j->depth, "");
	}
	*first(j) = false;
}

void json_begin(struct json *j, char kind)
{
	lead(j);
	fputc(kind, j->f);
	j->depth++;
	*first(j) = true;
}

void json_end(struct json *j, char kind)
{
	bool empty = *first(j);

	j->depth--;
	if (!empty)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	fputc(kind, j->f);
	if (!j->depth)
		fputc('\n', j->f);
}

/*
 * JSON text is UTF-8: any other byte, an encoded surrogate or an overlong form
 * (names from binaries can be anything) becomes U+FFFD.  The controls of
 * escape.h are escaped, C1 and bidirectional ones too (a terminal may take
 * U+009B for CSI; an override reorders what a reader of the JSON sees).
 */
void json_put_str(FILE *f, const char *s)
{
	uint32_t cp;
	int n;

	fputc('"', f);
	while (*s) {
		unsigned char c = (unsigned char)*s;

		n = utf8_decode(s, &cp);
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else if (!n)
			fputs("\\ufffd", f);
		else if (esc_is_control(cp))
			fprintf(f, "\\u%04x", cp);
		else
			fwrite(s, 1, (size_t)n, f);
		s += n ? n : 1;
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

void json_kv_int(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_int(j, v);
}

/*
 * Sums of int64 sample values can leave the int64 range (two INT64_MAX): a
 * consumer reading int64 gets the saturated value rather than a number it
 * cannot hold.  NaN (no value) is null.
 */
void json_round(struct json *j, double v)
{
	lead(j);
	if (isnan(v))
		fputs("null", j->f);
	else if (v >= 9223372036854775807.0)
		fprintf(j->f, "%" PRId64, INT64_MAX);
	else if (v <= -9223372036854775808.0)
		fprintf(j->f, "%" PRId64, INT64_MIN);
	else	/* "-0" is valid JSON but surprising */
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
