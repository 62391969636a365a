// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "memfmt.h"
#include "span_metrics.h"
#include "totals.h"

/*
 * The histogram's buckets: le = 2^k - 1 for k = 4..40, then +Inf.  Bytes
 * are integers and the profile's buckets (a quarter of a power of two)
 * start at every power of two, so "at most 2^k - 1" is counted exactly; a
 * fixed set keeps each series' buckets the same from scrape to scrape.
 * histogram_quantile() interpolates within a power of two: coarser than
 * `culpert report`'s p99 (12.5%), at a tenth of the series.
 */
#define LE_FIRST_LOG2	4
#define LE_LAST_LOG2	40

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* NAME{target labels,span="PATH"[,EXTRA]} */
static void series(FILE *f, const char *name, const struct span_metrics_target *t,
		   const struct span_total *s, const char *extra)
{
	fprintf(f, "%s{", name);
	t->labels(f, t->ctx);
	memfmt_prom_label(f, "span", s->path, true);
	if (extra)
		fprintf(f, ",%s", extra);
	fputc('}', f);
}

/* closed instances with at most `max` bytes */
static uint64_t at_most(const struct span_total *s, uint64_t max)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < s->n_hist && totals_bucket_end(s->hist[i].lo) - 1 <= max; i++)
		n += s->hist[i].count;
	return n;
}

static void histogram(FILE *f, const struct span_metrics_target *t, const struct span_total *s)
{
	char le[48];
	int k;

	for (k = LE_FIRST_LOG2; k <= LE_LAST_LOG2; k++) {
		snprintf(le, sizeof(le), "le=\"%" PRIu64 "\"", ((uint64_t)1 << k) - 1);
		series(f, "culpert_span_alloc_bytes_bucket", t, s, le);
		fprintf(f, " %" PRIu64 "\n", at_most(s, ((uint64_t)1 << k) - 1));
	}
	series(f, "culpert_span_alloc_bytes_bucket", t, s, "le=\"+Inf\"");
	fprintf(f, " %" PRIu64 "\n", s->instances);
	series(f, "culpert_span_alloc_bytes_sum", t, s, NULL);
	fprintf(f, " %" PRIu64 "\n", s->closed_bytes);
	series(f, "culpert_span_alloc_bytes_count", t, s, NULL);
	fprintf(f, " %" PRIu64 "\n", s->instances);
}

enum counter { C_BYTES, C_SELF_BYTES, C_CALLS, C_SELF_CALLS, C_OPEN };

static uint64_t counter_of(const struct span_total *s, enum counter c)
{
	switch (c) {
	case C_BYTES: return s->incl_bytes;
	case C_SELF_BYTES: return s->self_bytes;
	case C_CALLS: return s->incl_calls;
	case C_SELF_CALLS: return s->self_calls;
	default: return s->open;
	}
}

static const struct {
	const char *name, *type, *help;
} counters[] = {
	[C_BYTES] = { "culpert_span_allocated_bytes_total", "counter",
		      "Bytes asked of the allocator inside the span, its descendants included; every call, not sampled." },
	[C_SELF_BYTES] = { "culpert_span_self_allocated_bytes_total", "counter",
			   "Bytes asked of the allocator while the span was the innermost open one." },
	[C_CALLS] = { "culpert_span_alloc_calls_total", "counter",
		      "Allocator calls inside the span, its descendants included." },
	[C_SELF_CALLS] = { "culpert_span_self_alloc_calls_total", "counter",
			   "Allocator calls while the span was the innermost open one." },
	[C_OPEN] = { "culpert_span_open_instances", "gauge",
		     "Instances that never closed (their thread exited inside them): counted in the totals, not in the histogram." },
};

int span_metrics_write(FILE *f, const struct span_metrics_target *v, size_t n)
{
	size_t i, j, c;

	family(f, "culpert_span_alloc_bytes", "histogram",
	       "Bytes allocated per closed span instance (a request, a stage), exact: every allocator call.");
	for (i = 0; i < n; i++)
		for (j = 0; v[i].totals && j < v[i].totals->n; j++)
			histogram(f, &v[i], &v[i].totals->spans[j]);
	for (c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
		family(f, counters[c].name, counters[c].type, counters[c].help);
		for (i = 0; i < n; i++)
			for (j = 0; v[i].totals && j < v[i].totals->n; j++) {
				series(f, counters[c].name, &v[i], &v[i].totals->spans[j], NULL);
				fprintf(f, " %" PRIu64 "\n",
					counter_of(&v[i].totals->spans[j], (enum counter)c));
			}
	}
	return ferror(f) ? -EIO : 0;
}
