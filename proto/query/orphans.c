// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Spans entered before culpert-bpf attached.  The profiler only sees spans
 * opened while it listens (a span probe's semaphore is 0 before, so the
 * program does not even fire it), so the children of a span already open
 * at attach look like roots: a root build_response beside the
 * handle_request;build_response of every later request.  Such a root is
 * moved under a parent of its own, "(entered before attach)": a root whose
 * name the profile also shows nested under another span (recursion, a span
 * under itself, does not count).
 *
 * Nodes keep no path (spantree.c): moving a root is relinking it and one
 * level more of depth for its subtree.  A subtree that already reaches the
 * tree's last level (VIEW_MAX_SPAN_DEPTH, a crafted file: culpert-bpf keeps
 * 32 open spans) stays a root, so the depth bound holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"
#include "view_build.h"

static bool name_eq(uint32_t idx, const void *key, void *ctx)
{
	return !strcmp(((const struct view *)ctx)->spans[idx].name, key);
}

/* is an ancestor of span i named like it?  (hash[]: of each span's name, compared first) */
static bool under_itself(const struct view *v, const uint64_t *hash, uint32_t i)
{
	uint32_t a;

	for (a = v->spans[i].parent; a != VIEW_NONE; a = v->spans[a].parent)
		if (hash[a] == hash[i] && !strcmp(v->spans[a].name, v->spans[i].name))
			return true;
	return false;
}

/* the names of spans seen nested under another span, into ht (values: a node of the name) */
static int nested_names(const struct view *v, struct pprof_budget *budget, uint64_t *hash,
			struct hashtab *ht)
{
	uint32_t idx;
	size_t i;
	int ret;

	for (i = 0; i < v->n_spans; i++)
		hash[i] = hash_bytes(v->spans[i].name, strlen(v->spans[i].name), 13);
	for (i = 0; i < v->n_spans; i++) {
		const char *name = v->spans[i].name;

		if (!v->spans[i].depth || under_itself(v, hash, (uint32_t)i) ||
		    hashtab__find(ht, hash[i], name, name_eq, (void *)v, &idx))
			continue;
		ret = pprof_budget__insert(budget, ht, hash[i], (uint32_t)i);
		if (ret)
			return ret;
	}
	return 0;
}

/* the root above span i */
static uint32_t root_of(const struct view *v, uint32_t i)
{
	while (v->spans[i].parent != VIEW_NONE)
		i = v->spans[i].parent;
	return i;
}

/* roots whose subtree reaches the last level, into full[] (by root) */
static void full_roots(const struct view *v, bool *full)
{
	size_t i;

	for (i = 0; i < v->n_spans; i++)
		if (v->spans[i].depth + 1 >= VIEW_MAX_SPAN_DEPTH)
			full[root_of(v, (uint32_t)i)] = true;
}

/* every span under a moved root (moved[] by root) one level deeper */
static void reroot(struct view *v, const bool *moved)
{
	size_t i;

	for (i = 0; i < v->n_spans; i++)
		if (moved[root_of(v, (uint32_t)i)])
			v->spans[i].depth++;
}

/* the marker node, a root; its index in *out */
static int add_marker(struct builder *b, uint32_t *out)
{
	struct view *v = b->v;
	struct view_span *m;
	int ret;

	if (v->n_spans >= UINT32_MAX - 1)
		return -E2BIG;
	ret = pprof_budget__reserve(&b->budget, &v->spans, &b->cap_spans, v->n_spans + 1,
				    sizeof(*m));
	if (ret)
		return ret;
	m = &v->spans[v->n_spans];
	memset(m, 0, sizeof(*m));
	m->parent = m->first_child = m->next_sibling = VIEW_NONE;
	m->name = strdup(VIEW_BEFORE_ATTACH);
	if (!m->name)
		return -ENOMEM;
	*out = (uint32_t)v->n_spans++;
	return 0;
}

/* the roots whose names are seen nested, into moved[] (full[]: too deep to move); their count */
static size_t orphan_roots(const struct view *v, const struct hashtab *nested, const bool *full,
			   bool *moved)
{
	size_t i, n = 0;
	uint32_t idx;

	for (i = 0; i < v->n_spans; i++) {
		const struct view_span *s = &v->spans[i];

		moved[i] = !s->depth && !s->no_span && !full[i] &&
			   hashtab__find(nested, hash_bytes(s->name, strlen(s->name), 13), s->name,
					 name_eq, (void *)v, &idx);
		n += moved[i];
	}
	return n;
}

int orphans__mark(struct builder *b)
{
	struct view *v = b->v;
	struct hashtab nested = { 0 };
	size_t n = v->n_spans ?: 1, i;
	bool *moved = NULL, *full = NULL;
	uint64_t *hash = NULL;
	uint32_t m;
	int ret = pprof_budget__charge(&b->budget, n * (2 * sizeof(bool) + sizeof(*hash)));

	if (!ret) {
		moved = calloc(n, sizeof(*moved));
		full = calloc(n, sizeof(*full));
		hash = calloc(n, sizeof(*hash));
		ret = moved && full && hash ? nested_names(v, &b->budget, hash, &nested) : -ENOMEM;
	}
	if (!ret)
		full_roots(v, full);
	if (!ret && orphan_roots(v, &nested, full, moved)) {
		reroot(v, moved);
		ret = add_marker(b, &m);
		/* the marker is the last node, past moved[] */
		for (i = 0; !ret && i + 1 < v->n_spans; i++) {
			struct view_span *r = &v->spans[i], *mk = &v->spans[m];

			if (!moved[i])
				continue;
			r->parent = m;
			r->next_sibling = mk->first_child;
			mk->first_child = (uint32_t)i;
			mk->total += r->total;
			mk->total_objects += r->total_objects;
			mk->total_samples += r->total_samples;
		}
	}
	hashtab__free(&nested);
	free(moved);
	free(full);
	free(hash);
	return ret;
}
