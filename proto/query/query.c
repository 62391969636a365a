// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Questions the commands ask of a built view: children, spans by name, rankings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shorten.h"
#include "view.h"

static int cmp_span(const void *a, const void *b, void *ctx)
{
	const struct view_span *x = &((const struct view *)ctx)->spans[*(const uint32_t *)a];
	const struct view_span *y = &((const struct view *)ctx)->spans[*(const uint32_t *)b];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t view__children(const struct view *v, uint32_t span, uint32_t *out)
{
	size_t n = 0, i;
	uint32_t c;

	if (span == VIEW_NONE) {
		for (i = 0; i < v->n_spans; i++)
			if (v->spans[i].parent == VIEW_NONE)
				out[n++] = (uint32_t)i;
	} else {
		for (c = v->spans[span].first_child; c != VIEW_NONE; c = v->spans[c].next_sibling)
			out[n++] = c;
	}
	qsort_r(out, n, sizeof(*out), cmp_span, (void *)v);
	return n;
}

static uint32_t span_parent(const void *ctx, uint32_t i)
{
	return ((const struct view *)ctx)->spans[i].parent;
}

static const char *span_name(const void *ctx, uint32_t i)
{
	return ((const struct view *)ctx)->spans[i].name;
}

struct treepath_tree view__span_tree(const struct view *v)
{
	return (struct treepath_tree){ v, span_parent, span_name };
}

const char *view__path(const struct view *v, uint32_t span)
{
	struct treepath_tree t = view__span_tree(v);
	char **buf = (char **)&v->path_buf;

	/* the view is const to its readers; its scratch buffer is not */
	if (!*buf && !(*buf = malloc(VIEW_PATH_MAX)))
		return "";
	treepath_write(&t, span, *buf, VIEW_PATH_MAX);
	return *buf;
}

/* strcmp() of two spans' paths */
static int view__path_cmp(const struct view *v, uint32_t a, uint32_t b)
{
	struct treepath_tree t = view__span_tree(v);

	return treepath_cmp(&t, a, b);
}

/* a span is named by its name or its whole path; "(no span)" by neither */
static bool span_is_named(const struct view *v, uint32_t i, const char *name)
{
	const struct view_span *s = &v->spans[i];
	struct treepath_tree t = view__span_tree(v);

	return !s->no_span && (!strcmp(s->name, name) || treepath_is(&t, i, name));
}

bool view__span_within(const struct view *v, uint32_t span, const char *name)
{
	for (; span != VIEW_NONE; span = v->spans[span].parent)
		if (span_is_named(v, span, name))
			return true;
	return false;
}

/*
 * Every span is on the path of some record, so this is also "does a record
 * fall inside a span named `name`", without walking the records.
 */
bool view__has_span(const struct view *v, const char *name)
{
	size_t i;

	for (i = 0; i < v->n_spans; i++)
		if (span_is_named(v, (uint32_t)i, name))
			return true;
	return false;
}

static int cmp_self(const void *a, const void *b, void *ctx)
{
	const struct view_span *x = &((const struct view *)ctx)->spans[*(const uint32_t *)a];
	const struct view_span *y = &((const struct view *)ctx)->spans[*(const uint32_t *)b];

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return view__path_cmp(ctx, *(const uint32_t *)a, *(const uint32_t *)b);
}

size_t view__flat_spans(const struct view *v, uint32_t *out)
{
	size_t n = 0, i;

	for (i = 0; i < v->n_spans; i++)
		if (v->spans[i].self_samples)
			out[n++] = (uint32_t)i;
	qsort_r(out, n, sizeof(*out), cmp_self, (void *)v);
	return n;
}

static int cmp_cs(const void *a, const void *b, void *ctx)
{
	const struct view_cs_row *x = a, *y = b;
	const struct view *v = ctx;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(v->callsites[x->callsite], v->callsites[y->callsite]);
}

/* the selected records summed by their callsite, or by their caller */
static struct view_cs_row *cs_rows(const struct view *v, bool by_caller,
				   bool (*select)(const struct view_rec *rec, void *ctx),
				   void *ctx, size_t *n, double *total)
{
	struct view_cs_row *rows = calloc(v->n_callsites ?: 1, sizeof(*rows));
	size_t i, k = 0;

	if (!rows)
		return NULL;
	*total = 0;
	for (i = 0; i < v->n_callsites; i++) {
		rows[i].callsite = (uint32_t)i;
		rows[i].oldest_ns = -1;
	}
	for (i = 0; i < v->n_recs; i++) {
		const struct view_rec *rec = &v->recs[i];
		uint32_t cs = by_caller && rec->caller != VIEW_NONE ? rec->caller : rec->callsite;
		struct view_cs_row *row = &rows[cs];

		if (select && !select(rec, ctx))
			continue;
		row->bytes += rec->bytes;
		row->objects += rec->objects;
		row->samples += rec->samples;
		row->sampled += rec->sampled;
		if (rec->age_ns > row->oldest_ns)
			row->oldest_ns = rec->age_ns;
		*total += rec->bytes;
	}
	for (i = 0; i < v->n_callsites; i++)
		if (rows[i].samples)
			rows[k++] = rows[i];
	qsort_r(rows, k, sizeof(*rows), cmp_cs, (void *)v);
	*n = k;
	return rows;
}

struct view_cs_row *view__callsite_rows(const struct view *v,
					bool (*select)(const struct view_rec *rec, void *ctx),
					void *ctx, size_t *n, double *total)
{
	return cs_rows(v, false, select, ctx, n, total);
}

struct view_cs_row *view__caller_rows(const struct view *v,
				      bool (*select)(const struct view_rec *rec, void *ctx),
				      void *ctx, size_t *n, double *total)
{
	return cs_rows(v, true, select, ctx, n, total);
}

bool view__callsite_unnamed(const struct view *v, uint32_t i)
{
	return v->callsite_fid[i] >= v->p->n_strings && v->callsite_fid[i] != UINT64_MAX;
}

double *view__inclusive(const struct view *v, bool (*select)(const struct view_rec *rec, void *ctx),
			void *ctx, size_t *n, double **depth)
{
	size_t nf = v->p->n_strings + v->p->n_locations, i;
	double *cum = calloc(nf ?: 1, sizeof(*cum));
	/* the last record that counted each function: once per record, recursion or not */
	uint32_t *seen = calloc(nf ?: 1, sizeof(*seen));
	uint32_t k, j, at;

	*depth = calloc(nf ?: 1, sizeof(**depth));
	if (!cum || !seen || !*depth) {
		free(cum);
		free(seen);
		free(*depth);
		*depth = NULL;
		return NULL;
	}
	for (i = 0; i < v->n_recs && v->stack_off; i++) {
		const struct view_rec *rec = &v->recs[i];

		if (rec->stack == VIEW_NONE || (select && !select(rec, ctx)))
			continue;
		at = 0;
		for (k = v->stack_off[rec->stack]; k < v->stack_off[rec->stack + 1]; k++) {
			const struct pprof_location *l = &v->p->locations[v->stack_locs[k]];

			for (j = 0; j < (l->n_lines ?: 1); j++, at++) {
				uint64_t fid = view__frame_fid(v, l, j);

				if (fid >= nf || seen[fid] == i + 1)
					continue;
				seen[fid] = (uint32_t)(i + 1);
				cum[fid] += rec->bytes;
				(*depth)[fid] += rec->bytes * at;
			}
		}
	}
	free(seen);
	*n = nf;
	return cum;
}

static int cmp_wrap(const void *a, const void *b, void *ctx)
{
	const struct view_wrap_row *x = a, *y = b;
	const struct view *v = ctx;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(v->wrappers[x->wrapper], v->wrappers[y->wrapper]);
}

struct view_wrap_row *view__wrapper_rows(const struct view *v,
					 bool (*select)(const struct view_rec *rec, void *ctx),
					 void *ctx, size_t *n)
{
	struct view_wrap_row *rows = calloc(v->n_wrappers ?: 1, sizeof(*rows));
	size_t i, k = 0;

	if (!rows)
		return NULL;
	for (i = 0; i < v->n_wrappers; i++)
		rows[i].wrapper = (uint32_t)i;
	for (i = 0; i < v->n_recs; i++) {
		const struct view_rec *rec = &v->recs[i];

		if (rec->wrapper != VIEW_NONE && (!select || select(rec, ctx)))
			rows[rec->wrapper].bytes += rec->bytes;
	}
	for (i = 0; i < v->n_wrappers; i++)
		if (rows[i].bytes > 0)
			rows[k++] = rows[i];
	qsort_r(rows, k, sizeof(*rows), cmp_wrap, (void *)v);
	*n = k;
	return rows;
}

const char *view__callsite_label(const struct view *v, uint32_t i, bool full, char *buf,
				 size_t len)
{
	const char *cs = v->callsites[i];
	size_t n = v->callsite_name_len[i], at;

	if (full) {
		snprintf(buf, len, "%s", cs);
		return buf;
	}
	shorten_name(cs, n, buf, len);
	at = strlen(buf);
	snprintf(buf + at, len - at, "%s", cs + n);
	return buf;
}
