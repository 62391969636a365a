// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdio.h>
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

/*
 * docs/cli.md ("diff"), in its order: the first rule that applies decides.  Values may
 * be negative (pprof -diff_base writes the base's samples negated, so a span
 * of such a file holds its net change): sizes are compared by magnitude, a
 * span is new or gone only when the side it is on is positive, and one that
 * appears below zero or leaves from below zero is a plain change by the sign
 * of its delta.
 */
static enum diff_kind classify_thresholds(double b, double a, const struct diff_opts *o,
					  const char **reason)
{
	double d = a - b;

	*reason = "threshold";
	if (fmax(fabs(b), fabs(a)) < (double)o->min_span_bytes) {
		*reason = "min_span_bytes";
		return KIND_QUIET;
	}
	if (b == 0 && a > 0)
		return a >= (double)o->threshold_bytes ? KIND_NEW : KIND_QUIET;
	if (a == 0 && b > 0)
		return b >= (double)o->threshold_bytes ? KIND_GONE : KIND_QUIET;
	/* b == 0 here is a change from nothing to below zero: |delta%| is infinite */
	if (fabs(d) >= (double)o->threshold_bytes &&
	    (b == 0 || fabs(100.0 * d / b) >= o->threshold_pct))
		return d > 0 ? KIND_REGRESSION : KIND_IMPROVEMENT;
	return KIND_QUIET;
}

/*
 * The standard error of a byte estimate from samples taken every rate bytes;
 * 0 without a rate.  Negative values are estimates too: their size counts.
 */
static double noise_se(const struct diff_opts *o, double bytes)
{
	return sqrt((o->rate > 0 ? (double)o->rate : 0) * fabs(bytes));
}

double diff_pct(double before, double after)
{
	return before ? 100.0 * (after - before) / fabs(before) : NAN;
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
	double se = sqrt(noise_se(o, before) * noise_se(o, before) +
			 noise_se(o, after) * noise_se(o, after));

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

/* --- tree ---------------------------------------------------------------------------- */

struct node_key {
	uint32_t parent;
	const char *name;
	bool no_span;
};

static bool node_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct diff_node *n = &((struct diff_tree *)ctx)->nodes[idx];
	const struct node_key *k = key;

	return n->parent == k->parent && n->no_span == k->no_span && !strcmp(n->name, k->name);
}

/*
 * v's spans in order of depth, into order: parents before children, which
 * index order alone does not give (orphans.c adds its marker last, above
 * nodes made before it).
 */
static void by_depth(const struct view *v, uint32_t *order)
{
	size_t start[VIEW_MAX_SPAN_DEPTH + 1] = { 0 }, i, d;

	for (i = 0; i < v->n_spans; i++)
		start[v->spans[i].depth + 1]++;
	for (d = 1; d <= VIEW_MAX_SPAN_DEPTH; d++)
		start[d] += start[d - 1];
	for (i = 0; i < v->n_spans; i++)
		order[start[v->spans[i].depth]++] = (uint32_t)i;
}

