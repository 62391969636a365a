// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "flame_tree.h"
#include "units.h"
#include "vec.h"

/* an element of a record's sequence: a name's rank among all names, times 2, +1 for a span */
#define KEY_END		UINT32_MAX
/* in loc_key: the location has several lines, look them up (the rest of the bits: nothing) */
#define KEY_LINES	(UINT32_MAX - 1)
/* in line_key and loc_key: a frame --skip names (view__frame_skipped()), left out of sequences */
#define KEY_SKIP	(UINT32_MAX - 2)

struct flame_tree {
	const struct view *v;
	struct pprof_budget budget;	/* the view's, carried on */
	uint32_t *recs;			/* the records drawn, in the order of their sequences */
	size_t n_recs;
	char **names;			/* every name, sorted: rank i is names[i] */
	size_t n_names, cap_names;
	uint32_t *line_key;		/* per p->lines entry */
	uint32_t *loc_key;		/* per location: its one frame's key, or KEY_LINES */
	uint32_t *span_key;		/* per span */
	uint32_t *chain_key;		/* per span, the keys of its chain, root first ... */
	uint32_t *chain_off;		/* ... from chain_off[span], depth + 1 of them */
	uint32_t deeper_key;
	double total;
};

/* --- names ------------------------------------------------------------------------- */

struct interner {
	struct flame_tree *t;
	struct hashtab ht;
};

static bool name_eq(uint32_t idx, const void *key, void *ctx)
{
	return !strcmp(((struct flame_tree *)ctx)->names[idx], key);
}

/* raw under the folded rule, as an index into t->names (ranks come later) */
static int intern(struct interner *in, const char *raw, uint32_t *out)
{
	struct flame_tree *t = in->t;
	char esc[4 * 1024 + 1];
	uint64_t h;
	int ret;

	esc_folded(esc, sizeof(esc), raw);
	h = hash_bytes(esc, strlen(esc), 11);
	if (hashtab__find(&in->ht, h, esc, name_eq, t, out))
		return 0;
	ret = pprof_budget__reserve(&t->budget, &t->names, &t->cap_names, t->n_names + 1,
				    sizeof(char *));
	if (!ret)
		ret = pprof_budget__charge(&t->budget, strlen(esc) + 1);
	if (!ret)
		ret = pprof_budget__insert(&t->budget, &in->ht, h, (uint32_t)t->n_names);
	if (ret)
		return ret;
	t->names[t->n_names] = strdup(esc);
	if (!t->names[t->n_names])
		return -ENOMEM;
	*out = (uint32_t)t->n_names++;
	return 0;
}

/* the name of every frame (location line, or location without lines) and span */
static int intern_all(struct interner *in)
{
	struct flame_tree *t = in->t;
	const struct view *v = t->v;
	const struct pprof_profile *p = v->p;
	char buf[1024];
	size_t i;
	uint32_t j;
	int ret = 0;

	for (i = 0; i < p->n_locations && !ret; i++) {
		const struct pprof_location *l = &p->locations[i];

		/* an unnamed frame: --skip names it "object+0xoffset" */
		if (!l->n_lines && view__frame_skipped(v, l, 0))
			t->loc_key[i] = KEY_SKIP;
		else if (!l->n_lines)
			ret = intern(in, view__frame_name(v, l, 0, false, buf, sizeof(buf)),
				     &t->loc_key[i]);
		for (j = 0; j < l->n_lines && !ret; j++) {
			/* --skip: the frame's bytes go to its caller */
			if (view__frame_skipped(v, l, j))
				t->line_key[l->line_off + j] = KEY_SKIP;
			else
				ret = intern(in, view__frame_name(v, l, j, false, buf, sizeof(buf)),
					     &t->line_key[l->line_off + j]);
		}
	}
	for (i = 0; i < v->n_spans && !ret; i++)
		ret = intern(in, v->spans[i].name, &t->span_key[i]);
	if (!ret)
		ret = intern(in, FLAME_DEEPER, &t->deeper_key);
	return ret;
}

static int cmp_names(const void *a, const void *b, void *ctx)
{
	char *const *n = ctx;

	return strcmp(n[*(const uint32_t *)a], n[*(const uint32_t *)b]);
}

