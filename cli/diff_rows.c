// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_rows.h"
#include "vec.h"

static const char *const kind_names[KIND__COUNT] = {
	[KIND_REGRESSION] = "regression",
	[KIND_NEW] = "new",
	[KIND_IMPROVEMENT] = "improvement",
	[KIND_GONE] = "gone",
	[KIND_QUIET] = "quiet",
};

const char *diff_kind_name(enum diff_kind k)
{
	return k < KIND__COUNT ? kind_names[k] : "?";
}

/* SPEC §8.2, in its order: the first rule that applies decides */
static enum diff_kind classify_thresholds(double b, double a, const struct diff_opts *o,
					  const char **reason)
{
	double d = a - b;

	*reason = "threshold";
	if (fmax(b, a) < (double)o->min_span_bytes) {
		*reason = "min_span_bytes";
		return KIND_QUIET;
	}
	if (b == 0)
		return a >= (double)o->threshold_bytes ? KIND_NEW : KIND_QUIET;
	if (a == 0)
		return b >= (double)o->threshold_bytes ? KIND_GONE : KIND_QUIET;
	if (fabs(d) >= (double)o->threshold_bytes && fabs(100.0 * d / b) >= o->threshold_pct)
		return d > 0 ? KIND_REGRESSION : KIND_IMPROVEMENT;
	return KIND_QUIET;
}

/* the standard error of a byte estimate from samples taken every rate bytes; 0 without a rate */
static double noise_se(const struct diff_opts *o, double bytes)
{
	return sqrt((o->rate > 0 ? (double)o->rate : 0) * bytes);
}

double diff_pct(double before, double after)
{
	return before ? 100.0 * (after - before) / before : NAN;
}

void diff_row__set(struct diff_row *r, double before, double after)
{
	r->before = before;
	r->after = after;
	r->delta = after - before;
	r->pct = diff_pct(before, after);
}

enum diff_kind diff_classify(double before, double after, const struct diff_opts *o,
			     const char **reason)
{
	enum diff_kind k = classify_thresholds(before, after, o, reason);
	double se = noise_se(o, before + after);

	/* a change sampling alone explains is no change */
	if (k != KIND_QUIET && o->min_confidence > 0 &&
	    fabs(after - before) < o->min_confidence * se) {
		*reason = "noise";
		return KIND_QUIET;
	}
	if (k != KIND_QUIET)
		*reason = NULL;
	return k;
}

/* --- rows ------------------------------------------------------------------------ */

struct row_builder {
	struct diff_result *r;
	size_t cap;
	struct hashtab ht;
};

static bool key_eq(uint32_t idx, const void *key, void *ctx)
{
	return !strcmp(((struct row_builder *)ctx)->r->rows[idx].key, key);
}

static int add_bytes(struct row_builder *rb, const char *key, size_t name_len, int side,
		     double bytes)
{
	struct diff_result *r = rb->r;
	uint64_t h = hash_bytes(key, strlen(key), 0);
	uint32_t idx;

	if (!hashtab__find(&rb->ht, h, key, key_eq, rb, &idx)) {
		if (vec_reserve(&r->rows, &rb->cap, r->n_rows + 1, sizeof(*r->rows)) ||
		    hashtab__insert(&rb->ht, h, (uint32_t)r->n_rows))
			return -ENOMEM;
		idx = (uint32_t)r->n_rows++;
		memset(&r->rows[idx], 0, sizeof(r->rows[idx]));
		r->rows[idx].key = strdup(key);
		r->rows[idx].name_len = name_len;
		if (!r->rows[idx].key)
			return -ENOMEM;
	}
	if (side)
		r->rows[idx].after += bytes;
	else
		r->rows[idx].before += bytes;
	return 0;
}

static int group_rank(enum diff_kind k)
{
	return k == KIND_REGRESSION || k == KIND_NEW ? 0 : k == KIND_QUIET ? 2 : 1;
}

static int cmp_rows(const void *a, const void *b, void *ctx)
{
	const struct diff_row *x = &((struct diff_row *)ctx)[*(const size_t *)a];
	const struct diff_row *y = &((struct diff_row *)ctx)[*(const size_t *)b];

	if (group_rank(x->kind) != group_rank(y->kind))
		return group_rank(x->kind) - group_rank(y->kind);
	if (fabs(x->delta) != fabs(y->delta))
		return fabs(x->delta) > fabs(y->delta) ? -1 : 1;
	return strcmp(x->key, y->key);
}

