// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The span tree of a view.  A sample's span is first remembered "raw" (its
 * span_path string, or its span_name/span_id/span_parent_id triple):
 * parent links may point to spans whose samples come later in the file, so
 * the tree is only built once everything is read.
 *
 * A node keeps its name and parent, never its path (paths of a deep tree
 * summed are quadratic in its depth), and the tree is at most
 * VIEW_MAX_SPAN_DEPTH deep (view.h): building it is linear in what the file
 * holds, whatever it holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"
#include "view_build.h"

static bool raw_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct raw_span *a = &((struct builder *)ctx)->raw[idx], *b = key;

	return a->kind == b->kind && a->str == b->str && a->id == b->id &&
	       a->parent_id == b->parent_id && a->has_parent == b->has_parent;
}

int spantree__intern_raw(struct builder *b, const struct raw_span *r, uint32_t *out)
{
	uint64_t h = hash_u64((uint64_t)r->parent_id, (uint64_t)r->kind * 2 + r->has_parent);
	int ret;

	h = hash_u64((uint64_t)r->str, hash_u64((uint64_t)r->id, h));

	if (hashtab__find(&b->raw_ht, h, r, raw_eq, b, out))
		return 0;
	if (b->n_raw >= UINT32_MAX - 1)
		return -E2BIG;
	ret = pprof_budget__reserve(&b->budget, &b->raw, &b->cap_raw, b->n_raw + 1, sizeof(*r));
	if (!ret)
		ret = pprof_budget__insert(&b->budget, &b->raw_ht, h, (uint32_t)b->n_raw);
	if (ret)
		return ret;
	b->raw[b->n_raw] = *r;
	b->raw[b->n_raw].node = VIEW_NONE;
	*out = (uint32_t)b->n_raw++;
	return 0;
}

struct span_key {
	uint32_t parent;
	const char *name;
	size_t len;
	bool no_span;
};

static bool span_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct view_span *a = &((struct builder *)ctx)->v->spans[idx];
	const struct span_key *k = key;

	return a->parent == k->parent && a->no_span == k->no_span &&
	       !strncmp(a->name, k->name, k->len) && !a->name[k->len];
}

/* how much of a name of n bytes is kept: at most VIEW_SPAN_NAME_MAX, whole characters */
static size_t name_len(const char *name, size_t n)
{
	if (n <= VIEW_SPAN_NAME_MAX)
		return n;
	n = VIEW_SPAN_NAME_MAX;
	/* back off UTF-8 continuation bytes (10xxxxxx) to the start of the character */
	while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
		n--;
	return n;
}

static int new_span(struct builder *b, const struct span_key *k, uint64_t h, uint32_t *out)
{
	struct view *v = b->v;
	struct view_span *n;
	int ret;

	if (v->n_spans >= UINT32_MAX - 1)
		return -E2BIG;
	ret = pprof_budget__reserve(&b->budget, &v->spans, &b->cap_spans, v->n_spans + 1,
				    sizeof(*n));
	if (!ret)
		ret = pprof_budget__charge(&b->budget, k->len + 1);
	if (!ret)
		ret = pprof_budget__insert(&b->budget, &b->span_ht, h, (uint32_t)v->n_spans);
	if (ret)
		return ret;
	n = &v->spans[v->n_spans];
	memset(n, 0, sizeof(*n));
	n->parent = k->parent;
	n->depth = k->parent == VIEW_NONE ? 0 : v->spans[k->parent].depth + 1;
	n->first_child = n->next_sibling = VIEW_NONE;
	n->no_span = k->no_span;
	n->name = strndup(k->name, k->len);
	if (!n->name)
		return -ENOMEM;
	*out = (uint32_t)v->n_spans++;
	return 0;
}

/*
 * The child `name` (n bytes) of parent, created if new.  At the last level
 * every child is VIEW_DEEPER, and VIEW_DEEPER's children are itself.
 */
static int span_child(struct builder *b, uint32_t parent, const char *name, size_t n,
		      bool no_span, uint32_t *out)
{
	const struct view *v = b->v;
	struct span_key k = { parent, name, name_len(name, n), no_span };
	uint64_t h;

	if (parent != VIEW_NONE && v->spans[parent].depth + 1 >= VIEW_MAX_SPAN_DEPTH) {
		*out = parent;
		return 0;
	}
	if (parent != VIEW_NONE && v->spans[parent].depth + 2 >= VIEW_MAX_SPAN_DEPTH) {
		k.name = VIEW_DEEPER;
		k.len = strlen(VIEW_DEEPER);
	}
	h = hash_bytes(k.name, k.len, hash_u64(parent, no_span));
	if (hashtab__find(&b->span_ht, h, &k, span_eq, b, out))
		return 0;
	return new_span(b, &k, h, out);
}

/*
 * The node of a ';'-joined path (a name's own ';' escaped, lib/treepath.h),
 * created along the way; past the last level the rest is not read.
 */
static int span_path(struct builder *b, const char *path, uint32_t *out)
{
	/* a name is cut to VIEW_SPAN_NAME_MAX bytes: room for that and a character more */
	char name[VIEW_SPAN_NAME_MAX + 8];
	uint32_t node = VIEW_NONE;
	int ret = 0;

	while (!ret) {
		size_t n = treepath_seg_len(path);
		size_t l = treepath_unescape(path, n, name, sizeof(name));

		if (l)
			ret = span_child(b, node, name, l, false, &node);
		else
			ret = span_child(b, node, "(unnamed)", 9, false, &node);
		if (!path[n] || b->v->spans[node].depth + 1 >= VIEW_MAX_SPAN_DEPTH)
			break;
		path += n + 1;
	}
	*out = node;
	return ret;
}

