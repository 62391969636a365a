// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "decompose.h"
#include "units.h"

/* beyond this many standard errors "before attach" differs from what was in use at attach */
#define DECOMP_SIGNIFICANT_SIGMA 2.0
/* 64-bit glibc's chunk geometry and default mmap threshold, when no DWARF said otherwise */
#define GLIBC_ALIGN		16
#define GLIBC_MIN_CHUNK		32
#define GLIBC_MMAP_THRESHOLD	(128 * 1024)
/* arenas named one by one in the per-arena line */
#define PER_ARENA_MAX		8

static const char *const part_keys[MD__MAX] = {
	[MD_ANON_RSS] = "anon_rss",
	[MD_IN_USE] = "in_use",
	[MD_IN_ARENAS] = "in_arenas",
	[MD_MMAPPED] = "mmapped",
	[MD_LIVE] = "live_since_attach",
	[MD_OVERHEAD] = "live_overhead",
	[MD_BEFORE] = "before_attach",
	[MD_AT_ATTACH] = "in_use_at_attach",
	[MD_FREE] = "free",
	[MD_BINS] = "bins",
	[MD_FASTBINS] = "fastbins",
	[MD_TOP] = "top",
	[MD_TCACHE] = "tcache",
	[MD_ACTIVE_FREE] = "active_free",
	[MD_DIRTY] = "dirty",
	[MD_UNSPLIT] = "unsplit",
	[MD_HEADERS] = "allocator_headers",
	[MD_NOT_RESIDENT] = "not_resident",
	[MD_OTHER] = "other_anon",
};

/* what people read; per allocator where the figure differs */
struct part_text {
	const char *label;
	int depth;
};

static const struct part_text part_text[MD__MAX] = {
	[MD_ANON_RSS] = { "anonymous RSS, whole process", 0 },
	[MD_IN_USE] = { "in use by the program's blocks", 0 },
	[MD_IN_ARENAS] = { "in the arenas", 1 },
	[MD_MMAPPED] = { "in mmapped blocks", 1 },
	[MD_LIVE] = { "live heap allocated since attach", 1 },
	[MD_OVERHEAD] = { "their chunk headers and rounding", 1 },
	[MD_BEFORE] = { "allocated before attach, still in use", 1 },
	[MD_AT_ATTACH] = { "in use at attach, to compare", 1 },
	[MD_FREE] = { "free, held by the allocator for reuse", 0 },
	[MD_BINS] = { "bins: holes between live blocks", 1 },
	[MD_FASTBINS] = { "fastbins", 1 },
	[MD_TOP] = { "top chunks: free at the heaps' ends", 1 },
	[MD_TCACHE] = { "the threads' tcaches", 1 },
	[MD_ACTIVE_FREE] = { "free space in active pages", 1 },
	[MD_DIRTY] = { "freed pages kept resident", 1 },
	[MD_UNSPLIT] = { "before attach, free and overhead", 1 },
	[MD_HEADERS] = { "arena headers (heap_info, malloc_state)", 0 },
	[MD_NOT_RESIDENT] = { "not resident: main arena pages untouched", 0 },
	[MD_OTHER] = { "other anonymous memory", 0 },
};

/* a kind's name, as the comments give it */
static const char *mem_decomp_kind_name(enum mem_decomp_kind k)
{
	static const char *const names[] = { "measured", "estimated", "inferred" };

	return k <= MEM_DECOMP_INFERRED ? names[k] : "";
}

/* --- the live heap, as the allocator holds it ------------------------------------------- */

