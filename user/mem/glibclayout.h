/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where glibc's allocator keeps its state, from the DWARF of the libc
 * build the target runs (Debian: libc6-dbg): the addresses of main_arena
 * and mp_ and the layout of struct malloc_state, struct malloc_par, struct
 * malloc_chunk, heap_info and the tcache.  Nothing here is a hard-coded
 * offset: a field the DWARF does not have is absent, and the reader does
 * without it or says it cannot read that glibc.
 */
#ifndef CULPERT_GLIBCLAYOUT_H
#define CULPERT_GLIBCLAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwlayout.h"

struct elfobj;

enum glibc_field {
	/* struct malloc_state: one arena */
	GF_AR_FLAGS,
	GF_AR_FASTBINS,		/* fastbinsY[NFASTBINS] */
	GF_AR_TOP,
	GF_AR_LAST_REMAINDER,
	GF_AR_BINS,		/* bins[NBINS * 2 - 2]: fd and bk of each bin's list head */
	GF_AR_NEXT,
	GF_AR_NEXT_FREE,
	GF_AR_ATTACHED,		/* attached_threads */
	GF_AR_SYSTEM_MEM,
	GF_AR_MAX_SYSTEM_MEM,
	/* struct malloc_par: mp_, the tunables and the mmap counters */
	GF_MP_TRIM_THRESHOLD,
	GF_MP_TOP_PAD,
	GF_MP_MMAP_THRESHOLD,
	GF_MP_ARENA_TEST,
	GF_MP_ARENA_MAX,
	GF_MP_HP_PAGESIZE,	/* thp_pagesize (2.35) or hp_pagesize (2.35+) */
	GF_MP_N_MMAPS,
	GF_MP_N_MMAPS_MAX,
	GF_MP_MAX_N_MMAPS,
	GF_MP_NO_DYN_THRESHOLD,
	GF_MP_MMAPPED_MEM,
	GF_MP_MAX_MMAPPED_MEM,
	GF_MP_SBRK_BASE,
	GF_MP_TCACHE_BINS,
	GF_MP_TCACHE_MAX_BYTES,
	GF_MP_TCACHE_COUNT,
	GF_MP_TCACHE_UNSORTED_LIMIT,
	/* struct malloc_chunk */
	GF_CH_SIZE,		/* mchunk_size */
	GF_CH_FD,
	GF_CH_BK,
	GF_CH_FD_NEXTSIZE,	/* where a free chunk's header ends: MINSIZE */
	/* heap_info: the header of each heap of a thread arena */
	GF_HI_AR_PTR,
	GF_HI_PREV,
	GF_HI_SIZE,
	GF_HI_MPROTECT_SIZE,
	/* struct tcache_perthread_struct and tcache_entry */
	GF_TC_COUNTS,
	GF_TC_ENTRIES,
	GF_TE_NEXT,
	GF__MAX,
};

enum glibc_struct {
	GS_STATE,		/* struct malloc_state */
	GS_PAR,			/* struct malloc_par */
	GS_CHUNK,		/* struct malloc_chunk */
	GS_HEAP_INFO,		/* heap_info */
	GS_TCACHE,		/* tcache_perthread_struct */
	GS_TCACHE_ENTRY,	/* tcache_entry */
	GS__MAX,
};

struct glibc_layout {
	int version_major, version_minor;	/* from libc's symbol versions; 0.0 when unknown */
	bool safe_linking;		/* 2.32+: fastbin and tcache fd are PROTECT_PTR'd */
	uint64_t main_arena;		/* link-time addresses in libc */
	uint64_t mp;
	uint64_t narenas;
	bool has_narenas;
	uint64_t tcache_tls;		/* offset of `tcache` in libc's TLS block */
	bool has_tcache_tls;
	uint64_t size[GS__MAX];		/* sizeof each struct, 0 when the DWARF lacks it */
	struct dw_field f[GF__MAX];
	uint64_t present;		/* bit per enum glibc_field */
	uint64_t align;			/* MALLOC_ALIGNMENT: two size fields */
	uint64_t min_chunk;		/* MINSIZE: a free chunk's header up to fd_nextsize */
};

/*
 * From `debug` (libc's separate debug file, or libc itself when it keeps
 * its DWARF) and `bin` (libc as mapped, for its version; may be NULL).
 * 0, or -ENODATA with the reason in err (no DWARF, a required struct or
 * field missing).
 */
int glibc_layout__load(struct elfobj *debug, struct elfobj *bin, struct glibc_layout *l,
		       char *err, size_t errlen);

static inline bool glibc_has(const struct glibc_layout *l, enum glibc_field f)
{
	return l->present & (1ULL << f);
}

/* element i of field f (0 for a scalar) in buf, a copy of the struct; 0 when absent */
uint64_t glibc_get(const struct glibc_layout *l, enum glibc_field f, const void *buf, size_t i);

#endif /* CULPERT_GLIBCLAYOUT_H */
