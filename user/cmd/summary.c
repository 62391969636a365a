// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decompose.h"
#include "heapgap.h"
#include "summary.h"
#include "units.h"
#include "view.h"

#define TOP 5

/* spans by their own allocated bytes, as `culpert report --flat` ranks them */
static void print_spans(FILE *f, const struct view *v)
{
	uint32_t *idx = malloc((v->n_spans ?: 1) * sizeof(*idx));
	size_t n, i;
	char b[32];

	if (!idx)
		return;
	n = view__flat_spans(v, idx);
	fprintf(f, "  top spans (allocated):\n");
	for (i = 0; i < n && i < TOP && v->spans[idx[i]].self > 0; i++)
		fprintf(f, "    %-40s %12s\n", v->spans[idx[i]].path,
			format_bytes(b, sizeof(b), v->spans[idx[i]].self));
	free(idx);
}

/* callsites by live bytes (the view was read with in-use values) */
static void print_live(FILE *f, const struct view *v)
{
	struct view_cs_row *r;
	double total;
	size_t n, i;
	char b[32], label[8192];

	r = view__callsite_rows(v, NULL, NULL, &n, &total);
	if (!r)
		return;
	fprintf(f, "  top live callsites:\n");
	for (i = 0; i < n && i < TOP && r[i].bytes > 0; i++)
		fprintf(f, "    %-40s %12s\n",
			view__callsite_label(v, r[i].callsite, false, label, sizeof(label)),
			format_bytes(b, sizeof(b), r[i].bytes));
	free(r);
}

int capture_summary__print(FILE *f, const char *path, uint64_t lost, uint64_t untracked,
			   const struct heap_gap *g, const struct mem_decomp *d)
{
	struct view_opts alloc = { .value = VIEW_ALLOC }, inuse = { .value = VIEW_INUSE };
	struct view *va, *vi;
	char err[256], b1[32], b2[32];

	va = view__load(path, &alloc, err, sizeof(err));
	vi = va ? view__load(path, &inuse, err, sizeof(err)) : NULL;
	if (!va || !vi) {
		view__free(va);
		return -EIO;
	}
	fprintf(f, "capture summary: %s allocated, %s of it live at the end (estimates)\n",
		format_bytes(b1, sizeof(b1), va->total_bytes),
		format_bytes(b2, sizeof(b2), vi->total_bytes));
	print_spans(f, va);
	print_live(f, vi);
	fprintf(f, "  lost samples: %llu; live blocks not tracked: %llu\n",
		(unsigned long long)lost, (unsigned long long)untracked);
	if (g)
		heap_gap__print(f, g);
	if (d)
		mem_decomp__print(f, d);
	view__free(va);
	view__free(vi);
	return 0;
}
