// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "totals.h"
#include "vec.h"

#define TOTAL_PREFIX	"span.total."
#define HIST_PREFIX	"span.hist."
#define OUTSIDE_KEY	"span.totals.outside"
#define OVER_KEY	"span.totals.overflow"
#define INEXACT_KEY	"span.totals.inexact"

uint64_t totals_bucket_end(uint64_t lo)
{
	int log2;

	if (lo < 4)
		return lo + 1;
	log2 = 63 - __builtin_clzll(lo);
	return lo + (1ULL << (log2 - 2));
}

int span_totals__add(struct span_totals *t, const struct span_total *v)
{
	struct span_total *d;

	if (vec_reserve(&t->spans, &t->cap, t->n + 1, sizeof(*t->spans)))
		return -ENOMEM;
	d = &t->spans[t->n];
	*d = *v;
	d->path = strdup(v->path);
	d->hist = v->n_hist ? malloc(v->n_hist * sizeof(*d->hist)) : NULL;
	if (!d->path || (v->n_hist && !d->hist)) {
		free(d->path);
		free(d->hist);
		return -ENOMEM;
	}
	if (v->n_hist)
		memcpy(d->hist, v->hist, v->n_hist * sizeof(*d->hist));
	t->n++;
	t->present = true;
	return 0;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct span_total *)a)->path, ((const struct span_total *)b)->path);
}

void span_totals__sort(struct span_totals *t)
{
	if (t->n)
		qsort(t->spans, t->n, sizeof(*t->spans), cmp_path);
}

/* "lo:count,lo:count" into a malloc'd string */
static char *hist_text(const struct span_total *s)
{
	size_t cap = s->n_hist * 42 + 1, used = 0, i;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	buf[0] = 0;
	for (i = 0; i < s->n_hist; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%" PRIu64 ":%" PRIu64, i ? "," : "",
					 s->hist[i].lo, s->hist[i].count);
	return buf;
}

static int span_comments(const struct span_total *s, int (*cb)(void *ctx, const char *comment),
			 void *ctx)
{
	char *hist = hist_text(s), *c = NULL;
	int err = -ENOMEM;

	if (!hist)
		return -ENOMEM;
	if (asprintf(&c, TOTAL_PREFIX "%s=%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		     ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, s->path, s->self_bytes, s->self_calls,
		     s->incl_bytes, s->incl_calls, s->instances, s->open, s->max_bytes,
		     s->closed_bytes) < 0)
		goto out;
	err = cb(ctx, c);
	free(c);
	c = NULL;
	if (err || !s->n_hist)
		goto out;
	err = -ENOMEM;
	if (asprintf(&c, HIST_PREFIX "%s=%s", s->path, hist) < 0)
		goto out;
	err = cb(ctx, c);
	free(c);
out:
	free(hist);
	return err;
}

int span_totals__comments(const struct span_totals *t, int (*cb)(void *ctx, const char *comment),
			  void *ctx)
{
	char buf[128];
	size_t i;
	int err;

	if (!t->present)
		return 0;
	snprintf(buf, sizeof(buf), INEXACT_KEY "=%" PRIu64, t->inexact);
	err = cb(ctx, buf);
	snprintf(buf, sizeof(buf), OUTSIDE_KEY "=%" PRIu64 ",%" PRIu64, t->outside_bytes,
		 t->outside_calls);
	err = err ?: cb(ctx, buf);
	snprintf(buf, sizeof(buf), OVER_KEY "=%" PRIu64 ",%" PRIu64 ",%" PRIu64, t->over_instances,
		 t->over_bytes, t->over_calls);
	err = err ?: cb(ctx, buf);
	for (i = 0; i < t->n && !err; i++)
		err = span_comments(&t->spans[i], cb, ctx);
	return err;
}

/* exactly n comma-separated decimal numbers */
static int parse_u64s(const char *s, uint64_t *out, size_t n)
{
	size_t i;
	char *end;

	for (i = 0; i < n; i++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		errno = 0;
		out[i] = strtoull(s, &end, 10);
		if (errno || *end != (i + 1 < n ? ',' : '\0'))
			return -EINVAL;
		s = end + 1;
	}
	return 0;
}

static int parse_hist(const char *s, struct span_total *v)
{
	size_t cap = 0;
	uint64_t lo, n, prev = 0;
	char *end;

	v->n_hist = 0;
	while (*s) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		lo = strtoull(s, &end, 10);
		if (*end != ':' || end[1] < '0' || end[1] > '9')
			return -EINVAL;
		n = strtoull(end + 1, &end, 10);
		if ((*end != ',' && *end) || (v->n_hist && lo <= prev))
			return -EINVAL;
		if (vec_reserve(&v->hist, &cap, v->n_hist + 1, sizeof(*v->hist)))
			return -ENOMEM;
		v->hist[v->n_hist++] = (struct totals_bucket){ lo, n };
		prev = lo;
		s = *end ? end + 1 : end;
	}
	return 0;
}

