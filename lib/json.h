/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A streaming JSON writer, indented two spaces.  Callers emit object keys in
 * sorted order themselves: the output is a documented contract, and sorted
 * keys make it diffable and stable.
 */
#ifndef CULPERT_JSON_H
#define CULPERT_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* nesting: a report of the deepest span tree (VIEW_MAX_SPAN_DEPTH) is 2 levels a span */
#define JSON_MAX_DEPTH 320

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH];
	bool after_key;
};

void json_init(struct json *j, FILE *f);
void json_begin(struct json *j, char kind);	/* '{' or '[' */
void json_end(struct json *j, char kind);	/* '}' or ']'; a newline after the outermost */
void json_key(struct json *j, const char *key);
void json_str(struct json *j, const char *s);
void json_int(struct json *j, int64_t v);
/* "key": v, the most common pair of a report */
void json_kv_int(struct json *j, const char *key, int64_t v);
/*
 * a whole number from a double estimate (values are unbiased estimates,
 * rounded), saturated to the int64 range; NaN is null
 */
void json_round(struct json *j, double v);
/* a number with `decimals` digits after the point */
void json_num(struct json *j, double v, int decimals);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/* s as a JSON string on its own (for writers without the indenting state above) */
void json_put_str(FILE *f, const char *s);

#endif /* CULPERT_JSON_H */
