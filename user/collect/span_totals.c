// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "bpfobj.h"
#include "span_totals.h"
#include "spans.h"
#include "totals.h"

/* names of 32 spans of up to 127 bytes, and their separators */
/* each byte of a name escaped, at worst (lib/treepath.h) */
#define PATH_MAX_TEXT (CULPERT_MAX_SPAN_DEPTH * (2 * CULPERT_SPAN_NAME_MAX + 1) + 1)

struct collect_ctx {
	struct spans *spans;
	struct span_totals *out;
	uint64_t self_bytes, self_calls;	/* summed over every path */
};

static int add_path(void *data, const struct culpert_total_key *key,
		    const struct culpert_span_total *v)
{
	struct culpert_span_frame frames[CULPERT_MAX_SPAN_DEPTH] = { 0 };
	struct totals_bucket hist[CULPERT_HIST_BUCKETS];
	struct collect_ctx *c = data;
	struct span_total t = {
		.self_bytes = v->self_bytes, .self_calls = v->self_calls,
		.incl_bytes = v->incl_bytes, .incl_calls = v->incl_calls,
		.instances = v->instances, .open = v->open, .max_bytes = v->max_bytes,
		.closed_bytes = v->closed_bytes,
		.hist = hist,
	};
	static char path[PATH_MAX_TEXT];
	uint32_t i, depth = key->depth, chain;

	if (!depth || depth > CULPERT_MAX_SPAN_DEPTH)
		return 0;
	for (i = 0; i < depth; i++)
		frames[i].name_id = key->name_ids[i];
	chain = spans__chain(c->spans, frames, depth, false);
	if (chain == UINT32_MAX)
		return -ENOMEM;
	t.path = spans__path(c->spans, chain, path, sizeof(path));
	for (i = 0; i < CULPERT_HIST_BUCKETS; i++)
		if (v->hist[i])
			hist[t.n_hist++] = (struct totals_bucket){ culpert_hist_lower(i), v->hist[i] };
	c->self_bytes += v->self_bytes;
	c->self_calls += v->self_calls;
	return span_totals__add(c->out, &t);
}

/* b's histogram into a's: both ascending by lower bound, of one bucket scheme */
static int merge_hist(struct span_total *a, const struct span_total *b)
{
	struct totals_bucket *m = calloc(a->n_hist + b->n_hist + 1, sizeof(*m));
	size_t i = 0, j = 0, n = 0;

	if (!m)
		return -ENOMEM;
	while (i < a->n_hist || j < b->n_hist) {
		if (j == b->n_hist || (i < a->n_hist && a->hist[i].lo < b->hist[j].lo))
			m[n++] = a->hist[i++];
		else if (i == a->n_hist || b->hist[j].lo < a->hist[i].lo)
			m[n++] = b->hist[j++];
		else
			m[n++] = (struct totals_bucket){ a->hist[i].lo,
							 a->hist[i++].count + b->hist[j++].count };
	}
	free(a->hist);
	a->hist = m;
	a->n_hist = n;
	return 0;
}

/*
 * Two paths whose names resolve alike (a name read late as a second id)
 * are one path in the profile: merged here, histograms bucket by bucket.
 */
static int merge_twins(struct span_totals *t)
{
	size_t i, j = 0;
	int err = 0;

	span_totals__sort(t);
	for (i = 1; i < t->n; i++) {
		struct span_total *a = &t->spans[j], *b = &t->spans[i];

		if (strcmp(a->path, b->path)) {
			t->spans[++j] = *b;
			continue;
		}
		pr_debug("span path %s: two sets of totals, kept apart in the kernel: merged\n",
			 a->path);
		err = err ?: merge_hist(a, b);
		free(b->hist);
		a->self_bytes += b->self_bytes, a->self_calls += b->self_calls;
		a->incl_bytes += b->incl_bytes, a->incl_calls += b->incl_calls;
		a->instances += b->instances, a->open += b->open;
		a->closed_bytes += b->closed_bytes;
		a->max_bytes = a->max_bytes > b->max_bytes ? a->max_bytes : b->max_bytes;
		free(b->path);
	}
	if (t->n)
		t->n = j + 1;
	return err;
}

int span_totals_collect(const struct bpfobj_proc *pr, struct spans *spans,
			const struct culpert_calls_seen *seen, struct span_totals *out)
{
	struct collect_ctx c = { .spans = spans, .out = out };
	struct culpert_proc p;
	uint64_t in_bytes, in_calls;
	int err;

	memset(out, 0, sizeof(*out));
	err = bpfobj_proc__span_totals(pr, add_path, &c, &p);
	if (!err)
		err = merge_twins(out);
	if (err) {
		span_totals__free(out);
		return err;
	}
	out->present = true;
	out->over_instances = p.totals_over_instances;
	out->over_bytes = p.totals_over_bytes;
	out->over_calls = p.totals_over_calls;
	out->inexact = p.counters[CULPERT_CNT_TOTALS_INEXACT];
	in_bytes = c.self_bytes + p.totals_over_bytes;
	in_calls = c.self_calls + p.totals_over_calls;
	/* plain adds of colliding threads may lose a call: never below zero */
	out->outside_bytes = seen->bytes > in_bytes ? seen->bytes - in_bytes : 0;
	out->outside_calls = seen->calls > in_calls ? seen->calls - in_calls : 0;
	return 0;
}
