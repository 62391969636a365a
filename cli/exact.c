// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "exact.h"
#include "json.h"
#include "table.h"
#include "totals.h"
#include "units.h"
#include "view.h"

/* the estimate of the sampled span tree for a path, inclusive; 0 when not sampled */
static double exact_sampled_bytes(const struct view *v, const char *path)
{
	size_t i;

	for (i = 0; i < v->n_spans; i++)
		if (!v->spans[i].no_span && !strcmp(view__path(v, (uint32_t)i), path))
			return v->spans[i].total;
	return 0;
}

/* path order, one level's names before the next level's: ';' sorts before any byte */
static int cmp_tree(const void *a, const void *b)
{
	const unsigned char *x = (const unsigned char *)(*(const struct span_total *const *)a)->path;
	const unsigned char *y = (const unsigned char *)(*(const struct span_total *const *)b)->path;

	for (; *x && *x == *y; x++, y++)
		;
	return (*x == ';' ? 0 : *x ? *x + 1 : -1) - (*y == ';' ? 0 : *y ? *y + 1 : -1);
}

/* over the closed instances, as the quantiles */
static uint64_t mean_of(const struct span_total *s)
{
	return s->instances ? s->closed_bytes / s->instances : 0;
}

static int exact_row(struct table *t, const struct view *v, const struct span_total *s)
{
	const char *name = s->path, *p;
	char label[768], c[10][40], last[512];
	size_t depth = 0, i;

	/* the path's names, a name's own ';' escaped (lib/treepath.h): the last one, indented */
	for (p = s->path; p[treepath_seg_len(p)]; p += treepath_seg_len(p) + 1)
		depth++;
	name = p;
	treepath_unescape(name, strlen(name), last, sizeof(last));
	snprintf(label, sizeof(label), "%*s%s", (int)(2 * depth), "", last);
	format_bytes(c[0], 40, (double)s->incl_bytes);
	format_bytes(c[1], 40, exact_sampled_bytes(v, s->path));
	snprintf(c[2], 40, "(%s)", format_bytes(c[9], 32, (double)s->self_bytes));
	snprintf(c[3], 40, "%" PRIu64, s->incl_calls);
	snprintf(c[4], 40, "%" PRIu64, s->instances);
	snprintf(c[5], 40, "%" PRIu64, s->open);
	if (s->instances) {
		format_bytes(c[6], 40, (double)mean_of(s));
		format_bytes(c[7], 40, (double)span_total__quantile(s, 0.5));
		format_bytes(c[8], 40, (double)span_total__quantile(s, 0.99));
		format_bytes(c[9], 40, (double)s->max_bytes);
	} else {
		for (i = 6; i < 10; i++)
			snprintf(c[i], 40, "-");
	}
	return table__add(t, (const char *const[]){ label, c[0], c[1], c[2], c[3], c[4], c[5],
						    c[6], c[7], c[8], c[9] });
}

int exact_print(const struct view *v, bool wide, FILE *f)
{
	static const char *const cols[] = { "SPAN", "EXACT", "SAMPLED", "(SELF)", "CALLS", "N",
					    "OPEN", "MEAN", "P50", "P99", "MAX" };
	const struct span_totals *t = &v->totals;
	const struct span_total **order;
	struct table *tab;
	char b[32], calls[32];
	size_t i;
	int ret = 0;

	if (!t->present)
		return 0;
	order = malloc((t->n ?: 1) * sizeof(*order));
	tab = table__new("lrrrrrrrrrr", cols);
	if (!order || !tab) {
		free(order);
		table__free(tab);
		return -1;
	}
	for (i = 0; i < t->n; i++)
		order[i] = &t->spans[i];
	qsort(order, t->n, sizeof(*order), cmp_tree);
	for (i = 0; i < t->n && !ret; i++)
		ret = exact_row(tab, v, order[i]);
	snprintf(calls, sizeof(calls), "%" PRIu64, t->outside_calls);
	if (!ret)
		ret = table__add(tab, (const char *const[]){ "(no span)",
			format_bytes(b, sizeof(b), (double)t->outside_bytes), "", "", calls,
			"", "", "", "", "", "" });
	cli_fit_names(tab, 0, wide);
	if (!ret) {
		fprintf(f, "\nExact, every allocator call (bytes per instance: N closed, OPEN never closed):\n");
		table__print(tab, f);
		if (t->over_instances)
			fprintf(f, "%" PRIu64 " span instances past the paths kept: %s in %" PRIu64
				" calls not shown by path\n", t->over_instances,
				format_bytes(b, sizeof(b), (double)t->over_bytes), t->over_calls);
		if (t->inexact)
			fprintf(f, "%" PRIu64 " span events on threads sharing a probe slot: those spans' "
				"totals may be short\n", t->inexact);
	}
	table__free(tab);
	free(order);
	return ret;
}

void exact_json_span(struct json *j, const struct span_total *s)
{
	json_begin(j, '{');
	json_kv_int(j, "bytes", (int64_t)s->incl_bytes);
	json_kv_int(j, "calls", (int64_t)s->incl_calls);
	json_kv_int(j, "instances", (int64_t)s->instances);
	json_kv_int(j, "open", (int64_t)s->open);
	json_key(j, "path");
	json_str(j, s->path);
	json_key(j, "per_instance");
	if (s->instances) {
		json_begin(j, '{');
		json_kv_int(j, "max", (int64_t)s->max_bytes);
		json_kv_int(j, "mean", (int64_t)mean_of(s));
		json_kv_int(j, "p50", (int64_t)span_total__quantile(s, 0.5));
		json_kv_int(j, "p99", (int64_t)span_total__quantile(s, 0.99));
		json_end(j, '}');
	} else {
		json_null(j);
	}
	json_kv_int(j, "self_bytes", (int64_t)s->self_bytes);
	json_kv_int(j, "self_calls", (int64_t)s->self_calls);
	json_end(j, '}');
}

void exact_json(struct json *j, const struct view *v)
{
	const struct span_totals *t = &v->totals;
	size_t i;

	if (!t->present)
		return;
	json_key(j, "exact");
	json_begin(j, '{');
	json_kv_int(j, "inexact_events", (int64_t)t->inexact);
	json_key(j, "outside");
	json_begin(j, '{');
	json_kv_int(j, "bytes", (int64_t)t->outside_bytes);
	json_kv_int(j, "calls", (int64_t)t->outside_calls);
	json_end(j, '}');
	json_key(j, "overflow");
	json_begin(j, '{');
	json_kv_int(j, "bytes", (int64_t)t->over_bytes);
	json_kv_int(j, "calls", (int64_t)t->over_calls);
	json_kv_int(j, "instances", (int64_t)t->over_instances);
	json_end(j, '}');
	json_key(j, "spans");
	json_begin(j, '[');
	for (i = 0; i < t->n; i++)
		exact_json_span(j, &t->spans[i]);
	json_end(j, ']');
	json_end(j, '}');
}
