// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Spans entered before culpert-bpf attached.  The profiler only sees spans
 * opened while it listens (a span probe's semaphore is 0 before, so the
 * program does not even fire it), so the children of a span already open
 * at attach look like roots: a root build_response beside the
 * handle_request;build_response of every later request.  Such a root is
 * moved under a parent of its own, "(entered before attach)": a root whose
 * name the profile also shows nested under another span (recursion, a span
 * under itself, does not count), in its sampled tree or in its exact
 * totals' paths.  The exact totals' paths move the same way, so the tree,
 * the exact table, JSON, flame graphs and diff all show one grouping
 * (docs/spans.md, "Spans entered before attach"); diff also moves the roots
 * each profile's counterpart shows nested (view__orphans_from()).
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

/* a sorted set of span names */
struct names {
	char **v;
	size_t n, cap;
};

static int names_add(struct names *s, struct pprof_budget *budget, const char *name, size_t len)
{
	char *copy;
	int ret = pprof_budget__reserve(budget, &s->v, &s->cap, s->n + 1, sizeof(char *));

	if (!ret)
		ret = pprof_budget__charge(budget, len + 1);
	if (ret)
		return ret;
	copy = strndup(name, len);
	if (!copy)
		return -ENOMEM;
	s->v[s->n++] = copy;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_sort(struct names *s)
{
	size_t i, k = 0;

	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(char *), cmp_str);
	for (i = 1; i < s->n; i++) {
		if (!strcmp(s->v[i], s->v[k]))
			free(s->v[i]);
		else
			s->v[++k] = s->v[i];
	}
	s->n = k + 1;
}

static bool names_has(const struct names *s, const char *name)
{
	return s->n && bsearch(&name, s->v, s->n, sizeof(char *), cmp_str);
}

static void names_free(struct names *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static bool is_marker(const struct view *v, uint32_t i)
{
	return i == v->before_attach;
}

/*
 * Is span i nested under another span, as a program's own nesting shows it:
 * under a parent that is not the marker, and no ancestor named like it?
 */
static bool nested(const struct view *v, uint32_t i)
{
	uint32_t a = v->spans[i].parent;

	if (a == VIEW_NONE || is_marker(v, a))
		return false;
	for (; a != VIEW_NONE; a = v->spans[a].parent)
		if (!strcmp(v->spans[a].name, v->spans[i].name))
			return false;
	return true;
}

/* the names nested in one exact totals' path ("a;b;c"), into out */
static int path_names(const char *path, struct pprof_budget *budget, struct names *out)
{
	const char *comp[VIEW_MAX_SPAN_DEPTH + 1];
	size_t len[VIEW_MAX_SPAN_DEPTH + 1], n = 0, k, j, start = 0;
	const char *p = path, *e;
	int ret = 0;

	for (; n <= VIEW_MAX_SPAN_DEPTH; p = e + 1) {
		e = strchr(p, ';');
		comp[n] = p;
		len[n++] = e ? (size_t)(e - p) : strlen(p);
		if (!e)
			break;
	}
	/* under the marker, the span after it is a moved root */
	if (len[0] == strlen(VIEW_BEFORE_ATTACH) && !strncmp(comp[0], VIEW_BEFORE_ATTACH, len[0]))
		start = 1;
	for (k = start + 1; k < n && !ret; k++) {
		for (j = start; j < k; j++)
			if (len[j] == len[k] && !strncmp(comp[j], comp[k], len[k]))
				break;
		if (j == k)
			ret = names_add(out, budget, comp[k], len[k]);
	}
	return ret;
}

/* the names seen nested, in v's tree and in its exact totals' paths, into out */
static int nested_names(const struct view *v, struct pprof_budget *budget, struct names *out)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < v->n_spans && !ret; i++)
		if (!v->spans[i].no_span && nested(v, (uint32_t)i))
			ret = names_add(out, budget, v->spans[i].name, strlen(v->spans[i].name));
	for (i = 0; i < v->totals.n && !ret; i++)
		ret = path_names(v->totals.spans[i].path, budget, out);
	return ret;
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

/* the marker node, a root, unless v has it */
static int add_marker(struct view *v, struct pprof_budget *budget, size_t *cap_spans)
{
	struct view_span *m;
	int ret;

	if (v->before_attach != VIEW_NONE)
		return 0;
	if (v->n_spans >= UINT32_MAX - 1)
		return -E2BIG;
	ret = pprof_budget__reserve(budget, &v->spans, cap_spans, v->n_spans + 1, sizeof(*m));
	if (ret)
		return ret;
	m = &v->spans[v->n_spans];
	memset(m, 0, sizeof(*m));
	m->parent = m->first_child = m->next_sibling = VIEW_NONE;
	m->name = strdup(VIEW_BEFORE_ATTACH);
	if (!m->name)
		return -ENOMEM;
	v->before_attach = (uint32_t)v->n_spans++;
	return 0;
}