/* names sorted, and every key made a rank: keys then compare as the names do */
static int rank_names(struct flame_tree *t)
{
	const struct pprof_profile *p = t->v->p;
	uint32_t *order = malloc((t->n_names ?: 1) * sizeof(*order));
	uint32_t *rank = malloc((t->n_names ?: 1) * sizeof(*rank));
	char **sorted = malloc((t->n_names ?: 1) * sizeof(*sorted));
	size_t i;

	if (!order || !rank || !sorted) {
		free(order);
		free(rank);
		free(sorted);
		return -ENOMEM;
	}
	for (i = 0; i < t->n_names; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, t->n_names, sizeof(*order), cmp_names, t->names);
	for (i = 0; i < t->n_names; i++) {
		rank[order[i]] = (uint32_t)i;
		sorted[i] = t->names[order[i]];
	}
	for (i = 0; i < p->n_lines; i++)
		if (t->line_key[i] != KEY_SKIP)
			t->line_key[i] = rank[t->line_key[i]] * 2;
	/* one frame per location is the common case: its key without a look at the location */
	for (i = 0; i < p->n_locations; i++)
		if (!p->locations[i].n_lines)
			t->loc_key[i] = t->loc_key[i] == KEY_SKIP ? KEY_SKIP : rank[t->loc_key[i]] * 2;
		else if (p->locations[i].n_lines == 1)
			t->loc_key[i] = t->line_key[p->locations[i].line_off];
		else
			t->loc_key[i] = KEY_LINES;
	for (i = 0; i < t->v->n_spans; i++)
		t->span_key[i] = rank[t->span_key[i]] * 2 + 1;
	t->deeper_key = rank[t->deeper_key] * 2;
	free(t->names);
	t->names = sorted;
	free(order);
	free(rank);
	return 0;
}

static const char *key_name(const struct flame_tree *t, uint32_t key)
{
	return t->names[key / 2];
}

/* each span's chain of keys, root first: the sort compares them for every pair of records */
static int span_chains(struct flame_tree *t)
{
	const struct view *v = t->v;
	struct treepath_tree st = view__span_tree(v);
	uint32_t chain[VIEW_MAX_SPAN_DEPTH];
	size_t i, j, n, total = 0;

	for (i = 0; i < v->n_spans; i++)
		total += v->spans[i].depth + 1;
	if (total > UINT32_MAX || pprof_budget__charge(&t->budget, 4 * (total + v->n_spans)))
		return -E2BIG;
	t->chain_key = malloc((total ?: 1) * sizeof(uint32_t));
	t->chain_off = malloc((v->n_spans ?: 1) * sizeof(uint32_t));
	if (!t->chain_key || !t->chain_off)
		return -ENOMEM;
	for (i = 0, total = 0; i < v->n_spans; i++) {
		n = treepath_chain(&st, (uint32_t)i, chain);
		t->chain_off[i] = (uint32_t)total;
		for (j = 0; j < n; j++)
			t->chain_key[total++] = t->span_key[chain[j]];
	}
	return 0;
}

/* --- a record's sequence ------------------------------------------------------------- */

struct cursor {
	const struct flame_tree *t;
	const uint32_t *chain;			/* the keys of the record's spans, root first */
	size_t n_chain, ci;
	const uint32_t *locs;			/* its stack, leaf first */
	size_t li;				/* locations not begun, from the root end */
	const struct pprof_location *loc;	/* the one begun */
	uint32_t line;				/* its lines not yet met */
	size_t emitted;
};

static void cursor_init(struct cursor *c, const struct flame_tree *t, const struct view_rec *r,
			bool skip_spans)
{
	const struct view *v = t->v;

	c->t = t;
	c->chain = &t->chain_key[t->chain_off[r->span]];
	c->n_chain = skip_spans ? 0 : v->spans[r->span].depth + 1;
	c->ci = 0;
	c->locs = &v->stack_locs[v->stack_off[r->stack]];
	c->li = v->stack_off[r->stack + 1] - v->stack_off[r->stack];
	c->loc = NULL;
	c->line = 0;
	c->emitted = skip_spans ? v->spans[r->span].depth + 1 : 0;
}