static bool id_eq(uint32_t idx, const void *key, void *ctx)
{
	return ((struct builder *)ctx)->raw[idx].id == *(const int64_t *)key;
}

/* span ids may be per instance (one per request): as many as samples, so an index */
static int index_ids(struct builder *b)
{
	uint32_t idx;
	size_t i;
	int ret;

	for (i = 0; i < b->n_raw; i++) {
		const struct raw_span *r = &b->raw[i];
		uint64_t h = hash_u64((uint64_t)r->id, 5);

		if (r->kind != RAW_NAMED || hashtab__find(&b->id_ht, h, &r->id, id_eq, b, &idx))
			continue;
		ret = pprof_budget__insert(&b->budget, &b->id_ht, h, (uint32_t)i);
		if (ret)
			return ret;
	}
	return 0;
}

static struct raw_span *raw_by_id(struct builder *b, int64_t id)
{
	uint32_t idx;

	if (!hashtab__find(&b->id_ht, hash_u64((uint64_t)id, 5), &id, id_eq, b, &idx))
		return NULL;
	return &b->raw[idx];
}

/* marks a named span whose parents are being resolved: met again, it closes a cycle */
#define RAW_PENDING	(VIEW_NONE - 1)

/*
 * A span without a path: its parent's node (by span_parent_id, among the
 * spans present in the profile) first, then its own under it.  Each raw
 * span is resolved once, parents before children, with an explicit stack:
 * a chain of any length costs its length, not its square, and no recursion.
 * A parent id no sample carries makes a root; a cycle is cut where it is met.
 */
static int span_named(struct builder *b, struct raw_span *r, uint32_t **stack, size_t *cap)
{
	const struct pprof_profile *p = b->v->p;
	size_t n = 0;
	int ret = 0;

	if (vec_reserve(stack, cap, 1, sizeof(**stack)))
		return -ENOMEM;
	(*stack)[n++] = (uint32_t)(r - b->raw);
	r->node = RAW_PENDING;
	while (n && !ret) {
		struct raw_span *t = &b->raw[(*stack)[n - 1]];
		struct raw_span *up = t->has_parent ? raw_by_id(b, t->parent_id) : NULL;
		uint32_t parent = VIEW_NONE;
		const char *name;

		if (up && up->kind == RAW_NAMED && up->node == VIEW_NONE) {
			if (vec_reserve(stack, cap, n + 1, sizeof(**stack)))
				return -ENOMEM;
			up->node = RAW_PENDING;
			(*stack)[n++] = (uint32_t)(up - b->raw);
			continue;
		}
		if (up && up->node != RAW_PENDING && up != t)
			parent = up->node;
		name = p->strings[t->str];
		ret = span_child(b, parent, name, strlen(name), false, &t->node);
		n--;
	}
	return ret;
}

/* totals are the own bytes of a span and its descendants: children come after their parents */
static void sum_totals(struct view *v)
{
	size_t i;

	for (i = 0; i < v->n_spans; i++) {
		struct view_span *s = &v->spans[i];

		s->total = s->self;
		s->total_objects = s->self_objects;
		s->total_samples = s->self_samples;
	}
	for (i = v->n_spans; i-- > 0;) {
		const struct view_span *s = &v->spans[i];
		struct view_span *up;

		if (s->parent == VIEW_NONE)
			continue;
		up = &v->spans[s->parent];
		up->total += s->total;
		up->total_objects += s->total_objects;
		up->total_samples += s->total_samples;
	}
}

static int resolve_raw(struct builder *b)
{
	uint32_t *stack = NULL;
	size_t cap = 0, i;
	int ret = index_ids(b);

	for (i = 0; i < b->n_raw && !ret; i++) {
		struct raw_span *r = &b->raw[i];

		if (r->kind == RAW_PATH)
			ret = span_path(b, b->v->p->strings[r->str], &r->node);
		else if (r->kind == RAW_NAMED && r->node == VIEW_NONE)
			ret = span_named(b, r, &stack, &cap);
		else if (r->kind == RAW_NONE)
			ret = span_child(b, VIEW_NONE, VIEW_NO_SPAN, strlen(VIEW_NO_SPAN), true,
					 &r->node);
	}
	free(stack);
	return ret;
}

int spantree__build(struct builder *b)
{
	struct view *v = b->v;
	size_t i;
	int ret = resolve_raw(b);

	if (ret)
		return ret;
	/* children lists in creation order; sorting is the printer's */
	for (i = v->n_spans; i-- > 0;) {
		struct view_span *n = &v->spans[i];

		if (n->parent != VIEW_NONE) {
			n->next_sibling = v->spans[n->parent].first_child;
			v->spans[n->parent].first_child = (uint32_t)i;
		}
		v->has_spans |= !n->no_span;
	}
	for (i = 0; i < v->n_recs; i++) {
		struct view_rec *rec = &v->recs[i];

		rec->span = b->raw[rec->span].node;
		v->spans[rec->span].self += rec->bytes;
		v->spans[rec->span].self_objects += rec->objects;
		v->spans[rec->span].self_samples += rec->samples;
	}
	sum_totals(v);
	return 0;
}

void spantree__free(struct builder *b)
{
	free(b->raw);
	hashtab__free(&b->raw_ht);
	hashtab__free(&b->span_ht);
	hashtab__free(&b->id_ht);
}