void mem_live__init(struct mem_live *lv, const struct memstats *end)
{
	const struct alloc_state *st = end ? &end->alloc : NULL;

	memset(lv, 0, sizeof(*lv));
	if (!st || !st->read)
		return;
	if (st->glibc_read) {
		lv->rounding = MEM_LIVE_ROUND_GLIBC;
		lv->align = st->heap.chunk_align ?: GLIBC_ALIGN;
		lv->min_chunk = st->heap.min_chunk ?: GLIBC_MIN_CHUNK;
		lv->mmap_threshold = st->heap.mmap_threshold ?: GLIBC_MMAP_THRESHOLD;
	} else if (st->glibc) {
		lv->rounding = MEM_LIVE_ROUND_GLIBC;
		lv->align = GLIBC_ALIGN;
		lv->min_chunk = GLIBC_MIN_CHUNK;
		lv->mmap_threshold = GLIBC_MMAP_THRESHOLD;
	} else if (!strcmp(st->family, "jemalloc")) {
		lv->rounding = MEM_LIVE_ROUND_JEMALLOC;
	}
}

/* request2size(), and sysmalloc's mmapped chunk: nb + SIZE_SZ rounded up to pages */
static uint64_t glibc_foot(const struct mem_live *lv, uint64_t size, bool *mmapped)
{
	uint64_t a = lv->align, nb = (size + a / 2 + a - 1) & ~(a - 1);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	if (nb < lv->min_chunk)
		nb = lv->min_chunk;
	*mmapped = nb >= lv->mmap_threshold;
	if (!*mmapped)
		return nb;
	return (nb + a / 2 + page - 1) / page * page;
}

/* sz_s2u(): 8 below 9 bytes, then 4 classes per doubling, 16 bytes apart up to 128 */
static uint64_t jemalloc_foot(uint64_t size)
{
	uint64_t lg = 0, delta;

	if (size <= 8)
		return 8;
	while ((1ULL << lg) < size && lg < 63)
		lg++;
	delta = lg < 7 ? 16 : 1ULL << (lg - 3);
	return (size + delta - 1) & ~(delta - 1);
}

void mem_live__add(struct mem_live *lv, uint64_t size, double weight)
{
	double y = (double)size, f = y, k = weight * (weight - 1);
	bool mmapped = false;

	if (lv->rounding == MEM_LIVE_ROUND_GLIBC)
		f = (double)glibc_foot(lv, size, &mmapped);
	else if (lv->rounding == MEM_LIVE_ROUND_JEMALLOC)
		f = (double)jemalloc_foot(size);
	lv->bytes += y * weight;
	lv->var += y * y * k;
	lv->foot += f * weight;
	lv->foot_var += f * f * k;
	lv->over_var += (f - y) * (f - y) * k;
	if (mmapped)
		lv->mmapped += f * weight;
}

void mem_live__add_cb(void *lv, uint64_t size, double weight)
{
	mem_live__add(lv, size, weight);
}

/* --- the parts ------------------------------------------------------------------------------ */

static struct mem_decomp_item *set(struct mem_decomp *d, enum mem_decomp_part p,
				   enum mem_decomp_kind kind, double bytes, double stderr)
{
	struct mem_decomp_item *it = &d->part[p];

	it->present = true;
	it->kind = kind;
	it->bytes = bytes;
	it->stderr = stderr;
	return it;
}

/* append to buf (what it says already, "; ", then the text) */
static void __attribute__((format(printf, 3, 0))) vappend(char *buf, size_t len, const char *fmt,
							 va_list ap)
{
	size_t n = strlen(buf);

	if (n)
		n += (size_t)snprintf(buf + n, len - n, "; ");
	if (n < len)
		vsnprintf(buf + n, len - n, fmt, ap);
}

/* add to the item's note */
static void __attribute__((format(printf, 2, 3))) note(struct mem_decomp_item *it,
							const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(it->note, sizeof(it->note), fmt, ap);
	va_end(ap);
}

/* add to what the whole decomposition must be read with */
static void __attribute__((format(printf, 2, 3))) caveat(struct mem_decomp *d, const char *fmt,
							  ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(d->caveat, sizeof(d->caveat), fmt, ap);
	va_end(ap);
}

/*
 * The program's blocks in use, split by when they were allocated: the
 * live heap sampled since attach (as requested), what the allocator
 * spends on those blocks (foot - bytes), and the rest, which is older.
 * at_attach < 0: no picture at attach.
 */
