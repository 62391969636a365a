/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Exact span totals (proto/totals.h) as Prometheus text: per target and
 * span path, a histogram of bytes allocated per span instance
 * (culpert_span_alloc_bytes_bucket{span=...,le=...}, _sum, _count) and the
 * totals as counters, so a dashboard shows "bytes per request, p99, by
 * endpoint" without reading profiles.  docs/agent.md, "Span metrics".
 *
 * metrics.c calls span_metrics_write() with what endpoints.span_totals
 * (collector__span_totals()) gives, and writes nothing while that is NULL.
 */
#ifndef CULPERT_SPAN_METRICS_H
#define CULPERT_SPAN_METRICS_H

#include <stddef.h>
#include <stdio.h>

struct span_totals;

/* one target's totals; labels() writes its label pairs (no braces), and is given ctx */
struct span_metrics_target {
	const struct span_totals *totals;
	void (*labels)(FILE *f, const void *ctx);
	const void *ctx;
};

/*
 * Every family once, each with the series of every target in v (Prometheus
 * wants a family's series together); 0 or -EIO.
 */
int span_metrics_write(FILE *f, const struct span_metrics_target *v, size_t n);

#endif /* CULPERT_SPAN_METRICS_H */
