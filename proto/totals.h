/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Exact span totals (docs/profile-format.md, "Exact span totals"): per span
 * path, every allocation's bytes and calls, self and inclusive, the number
 * of instances and a histogram of bytes per instance.  They travel as
 * sorted comments, which pprof readers that do not know them ignore; this
 * is the one place that writes and reads them.
 */
#ifndef CULPERT_PROTO_TOTALS_H
#define CULPERT_PROTO_TOTALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pprof_profile;

/* closed instances whose inclusive bytes fall in [lo, totals_bucket_end(lo)) */
struct totals_bucket {
	uint64_t lo;
	uint64_t count;
};

struct span_total {
	char *path;			/* "outer;inner", as the span_path label */
	uint64_t self_bytes;		/* allocated while innermost */
	uint64_t self_calls;
	uint64_t incl_bytes;		/* allocated between entry and exit, children's included */
	uint64_t incl_calls;
	uint64_t instances;		/* closed */
	uint64_t open;			/* never closed: open at the end, or the thread exited */
	uint64_t max_bytes;		/* largest closed instance */
	uint64_t closed_bytes;		/* inclusive bytes of the closed instances */
	struct totals_bucket *hist;	/* ascending lo, counts > 0 */
	size_t n_hist;
};

struct span_totals {
	bool present;			/* the profile has them */
	struct span_total *spans;	/* sorted by path */
	size_t n, cap;
	uint64_t outside_bytes;		/* allocator calls outside any span */
	uint64_t outside_calls;
	uint64_t over_instances;	/* instances past the bound of paths kept */
	uint64_t over_bytes;		/* ... their self bytes and calls */
	uint64_t over_calls;
	uint64_t inexact;		/* span events whose counts may mix two threads */
};

/* the end of the bucket starting at lo: 4 buckets per power of two, one per value below 4 */
uint64_t totals_bucket_end(uint64_t lo);

/* copy v (path and histogram included) into t; 0 or -ENOMEM */
int span_totals__add(struct span_totals *t, const struct span_total *v);
/* sort by path, so the output is deterministic whatever order the spans came in */
void span_totals__sort(struct span_totals *t);
/* each "key=value" comment of t, in sorted order: cb returns non-zero to stop */
int span_totals__comments(const struct span_totals *t, int (*cb)(void *ctx, const char *comment),
			  void *ctx);
/* t from the comments of p: t->present false when it has none; 0, -EINVAL or -ENOMEM */
int span_totals__read(struct span_totals *t, const struct pprof_profile *p);
const struct span_total *span_totals__find(const struct span_totals *t, const char *path);
/* the q-quantile (0 < q <= 1) of bytes per closed instance: the middle of its bucket, <= max */
uint64_t span_total__quantile(const struct span_total *s, double q);
void span_totals__free(struct span_totals *t);

#endif /* CULPERT_PROTO_TOTALS_H */