static void split_in_use(struct mem_decomp *d, const struct mem_live *lv, double in_use,
			 double at_attach)
{
	bool foot = lv->rounding != MEM_LIVE_ROUND_NONE;
	double used = foot ? lv->foot : lv->bytes, se = sqrt(foot ? lv->foot_var : lv->var);
	struct mem_decomp_item *it;
	char b[32];

	it = set(d, MD_LIVE, MEM_DECOMP_ESTIMATED, lv->bytes, sqrt(lv->var));
	if (lv->mmapped > 0)
		note(it, "%s of it in mmapped blocks (with their page rounding)",
		     format_bytes(b, sizeof(b), lv->mmapped));
	if (foot)
		set(d, MD_OVERHEAD, MEM_DECOMP_ESTIMATED, lv->foot - lv->bytes, sqrt(lv->over_var));
	it = set(d, MD_BEFORE, MEM_DECOMP_INFERRED, in_use - used, se);
	if (lv->rounding == MEM_LIVE_ROUND_GLIBC)
		note(it, "with their chunk headers (their sizes were not sampled)");
	else if (lv->rounding == MEM_LIVE_ROUND_JEMALLOC)
		note(it, "in their size classes");
	else
		note(it, "with the overhead of the blocks since attach (the allocator's rounding "
		     "is not known)");
	if (in_use - used < -DECOMP_SIGNIFICANT_SIGMA * se)
		note(it, "below 0 beyond 2 sigma: the allocator's figures are older than the "
		     "samples, or it rounds otherwise than assumed");
	if (at_attach < 0) {
		note(it, "no allocator figures at attach to compare with");
		return;
	}
	d->have_start = true;
	set(d, MD_AT_ATTACH, MEM_DECOMP_MEASURED, at_attach, 0);
	if (at_attach - (in_use - used) > DECOMP_SIGNIFICANT_SIGMA * se)
		note(it, "less than was in use at attach: the rest was freed since");
	else if ((in_use - used) - at_attach > DECOMP_SIGNIFICANT_SIGMA * se)
		note(it, "more than was in use at attach: blocks allocated since that the samples "
		     "did not see (untracked, or allocated inside the allocator)");
}

/* the anonymous RSS not accounted for by what the allocator holds (`held`, resident) */
static void other(struct mem_decomp *d, double held)
{
	struct mem_decomp_item *it = set(d, MD_OTHER, MEM_DECOMP_MEASURED,
					 d->part[MD_ANON_RSS].bytes - held, 0);

	note(it, "thread stacks, the main stack, other mmaps, libraries' written data");
}

/* --- glibc: the arenas read from outside --------------------------------------------------- */

/* the program's blocks in one picture: system - free - headers (- tcache) + mmapped */
static double glibc_in_use(const struct glibc_heap *h)
{
	double v = (double)h->system_mem - (double)(h->bin_bytes + h->fast_bytes + h->top_bytes) -
		   (double)h->header_bytes;

	if (h->tcache.present)
		v -= (double)h->tcache.bytes;
	return v + (double)h->mmapped_bytes;
}

static void glibc_free(struct mem_decomp *d, const struct glibc_heap *h)
{
	struct mem_decomp_item *it;
	double free_b = (double)(h->bin_bytes + h->fast_bytes + h->top_bytes);

	note(set(d, MD_BINS, MEM_DECOMP_MEASURED, (double)h->bin_bytes, 0), "%llu chunks",
	     (unsigned long long)h->bin_chunks);
	note(set(d, MD_FASTBINS, MEM_DECOMP_MEASURED, (double)h->fast_bytes, 0), "%llu chunks",
	     (unsigned long long)h->fast_chunks);
	set(d, MD_TOP, MEM_DECOMP_MEASURED, (double)h->top_bytes, 0);
	if (h->tcache.present) {
		free_b += (double)h->tcache.bytes;
		note(set(d, MD_TCACHE, MEM_DECOMP_MEASURED, (double)h->tcache.bytes, 0),
		     "%llu chunk%s, %llu thread%s", (unsigned long long)h->tcache.chunks,
		     h->tcache.chunks == 1 ? "" : "s", (unsigned long long)h->tcache.threads,
		     h->tcache.threads == 1 ? "" : "s");
	}
	it = set(d, MD_FREE, MEM_DECOMP_MEASURED, free_b, 0);
	if (!h->tcache.present)
		note(it, "the tcaches were not read: they count as in use");
}