/* spans root first, then frames from the root, each location's lines outermost first */
static uint32_t raw_one(struct cursor *c)
{
	const struct flame_tree *t = c->t;
	const struct pprof_profile *p = t->v->p;

	if (c->ci < c->n_chain)
		return c->chain[c->ci++];
	if (!c->line) {
		uint32_t k;

		if (!c->li)
			return KEY_END;
		c->li--;
		k = t->loc_key[c->locs[c->li]];
		if (k != KEY_LINES)
			return k;
		c->loc = &p->locations[c->locs[c->li]];
		c->line = c->loc->n_lines;
	}
	c->line--;
	return t->line_key[c->loc->line_off + c->line];
}

/* raw_one() past the frames --skip leaves out: each one read consumes a frame */
static uint32_t raw_next(struct cursor *c)
{
	uint32_t k;

	do
		k = raw_one(c);
	while (k == KEY_SKIP);
	return k;
}

/* the next element, within FLAME_MAX_DEPTH: the last level is FLAME_DEEPER when more follows */
static uint32_t cursor_next(struct cursor *c)
{
	uint32_t k;

	if (c->emitted >= FLAME_MAX_DEPTH)
		return KEY_END;
	k = raw_next(c);
	if (k == KEY_END)
		return k;
	if (c->emitted == FLAME_MAX_DEPTH - 1 && raw_next(c) != KEY_END)
		k = c->t->deeper_key;
	c->emitted++;
	return k;
}

/* a prefix sorts before what extends it: a node's own bytes come before its children's */
static int cmp_recs(const void *a, const void *b, void *ctx)
{
	const struct flame_tree *t = ctx;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b, ka, kb;
	const struct view_rec *ra = &t->v->recs[ia], *rb = &t->v->recs[ib];
	struct cursor ca, cb;
	bool same_span = ra->span == rb->span;

	if (same_span && ra->stack == rb->stack)
		return ia < ib ? -1 : ia > ib;
	cursor_init(&ca, t, ra, same_span);
	cursor_init(&cb, t, rb, same_span);
	do {
		ka = cursor_next(&ca);
		kb = cursor_next(&cb);
	} while (ka == kb && ka != KEY_END);
	if (ka == kb)
		return ia < ib ? -1 : ia > ib;
	if (ka == KEY_END || kb == KEY_END)
		return ka == KEY_END ? -1 : 1;
	return ka < kb ? -1 : 1;
}

/* --- building ------------------------------------------------------------------------ */

static int select_recs(struct flame_tree *t, const char *span)
{
	const struct view *v = t->v;
	size_t i;

	t->recs = malloc((v->n_recs ?: 1) * sizeof(*t->recs));
	if (!t->recs)
		return -ENOMEM;
	for (i = 0; i < v->n_recs; i++) {
		const struct view_rec *r = &v->recs[i];

		if (!(r->bytes > 0) || (span && !view__span_within(v, r->span, span)))
			continue;
		t->recs[t->n_recs++] = (uint32_t)i;
		t->total += r->bytes;
	}
	return 0;
}

struct flame_tree *flame_tree__new(const struct view *v, const char *span, char *err,
				   size_t errlen)
{
	const struct pprof_profile *p = v->p;
	struct flame_tree *t = calloc(1, sizeof(*t));
	struct interner in = { .t = t };
	int ret;

	if (!t) {
		snprintf(err, errlen, "out of memory building the flame graph");
		return NULL;
	}
	t->v = v;
	t->budget = v->budget;
	t->line_key = malloc((p->n_lines ?: 1) * sizeof(uint32_t));
	t->loc_key = malloc((p->n_locations ?: 1) * sizeof(uint32_t));
	t->span_key = malloc((v->n_spans ?: 1) * sizeof(uint32_t));
	ret = t->line_key && t->loc_key && t->span_key ? 0 : -ENOMEM;
	if (!ret)
		ret = pprof_budget__charge(&t->budget, 4 * (p->n_lines + p->n_locations +
							   v->n_spans + v->n_recs));
	if (!ret)
		ret = intern_all(&in);
	hashtab__free(&in.ht);
	if (!ret)
		ret = rank_names(t);
	if (!ret)
		ret = span_chains(t);
	if (!ret)
		ret = select_recs(t, span);
	if (ret) {
		if (ret == -E2BIG && t->budget.exceeded) {
			char why[256];

			pprof_budget__explain(&t->budget, "reading", why, sizeof(why));
			snprintf(err, errlen, "profile too large for a flame graph: %s", why);
		} else {
			snprintf(err, errlen, "out of memory building the flame graph");
		}
		flame_tree__free(t);
		errno = -ret;
		return NULL;
	}
	qsort_r(t->recs, t->n_recs, sizeof(*t->recs), cmp_recs, t);
	return t;
}

