// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "heapgap.h"
#include "units.h"

/* below this many standard errors the gap is not told apart from sampling noise */
#define GAP_SIGNIFICANT_SIGMA 2.0

/* resident [heap] + anonymous mappings of a picture; false without smaps */
static bool heap_rss(const struct memstats *m, uint64_t *out)
{
	const struct mem_values *heap = &m->kinds[MEM_KIND_HEAP], *anon = &m->kinds[MEM_KIND_ANON];

	if (!mem_has(heap, MEM_KIND_F_RSS) || !mem_has(anon, MEM_KIND_F_RSS))
		return false;
	*out = heap->v[MEM_KIND_F_RSS] + anon->v[MEM_KIND_F_RSS];
	return true;
}

int heap_gap__compute(const struct memstats *start, const struct memstats *end, double live_bytes,
		      double live_stderr, struct heap_gap *g)
{
	uint64_t anon_rss = 0;

	memset(g, 0, sizeof(*g));
	if (!heap_rss(end, &g->heap_rss))
		return -ENODATA;
	g->live_bytes = live_bytes;
	g->live_stderr = live_stderr;
	g->gap_stderr = live_stderr;
	if (mem_get(&mem_rollup_section, &end->rollup, "anonymous_bytes", &anon_rss))
		g->anon_rss = anon_rss;
	g->have_start = start && heap_rss(start, &g->start_rss);
	if (g->have_start) {
		g->growth_bytes = (double)g->heap_rss - (double)g->start_rss;
		g->gap_bytes = g->growth_bytes - live_bytes;
	}
	return 0;
}

/* what a growth gap of this sign and size means */
static const char *gap_meaning(const struct heap_gap *g)
{
	/* <=: no growth and no live blocks (sigma 0) is no gap, not "less growth" */
	if (fabs(g->gap_bytes) <= GAP_SIGNIFICANT_SIGMA * g->gap_stderr && g->gap_stderr > 0)
		return "within 2 sigma of 0: the new live blocks explain the growth";
	if (fabs(g->gap_bytes) <= GAP_SIGNIFICANT_SIGMA * g->gap_stderr)
		return "none: the new live blocks explain the growth";
	if (g->gap_bytes > 0)
		return "RSS grew more than the blocks still live: overhead and fragmentation of "
		       "the new allocations, or memory freed during the capture that the allocator "
		       "kept resident";
	return "the new live blocks took less growth than their size: they reused memory "
	       "resident at attach (blocks freed since, the allocator's free lists), or are "
	       "not touched yet";
}

void heap_gap__print(FILE *f, const struct heap_gap *g)
{
	char live[32], se[32], a[32], b[32], c[32];

	fprintf(f, "heap vs RSS (the live heap counts only blocks allocated since attach)\n");
	fprintf(f, "  %-34s %11s +- %s (1 sigma of sampling)\n", "live heap allocated since attach",
		format_bytes(live, sizeof(live), g->live_bytes),
		format_bytes(se, sizeof(se), g->live_stderr));
	if (!g->have_start) {
		fprintf(f, "  %-34s %11s\n    no picture at attach: older memory and the growth "
			"cannot be told apart; the profile sees only the line above\n",
			"[heap] + anonymous resident, end", format_bytes(b, sizeof(b),
									 (double)g->heap_rss));
		fprintf(f, "  %-34s %11s\n", "anonymous RSS, whole process",
			format_bytes(c, sizeof(c), (double)g->anon_rss));
		return;
	}
	fprintf(f, "  %-34s %11s -> %s: %s\n", "[heap] + anonymous resident",
		format_bytes(a, sizeof(a), (double)g->start_rss),
		format_bytes(b, sizeof(b), (double)g->heap_rss),
		format_bytes_signed(c, sizeof(c), g->growth_bytes));
	fprintf(f, "  %-34s %11s +- %s\n    %s\n", "growth beyond the new live blocks",
		format_bytes_signed(a, sizeof(a), g->gap_bytes), se, gap_meaning(g));
	fprintf(f, "  %-34s %11s\n    memory from before attach: older live blocks, freed "
		"memory the allocator kept, its overhead (the profile cannot split them)\n",
		"resident at attach", format_bytes(a, sizeof(a), (double)g->start_rss));
	fprintf(f, "  %-34s %11s\n", "anonymous RSS, whole process",
		format_bytes(c, sizeof(c), (double)g->anon_rss));
}

int heap_gap__comments(const struct heap_gap *g, const char *prefix,
		       int (*add)(void *ctx, const char *comment), void *ctx)
{
	const struct {
		const char *name;
		double v;
		bool with_start;
	} vals[] = {
		{ "anon_rss_bytes", (double)g->anon_rss, false },
		{ "growth_bytes", g->growth_bytes, true },
		{ "growth_gap_bytes", g->gap_bytes, true },
		{ "growth_gap_stderr_bytes", g->gap_stderr, true },
		{ "heap_rss_bytes", (double)g->heap_rss, false },
		{ "heap_rss_start_bytes", (double)g->start_rss, true },
		{ "live_heap_bytes", g->live_bytes, false },
		{ "live_heap_stderr_bytes", g->live_stderr, false },
	};
	char c[128];
	size_t i;
	int err = 0;

	for (i = 0; !err && i < sizeof(vals) / sizeof(vals[0]); i++) {
		if (vals[i].with_start && !g->have_start)
			continue;
		snprintf(c, sizeof(c), "%s.%s=%.0f", prefix, vals[i].name, vals[i].v);
		err = add(ctx, c);
	}
	return err;
}
