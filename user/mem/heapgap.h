/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * "Why is RSS so much bigger than my heap?": the live heap estimated from an
 * in-use profile next to the resident memory the allocator owns, and the
 * difference -- allocator overhead and fragmentation -- with its sampling error.
 */
#ifndef CULPERT_HEAPGAP_H
#define CULPERT_HEAPGAP_H

#include <stdint.h>
#include <stdio.h>

#include "memstats.h"

struct heap_gap {
	double live_bytes;	/* estimated live heap: the profile's in-use space */
	double live_stderr;	/* its sampling standard error */
	uint64_t heap_rss;	/* resident [heap] + anonymous mappings (malloc's arenas and mmaps) */
	uint64_t anon_rss;	/* all resident anonymous memory of the process (smaps_rollup) */
	double gap_bytes;	/* heap_rss - live_bytes */
	double gap_stderr;	/* the RSS is read, not sampled: the live heap's error */
	double gap_ratio;	/* gap_bytes / heap_rss */
};

/* 0, or -ENODATA when the picture has no smaps (the process could not be read) */
int heap_gap__compute(const struct memstats *m, double live_bytes, double live_stderr,
		      struct heap_gap *g);
/* the block `capture` prints in its summary */
void heap_gap__print(FILE *f, const struct heap_gap *g);
/* "PREFIX.live_heap_bytes=..." and the rest as profile comments, passed to add(); 0 or its error */
int heap_gap__comments(const struct heap_gap *g, const char *prefix,
		       int (*add)(void *ctx, const char *comment), void *ctx);

#endif /* CULPERT_HEAPGAP_H */
