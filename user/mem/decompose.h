/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * "Why is RSS so much bigger than my heap?", answered part by part: the
 * anonymous RSS of the process split into the blocks the program has in
 * use (the live heap sampled since attach, its chunk headers, what was
 * allocated before attach), what the allocator holds free (bins,
 * fastbins, top chunks, tcaches), its own headers and other anonymous
 * memory.  Every part says whether it is measured (read from the kernel
 * or the allocator), estimated (from the samples, with its sigma) or
 * inferred (measured minus estimated).  The allocator's figures come from
 * the pictures (allocstate.h): glibc's arenas read from outside, or the
 * figures libculpert-sampler.so publishes (jemalloc, mimalloc, glibc's
 * mallinfo2).  Without them it says why and what would give them; the
 * heap-vs-RSS gap (heapgap.h) stands on its own.
 *
 * Callable with two pictures and a live estimate: `capture` uses it for
 * its summary and mem.decomp.* comments, the agent for /metrics.
 */
#ifndef CULPERT_DECOMPOSE_H
#define CULPERT_DECOMPOSE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "memstats.h"

enum mem_decomp_kind {
	MEM_DECOMP_MEASURED,	/* read: the kernel's or the allocator's own figure */
	MEM_DECOMP_ESTIMATED,	/* from the sampled blocks, with a sigma */
	MEM_DECOMP_INFERRED,	/* a measured figure minus an estimated one: the same sigma */
};

/* how the allocator rounds a request (what a block costs it), as the end picture says */
enum mem_live_rounding {
	MEM_LIVE_ROUND_NONE,	/* not known: no footprint */
	MEM_LIVE_ROUND_GLIBC,	/* chunks: request2size(), mmapped chunks to pages */
	MEM_LIVE_ROUND_JEMALLOC,	/* jemalloc 5's size classes (4 per doubling, 16-byte quantum) */
};

/*
 * The sampled live heap: blocks allocated since attach and live at the
 * end, as requested (bytes) and as the allocator holds them (foot: with
 * chunk headers, size-class and page rounding).  Sums over the samples of
 * size * w and its variance size^2 * w * (w - 1), w = 1 / P(sampled).
 */
struct mem_live {
	double bytes, var;
	double foot, foot_var;
	double over_var;		/* of foot - bytes: each block's rounding is known, not their number */
	double mmapped;			/* glibc: of foot, in mmapped chunks */
	uint64_t untracked;		/* sampled blocks the profile could not follow (table full) */
	/* the rounding, from mem_live__init() */
	enum mem_live_rounding rounding;
	uint64_t align, min_chunk, mmap_threshold;
};

/* an empty sum whose rounding is the allocator's in end (NULL: none; the footprint is unknown) */
void mem_live__init(struct mem_live *lv, const struct memstats *end);
/* one sampled live block of `size` bytes and weight w */
void mem_live__add(struct mem_live *lv, uint64_t size, double weight);
/* the same, as a callback (session__live_each()) */
void mem_live__add_cb(void *lv, uint64_t size, double weight);

enum mem_decomp_part {
	MD_ANON_RSS,		/* the whole: anonymous RSS of the process */
	MD_IN_USE,		/* the program's blocks, as the allocator counts them */
	MD_IN_ARENAS,		/*   glibc: of those, in the arenas */
	MD_MMAPPED,		/*   glibc: in mmapped chunks */
	MD_LIVE,		/*   the live heap allocated since attach */
	MD_OVERHEAD,		/*   its headers and rounding */
	MD_BEFORE,		/*   allocated before attach, still in use */
	MD_AT_ATTACH,		/*   in use at attach (a reference, not a part) */
	MD_FREE,		/* free, held by the allocator */
	MD_BINS,
	MD_FASTBINS,
	MD_TOP,
	MD_TCACHE,
	MD_ACTIVE_FREE,		/*   jemalloc: free space in its active pages */
	MD_DIRTY,		/*   jemalloc: freed pages kept resident */
	MD_UNSPLIT,		/*   mimalloc: committed, not in the live heap since attach */
	MD_HEADERS,		/* the allocator's own structures */
	MD_NOT_RESIDENT,	/* allocator memory counted above but not resident (negative) */
	MD_OTHER,		/* the rest of the anonymous RSS */
	MD__MAX,
};

struct mem_decomp_item {
	bool present;
	const char *label;	/* where the allocator's figure differs from the part's default */
	enum mem_decomp_kind kind;
	double bytes;
	double stderr;		/* estimated and inferred */
	char note[200];		/* for people: counts, what it includes, a warning */
};

struct mem_decomp {
	bool available;
	char source[128];	/* "glibc's arenas, read from the target", ... */
	char key[24];		/* the same for machines: glibc, glibc-mallinfo2, jemalloc, mimalloc */
	char why[1400];		/* not available: why, and what would give it */
	char caveat[240];	/* available but approximate, or incomplete: why */
	char per_arena[400];	/* glibc: each arena's free bytes, for the text */
	bool have_start;	/* the picture at attach gave "in use at attach" */
	struct mem_decomp_item part[MD__MAX];
};

/*
 * Decompose the anonymous RSS of end.  start (may be NULL) gives what was in
 * use at attach; live the sampled live heap.  0 with d->available false and
 * d->why when the allocator's figures are missing; -ENODATA when end has no
 * rollup (the process could not be read).
 */
int mem_decomp__compute(const struct memstats *start, const struct memstats *end,
			const struct mem_live *live, struct mem_decomp *d);
/* the block `capture` prints in its summary */
void mem_decomp__print(FILE *f, const struct mem_decomp *d);
/* "PREFIX.PART.bytes=...", ".stderr_bytes", ".kind" as profile comments; 0 or add()'s error */
int mem_decomp__comments(const struct mem_decomp *d, const char *prefix,
			 int (*add)(void *ctx, const char *comment), void *ctx);

#endif /* CULPERT_DECOMPOSE_H */