/* the roots named in `names`, into moved[] (full[]: too deep to move); their count */
static size_t orphan_roots(const struct view *v, const struct names *names, const bool *full,
			   bool *moved)
{
	size_t i, n = 0;

	for (i = 0; i < v->n_spans; i++) {
		const struct view_span *s = &v->spans[i];

		moved[i] = !s->depth && !s->no_span && !full[i] && !is_marker(v, (uint32_t)i) &&
			   names_has(names, s->name);
		n += moved[i];
	}
	return n;
}

/* is the sampled root named `name` too deep to move?  (full[]: of the first n spans) */
static bool full_root_named(const struct view *v, const bool *full, size_t n, const char *name,
			    size_t len)
{
	size_t i;

	for (i = 0; i < n && i < v->n_spans; i++)
		if (full[i] && !v->spans[i].depth && strlen(v->spans[i].name) == len &&
		    !strncmp(v->spans[i].name, name, len))
			return true;
	return false;
}

/*
 * The exact totals' paths whose first span is named in `names` go under the
 * marker; the marker's own entry sums its children.  full[] is of the first
 * n spans.  0 or -ENOMEM.
 */
static int move_totals(struct view *v, const struct names *names, const bool *full, size_t n)
{
	struct span_totals *t = &v->totals;
	size_t mlen = strlen(VIEW_BEFORE_ATTACH), i;
	struct span_total sum = { 0 };
	struct span_total *m = NULL;
	bool any = false;
	char first[VIEW_SPAN_NAME_MAX + 1];

	for (i = 0; i < t->n; i++) {
		struct span_total *s = &t->spans[i];
		size_t len = strcspn(s->path, ";");
		char *path;

		if (len == mlen && !strncmp(s->path, VIEW_BEFORE_ATTACH, mlen)) {
			any = true;
			continue;
		}
		if (len >= sizeof(first))
			continue;
		memcpy(first, s->path, len);
		first[len] = 0;
		if (!names_has(names, first) || full_root_named(v, full, n, s->path, len))
			continue;
		path = malloc(mlen + 1 + strlen(s->path) + 1);
		if (!path)
			return -ENOMEM;
		sprintf(path, "%s;%s", VIEW_BEFORE_ATTACH, s->path);
		free(s->path);
		s->path = path;
		any = true;
	}
	if (!any)
		return 0;
	for (i = 0; i < t->n; i++) {
		struct span_total *s = &t->spans[i];

		if (!strcmp(s->path, VIEW_BEFORE_ATTACH)) {
			m = s;
		} else if (!strncmp(s->path, VIEW_BEFORE_ATTACH ";", mlen + 1) &&
			   !strchr(s->path + mlen + 1, ';')) {
			sum.incl_bytes += s->incl_bytes;
			sum.incl_calls += s->incl_calls;
		}
	}
	if (m) {
		m->incl_bytes = sum.incl_bytes;
		m->incl_calls = sum.incl_calls;
	} else {
		sum.path = (char *)VIEW_BEFORE_ATTACH;
		if (span_totals__add(t, &sum))
			return -ENOMEM;
	}
	span_totals__sort(t);
	return 0;
}

/* move v's roots that `names` has under the marker, and their exact totals' paths */
static int mark(struct view *v, struct pprof_budget *budget, size_t *cap_spans,
		const struct names *names)
{
	size_t n = v->n_spans ?: 1, i;
	bool *moved = NULL, *full = NULL;
	uint32_t m;
	int ret = pprof_budget__charge(budget, n * 2 * sizeof(bool));

	if (!ret) {
		moved = calloc(n, sizeof(*moved));
		full = calloc(n, sizeof(*full));
		ret = moved && full ? 0 : -ENOMEM;
	}
	if (!ret)
		full_roots(v, full);
	if (!ret && orphan_roots(v, names, full, moved)) {
		reroot(v, moved);
		ret = add_marker(v, budget, cap_spans);
		m = v->before_attach;
		/* the marker is past moved[] when new; when not, it is no root moved */
		for (i = 0; !ret && i < n && i < v->n_spans; i++) {
			struct view_span *r = &v->spans[i], *mk = &v->spans[m];

			if (!moved[i] || i == m)
				continue;
			r->parent = m;
			r->next_sibling = mk->first_child;
			mk->first_child = (uint32_t)i;
			mk->total += r->total;
			mk->total_objects += r->total_objects;
			mk->total_samples += r->total_samples;
			mk->total_sampled += r->total_sampled;
		}
	}
	if (!ret)
		ret = move_totals(v, names, full, n);
	free(moved);
	free(full);
	return ret;
}

int orphans__mark(struct builder *b)
{
	struct names names = { 0 };
	int ret;

	b->v->before_attach = VIEW_NONE;
	ret = nested_names(b->v, &b->budget, &names);
	names_sort(&names);
	if (!ret)
		ret = mark(b->v, &b->budget, &b->cap_spans, &names);
	names_free(&names);
	return ret;
}

int view__orphans_from(struct view *v, const struct view *other)
{
	struct names names = { 0 };
	size_t cap = v->n_spans;
	int ret;

	ret = nested_names(v, &v->budget, &names);
	if (!ret)
		ret = nested_names(other, &v->budget, &names);
	names_sort(&names);
	if (!ret)
		ret = mark(v, &v->budget, &cap, &names);
	names_free(&names);
	return ret;
}