int diff_result__build(struct diff_result *r, const struct view *before, const struct view *after,
		       const struct diff_opts *o)
{
	const struct view *v[2] = { before, after };
	struct row_builder rb = { .r = r };
	size_t i;
	int side, ret = 0;

	memset(r, 0, sizeof(*r));
	for (side = 0; side < 2 && !ret; side++) {
		const struct view *w = v[side];

		r->total[side] = w->total_bytes;
		/* a callsite's bytes over every span, matched by its "function (file:line)" */
		for (i = 0; o->by == DIFF_BY_CALLSITE && i < w->n_recs && !ret; i++)
			ret = add_bytes(&rb, w->callsites[w->recs[i].callsite],
					w->callsite_name_len[w->recs[i].callsite], side,
					w->recs[i].bytes);
		/* spans that allocated themselves: a row is a span's own bytes */
		for (i = 0; o->by != DIFF_BY_CALLSITE && i < w->n_spans && !ret; i++) {
			const struct view_span *s = &w->spans[i];

			if (s->self_samples)
				ret = add_bytes(&rb, o->by == DIFF_BY_NAME ? s->name : s->path, 0, side,
						s->self);
		}
	}
	hashtab__free(&rb.ht);
	if (!ret && !(r->order = malloc((r->n_rows ?: 1) * sizeof(*r->order))))
		ret = -ENOMEM;
	if (ret)
		return ret;
	for (i = 0; i < r->n_rows; i++) {
		struct diff_row *row = &r->rows[i];

		diff_row__set(row, row->before, row->after);
		row->se_before = noise_se(o, row->before);
		row->se_after = noise_se(o, row->after);
		row->se_delta = noise_se(o, row->before + row->after);
		row->kind = diff_classify(row->before, row->after, o, &row->reason);
		r->count[row->kind]++;
		r->order[i] = i;
	}
	qsort_r(r->order, r->n_rows, sizeof(*r->order), cmp_rows, r->rows);
	return 0;
}

bool diff_result__failed(const struct diff_result *r)
{
	return r->count[KIND_REGRESSION] || r->count[KIND_NEW];
}

void diff_result__clear(struct diff_result *r)
{
	size_t i;

	for (i = 0; i < r->n_rows; i++)
		free(r->rows[i].key);
	free(r->rows);
	free(r->order);
	memset(r, 0, sizeof(*r));
}

/* --- tree ---------------------------------------------------------------------------- */

static bool path_eq(uint32_t idx, const void *key, void *ctx)
{
	return !strcmp(((struct diff_tree *)ctx)->nodes[idx].path, key);
}

static int tree_add(struct diff_tree *t, const struct view *v, int side)
{
	/* view i's node j sits at merged index map[j]; parents come before their children */
	uint32_t *map = malloc((v->n_spans ?: 1) * sizeof(*map));
	size_t i;

	if (!map)
		return -ENOMEM;
	for (i = 0; i < v->n_spans; i++) {
		const struct view_span *s = &v->spans[i];
		uint64_t h = hash_bytes(s->path, strlen(s->path), s->no_span);
		struct diff_node *n;
		uint32_t idx;

		if (!hashtab__find(&t->ht, h, s->path, path_eq, t, &idx)) {
			if (vec_reserve(&t->nodes, &t->cap_nodes, t->n_nodes + 1, sizeof(*n)) ||
			    hashtab__insert(&t->ht, h, (uint32_t)t->n_nodes)) {
				free(map);
				return -ENOMEM;
			}
			idx = (uint32_t)t->n_nodes++;
			n = &t->nodes[idx];
			memset(n, 0, sizeof(*n));
			n->name = s->name;
			n->path = s->path;
			n->depth = s->depth;
			n->parent = s->parent == VIEW_NONE ? VIEW_NONE : map[s->parent];
		}
		map[i] = idx;
		t->nodes[idx].total[side] += s->total;
	}
	free(map);
	return 0;
}

/* each node on its parent's list of children (or the roots'), once both views are in */
static void link_children(struct diff_tree *t)
{
	size_t i;

	t->first_root = VIEW_NONE;
	for (i = 0; i < t->n_nodes; i++)
		t->nodes[i].first_child = VIEW_NONE;
	for (i = t->n_nodes; i-- > 0;) {
		struct diff_node *n = &t->nodes[i];
		uint32_t *head = n->parent == VIEW_NONE ? &t->first_root :
				 &t->nodes[n->parent].first_child;

		n->next_sibling = *head;
		*head = (uint32_t)i;
	}
}

struct diff_tree *diff_tree__new(const struct view *before, const struct view *after)
{
	struct diff_tree *t = calloc(1, sizeof(*t));

	if (!t || tree_add(t, before, 0) || tree_add(t, after, 1)) {
		diff_tree__free(t);
		return NULL;
	}
	link_children(t);
	return t;
}

static int cmp_nodes(const void *a, const void *b, void *ctx)
{
	const struct diff_node *x = &((struct diff_node *)ctx)[*(const uint32_t *)a];
	const struct diff_node *y = &((struct diff_node *)ctx)[*(const uint32_t *)b];
	double mx = fmax(x->total[0], x->total[1]), my = fmax(y->total[0], y->total[1]);

	if (mx != my)
		return mx > my ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t diff_tree__children(const struct diff_tree *t, uint32_t node, uint32_t **out)
{
	uint32_t first = node == VIEW_NONE ? t->first_root : t->nodes[node].first_child, c;
	size_t n = 0;

	for (c = first; c != VIEW_NONE; c = t->nodes[c].next_sibling)
		n++;
	*out = malloc((n ?: 1) * sizeof(**out));
	if (!*out)
		return 0;
	n = 0;
	for (c = first; c != VIEW_NONE; c = t->nodes[c].next_sibling)
		(*out)[n++] = c;
	qsort_r(*out, n, sizeof(**out), cmp_nodes, t->nodes);
	return n;
}

void diff_tree__free(struct diff_tree *t)
{
	if (!t)
		return;
	hashtab__free(&t->ht);
	free(t->nodes);
	free(t);
}
