// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "heapgap.h"
#include "units.h"

/* below this many standard errors the gap is not told apart from sampling noise */
#define GAP_SIGNIFICANT_SIGMA 2.0

int heap_gap__compute(const struct memstats *m, double live_bytes, double live_stderr,
		      struct heap_gap *g)
{
	const struct mem_values *heap = &m->kinds[MEM_KIND_HEAP], *anon = &m->kinds[MEM_KIND_ANON];
	uint64_t anon_rss = 0;

	if (!mem_has(heap, MEM_KIND_F_RSS) || !mem_has(anon, MEM_KIND_F_RSS))
		return -ENODATA;
	memset(g, 0, sizeof(*g));
	g->live_bytes = live_bytes;
	g->live_stderr = live_stderr;
	g->heap_rss = heap->v[MEM_KIND_F_RSS] + anon->v[MEM_KIND_F_RSS];
	if (mem_get(&mem_rollup_section, &m->rollup, "anonymous_bytes", &anon_rss))
		g->anon_rss = anon_rss;
	g->gap_bytes = (double)g->heap_rss - live_bytes;
	g->gap_stderr = live_stderr;
	g->gap_ratio = g->heap_rss ? g->gap_bytes / (double)g->heap_rss : 0;
	return 0;
}

void heap_gap__print(FILE *f, const struct heap_gap *g)
{
	char live[32], se[32], heap[32], anon[32], gap[32];

	format_bytes(live, sizeof(live), g->live_bytes);
	format_bytes(se, sizeof(se), g->live_stderr);
	format_bytes(heap, sizeof(heap), (double)g->heap_rss);
	format_bytes(anon, sizeof(anon), (double)g->anon_rss);
	format_bytes_signed(gap, sizeof(gap), g->gap_bytes);
	fprintf(f, "heap vs RSS\n");
	fprintf(f, "  %-30s %10s +- %s (1 sigma of sampling)\n", "estimated live heap", live, se);
	fprintf(f, "  %-30s %10s resident\n", "[heap] + anonymous mappings", heap);
	fprintf(f, "  %-30s %10s\n", "anonymous RSS, whole process", anon);
	fprintf(f, "  %-30s %10s +- %s: allocator overhead and fragmentation, %.0f%% of [heap] + "
		"anonymous\n", "gap", gap, se, g->gap_ratio * 100);
	if (fabs(g->gap_bytes) < GAP_SIGNIFICANT_SIGMA * g->gap_stderr)
		fprintf(f, "  (the gap is within %.0f sigma of 0: sampling alone can explain it)\n",
			GAP_SIGNIFICANT_SIGMA);
	else if (g->gap_bytes < 0)
		fprintf(f, "  (live heap above resident memory: allocated blocks not yet touched)\n");
}

int heap_gap__comments(const struct heap_gap *g, const char *prefix,
		       int (*add)(void *ctx, const char *comment), void *ctx)
{
	const struct {
		const char *name;
		double v;
	} vals[] = {
		{ "anon_rss_bytes", (double)g->anon_rss },
		{ "gap_bytes", g->gap_bytes },
		{ "gap_stderr_bytes", g->gap_stderr },
		{ "heap_rss_bytes", (double)g->heap_rss },
		{ "live_heap_bytes", g->live_bytes },
		{ "live_heap_stderr_bytes", g->live_stderr },
	};
	char c[128];
	size_t i;
	int err = 0;

	for (i = 0; !err && i < sizeof(vals) / sizeof(vals[0]); i++) {
		snprintf(c, sizeof(c), "%s.%s=%.0f", prefix, vals[i].name, vals[i].v);
		err = add(ctx, c);
	}
	return err;
}