/* the span of `path`, created empty if new */
static struct span_total *span_of(struct span_totals *t, const char *path, size_t len)
{
	struct span_total v = { 0 };
	size_t i;

	for (i = 0; i < t->n; i++)
		if (strlen(t->spans[i].path) == len && !memcmp(t->spans[i].path, path, len))
			return &t->spans[i];
	v.path = strndup(path, len);
	if (!v.path || span_totals__add(t, &v)) {
		free(v.path);
		return NULL;
	}
	free(v.path);
	return &t->spans[t->n - 1];
}

/* one comment: a span's key is its path, up to the last '=' (a name may hold '=') */
static int read_comment(struct span_totals *t, const char *c)
{
	const char *eq = strrchr(c, '='), *path;
	bool total = !strncmp(c, TOTAL_PREFIX, strlen(TOTAL_PREFIX));
	uint64_t u[8];
	struct span_total *s;

	if (!eq)
		return 0;
	if (!strncmp(c, OUTSIDE_KEY "=", strlen(OUTSIDE_KEY) + 1)) {
		t->present = true;
		if (parse_u64s(eq + 1, u, 2))
			return -EINVAL;
		t->outside_bytes = u[0], t->outside_calls = u[1];
		return 0;
	}
	if (!strncmp(c, OVER_KEY "=", strlen(OVER_KEY) + 1)) {
		if (parse_u64s(eq + 1, u, 3))
			return -EINVAL;
		t->over_instances = u[0], t->over_bytes = u[1], t->over_calls = u[2];
		return 0;
	}
	if (!strncmp(c, INEXACT_KEY "=", strlen(INEXACT_KEY) + 1))
		return parse_u64s(eq + 1, &t->inexact, 1);
	if (!total && strncmp(c, HIST_PREFIX, strlen(HIST_PREFIX)))
		return 0;
	path = c + strlen(total ? TOTAL_PREFIX : HIST_PREFIX);
	if (eq < path)
		return -EINVAL;
	s = span_of(t, path, (size_t)(eq - path));
	if (!s)
		return -ENOMEM;
	if (!total)
		return parse_hist(eq + 1, s);
	if (parse_u64s(eq + 1, u, 8))
		return -EINVAL;
	s->self_bytes = u[0], s->self_calls = u[1], s->incl_bytes = u[2], s->incl_calls = u[3];
	s->instances = u[4], s->open = u[5], s->max_bytes = u[6], s->closed_bytes = u[7];
	return 0;
}

int span_totals__read(struct span_totals *t, const struct pprof_profile *p)
{
	size_t i;
	int err = 0;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < p->n_comments && !err; i++)
		err = read_comment(t, pprof_profile__str(p, p->comments[i]));
	/* a path with a histogram but no totals, or totals without the outside line: not ours */
	if (!err && t->n && !pprof_profile__comment(p, OUTSIDE_KEY))
		err = -EINVAL;
	if (err) {
		span_totals__free(t);
		return err;
	}
	span_totals__sort(t);
	return 0;
}

const struct span_total *span_totals__find(const struct span_totals *t, const char *path)
{
	struct span_total key = { .path = (char *)path };

	return t->n ? bsearch(&key, t->spans, t->n, sizeof(*t->spans), cmp_path) : NULL;
}

uint64_t span_total__quantile(const struct span_total *s, double q)
{
	uint64_t rank, seen = 0, mid;
	double x;
	size_t i;

	if (!s->instances || !s->n_hist)
		return 0;
	/* ceil(q n), without 0.99 * 100 rounding up to 100 in binary */
	x = q * (double)s->instances;
	rank = (uint64_t)x;
	if ((double)rank + 1e-9 < x)
		rank++;
	if (rank < 1)
		rank = 1;
	/* the last rank is the largest instance, known exactly */
	if (rank >= s->instances)
		return s->max_bytes;
	for (i = 0; i < s->n_hist; i++) {
		seen += s->hist[i].count;
		if (seen >= rank)
			break;
	}
	if (i == s->n_hist)
		i--;
	mid = s->hist[i].lo + (totals_bucket_end(s->hist[i].lo) - s->hist[i].lo) / 2;
	return mid > s->max_bytes ? s->max_bytes : mid;
}

void span_totals__free(struct span_totals *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		free(t->spans[i].path);
		free(t->spans[i].hist);
	}
	free(t->spans);
	memset(t, 0, sizeof(*t));
}
