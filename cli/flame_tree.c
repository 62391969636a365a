// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flame_tree.h"
#include "vec.h"

struct node_key {
	uint32_t parent;
	const char *name;
	bool is_span;
};

static bool node_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct flame_node *n = &((struct flame_tree *)ctx)->nodes[idx];
	const struct node_key *k = key;

	return n->parent == k->parent && n->is_span == k->is_span && !strcmp(n->name, k->name);
}

static int child(struct flame_tree *t, uint32_t parent, const char *name, bool is_span,
		 uint32_t *out)
{
	struct node_key k = { parent, name, is_span };
	uint64_t h = hash_bytes(name, strlen(name), hash_u64(parent, is_span));
	struct flame_node *n;
	char *s;

	if (hashtab__find(&t->ht, h, &k, node_eq, t, out))
		return 0;
	if (vec_reserve(&t->nodes, &t->cap_nodes, t->n_nodes + 1, sizeof(*n)) ||
	    hashtab__insert(&t->ht, h, (uint32_t)t->n_nodes) || !(s = strdup(name)))
		return -ENOMEM;
	/* ';' separates frames in folded lines */
	for (char *c = s; *c; c++)
		if (*c == ';')
			*c = ':';
	n = &t->nodes[t->n_nodes];
	memset(n, 0, sizeof(*n));
	n->name = s;
	n->parent = parent;
	n->depth = parent == UINT32_MAX ? 0 : t->nodes[parent].depth + 1;
	n->first_child = n->next_sibling = UINT32_MAX;
	n->is_span = is_span;
	if (n->depth > t->max_depth)
		t->max_depth = n->depth;
	*out = (uint32_t)t->n_nodes++;
	return 0;
}

/* the span chain of a record, root first */
static int add_spans(struct flame_tree *t, const struct view *v, uint32_t span, uint32_t *node)
{
	uint32_t chain[256];
	size_t n = 0;
	int ret = 0;

	for (; span != VIEW_NONE && n < 256; span = v->spans[span].parent)
		chain[n++] = span;
	while (n-- > 0 && !ret)
		ret = child(t, *node, v->spans[chain[n]].name, true, node);
	return ret;
}

static int add_record(struct flame_tree *t, const struct view *v, const struct view_rec *r)
{
	uint32_t node = 0, i;
	char buf[1024];
	int ret = add_spans(t, v, r->span, &node);

	for (i = v->stack_off[r->stack + 1]; i-- > v->stack_off[r->stack] && !ret;) {
		const struct pprof_location *l = pprof_profile__location(v->p, v->stack_locs[i]);
		uint32_t j = l->n_lines ? l->n_lines : 1;

		while (j-- > 0 && !ret) {
			/* --skip: the frame's bytes go to its caller */
			if (view__frame_skipped(v, l, j))
				continue;
			view__frame_name(v, l, j, false, buf, sizeof(buf));
			ret = child(t, node, buf, false, &node);
		}
	}
	if (ret)
		return ret;
	t->nodes[node].self += r->bytes;
	for (; node != UINT32_MAX; node = t->nodes[node].parent)
		t->nodes[node].total += r->bytes;
	return 0;
}

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct flame_node *n = ctx;

	return strcmp(n[*(const uint32_t *)a].name, n[*(const uint32_t *)b].name);
}

/* children lists sorted by name: the order flamegraph.pl draws in */
static int link_children(struct flame_tree *t)
{
	uint32_t *idx = malloc((t->n_nodes ?: 1) * sizeof(*idx));
	size_t i;

	if (!idx)
		return -ENOMEM;
	for (i = 0; i < t->n_nodes; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx + 1, t->n_nodes - 1, sizeof(*idx), cmp_name, t->nodes);
	for (i = t->n_nodes; i-- > 1;) {
		struct flame_node *n = &t->nodes[idx[i]];

		n->next_sibling = t->nodes[n->parent].first_child;
		t->nodes[n->parent].first_child = idx[i];
	}
	free(idx);
	return 0;
}

struct flame_tree *flame_tree__new(const struct view *v, const char *span)
{
	struct flame_tree *t = calloc(1, sizeof(*t));
	uint32_t root;
	size_t i;
	int ret;

	if (!t)
		return NULL;
	ret = child(t, UINT32_MAX, "all", false, &root);
	for (i = 0; i < v->n_recs && !ret; i++) {
		if (span && !view__span_within(v, v->recs[i].span, span))
			continue;
		ret = add_record(t, v, &v->recs[i]);
	}
	if (!ret)
		ret = link_children(t);
	hashtab__free(&t->ht);
	if (ret) {
		flame_tree__free(t);
		return NULL;
	}
	return t;
}

static void folded(const struct flame_tree *t, FILE *f, uint32_t node, char *path, size_t len,
		   size_t cap)
{
	const struct flame_node *n = &t->nodes[node];
	size_t l = len;
	uint32_t c;

	if (node) {
		l += (size_t)snprintf(path + len, cap > len ? cap - len : 0, "%s%s", len ? ";" : "",
				      n->name);
		if (l >= cap)
			l = cap - 1;
		if (n->self >= 0.5)
			fprintf(f, "%s %.0f\n", path, n->self);
	}
	for (c = n->first_child; c != UINT32_MAX; c = t->nodes[c].next_sibling)
		folded(t, f, c, path, l, cap);
	path[len] = '\0';
}

void flame_tree__folded(const struct flame_tree *t, FILE *f)
{
	static char path[1 << 16];

	path[0] = '\0';
	folded(t, f, 0, path, 0, sizeof(path));
}

void flame_tree__free(struct flame_tree *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n_nodes; i++)
		free(t->nodes[i].name);
	free(t->nodes);
	hashtab__free(&t->ht);
	free(t);
}
