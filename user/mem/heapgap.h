/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * "Why is RSS so much bigger than my heap?", compared like with like.  The
 * live heap an in-use profile estimates counts only blocks allocated since
 * attach (and still live at the end): blocks allocated before are not in
 * the profile.  So it is set against the growth of the resident memory the
 * allocator owns over the same time, and what was resident at attach is
 * stated as older memory, never as fragmentation.  Each line is one
 * component of the resident memory; the allocator state (allocstate.h) would add
 * lines that split "resident at attach" further.
 */
#ifndef CULPERT_HEAPGAP_H
#define CULPERT_HEAPGAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "memstats.h"

struct heap_gap {
	double live_bytes;	/* estimated live heap: blocks allocated since attach, live at the end */
	double live_stderr;	/* its sampling standard error */
	bool have_start;	/* the picture at attach was read */
	uint64_t start_rss;	/* resident [heap] + anonymous mappings at attach */
	uint64_t heap_rss;	/* ... at the end (malloc's arenas and mmaps, thread stacks) */
	uint64_t anon_rss;	/* all resident anonymous memory of the process at the end */
	double growth_bytes;	/* heap_rss - start_rss */
	double gap_bytes;	/* growth_bytes - live_bytes: growth the new live blocks do not explain */
	double gap_stderr;	/* the RSS is read, not sampled: the live heap's error */
};

/*
 * start may be NULL (no picture at attach: no growth, no gap).  0, or
 * -ENODATA when the end picture has no smaps (the process could not be read).
 */
int heap_gap__compute(const struct memstats *start, const struct memstats *end, double live_bytes,
		      double live_stderr, struct heap_gap *g);
/* the block `capture` prints in its summary */
void heap_gap__print(FILE *f, const struct heap_gap *g);
/* "PREFIX.live_heap_bytes=..." and the rest as profile comments, passed to add(); 0 or its error */
int heap_gap__comments(const struct heap_gap *g, const char *prefix,
		       int (*add)(void *ctx, const char *comment), void *ctx);

#endif /* CULPERT_HEAPGAP_H */