double flame_tree__total(const struct flame_tree *t)
{
	return t->total;
}

void flame_tree__free(struct flame_tree *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n_names; i++)
		free(t->names[i]);
	free(t->names);
	free(t->line_key);
	free(t->loc_key);
	free(t->span_key);
	free(t->chain_key);
	free(t->chain_off);
	free(t->recs);
	free(t);
}

/* --- the walk -------------------------------------------------------------------------- */

/* a node on the path of the current record */
struct open_node {
	uint32_t key;
	double x, total, self;
	bool said;		/* its own bytes given to w->self already */
};

struct walker {
	const struct flame_tree *t;
	const struct flame_walk *w;
	struct open_node open[FLAME_MAX_DEPTH + 1];	/* [0] is the root */
	const char *names[FLAME_MAX_DEPTH];
	size_t n;					/* open[0..n) */
};

/* the own bytes of the deepest open node are final once something goes on top of it or it closes */
static void say_self(struct walker *k)
{
	struct open_node *o = &k->open[k->n - 1];

	if (o->said || k->n < 2 || !k->w->self)
		return;
	o->said = true;
	if (o->self > 0)
		k->w->self(k->names, k->n - 1, o->self, k->w->ctx);
}

static void leave(struct walker *k)
{
	struct open_node *o = &k->open[k->n - 1];
	struct flame_node n = {
		.name = k->n > 1 ? key_name(k->t, o->key) : "all",
		.depth = (uint32_t)(k->n - 1), .is_span = k->n > 1 && o->key % 2,
		.x = o->x, .total = o->total,
	};

	say_self(k);
	if (k->w->leave)
		k->w->leave(&n, k->w->ctx);
	k->n--;
	if (k->n)
		k->open[k->n - 1].total += o->total;
}

static void enter(struct walker *k, uint32_t key, double x)
{
	say_self(k);
	k->open[k->n] = (struct open_node){ .key = key, .x = x };
	k->names[k->n - 1] = key_name(k->t, key);
	k->n++;
}

int flame_tree__walk(const struct flame_tree *t, const struct flame_walk *w)
{
	struct walker *k = calloc(1, sizeof(*k));
	double cum = 0;
	size_t i, d;

	if (!k)
		return -ENOMEM;
	k->t = t;
	k->w = w;
	k->n = 1;
	for (i = 0; i < t->n_recs; i++) {
		const struct view_rec *r = &t->v->recs[t->recs[i]];
		struct cursor c;
		uint32_t key;

		cursor_init(&c, t, r, false);
		/* the part of the path this record shares with the last one stays open */
		for (d = 1; (key = cursor_next(&c)) != KEY_END && d < k->n &&
			    k->open[d].key == key; d++)
			;
		while (k->n > d)
			leave(k);
		for (; key != KEY_END; key = cursor_next(&c))
			enter(k, key, cum);
		k->open[k->n - 1].total += r->bytes;
		k->open[k->n - 1].self += r->bytes;
		cum += r->bytes;
	}
	while (k->n)
		leave(k);
	free(k);
	return 0;
}

/* --- folded ---------------------------------------------------------------------------- */

static void folded_line(const char *const *names, size_t n, double bytes, void *ctx)
{
	FILE *f = ctx;
	size_t i;

	if (bytes < 0.5)
		return;
	for (i = 0; i < n; i++) {
		if (i)
			fputc(';', f);
		fputs(names[i], f);
	}
	/* a weight past INT64_MAX is saturated there, as in every other output */
	if (bytes_saturated(bytes))
		fprintf(f, " %" PRId64 "\n", INT64_MAX);
	else
		fprintf(f, " %.0f\n", bytes);
}

int flame_tree__folded(const struct flame_tree *t, FILE *f)
{
	struct flame_walk w = { .self = folded_line, .ctx = f };

	return flame_tree__walk(t, &w);
}