/* "0 main 16.06 MiB, 1 132.00 KiB, ..." of each arena's free bytes */
static void glibc_per_arena(struct mem_decomp *d, const struct glibc_heap *h)
{
	size_t n = 0, len = sizeof(d->per_arena);
	char b[32];
	uint32_t i;

	for (i = 0; i < h->n_arenas && i < PER_ARENA_MAX && n < len; i++) {
		const struct glibc_arena *a = &h->arenas[i];

		format_bytes(b, sizeof(b), (double)(a->bin_bytes + a->fast_bytes + a->top_bytes));
		n += (size_t)snprintf(d->per_arena + n, len - n, "%s%u%s %s", i ? ", " : "", i,
				      a->main ? " main" : "", b);
	}
	if (i < h->n_arenas && n < len)
		snprintf(d->per_arena + n, len - n, ", and %u more", h->n_arenas - i);
}

/*
 * The [heap] is the main arena when it has its size: pages of it never
 * touched (the top's reserve) or swapped out are counted above, not in RSS
 */
static double glibc_not_resident(const struct memstats *end, const struct glibc_heap *h)
{
	const struct mem_values *heap = &end->kinds[MEM_KIND_HEAP];
	uint64_t size = heap->v[MEM_KIND_F_SIZE], rss = heap->v[MEM_KIND_F_RSS];

	if (!h->n_arenas || !h->arenas[0].main || !mem_has(heap, MEM_KIND_F_SIZE) ||
	    !mem_has(heap, MEM_KIND_F_RSS) || size != h->arenas[0].system_mem || rss > size)
		return 0;
	return (double)(size - rss);
}

static void decomp_glibc(struct mem_decomp *d, const struct memstats *start,
			 const struct memstats *end, const struct mem_live *lv)
{
	const struct glibc_heap *h = &end->alloc.heap;
	double in_use = glibc_in_use(h), nonres = glibc_not_resident(end, h);
	bool at = start && start->alloc.read && start->alloc.glibc_read;
	struct mem_decomp_item *it;

	snprintf(d->source, sizeof(d->source), "glibc's %u arena%s, read from the target",
		 h->n_arenas, h->n_arenas == 1 ? "" : "s");
	snprintf(d->key, sizeof(d->key), "glibc");
	set(d, MD_IN_USE, MEM_DECOMP_MEASURED, in_use, 0);
	set(d, MD_IN_ARENAS, MEM_DECOMP_MEASURED, in_use - (double)h->mmapped_bytes, 0);
	it = set(d, MD_MMAPPED, MEM_DECOMP_MEASURED, (double)h->mmapped_bytes, 0);
	if (h->mmapped_chunks)
		note(it, "%llu block%s, each its own mapping", (unsigned long long)h->mmapped_chunks,
		     h->mmapped_chunks == 1 ? "" : "s");
	if (lv)
		split_in_use(d, lv, in_use, at ? glibc_in_use(&start->alloc.heap) : -1);
	glibc_free(d, h);
	glibc_per_arena(d, h);
	set(d, MD_HEADERS, MEM_DECOMP_MEASURED, (double)h->header_bytes, 0);
	if (nonres > 0)
		set(d, MD_NOT_RESIDENT, MEM_DECOMP_MEASURED, -nonres, 0);
	other(d, (double)(h->system_mem + h->mmapped_bytes) - nonres);
	if (!h->consistent)
		caveat(d, "approximate: %s", h->why);
	if (!h->tcache.present && h->tcache_why[0])
		caveat(d, "tcaches not read: %.120s", h->tcache_why);
}

/* --- the sampler's page: jemalloc, mimalloc, glibc's mallinfo2() ---------------------------- */

static bool sampler_figures(const struct memstats *m)
{
	return m && m->alloc.read && m->alloc.sampler.present && m->alloc.sampler.has_figures;
}

