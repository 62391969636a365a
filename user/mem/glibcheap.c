// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What malloc_info() counts, counted from outside: per arena the top
 * chunk, the fastbins and the bins (unsorted, small, large), system_mem;
 * mp_'s mmapped blocks.  glibc's own walk holds the arena's mutex; ours
 * cannot, so it checks instead:
 *
 * - every chunk address lies in a writable anonymous mapping or the
 *   [heap], is aligned, and has a plausible size (at least MINSIZE, a
 *   multiple of MALLOC_ALIGNMENT, at most the arena's system memory; in a
 *   fastbin or a small bin exactly the size of that bin);
 * - a bin's list is doubly linked: each chunk's bk must be the chunk
 *   before it and the head's bk the last one, which also rules out cycles;
 *   a fastbin's single links are demangled (safe-linking, 2.32+) and
 *   checked for cycles (Brent's algorithm, no memory);
 * - the arena's list heads and top are the same before and after the walk.
 *
 * An arena that fails a check is read again, up to GLIBC_ARENA_TRIES
 * times, then given as approximate with the first reason.  Walks are
 * bounded by GLIBC_MAX_CHUNKS chunks per arena and GLIBC_MAX_ARENAS arenas.
 */
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glibcheap.h"
#include "remotemem.h"

/* PREV_INUSE | IS_MMAPPED | NON_MAIN_ARENA: the flag bits of a chunk's size field */
#define CHUNK_FLAG_BITS		7ULL
/* glibc's NSMALLBINS: bins below it hold chunks of exactly one size */
#define NSMALLBINS		64
/*
 * A thread arena's heap starts with its heap_info, aligned to HEAP_MAX_SIZE
 * (2 * DEFAULT_MMAP_THRESHOLD_MAX: 64 MiB on 64-bit), or four huge pages
 * under glibc.malloc.hugetlb=2 (heap_max_size(), 2.35+)
 */
#define HEAP_MAX_SIZE		(64ULL << 20)
/* heaps of one thread arena followed at most */
#define MAX_HEAPS		65536
/* largest struct malloc_state read (2200 bytes in 2.36) */
#define MAX_STATE_SIZE		8192
/* a chunk header read: up to fd_nextsize */
#define MAX_CHUNK_HEADER	64

struct walk {
	struct remotemem *r;
	const struct glibc_layout *l;
	uint64_t budget;	/* chunks that may still be followed in this arena */
	uint64_t max_size;	/* no chunk is bigger than its arena's system memory */
	uint64_t heap_max;	/* heap_max_size(): what a thread arena's heaps are aligned to */
	char *why;
	size_t whylen;
	bool bad;
};

static void __attribute__((format(printf, 2, 3))) walk_bad(struct walk *w, const char *fmt, ...)
{
	va_list ap;

	if (w->bad)
		return;
	w->bad = true;
	va_start(ap, fmt);
	vsnprintf(w->why, w->whylen, fmt, ap);
	va_end(ap);
}

/* the size (flags cleared), fd and bk of the free chunk at p; 0 or -EFAULT */
static int read_chunk(struct walk *w, uint64_t p, uint64_t *size, uint64_t *fd, uint64_t *bk)
{
	const struct glibc_layout *l = w->l;
	unsigned char buf[MAX_CHUNK_HEADER];

	if (p % l->align || !remotemem__is_heap(w->r, p, l->min_chunk) ||
	    remotemem__read_cached(w->r, p, buf, l->min_chunk))
		return -EFAULT;
	*size = glibc_get(l, GF_CH_SIZE, buf, 0) & ~CHUNK_FLAG_BITS;
	*fd = glibc_get(l, GF_CH_FD, buf, 0);
	*bk = glibc_get(l, GF_CH_BK, buf, 0);
	return 0;
}

static bool plausible_size(struct walk *w, uint64_t p, uint64_t size)
{
	return size >= w->l->min_chunk && !(size % w->l->align) && size <= w->max_size &&
	       remotemem__is_heap(w->r, p, size);
}

/* PROTECT_PTR / REVEAL_PTR: the link at address pos is stored as (pos >> 12) ^ ptr */
static uint64_t reveal(const struct glibc_layout *l, uint64_t pos, uint64_t stored)
{
	return l->safe_linking ? (pos >> 12) ^ stored : stored;
}

static void walk_fastbin(struct walk *w, size_t i, uint64_t head, struct glibc_arena *a)
{
	const struct glibc_layout *l = w->l;
	/* fastbin_index(sz) = (sz >> 4) - 2 on 64-bit: bin i holds one size */
	uint64_t want = (i + 2) * l->align, p = head, size, fd, bk;
	uint64_t saved = 0, power = 1, lam = 0;

	while (p && !w->bad) {
		if (!w->budget--) {
			walk_bad(w, "stopped after %u free chunks", GLIBC_MAX_CHUNKS);
			return;
		}
		if (read_chunk(w, p, &size, &fd, &bk)) {
			walk_bad(w, "fastbin %zu: chunk %#llx is not in the heap", i,
				 (unsigned long long)p);
			return;
		}
		if (size != want) {
			walk_bad(w, "fastbin %zu: chunk %#llx of %llu bytes, not %llu", i,
				 (unsigned long long)p, (unsigned long long)size,
				 (unsigned long long)want);
			return;
		}
		a->fast_chunks++;
		a->fast_bytes += size;
		p = reveal(l, p + l->f[GF_CH_FD].offset, fd);
		/* Brent: a cycle brings p back to a saved node within twice its length */
		if (p && p == saved) {
			walk_bad(w, "fastbin %zu: the list loops", i);
			return;
		}
		if (++lam == power) {
			saved = p;
			power *= 2;
			lam = 0;
		}
	}
}

/* bin i's chunks, from its head's fd and bk (elements 2i-2 and 2i-1 of bins[]) */
static void walk_bin(struct walk *w, uint64_t arena, const void *state, size_t i,
		     struct glibc_arena *a)
{
	const struct glibc_layout *l = w->l;
	/* bin_at(): the head is a fake chunk whose fd and bk are the two slots of bins[] */
	uint64_t bin = arena + l->f[GF_AR_BINS].offset + (i - 1) * 2 * l->f[GF_AR_BINS].elem_size -
		       l->f[GF_CH_FD].offset;
	uint64_t p = glibc_get(l, GF_AR_BINS, state, (i - 1) * 2);
	uint64_t last = glibc_get(l, GF_AR_BINS, state, (i - 1) * 2 + 1), prev = bin, size, fd, bk;

	/* a main_arena malloc has not initialized yet */
	if (!p && !last)
		return;
	while (p != bin && !w->bad) {
		if (!w->budget--) {
			walk_bad(w, "stopped after %u free chunks", GLIBC_MAX_CHUNKS);
			return;
		}
		if (read_chunk(w, p, &size, &fd, &bk) || bk != prev) {
			walk_bad(w, "bin %zu: chunk %#llx %s", i, (unsigned long long)p,
				 bk != prev ? "does not link back" : "is not in the heap");
			return;
		}
		if (!plausible_size(w, p, size) ||
		    (i >= 2 && i < NSMALLBINS && size != i * l->align) ||
		    (i >= NSMALLBINS && size < NSMALLBINS * l->align)) {
			walk_bad(w, "bin %zu: chunk %#llx of %llu bytes", i, (unsigned long long)p,
				 (unsigned long long)size);
			return;
		}
		a->bin_chunks++;
		a->bin_bytes += size;
		if (i == 1) {
			a->unsorted_chunks++;
			a->unsorted_bytes += size;
		}
		prev = p;
		p = fd;
	}
	if (!w->bad && last != prev)
		walk_bad(w, "bin %zu: the head's bk is not the last chunk", i);
}

/* the top chunk's size; main_arena's top is its own unsorted bin until the first sbrk */
static void read_top(struct walk *w, uint64_t arena, const void *state, struct glibc_arena *a)
{
	const struct glibc_layout *l = w->l;
	uint64_t top = glibc_get(l, GF_AR_TOP, state, 0), size, fd, bk;
	uint64_t initial = arena + l->f[GF_AR_BINS].offset - l->f[GF_CH_FD].offset;

	if (!top || top == initial)
		return;
	if (read_chunk(w, top, &size, &fd, &bk) || size > w->max_size) {
		walk_bad(w, "the top chunk %#llx is not in the heap", (unsigned long long)top);
		return;
	}
	a->top_bytes = size;
}

/*
 * A thread arena's heaps: heap_for_ptr(top) is the last one, each points to
 * the one before.  Only for the address space figure: a heap that does not
 * name this arena leaves it unknown, the rest of the arena stands.
 */
static void read_heaps(struct walk *w, uint64_t arena, const void *state, struct glibc_arena *a)
{
	const struct glibc_layout *l = w->l;
	uint64_t h = glibc_get(l, GF_AR_TOP, state, 0) & ~(w->heap_max - 1);
	unsigned char hi[256];
	size_t n = l->size[GS_HEAP_INFO];

	if (!n || n > sizeof(hi) || !glibc_has(l, GF_HI_AR_PTR) || !glibc_has(l, GF_HI_PREV))
		return;
	for (; h && a->heaps < MAX_HEAPS; a->heaps++) {
		if (!remotemem__is_heap(w->r, h, n) || remotemem__read(w->r, h, hi, n) ||
		    glibc_get(l, GF_HI_AR_PTR, hi, 0) != arena) {
			a->heaps = 0;
			a->aspace_bytes = 0;
			return;
		}
		a->aspace_bytes += glibc_get(l, GF_HI_SIZE, hi, 0);
		h = glibc_get(l, GF_HI_PREV, hi, 0);
	}
}

/*
 * What a thread arena's heaps hold besides chunks: the first starts with its
 * heap_info and the arena's malloc_state, the top chunk aligned after them
 * (new_heap(), _int_new_arena()); each later heap with its heap_info.  The
 * main arena's malloc_state is in libc's data, outside its system_mem.  An
 * old heap's fenceposts (at most MINSIZE + 16 bytes each) are not counted.
 */
static uint64_t header_bytes(const struct glibc_layout *l, const struct glibc_arena *a)
{
	uint64_t hi = l->size[GS_HEAP_INFO], first = hi + l->size[GS_STATE];

	if (a->main || !a->heaps || !hi)
		return 0;
	first = (first + l->align - 1) / l->align * l->align;
	return first + (a->heaps - 1) * hi;
}

/*
 * The arena's chunks lie below its top chunk, in the mapping that holds it
 * (the [heap], or the heap of a thread arena): copied at once, the walk
 * reads a picture of nearly one moment and needs no syscall per chunk.
 * Without it (too big, a torn top) the walk reads page by page.
 */
static void snapshot_heap(struct walk *w, uint64_t top)
{
	const struct procmap *m = procmaps__find(&w->r->maps, top);
	uint64_t hi, lo;

	if (!m || !remotemem__is_heap(w->r, top, w->l->min_chunk))
		return;
	hi = top + w->l->min_chunk;
	lo = hi - m->start > REMOTEMEM_SNAPSHOT_MAX ? hi - REMOTEMEM_SNAPSHOT_MAX : m->start;
	remotemem__snapshot(w->r, lo, (size_t)(hi - lo));
}

/* one read of one arena into a; false when a check failed (a->why says which) */
static bool read_arena_once(struct walk *w, uint64_t arena, bool main, unsigned char *s0,
			    unsigned char *s1, struct glibc_arena *a)
{
	const struct glibc_layout *l = w->l;
	size_t n = l->size[GS_STATE], i;
	const struct dw_field *fb = &l->f[GF_AR_FASTBINS], *bins = &l->f[GF_AR_BINS];
	const struct dw_field *top = &l->f[GF_AR_TOP];

	memset(a, 0, sizeof(*a));
	a->addr = arena;
	a->main = main;
	w->bad = false;
	w->why = a->why;
	w->whylen = sizeof(a->why);
	w->budget = GLIBC_MAX_CHUNKS;
	remotemem__drop_cache(w->r);
	if (remotemem__read(w->r, arena, s0, n)) {
		memset(s0, 0, n);
		walk_bad(w, "the arena at %#llx cannot be read", (unsigned long long)arena);
		return false;
	}
	a->system_mem = glibc_get(l, GF_AR_SYSTEM_MEM, s0, 0);
	a->max_system_mem = glibc_get(l, GF_AR_MAX_SYSTEM_MEM, s0, 0);
	a->attached_threads = glibc_get(l, GF_AR_ATTACHED, s0, 0);
	w->max_size = a->system_mem;
	snapshot_heap(w, glibc_get(l, GF_AR_TOP, s0, 0));
	read_top(w, arena, s0, a);
	for (i = 0; i < fb->count && !w->bad; i++)
		walk_fastbin(w, i, glibc_get(l, GF_AR_FASTBINS, s0, i), a);
	for (i = 1; i <= bins->count / 2 && !w->bad; i++)
		walk_bin(w, arena, s0, i, a);
	if (!w->bad && !a->main)
		read_heaps(w, arena, s0, a);
	a->header_bytes = header_bytes(l, a);
	if (a->main)
		a->aspace_bytes = a->system_mem;
	if (w->bad)
		return false;
	/* the heads the walk started from must still be there */
	if (remotemem__read(w->r, arena, s1, n) ||
	    memcmp(s0 + fb->offset, s1 + fb->offset, fb->size) ||
	    memcmp(s0 + bins->offset, s1 + bins->offset, bins->size) ||
	    memcmp(s0 + top->offset, s1 + top->offset, top->size)) {
		walk_bad(w, "its lists changed while they were read");
		return false;
	}
	return true;
}

/* the first reason the picture is approximate */
static void __attribute__((format(printf, 2, 3))) set_why(struct glibc_heap *h, const char *fmt,
							   ...)
{
	va_list ap;

	if (!h->consistent)
		return;
	h->consistent = false;
	va_start(ap, fmt);
	vsnprintf(h->why, sizeof(h->why), fmt, ap);
	va_end(ap);
}

/* read the arena at `arena` into a, again while a check fails; *next: its successor in the list */
static int read_arena(struct walk *w, uint64_t arena, bool main, struct glibc_arena *a,
		      uint64_t *next)
{
	unsigned char *s0 = calloc(2, MAX_STATE_SIZE);
	uint32_t t;

	if (!s0)
		return -ENOMEM;
	for (t = 1; t <= GLIBC_ARENA_TRIES; t++) {
		bool ok = read_arena_once(w, arena, main, s0, s0 + MAX_STATE_SIZE, a);

		a->tries = t;
		a->consistent = ok;
		if (ok)
			break;
		/* a heap may have grown (or shrunk) past the mappings read before */
		if (remotemem__reread_maps(w->r) == -ESRCH)
			break;
	}
	*next = glibc_get(w->l, GF_AR_NEXT, s0, 0);
	free(s0);
	return 0;
}

static bool same(const struct glibc_layout *l, enum glibc_field f, const void *a, const void *b)
{
	return glibc_get(l, f, a, 0) == glibc_get(l, f, b, 0);
}

/* mp_, read until two reads agree on the mmap counters (they move on every mmapped block) */
static int read_mp(struct walk *w, uint64_t addr, struct glibc_heap *h)
{
	const struct glibc_layout *l = w->l;
	size_t n = l->size[GS_PAR], i;
	unsigned char a[1024], b[1024];
	uint64_t hp;
	int t, err;

	if (n > sizeof(a))
		return -EFAULT;
	err = remotemem__read(w->r, addr, a, n);
	for (t = 0; !err && t < GLIBC_ARENA_TRIES; t++) {
		err = remotemem__read(w->r, addr, b, n);
		if (err || (same(l, GF_MP_N_MMAPS, a, b) && same(l, GF_MP_MMAPPED_MEM, a, b)))
			break;
		memcpy(a, b, n);
	}
	if (err)
		return err;
	if (t == GLIBC_ARENA_TRIES)
		set_why(h, "mp_'s mmap counters changed while read");
	h->mmapped_chunks = glibc_get(l, GF_MP_N_MMAPS, a, 0);
	h->mmapped_bytes = glibc_get(l, GF_MP_MMAPPED_MEM, a, 0);
	h->max_mmapped_chunks = glibc_get(l, GF_MP_MAX_N_MMAPS, a, 0);
	h->max_mmapped_bytes = glibc_get(l, GF_MP_MAX_MMAPPED_MEM, a, 0);
	h->mmap_threshold = glibc_get(l, GF_MP_MMAP_THRESHOLD, a, 0);
	h->trim_threshold = glibc_get(l, GF_MP_TRIM_THRESHOLD, a, 0);
	h->top_pad = glibc_get(l, GF_MP_TOP_PAD, a, 0);
	h->arena_test = glibc_get(l, GF_MP_ARENA_TEST, a, 0);
	h->arena_max = glibc_get(l, GF_MP_ARENA_MAX, a, 0);
	h->n_mmaps_max = glibc_get(l, GF_MP_N_MMAPS_MAX, a, 0);
	h->sbrk_base = glibc_get(l, GF_MP_SBRK_BASE, a, 0);
	h->dynamic_threshold = !glibc_get(l, GF_MP_NO_DYN_THRESHOLD, a, 0);
	h->tcache_bins = glibc_get(l, GF_MP_TCACHE_BINS, a, 0);
	h->tcache_count = glibc_get(l, GF_MP_TCACHE_COUNT, a, 0);
	h->tcache_max_bytes = glibc_get(l, GF_MP_TCACHE_MAX_BYTES, a, 0);
	for (i = GF_MP_TRIM_THRESHOLD; i <= GF_MP_TCACHE_UNSORTED_LIMIT; i++)
		h->present_mp |= glibc_has(l, (enum glibc_field)i) ? 1ULL << i : 0;
	hp = glibc_get(l, GF_MP_HP_PAGESIZE, a, 0);
	w->heap_max = hp ? 4 * hp : HEAP_MAX_SIZE;
	return 0;
}

static void add_totals(struct glibc_heap *h, const struct glibc_arena *a)
{
	h->system_mem += a->system_mem;
	h->max_system_mem += a->max_system_mem;
	h->top_bytes += a->top_bytes;
	h->fast_chunks += a->fast_chunks;
	h->fast_bytes += a->fast_bytes;
	h->bin_chunks += a->bin_chunks;
	h->bin_bytes += a->bin_bytes;
	h->header_bytes += a->header_bytes;
	if (!a->consistent)
		set_why(h, "arena %u: %s", h->n_arenas, a->why);
}

/* a thread arena lives in its first heap; a pointer seen before would make the list a loop */
static bool valid_next(struct walk *w, const struct glibc_heap *h, uint64_t next)
{
	uint32_t i;

	if (next % sizeof(uint64_t) || !remotemem__is_heap(w->r, next, w->l->size[GS_STATE]))
		return false;
	for (i = 1; i < h->n_arenas; i++)
		if (h->arenas[i].addr == next)
			return false;
	return true;
}

static int read_arenas(struct walk *w, uint64_t main_arena, struct glibc_heap *h)
{
	uint64_t arena = main_arena, next;
	int err;

	do {
		if (h->n_arenas == GLIBC_MAX_ARENAS) {
			h->arenas_truncated = true;
			set_why(h, "more than %u arenas: the rest were not read", GLIBC_MAX_ARENAS);
			break;
		}
		err = read_arena(w, arena, arena == main_arena, &h->arenas[h->n_arenas], &next);
		if (err)
			return err;
		add_totals(h, &h->arenas[h->n_arenas]);
		h->n_arenas++;
		if (next != main_arena && !valid_next(w, h, next)) {
			set_why(h, "arena %u: its next pointer %#llx is no arena", h->n_arenas - 1,
				(unsigned long long)next);
			break;
		}
		arena = next;
	} while (arena != main_arena);
	return 0;
}

int glibc_heap__read(struct remotemem *r, const struct glibc_layout *l, uint64_t base,
		     struct glibc_heap *h)
{
	struct walk w = { .r = r, .l = l, .heap_max = HEAP_MAX_SIZE };
	uint64_t main_arena = base + l->main_arena, before = r->syscalls, v;
	int err;

	memset(h, 0, offsetof(struct glibc_heap, arenas));
	h->consistent = true;
	h->chunk_align = l->align;
	h->min_chunk = l->min_chunk;
	if (l->size[GS_STATE] > MAX_STATE_SIZE ||
	    !remotemem__mapped(r, main_arena, l->size[GS_STATE])) {
		snprintf(h->why, sizeof(h->why), "main_arena at %#llx is not mapped in the target",
			 (unsigned long long)main_arena);
		return -EFAULT;
	}
	err = read_mp(&w, base + l->mp, h);
	if (err) {
		snprintf(h->why, sizeof(h->why), "mp_ at %#llx cannot be read: %s",
			 (unsigned long long)(base + l->mp), strerror(-err));
		return err;
	}
	err = read_arenas(&w, main_arena, h);
	if (!err && l->has_narenas && !remotemem__read(r, base + l->narenas, &v, sizeof(v))) {
		h->narenas = v;
		h->has_narenas = true;
	}
	h->syscalls = r->syscalls - before;
	return err;
}