/* view v's spans into the merged tree: a node per (parent, name), as the views build theirs */
static int tree_add(struct diff_tree *t, const struct view *v, int side)
{
	/* view i's node j sits at merged index map[j]; spans taken parents first */
	uint32_t *map = malloc((v->n_spans ?: 1) * sizeof(*map));
	uint32_t *order = malloc((v->n_spans ?: 1) * sizeof(*order));
	size_t o;
	int ret = map && order ? 0 : -ENOMEM;

	if (!ret)
		by_depth(v, order);
	for (o = 0; !ret && o < v->n_spans; o++) {
		uint32_t i = order[o];
		const struct view_span *s = &v->spans[i];
		struct node_key k = { s->parent == VIEW_NONE ? VIEW_NONE : map[s->parent], s->name,
				      s->no_span };
		uint64_t h = hash_bytes(s->name, strlen(s->name), hash_u64(k.parent, s->no_span));
		struct diff_node *n;
		uint32_t idx;

		if (!hashtab__find(&t->ht, h, &k, node_eq, t, &idx)) {
			if (vec_reserve(&t->nodes, &t->cap_nodes, t->n_nodes + 1, sizeof(*n)) ||
			    hashtab__insert(&t->ht, h, (uint32_t)t->n_nodes)) {
				ret = -ENOMEM;
				break;
			}
			idx = (uint32_t)t->n_nodes++;
			n = &t->nodes[idx];
			memset(n, 0, sizeof(*n));
			n->name = s->name;
			n->depth = s->depth;
			n->parent = k.parent;
			n->no_span = s->no_span;
		}
		map[i] = idx;
		t->nodes[idx].total[side] += s->total;
		t->nodes[idx].self[side] += s->self;
		t->nodes[idx].allocated |= s->self_samples != 0;
	}
	free(map);
	free(order);
	return ret;
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

static void diff_tree__free(struct diff_tree *t)
{
	if (!t)
		return;
	hashtab__free(&t->ht);
	free(t->nodes);
	free(t);
}

static struct diff_tree *diff_tree__new(const struct view *before, const struct view *after)
{
	struct diff_tree *t = calloc(1, sizeof(*t));

	if (!t || tree_add(t, before, 0) || tree_add(t, after, 1)) {
		diff_tree__free(t);
		return NULL;
	}
	hashtab__free(&t->ht);
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

static uint32_t node_parent(const void *ctx, uint32_t i)
{
	return ((const struct diff_tree *)ctx)->nodes[i].parent;
}

static const char *node_name(const void *ctx, uint32_t i)
{
	return ((const struct diff_tree *)ctx)->nodes[i].name;
}

/* --- rows ------------------------------------------------------------------------ */

const char *diff_row__key(const struct diff_result *r, const struct diff_row *row, char *buf,
			  size_t len)
{
	struct treepath_tree t = { r->tree, node_parent, node_name };

	if (r->by != DIFF_BY_PATH || row->exact)
		snprintf(buf, len, "%s", row->name);
	else
		treepath_write(&t, row->node, buf, len);
	return buf;
}

static int new_row(struct diff_result *r, size_t *cap)
{
	if (vec_reserve(&r->rows, cap, r->n_rows + 1, sizeof(*r->rows)))
		return -ENOMEM;
	memset(&r->rows[r->n_rows++], 0, sizeof(*r->rows));
	return 0;
}

/* by path: a row per merged node that allocated itself on either side */
static int rows_by_path(struct diff_result *r)
{
	size_t cap = 0, i;

	for (i = 0; i < r->tree->n_nodes; i++) {
		const struct diff_node *n = &r->tree->nodes[i];

		if (!n->allocated)
			continue;
		if (new_row(r, &cap))
			return -ENOMEM;
		r->rows[r->n_rows - 1].node = (uint32_t)i;
		r->rows[r->n_rows - 1].before = n->self[0];
		r->rows[r->n_rows - 1].after = n->self[1];
	}
	return 0;
}

static bool name_eq(uint32_t idx, const void *key, void *ctx)
{
	return !strcmp(((struct diff_result *)ctx)->rows[idx].name, key);
}

/* rows matched by a name: the one of `name` (found or added) gets bytes on its side */
struct named_rows {
	struct diff_result *r;
	struct hashtab ht;
	size_t cap;
};

static int add_named(struct named_rows *nr, const char *name, size_t name_len, int side,
		     double bytes)
{
	struct diff_result *r = nr->r;
	uint64_t h = hash_bytes(name, strlen(name), 0);
	uint32_t idx;

	if (!hashtab__find(&nr->ht, h, name, name_eq, r, &idx)) {
		if (new_row(r, &nr->cap) || hashtab__insert(&nr->ht, h, (uint32_t)(r->n_rows - 1)))
			return -ENOMEM;
		idx = (uint32_t)(r->n_rows - 1);
		r->rows[idx].name = name;
		r->rows[idx].name_len = name_len;
	}
	if (side)
		r->rows[idx].after += bytes;
	else
		r->rows[idx].before += bytes;
	return 0;
}

/*
 * by name: a row per innermost name, summed over every path that ends in it;
 * by callsite: a row per callsite ("function (file:line)", as found past the
 * wrappers), its bytes summed over every span.  Names are borrowed from the views.
 */
static int rows_by_names(struct diff_result *r, const struct view *const v[2], bool callsites)
{
	struct named_rows nr = { .r = r };
	size_t i;
	int side, ret = 0;

	for (side = 0; side < 2 && !ret; side++) {
		const struct view *w = v[side];

		for (i = 0; callsites && i < w->n_recs && !ret; i++)
			ret = add_named(&nr, w->callsites[w->recs[i].callsite],
					w->callsite_name_len[w->recs[i].callsite], side,
					w->recs[i].bytes);
		for (i = 0; !callsites && i < w->n_spans && !ret; i++)
			if (w->spans[i].self_samples)
				ret = add_named(&nr, w->spans[i].name, 0, side, w->spans[i].self);
	}
	hashtab__free(&nr.ht);
	return ret;
}

/*
 * Both profiles carry exact span totals: a row per span path of either, its
 * exact self bytes (every allocator call, no sampling), and (no span) from
 * their calls outside any span.  Paths are borrowed from the views.
 */
static int rows_exact(struct diff_result *r, const struct view *const v[2])
{
	struct named_rows nr = { .r = r };
	size_t i, k;
	int side, ret = 0;

	for (side = 0; side < 2 && !ret; side++) {
		const struct span_totals *t = &v[side]->totals;

		for (i = 0; i < t->n && !ret; i++)
			ret = add_named(&nr, t->spans[i].path, 0, side, (double)t->spans[i].self_bytes);
		if (!ret)
			ret = add_named(&nr, VIEW_NO_SPAN, 0, side, (double)t->outside_bytes);
	}
	hashtab__free(&nr.ht);
	for (i = 0; i < r->n_rows && !ret; i++) {
		r->rows[i].exact = true;
		for (k = 0; k < 2; k++) {
			const struct span_total *s = span_totals__find(&v[k]->totals, r->rows[i].name);

			r->rows[i].p99[k] = s ? (double)span_total__quantile(s, 0.99) : 0;
		}
		r->rows[i].p99_pct = r->rows[i].p99[0] && r->rows[i].p99[1] ?
				     diff_pct(r->rows[i].p99[0], r->rows[i].p99[1]) : NAN;
	}
	return ret;
}

/*
 * An exact row: no noise, so --min-confidence does not apply; and a p99
 * per instance grown past --threshold-p99-pct is a regression whatever the
 * bytes did.
 */
static void classify_exact(struct diff_row *row, const struct diff_opts *o)
{
	struct diff_opts no_noise = *o;

	no_noise.min_confidence = 0;
	row->se_before = row->se_after = row->se_delta = 0;
	row->kind = diff_classify(row->before, row->after, &no_noise, &row->reason);
	row->p99_regressed = o->threshold_p99_pct > 0 && !isnan(row->p99_pct) &&
			     row->p99_pct >= o->threshold_p99_pct;
	if (row->p99_regressed && row->kind != KIND_NEW) {
		row->kind = KIND_REGRESSION;
		row->reason = NULL;
	}
}

/* is the row a span under "(entered before attach)" (orphans.c)? */
static bool before_attach(const struct diff_result *r, const struct diff_row *row)
{
	size_t len = strlen(VIEW_BEFORE_ATTACH);
	uint32_t n;

	if (row->exact)
		return !strncmp(row->name, VIEW_BEFORE_ATTACH, len) &&
		       (!row->name[len] || row->name[len] == ';');
	if (r->by != DIFF_BY_PATH)
		return false;
	for (n = row->node; r->tree->nodes[n].parent != VIEW_NONE; n = r->tree->nodes[n].parent)
		;
	return !r->tree->nodes[n].no_span && !strcmp(r->tree->nodes[n].name, VIEW_BEFORE_ATTACH);
}

static int group_rank(enum diff_kind k)
{
	return k == KIND_REGRESSION || k == KIND_NEW ? 0 : k == KIND_QUIET ? 2 : 1;
}

static int cmp_rows(const void *a, const void *b, void *ctx)
{
	const struct diff_result *r = ctx;
	const struct diff_row *x = &r->rows[*(const size_t *)a];
	const struct diff_row *y = &r->rows[*(const size_t *)b];
	struct treepath_tree t = { r->tree, node_parent, node_name };

	if (group_rank(x->kind) != group_rank(y->kind))
		return group_rank(x->kind) - group_rank(y->kind);
	if (fabs(x->delta) != fabs(y->delta))
		return fabs(x->delta) > fabs(y->delta) ? -1 : 1;
	if (r->by != DIFF_BY_PATH || r->exact)
		return strcmp(x->name, y->name);
	return treepath_cmp(&t, x->node, y->node);
}

int diff_result__build(struct diff_result *r, const struct view *before, const struct view *after,
		       const struct diff_opts *o)
{
	const struct view *const v[2] = { before, after };
	size_t i;
	int ret;

	memset(r, 0, sizeof(*r));
	r->by = o->by;
	r->total[0] = before->total_bytes;
	r->total[1] = after->total_bytes;
	r->tree = diff_tree__new(before, after);
	if (!r->tree)
		return -ENOMEM;
	r->exact = o->by == DIFF_BY_PATH && before->totals.present && after->totals.present;
	/* a row is a span's own bytes (spans that allocated themselves), or a callsite's */
	if (r->exact)
		ret = rows_exact(r, v);
	else
		ret = o->by == DIFF_BY_PATH ? rows_by_path(r) :
		      rows_by_names(r, v, o->by == DIFF_BY_CALLSITE);
	if (!ret && !(r->order = malloc((r->n_rows ?: 1) * sizeof(*r->order))))
		ret = -ENOMEM;
	if (ret)
		return ret;
	for (i = 0; i < r->n_rows; i++) {
		struct diff_row *row = &r->rows[i];

		diff_row__set(row, row->before, row->after);
		if (row->exact) {
			classify_exact(row, o);
		} else {
			row->se_before = noise_se(o, row->before);
			row->se_after = noise_se(o, row->after);
			row->se_delta = sqrt(row->se_before * row->se_before +
					     row->se_after * row->se_after);
			row->kind = diff_classify(row->before, row->after, o, &row->reason);
		}
		/*
		 * How much of a span ran before the attach depends on when the
		 * attach landed, not on the program: no change of such a span
		 * counts (docs/cli.md, "diff").
		 */
		if (row->kind != KIND_QUIET && before_attach(r, row)) {
			row->kind = KIND_QUIET;
			row->reason = "before_attach";
		}
		r->count[row->kind]++;
		r->order[i] = i;
	}
	qsort_r(r->order, r->n_rows, sizeof(*r->order), cmp_rows, r);
	return 0;
}

bool diff_result__failed(const struct diff_result *r)
{
	return r->count[KIND_REGRESSION] || r->count[KIND_NEW];
}

void diff_result__clear(struct diff_result *r)
{
	free(r->rows);
	free(r->order);
	diff_tree__free(r->tree);
	memset(r, 0, sizeof(*r));
}