static void decomp_jemalloc(struct mem_decomp *d, const struct memstats *start,
			    const struct memstats *end, const struct mem_live *lv)
{
	const struct culpert_sampler_allocator_stats *s = &end->alloc.sampler.s;
	double alloc = (double)s->allocated, active = (double)s->active;
	double dirty = (double)s->resident - active - (double)s->metadata;
	struct mem_decomp_item *it;

	snprintf(d->source, sizeof(d->source), "jemalloc's stats from libculpert-sampler.so,");
	snprintf(d->key, sizeof(d->key), "jemalloc");
	note(set(d, MD_IN_USE, MEM_DECOMP_MEASURED, alloc, 0),
	     "stats.allocated: size classes, blocks in its thread caches included");
	if (lv)
		split_in_use(d, lv, alloc, sampler_figures(start) ?
			     (double)start->alloc.sampler.s.allocated : -1);
	d->part[MD_OVERHEAD].label = "their size-class rounding";
	set(d, MD_FREE, MEM_DECOMP_MEASURED, active - alloc + dirty, 0);
	set(d, MD_ACTIVE_FREE, MEM_DECOMP_MEASURED, active - alloc, 0);
	it = set(d, MD_DIRTY, MEM_DECOMP_MEASURED, dirty, 0);
	note(it, "resident - active - metadata: dirty pages not purged yet");
	if (dirty < 0)
		note(it, "negative: part of the metadata is not resident");
	it = set(d, MD_HEADERS, MEM_DECOMP_MEASURED, (double)s->metadata, 0);
	it->label = "allocator metadata";
	note(it, "stats.metadata");
	other(d, (double)s->resident);
	caveat(d, "jemalloc's stats.resident is an upper bound: other anonymous memory may be "
	       "larger");
}

static void decomp_mimalloc(struct mem_decomp *d, const struct memstats *end,
			    const struct mem_live *lv)
{
	double committed = (double)end->alloc.sampler.s.resident;
	struct mem_decomp_item *it;

	snprintf(d->source, sizeof(d->source), "mimalloc's process info from libculpert-sampler.so,");
	snprintf(d->key, sizeof(d->key), "mimalloc");
	it = set(d, MD_IN_USE, MEM_DECOMP_MEASURED, committed, 0);
	it->label = "held by mimalloc (committed)";
	note(it, "mimalloc gives no in-use figure");
	if (lv) {
		set(d, MD_LIVE, MEM_DECOMP_ESTIMATED, lv->bytes, sqrt(lv->var));
		note(set(d, MD_UNSPLIT, MEM_DECOMP_INFERRED, committed - lv->bytes, sqrt(lv->var)),
		     "mimalloc's figures cannot split them");
	}
	other(d, committed);
	caveat(d, "mimalloc's committed memory is not all resident: other anonymous memory may "
	       "be larger");
}

static void decomp_mallinfo(struct mem_decomp *d, const struct memstats *start,
			    const struct memstats *end, const struct mem_live *lv)
{
	const struct culpert_sampler_allocator_stats *s = &end->alloc.sampler.s;

	snprintf(d->source, sizeof(d->source), "glibc's mallinfo2() from libculpert-sampler.so,");
	snprintf(d->key, sizeof(d->key), "glibc-mallinfo2");
	note(set(d, MD_IN_USE, MEM_DECOMP_MEASURED, (double)s->allocated, 0),
	     "uordblks + hblkhd: arenas and mmapped blocks, tcaches and arena headers included");
	if (lv)
		split_in_use(d, lv, (double)s->allocated, sampler_figures(start) ?
			     (double)start->alloc.sampler.s.allocated : -1);
	note(set(d, MD_FREE, MEM_DECOMP_MEASURED, (double)s->free_bytes, 0),
	     "fordblks: bins, fastbins and top together; libc6-dbg splits them");
	other(d, (double)s->mapped);
}

/* --- no figures: why, and what would give them ----------------------------------------------- */

