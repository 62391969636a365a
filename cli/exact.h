/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The exact span totals of a profile (proto/totals.h) in `culpert report`:
 * a table beside the sampled tree, and their JSON.  One place for both, so
 * the text and the JSON say the same thing.
 */
#ifndef CULPERT_CLI_EXACT_H
#define CULPERT_CLI_EXACT_H

#include <stdbool.h>
#include <stdio.h>

struct json;
struct span_total;
struct view;

/* the "Exact" table: per span path, exact bytes and calls beside the estimate; 0 or -1 */
int exact_print(const struct view *v, bool wide, FILE *f);
/* one span path's totals as a JSON object */
void exact_json_span(struct json *j, const struct span_total *s);
/* the profile's "exact" object, when it has totals */
void exact_json(struct json *j, const struct view *v);

#endif /* CULPERT_CLI_EXACT_H */
