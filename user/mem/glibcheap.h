/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * glibc's allocator state, read from the running target's memory (never
 * written, never stopped): every arena's system memory, top chunk and free
 * lists (fastbins; the unsorted, small and large bins), and mp_'s mmap
 * counters and thresholds.  The target keeps allocating meanwhile, so
 * every walk is bounded, every pointer is checked against its mappings,
 * and an arena whose lists changed during the walk is read again a few
 * times, then reported as approximate.
 */
#ifndef CULPERT_GLIBCHEAP_H
#define CULPERT_GLIBCHEAP_H

#include <stdbool.h>
#include <stdint.h>

#include "glibclayout.h"

struct remotemem;

/* arenas read at most (glibc's default limit is 8 per core) */
#define GLIBC_MAX_ARENAS	1024
/* reads of one arena before its figures are given as approximate */
#define GLIBC_ARENA_TRIES	4
/* free chunks followed in one read of one arena, all its lists together */
#define GLIBC_MAX_CHUNKS	(1u << 20)

struct glibc_arena {
	uint64_t addr;
	uint64_t system_mem;		/* bytes the arena got from the system (sbrk, its heaps) */
	uint64_t max_system_mem;
	uint64_t top_bytes;		/* the top chunk: free, at the end, trimmable */
	uint64_t fast_chunks;		/* fastbins */
	uint64_t fast_bytes;
	uint64_t bin_chunks;		/* unsorted, small and large bins */
	uint64_t bin_bytes;
	uint64_t unsorted_chunks;	/* of those, the unsorted bin */
	uint64_t unsorted_bytes;
	uint64_t attached_threads;
	uint64_t heaps;			/* thread arena: its heaps (mmapped regions), 0 for main */
	uint64_t aspace_bytes;		/* its heaps' size, main: system_mem (malloc_info aspace) */
	uint64_t header_bytes;		/* in its system_mem, no chunk's: heap_info, malloc_state */
	uint32_t tries;			/* reads it took */
	bool main;
	bool consistent;		/* the lists linked up and did not change while read */
	char why[112];			/* why not consistent */
};

/* one thread's tcache: chunks freed by it, held for its next mallocs */
struct glibc_tcache_totals {
	uint64_t threads;		/* threads whose tcache was read */
	uint64_t chunks;
	uint64_t bytes;
	bool present;			/* read at all (see glibc_heap.tcache_why) */
	bool consistent;		/* the thread list and every cache linked up */
	uint32_t tries;
};

struct glibc_heap {
	uint32_t n_arenas;
	uint64_t narenas;		/* glibc's own count (narenas), when known */
	bool has_narenas;
	bool arenas_truncated;		/* more arenas than GLIBC_MAX_ARENAS */
	bool consistent;		/* every arena and the arena list */
	char why[160];			/* the first reason it is not */
	/* mp_ */
	uint64_t mmapped_chunks;	/* n_mmaps: blocks from mmap(), each its own mapping */
	uint64_t mmapped_bytes;
	uint64_t max_mmapped_chunks;
	uint64_t max_mmapped_bytes;
	uint64_t mmap_threshold;
	uint64_t trim_threshold;
	uint64_t top_pad;
	uint64_t arena_test;
	uint64_t arena_max;		/* 0: glibc's default, 8 per core */
	uint64_t n_mmaps_max;
	uint64_t sbrk_base;
	bool dynamic_threshold;		/* mmap_threshold still adapts (no_dyn_threshold == 0) */
	uint64_t tcache_bins, tcache_count, tcache_max_bytes;
	/* chunk geometry (SIZE_SZ is half the alignment): what a request costs, see decompose.h */
	uint64_t chunk_align, min_chunk;
	uint64_t present_mp;		/* bit per enum glibc_field of mp_ that was read */
	/* totals over the arenas */
	uint64_t system_mem, max_system_mem, top_bytes;
	uint64_t fast_chunks, fast_bytes, bin_chunks, bin_bytes, header_bytes;
	struct glibc_tcache_totals tcache;
	char tcache_why[512];		/* why the tcaches are not counted, or are approximate */
	uint64_t syscalls;		/* process_vm_readv calls the read took */
	struct glibc_arena arenas[GLIBC_MAX_ARENAS];	/* n_arenas of them; last: not cleared */
};

/*
 * Read the allocator state of the process behind r, whose libc is loaded
 * at `base` (the link-time address 0 of libc).  0; -ENOMEM; -ESRCH when the
 * process went away; -EFAULT when main_arena or mp_ cannot be read (why in
 * h->why).  An arena that could not be read consistently is not a failure.
 */
int glibc_heap__read(struct remotemem *r, const struct glibc_layout *l, uint64_t base,
		     struct glibc_heap *h);

#endif /* CULPERT_GLIBCHEAP_H */