static void unavailable(struct mem_decomp *d, const struct alloc_state *st)
{
	const char *fam = st->family[0] ? st->family : "the allocator";

	if (!st->read)
		snprintf(d->why, sizeof(d->why), "the allocator's state was not read");
	else if (st->absent[0])
		snprintf(d->why, sizeof(d->why), "the allocator's state could not be read: %.300s",
			 st->absent);
	else if (st->glibc)
		snprintf(d->why, sizeof(d->why), "glibc's arenas were not read: %.1100s; or preload "
			 "libculpert-sampler.so, whose page carries glibc's mallinfo2()",
			 st->glibc_absent);
	else if (st->sampler.present)
		snprintf(d->why, sizeof(d->why), "%s's figures are not in libculpert-sampler.so's "
			 "page: %.240s", fam, st->sampler.note[0] ? st->sampler.note :
			 "it publishes none for this allocator");
	else
		snprintf(d->why, sizeof(d->why), "no figures from %s: %.320s", fam,
			 st->sampler_absent[0] ? st->sampler_absent : "its state is not read");
}

int mem_decomp__compute(const struct memstats *start, const struct memstats *end,
			const struct mem_live *live, struct mem_decomp *d)
{
	const struct alloc_state *st = &end->alloc;
	uint64_t anon = 0;

	memset(d, 0, sizeof(*d));
	if (!mem_get(&mem_rollup_section, &end->rollup, "anonymous_bytes", &anon))
		return -ENODATA;
	d->available = true;
	set(d, MD_ANON_RSS, MEM_DECOMP_MEASURED, (double)anon, 0);
	if (st->read && st->glibc_read)
		decomp_glibc(d, start, end, live);
	else if (sampler_figures(end) && !strcmp(st->family, "jemalloc"))
		decomp_jemalloc(d, start, end, live);
	else if (sampler_figures(end) && !strcmp(st->family, "mimalloc"))
		decomp_mimalloc(d, end, live);
	else if (sampler_figures(end) && st->glibc)
		decomp_mallinfo(d, start, end, live);
	else
		d->available = false;
	if (!d->available) {
		memset(d->part, 0, sizeof(d->part));
		unavailable(d, st);
		return 0;
	}
	/* the target refreshes them at most once a second: what happened since is not in them */
	if (sampler_figures(end) && !st->glibc_read) {
		size_t n = strlen(d->source);

		snprintf(d->source + n, sizeof(d->source) - n, " taken %.1f s before this picture",
			 st->sampler.age_ns / 1e9);
		if (!st->sampler.fresh)
			caveat(d, "the allocator's figures are %.1f s old: not refreshed while "
			       "culpert-bpf listened", st->sampler.age_ns / 1e9);
	}
	if (live && live->untracked)
		caveat(d, "%llu sampled live blocks were not tracked: the live heap misses them and "
		       "'before attach' holds them", (unsigned long long)live->untracked);
	return 0;
}

/* --- out ------------------------------------------------------------------------------------ */

static const char kind_letter[] = { 'm', 'e', 'i' };

/*
 * A part is an amount, never printed below 0 (docs/memory-picture.md): an
 * estimate or inference below 0 is the range from 0 to its value + 2 sigma
 * ("0..1.20 MiB"), 0 when even that is below 0; a measured difference
 * below 0 (figures read at different moments) is 0, with what it was.
 * "not resident" is a subtraction and keeps its sign.
 */
