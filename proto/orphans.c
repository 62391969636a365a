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

/* is an ancestor of span i named like it? */
static bool under_itself(const struct view *v, uint32_t i)
{
	uint32_t a;

	for (a = v->spans[i].parent; a != VIEW_NONE; a = v->spans[a].parent)
		if (!strcmp(v->spans[a].name, v->spans[i].name))
			return true;
	return false;
}

/* the names of spans seen nested under another span, into ht (values: a node of the name) */
static int nested_names(const struct view *v, struct hashtab *ht)
{
	uint32_t idx;
	size_t i;

	for (i = 0; i < v->n_spans; i++) {
		const char *name = v->spans[i].name;
		uint64_t h = hash_bytes(name, strlen(name), 13);

		if (!v->spans[i].depth || under_itself(v, (uint32_t)i) ||
		    hashtab__find(ht, h, name, name_eq, (void *)v, &idx))
			continue;
		if (hashtab__insert(ht, h, (uint32_t)i))
			return -ENOMEM;
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

/* every span under a moved root (moved[] by root) one level deeper, its path under `marker` */
static int reroot_paths(struct view *v, const bool *moved, const char *marker)
{
	size_t i;

	for (i = 0; i < v->n_spans; i++) {
		struct view_span *s = &v->spans[i];
		char *path;

		if (!moved[root_of(v, (uint32_t)i)])
			continue;
		if (asprintf(&path, "%s;%s", marker, s->path) < 0)
			return -ENOMEM;
		free(s->path);
		s->path = path;
		s->depth++;
	}
	return 0;
}

/* the marker node, a root; its index in *out */
static int add_marker(struct builder *b, uint32_t *out)
{
	struct view *v = b->v;
	struct view_span *m;

	if (vec_reserve(&v->spans, &b->cap_spans, v->n_spans + 1, sizeof(*m)))
		return -ENOMEM;
	m = &v->spans[v->n_spans];
	memset(m, 0, sizeof(*m));
	m->parent = m->first_child = m->next_sibling = VIEW_NONE;
	m->name = strdup(VIEW_BEFORE_ATTACH);
	m->path = strdup(VIEW_BEFORE_ATTACH);
	if (!m->name || !m->path) {
		free(m->name);
		free(m->path);
		return -ENOMEM;
	}
	*out = (uint32_t)v->n_spans++;
	return 0;
}

/* the roots whose names are seen nested, into moved[]; their count */
static size_t orphan_roots(const struct view *v, const struct hashtab *nested, bool *moved)
{
	size_t i, n = 0;
	uint32_t idx;

	for (i = 0; i < v->n_spans; i++) {
		const struct view_span *s = &v->spans[i];

		moved[i] = !s->depth && !s->no_span &&
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
	bool *moved = calloc(v->n_spans ?: 1, sizeof(*moved));
	uint32_t m;
	size_t i;
	int ret = moved ? nested_names(v, &nested) : -ENOMEM;

	if (!ret && orphan_roots(v, &nested, moved)) {
		ret = reroot_paths(v, moved, VIEW_BEFORE_ATTACH);
		if (!ret)
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
	return ret;
}
