// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The span tree of a view.  A sample's span is first remembered "raw" (its
 * span_path string, or its span_name/span_id/span_parent_id triple):
 * parent links may point to spans whose samples come later in the file, so
 * the tree is only built once everything is read.
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

	h = hash_u64((uint64_t)r->str, hash_u64((uint64_t)r->id, h));

	if (hashtab__find(&b->raw_ht, h, r, raw_eq, b, out))
		return 0;
	if (vec_reserve(&b->raw, &b->cap_raw, b->n_raw + 1, sizeof(*r)) ||
	    hashtab__insert(&b->raw_ht, h, (uint32_t)b->n_raw))
		return -ENOMEM;
	b->raw[b->n_raw] = *r;
	*out = (uint32_t)b->n_raw++;
	return 0;
}

struct span_key {
	uint32_t parent;
	const char *name;
	bool no_span;
};

static bool span_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct view_span *a = &((struct builder *)ctx)->v->spans[idx];
	const struct span_key *k = key;

	return a->parent == k->parent && a->no_span == k->no_span && !strcmp(a->name, k->name);
}

static int span_child(struct builder *b, uint32_t parent, const char *name, bool no_span,
		      uint32_t *out)
{
	struct view *v = b->v;
	struct span_key k = { parent, name, no_span };
	uint64_t h = hash_bytes(name, strlen(name), hash_u64(parent, no_span));
	struct view_span *n;
	int len;

	if (hashtab__find(&b->span_ht, h, &k, span_eq, b, out))
		return 0;
	if (vec_reserve(&v->spans, &b->cap_spans, v->n_spans + 1, sizeof(*n)) ||
	    hashtab__insert(&b->span_ht, h, (uint32_t)v->n_spans))
		return -ENOMEM;
	n = &v->spans[v->n_spans];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->depth = parent == VIEW_NONE ? 0 : v->spans[parent].depth + 1;
	n->first_child = n->next_sibling = VIEW_NONE;
	n->no_span = no_span;
	n->name = strdup(name);
	len = parent == VIEW_NONE ? asprintf(&n->path, "%s", name) :
				    asprintf(&n->path, "%s;%s", v->spans[parent].path, name);
	if (!n->name || len < 0)
		return -ENOMEM;
	*out = (uint32_t)v->n_spans++;
	return 0;
}

/* the node of a ';'-joined path, created along the way */
static int span_path(struct builder *b, const char *path, uint32_t *out)
{
	uint32_t node = VIEW_NONE;
	char name[256];
	int ret = 0;

	while (!ret) {
		size_t n = strcspn(path, ";");

		snprintf(name, sizeof(name), "%.*s", (int)n, n ? path : "(unnamed)");
		ret = span_child(b, node, name, false, &node);
		if (!path[n])
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

	for (i = 0; i < b->n_raw; i++) {
		const struct raw_span *r = &b->raw[i];
		uint64_t h = hash_u64((uint64_t)r->id, 5);

		if (r->kind != RAW_NAMED || hashtab__find(&b->id_ht, h, &r->id, id_eq, b, &idx))
			continue;
		if (hashtab__insert(&b->id_ht, h, (uint32_t)i))
			return -ENOMEM;
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

/* a span without a path: follow span_parent_id through spans present in the profile */
static int span_named(struct builder *b, const struct raw_span *r, uint32_t *out)
{
	const struct pprof_profile *p = b->v->p;
	const struct raw_span *chain[MAX_SPAN_DEPTH];
	uint32_t node = VIEW_NONE;
	size_t n = 0, i, j;
	int ret = 0;

	chain[n++] = r;
	while (r->has_parent && n < MAX_SPAN_DEPTH && (r = raw_by_id(b, r->parent_id))) {
		/* a cycle of ids: stop at the first repeat */
		for (j = 0; j < n && chain[j] != r; j++)
			;
		if (j < n)
			break;
		chain[n++] = r;
	}
	for (i = n; i-- > 0 && !ret;)
		ret = span_child(b, node, p->strings[chain[i]->str], false, &node);
	*out = node;
	return ret;
}

int spantree__build(struct builder *b)
{
	struct view *v = b->v;
	size_t i;
	int ret = index_ids(b);

	for (i = 0; i < b->n_raw && !ret; i++) {
		struct raw_span *r = &b->raw[i];

		if (r->kind == RAW_PATH)
			ret = span_path(b, v->p->strings[r->str], &r->node);
		else if (r->kind == RAW_NAMED)
			ret = span_named(b, r, &r->node);
		else
			ret = span_child(b, VIEW_NONE, VIEW_NO_SPAN, true, &r->node);
	}
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
		uint32_t s;

		rec->span = b->raw[rec->span].node;
		v->spans[rec->span].self += rec->bytes;
		v->spans[rec->span].self_objects += rec->objects;
		v->spans[rec->span].self_samples += rec->samples;
		for (s = rec->span; s != VIEW_NONE; s = v->spans[s].parent) {
			v->spans[s].total += rec->bytes;
			v->spans[s].total_objects += rec->objects;
			v->spans[s].total_samples += rec->samples;
		}
	}
	return 0;
}

void spantree__free(struct builder *b)
{
	free(b->raw);
	hashtab__free(&b->raw_ht);
	hashtab__free(&b->span_ht);
	hashtab__free(&b->id_ht);
}