static void print_part(FILE *f, const struct mem_decomp *d, enum mem_decomp_part p)
{
	const struct mem_decomp_item *it = &d->part[p];
	int depth = part_text[p].depth;
	char v[32], se[48] = "", sig[32], why[128] = "";
	bool below = p != MD_NOT_RESIDENT && it->bytes < 0;
	double hi = it->bytes + 2 * it->stderr;

	if (!it->present)
		return;
	if (p == MD_NOT_RESIDENT)
		format_bytes_signed(v, sizeof(v), it->bytes);
	else if (below && it->kind != MEM_DECOMP_MEASURED && hi > 0)
		snprintf(v, sizeof(v), "0..%s", format_bytes(sig, sizeof(sig), hi));
	else
		format_bytes(v, sizeof(v), below ? 0 : it->bytes);
	if (below && it->kind != MEM_DECOMP_MEASURED && hi > 0)
		snprintf(se, sizeof(se), "(2 sigma)");
	else if (it->kind != MEM_DECOMP_MEASURED)
		snprintf(se, sizeof(se), "+- %s", format_bytes(sig, sizeof(sig), it->stderr));
	if (below && it->kind == MEM_DECOMP_MEASURED)
		snprintf(why, sizeof(why), "%sthe figures it is the difference of add up to %s "
			 "more: read at different moments", it->note[0] ? "; " : "",
			 format_bytes(sig, sizeof(sig), -it->bytes));
	fprintf(f, "%*s%-*s %11s %-14s %c%s%s%s\n", 2 + 2 * depth, "", 40 - 2 * depth,
		it->label ?: part_text[p].label, v, se, kind_letter[it->kind],
		it->note[0] || why[0] ? "  " : "", it->note, why);
}

/* the parts in the order they are read: the whole, in use (where, then when), free, the rest */
static void print_parts(FILE *f, const struct mem_decomp *d)
{
	enum mem_decomp_part p;

	for (p = MD_ANON_RSS; p <= MD_MMAPPED; p++)
		print_part(f, d, p);
	if (d->part[MD_LIVE].present && d->part[MD_IN_ARENAS].present)
		fprintf(f, "    the same by when it was allocated:\n");
	for (p = MD_LIVE; p <= MD_TCACHE; p++)
		print_part(f, d, p);
	if (d->per_arena[0])
		fprintf(f, "    per arena (bins + fastbins + top): %s\n", d->per_arena);
	for (p = MD_ACTIVE_FREE; p < MD__MAX; p++)
		print_part(f, d, p);
}

void mem_decomp__print(FILE *f, const struct mem_decomp *d)
{
	if (!d->available) {
		fprintf(f, "RSS not decomposed: %s\n", d->why);
		return;
	}
	fprintf(f, "anonymous RSS decomposed (%s; m measured, e estimated from the samples +- 1 "
		"sigma, i inferred: measured minus estimated)\n", d->source);
	if (d->caveat[0])
		fprintf(f, "  note: %s\n", d->caveat);
	print_parts(f, d);
}

static int comment(int (*add)(void *ctx, const char *comment), void *ctx, const char *prefix,
		   const char *key, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int comment(int (*add)(void *ctx, const char *comment), void *ctx, const char *prefix,
		   const char *key, const char *fmt, ...)
{
	char c[1600];
	int n = snprintf(c, sizeof(c), "%s.%s=", prefix, key);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c + n, sizeof(c) - (size_t)n, fmt, ap);
	va_end(ap);
	return add(ctx, c);
}

int mem_decomp__comments(const struct mem_decomp *d, const char *prefix,
			 int (*add)(void *ctx, const char *comment), void *ctx)
{
	char key[64];
	int p, err;

	if (!d->available)
		return comment(add, ctx, prefix, "unavailable", "%s", d->why);
	err = comment(add, ctx, prefix, "source", "%s", d->key);
	if (!err && d->caveat[0])
		err = comment(add, ctx, prefix, "note", "%s", d->caveat);
	for (p = 0; !err && p < MD__MAX; p++) {
		const struct mem_decomp_item *it = &d->part[p];

		if (!it->present)
			continue;
		snprintf(key, sizeof(key), "%s.bytes", part_keys[p]);
		err = comment(add, ctx, prefix, key, "%.0f", it->bytes);
		snprintf(key, sizeof(key), "%s.kind", part_keys[p]);
		err = err ?: comment(add, ctx, prefix, key, "%s", mem_decomp_kind_name(it->kind));
		snprintf(key, sizeof(key), "%s.stderr_bytes", part_keys[p]);
		if (!err && it->kind != MEM_DECOMP_MEASURED)
			err = comment(add, ctx, prefix, key, "%.0f", it->stderr);
	}
	return err;
}
