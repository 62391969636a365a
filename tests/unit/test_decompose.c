// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The decomposition of the anonymous RSS (decompose.h) on synthetic
 * pictures with round numbers: the allocator's rounding of sampled sizes,
 * the parts and their kinds for glibc's arenas, jemalloc's, mimalloc's and
 * mallinfo2's figures, and what it says without them.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "decompose.h"
#include "test.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

static void set_kind(struct memstats *m, enum mem_kind k, uint64_t size, uint64_t rss)
{
	mem_set(&m->kinds[k], MEM_KIND_F_SIZE, size);
	mem_set(&m->kinds[k], MEM_KIND_F_RSS, rss);
}

static void set_anon(struct memstats *m, uint64_t anon)
{
	mem_set(&m->rollup, mem_section__index(&mem_rollup_section, "anonymous_bytes"), anon);
}

/*
 * glibc, two arenas: main 80 MiB from brk ([heap] of that size, 12 KiB not
 * resident) with 16 MiB in 4096 bin chunks and a 16 KiB top; a thread
 * arena of 8 MiB with its 2256 bytes of headers and a 1 KiB top; 1008
 * bytes in a tcache; 4 mmapped blocks of 1 MiB + a page; 100 MiB of
 * anonymous RSS.  in_use_mib: the main arena's size (less at attach: less in use).
 */
static struct memstats *glibc_picture(double in_use_mib)
{
	struct memstats *m = calloc(1, sizeof(*m));
	struct glibc_heap *h;

	if (!m)
		return NULL;
	set_anon(m, 100 << 20);
	set_kind(m, MEM_KIND_HEAP, 80 << 20, (80 << 20) - 12288);
	set_kind(m, MEM_KIND_ANON, 30 << 20, 20 << 20);
	m->alloc.read = m->alloc.glibc = m->alloc.glibc_read = true;
	snprintf(m->alloc.family, sizeof(m->alloc.family), "glibc");
	h = &m->alloc.heap;
	h->n_arenas = 2;
	h->consistent = true;
	h->chunk_align = 16;
	h->min_chunk = 32;
	h->mmap_threshold = 128 << 10;
	h->arenas[0] = (struct glibc_arena){ .main = true, .system_mem = 80 << 20,
		.top_bytes = 16 << 10, .bin_bytes = 16 << 20, .bin_chunks = 4096 };
	h->arenas[1] = (struct glibc_arena){ .system_mem = 8 << 20, .top_bytes = 1024,
		.heaps = 1, .header_bytes = 2256 };
	h->system_mem = (88 << 20) - (uint64_t)((80 - in_use_mib) * MIB);
	h->arenas[0].system_mem = h->system_mem - (8 << 20);
	h->top_bytes = (16 << 10) + 1024;
	h->bin_bytes = 16 << 20;
	h->bin_chunks = 4096;
	h->header_bytes = 2256;
	h->tcache = (struct glibc_tcache_totals){ .present = true, .consistent = true,
		.threads = 2, .chunks = 1, .bytes = 1008 };
	h->mmapped_chunks = 4;
	h->mmapped_bytes = 4 * 1052672;
	return m;
}

static char *render(const struct mem_decomp *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	mem_decomp__print(f, d);
	fclose(f);
	return buf;
}

struct collected {
	char c[96][1600];
	int n;
};

static int collect(void *ctx, const char *comment)
{
	struct collected *c = ctx;

	if (c->n < 96)
		snprintf(c->c[c->n++], sizeof(c->c[0]), "%s", comment);
	return 0;
}

static bool has(const struct collected *c, const char *want)
{
	int i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->c[i], want))
			return true;
	return false;
}

/* glibc's rounding: request2size() in the arenas, mmapped chunks to whole pages */
static void test_live_rounding(void)
{
	struct memstats *m = glibc_picture(80);
	struct mem_live lv;

	if (!ASSERT_OK_PTR(m, "picture"))
		return;
	mem_live__init(&lv, m);
	ASSERT_EQ(lv.rounding, MEM_LIVE_ROUND_GLIBC, "glibc's rounding");
	mem_live__add(&lv, 4096, 4);	/* 4112-byte chunk */
	mem_live__add(&lv, 1, 1);	/* MINSIZE */
	mem_live__add(&lv, 24, 1);	/* 24 + 8 fits 32 */
	mem_live__add(&lv, 25, 1);	/* 48 */
	mem_live__add(&lv, 1 << 20, 1);	/* mmapped: 1 MiB + 16 + 8 rounded up to 257 pages */
	ASSERT_NEAR(lv.bytes, 4 * 4096 + 1 + 24 + 25 + (1 << 20), 0, "requested bytes");
	ASSERT_NEAR(lv.foot, 4 * 4112 + 32 + 32 + 48 + 1052672, 0, "as glibc holds them");
	ASSERT_NEAR(lv.mmapped, 1052672, 0, "in mmapped chunks");
	ASSERT_NEAR(lv.var, 4096.0 * 4096 * 4 * 3, 0, "variance: size^2 w (w - 1)");
	ASSERT_NEAR(lv.over_var, 16.0 * 16 * 4 * 3, 0, "the overhead's variance");
	/* jemalloc 5's size classes */
	snprintf(m->alloc.family, sizeof(m->alloc.family), "jemalloc");
	m->alloc.glibc = m->alloc.glibc_read = false;
	mem_live__init(&lv, m);
	mem_live__add(&lv, 5, 1);	/* 8 */
	mem_live__add(&lv, 17, 1);	/* 32 */
	mem_live__add(&lv, 100, 1);	/* 112 */
	mem_live__add(&lv, 129, 1);	/* 160 */
	mem_live__add(&lv, 4097, 1);	/* 5120 */
	mem_live__add(&lv, 1 << 20, 1);	/* a class of its own */
	ASSERT_NEAR(lv.foot, 8 + 32 + 112 + 160 + 5120 + (1 << 20), 0, "jemalloc's classes");
	/* an allocator whose rounding is not known: no footprint beyond the bytes */
	snprintf(m->alloc.family, sizeof(m->alloc.family), "tcmalloc");
	mem_live__init(&lv, m);
	mem_live__add(&lv, 100, 2);
	ASSERT_NEAR(lv.foot, 200, 0, "no rounding");
	free(m);
}

/* the live heap of glibc_picture: 4000 blocks of 4 KiB (weight 4 each) and the 4 mmapped ones */
static void glibc_live(struct mem_live *lv, const struct memstats *end)
{
	int i;

	mem_live__init(lv, end);
	for (i = 0; i < 1000; i++)
		mem_live__add(lv, 4096, 4);
	for (i = 0; i < 4; i++)
		mem_live__add(lv, 1 << 20, 1);
}

static void test_glibc(void)
{
	struct memstats *start = glibc_picture(48), *end = glibc_picture(80);
	struct collected *c = calloc(1, sizeof(*c));
	struct mem_decomp *d = calloc(1, sizeof(*d));
	const struct mem_decomp_item *p;
	double in_use, sum = 0;
	struct mem_live lv;
	char *text;
	int i;

	if (!ASSERT_TRUE(start && end && c && d, "allocated"))
		goto cleanup;
	glibc_live(&lv, end);
	if (!ASSERT_EQ(mem_decomp__compute(start, end, &lv, d), 0, "compute"))
		goto cleanup;
	p = d->part;
	ASSERT_TRUE(d->available && !strcmp(d->key, "glibc"), "from glibc's arenas");
	/* 88 MiB of arenas less 16 MiB + 17 KiB free, 1008 B tcache, 2256 B headers; + mmapped */
	in_use = 88 * MIB - 16 * MIB - 17 * KIB - 1008 - 2256 + 4 * 1052672;
	ASSERT_NEAR(p[MD_IN_USE].bytes, in_use, 0, "in use");
	ASSERT_NEAR(p[MD_IN_ARENAS].bytes + p[MD_MMAPPED].bytes, in_use, 0, "where");
	ASSERT_NEAR(p[MD_LIVE].bytes, 16384000 + 4 * MIB, 0, "live since attach, requested");
	ASSERT_NEAR(p[MD_LIVE].stderr, sqrt(4096.0 * 4096 * 12 * 1000), 1e-6, "its sigma");
	ASSERT_NEAR(p[MD_OVERHEAD].bytes, 4000 * 16 + 4 * 4096, 0, "chunk headers and pages");
	ASSERT_NEAR(p[MD_BEFORE].bytes, in_use - 4000 * 4112 - 4 * 1052672, 0, "before attach");
	ASSERT_NEAR(p[MD_BEFORE].stderr, sqrt(4112.0 * 4112 * 12 * 1000), 1e-6, "its sigma");
	ASSERT_NEAR(p[MD_AT_ATTACH].bytes, in_use - 32 * MIB, 0, "in use at attach");
	ASSERT_NEAR(p[MD_FREE].bytes, 16 * MIB + 17 * KIB + 1008, 0, "free: bins, top, tcache");
	ASSERT_NEAR(p[MD_HEADERS].bytes, 2256, 0, "arena headers");
	ASSERT_NEAR(p[MD_NOT_RESIDENT].bytes, -12288, 0, "the [heap]'s untouched pages");
	ASSERT_NEAR(p[MD_OTHER].bytes, 100 * MIB - 88 * MIB - 4 * 1052672 + 12288, 0, "other");
	for (i = 0; i < MD__MAX; i++)
		if (p[i].present && (i == MD_IN_USE || i == MD_FREE || i == MD_HEADERS ||
				     i == MD_NOT_RESIDENT || i == MD_OTHER))
			sum += p[i].bytes;
	ASSERT_NEAR(sum, 100 * MIB, 0, "the parts add up to the anonymous RSS");
	ASSERT_EQ(p[MD_LIVE].kind, MEM_DECOMP_ESTIMATED, "live: estimated");
	ASSERT_EQ(p[MD_BEFORE].kind, MEM_DECOMP_INFERRED, "before: inferred");
	ASSERT_EQ(p[MD_BINS].kind, MEM_DECOMP_MEASURED, "bins: measured");
	/* 48 MiB at attach, 80 - 20 = 60 now: more than at attach, which it says */
	ASSERT_TRUE(strstr(p[MD_BEFORE].note, "more than was in use at attach") != NULL,
		    "says when the older part grew");
	text = render(d);
	ASSERT_TRUE(text && strstr(text, "anonymous RSS decomposed (glibc's 2 arenas, read from the "
				   "target; m measured"), "header");
	ASSERT_TRUE(text && strstr(text, "    live heap allocated since attach         19.62 MiB "
				   "+- 438.18 KiB  e"), "an estimated line");
	ASSERT_TRUE(text && strstr(text, "    bins: holes between live blocks          16.00 MiB "
				   "               m  4096 chunks"), "a measured line");
	ASSERT_TRUE(text && strstr(text, "    per arena (bins + fastbins + top): 0 main 16.02 MiB, "
				   "1 1.00 KiB\n"), "per arena");
	ASSERT_TRUE(text && strstr(text, "  not resident: main arena pages untouched  -12.00 KiB"),
		    "not resident, as a subtraction");
	free(text);
	ASSERT_EQ(mem_decomp__comments(d, "mem.decomp", collect, c), 0, "comments");
	ASSERT_TRUE(has(c, "mem.decomp.source=glibc"), "source");
	ASSERT_TRUE(has(c, "mem.decomp.bins.bytes=16777216"), "bins");
	ASSERT_TRUE(has(c, "mem.decomp.bins.kind=measured"), "bins' kind");
	ASSERT_TRUE(has(c, "mem.decomp.live_since_attach.kind=estimated"), "live's kind");
	ASSERT_TRUE(has(c, "mem.decomp.before_attach.kind=inferred"), "before's kind");
	ASSERT_TRUE(has(c, "mem.decomp.before_attach.stderr_bytes=450447"), "before's sigma");
	ASSERT_TRUE(!has(c, "mem.decomp.bins.stderr_bytes=0"), "no sigma on a measured part");
	ASSERT_TRUE(has(c, "mem.decomp.not_resident.bytes=-12288"), "not resident");
cleanup:
	free(start);
	free(end);
	free(c);
	free(d);
}

/* an approximate read and no tcaches: said, and the tcaches count as in use */
static void test_glibc_caveats(void)
{
	struct memstats *end = glibc_picture(80);
	struct mem_decomp *d = calloc(1, sizeof(*d));
	struct mem_live lv;
	char *text;

	if (!ASSERT_TRUE(end && d, "allocated"))
		goto cleanup;
	end->alloc.heap.consistent = false;
	snprintf(end->alloc.heap.why, sizeof(end->alloc.heap.why), "arena 1: its lists changed");
	end->alloc.heap.tcache.present = false;
	snprintf(end->alloc.heap.tcache_why, sizeof(end->alloc.heap.tcache_why),
		 "no debug info for ld.so");
	glibc_live(&lv, end);
	lv.untracked = 3;
	mem_decomp__compute(NULL, end, &lv, d);
	ASSERT_TRUE(strstr(d->caveat, "approximate: arena 1: its lists changed") &&
		    strstr(d->caveat, "tcaches not read: no debug info for ld.so") &&
		    strstr(d->caveat, "3 sampled live blocks were not tracked"), "caveats");
	ASSERT_TRUE(!d->part[MD_TCACHE].present && strstr(d->part[MD_FREE].note, "count as in use"),
		    "tcaches not read");
	ASSERT_TRUE(!d->part[MD_AT_ATTACH].present &&
		    strstr(d->part[MD_BEFORE].note, "no allocator figures at attach"), "no start");
	/* 94 MB of chunks sampled live (sigma 0.4 MB), 76 MB in use: a "before attach" below 0 */
	mem_live__init(&lv, end);
	for (int i = 0; i < 10000; i++)
		mem_live__add(&lv, 8192, 1.2);
	mem_decomp__compute(NULL, end, &lv, d);
	ASSERT_TRUE(d->part[MD_BEFORE].bytes < 0 &&
		    strstr(d->part[MD_BEFORE].note, "below 0 beyond 2 sigma"), "negative before");
	/* printed as an amount: 0, not below */
	text = render(d);
	ASSERT_TRUE(text && strstr(text, "    allocated before attach, still in use          0 B "
				   "+- "), text ? text : "render");
	free(text);
	/* below 0 within 2 sigma: the range from 0 */
	mem_live__init(&lv, end);
	for (int i = 0; i < 9500; i++)
		mem_live__add(&lv, 8192, 1.0);
	d->part[MD_BEFORE].bytes = -0.5 * d->part[MD_BEFORE].stderr;
	text = render(d);
	ASSERT_TRUE(text && strstr(text, "    allocated before attach, still in use  0..") &&
		    strstr(text, " (2 sigma)      i"), text ? text : "render");
	free(text);
	/* a measured difference below 0 (RSS read after the arenas shrank): 0, and why */
	set_anon(end, 1 << 20);
	mem_decomp__compute(NULL, end, &lv, d);
	ASSERT_TRUE(d->part[MD_OTHER].bytes < 0, "other below 0");
	text = render(d);
	ASSERT_TRUE(text &&
		    strstr(text, "  other anonymous memory                           0 B ") &&
		    strstr(text, "read at different moments") && !strstr(text, "    -"),
		    text ? text : "render");
	free(text);
	/* no live estimate: in use is not split */
	mem_decomp__compute(NULL, end, NULL, d);
	ASSERT_TRUE(d->available && !d->part[MD_LIVE].present && !d->part[MD_BEFORE].present,
		    "no split without a live heap");
cleanup:
	free(end);
	free(d);
}

/* the sampler's figures: jemalloc, mimalloc, glibc's mallinfo2 */
static void sampler_picture(struct memstats *m, const char *family, uint32_t allocator)
{
	memset(m, 0, sizeof(*m));
	set_anon(m, 100 << 20);
	m->alloc.read = true;
	snprintf(m->alloc.family, sizeof(m->alloc.family), "%s", family);
	m->alloc.glibc = !strcmp(family, "glibc");
	m->alloc.sampler.present = m->alloc.sampler.has_figures = m->alloc.sampler.fresh = true;
	m->alloc.sampler.allocator = allocator;
	m->alloc.sampler.s = (struct culpert_sampler_allocator_stats){
		.allocated = 60 << 20, .active = 64 << 20, .metadata = 4 << 20,
		.resident = 80 << 20, .mapped = 90 << 20, .free_bytes = 20 << 20 };
}

static void test_sampler(void)
{
	struct memstats *m = calloc(1, sizeof(*m));
	struct mem_decomp *d = calloc(1, sizeof(*d));
	const struct mem_decomp_item *p;
	struct mem_live lv;
	char *text;

	if (!ASSERT_TRUE(m && d, "allocated"))
		goto cleanup;
	p = d->part;
	sampler_picture(m, "jemalloc", CULPERT_SAMPLER_ALLOC_JEMALLOC);
	mem_live__init(&lv, m);
	mem_live__add(&lv, 100, 1000);	/* jemalloc holds them in 112-byte regions */
	mem_decomp__compute(NULL, m, &lv, d);
	ASSERT_TRUE(d->available && !strcmp(d->key, "jemalloc"), "jemalloc");
	ASSERT_NEAR(p[MD_IN_USE].bytes, 60 * MIB, 0, "allocated");
	ASSERT_NEAR(p[MD_OVERHEAD].bytes, 12000, 0, "size-class rounding");
	ASSERT_NEAR(p[MD_BEFORE].bytes, 60 * MIB - 112000, 0, "before attach");
	ASSERT_NEAR(p[MD_ACTIVE_FREE].bytes, 4 * MIB, 0, "active - allocated");
	ASSERT_NEAR(p[MD_DIRTY].bytes, 12 * MIB, 0, "resident - active - metadata");
	ASSERT_NEAR(p[MD_HEADERS].bytes, 4 * MIB, 0, "metadata");
	ASSERT_NEAR(p[MD_OTHER].bytes, 20 * MIB, 0, "anonymous RSS - resident");
	ASSERT_NEAR(p[MD_IN_USE].bytes + p[MD_FREE].bytes + p[MD_HEADERS].bytes + p[MD_OTHER].bytes,
		    100 * MIB, 0, "adds up");
	text = render(d);
	ASSERT_TRUE(text && strstr(text, "  allocator metadata ") &&
		    strstr(text, "    their size-class rounding "), "jemalloc's labels");
	free(text);
	sampler_picture(m, "mimalloc", CULPERT_SAMPLER_ALLOC_MIMALLOC);
	mem_decomp__compute(NULL, m, &lv, d);
	ASSERT_TRUE(d->available && !strcmp(d->key, "mimalloc") && !p[MD_BEFORE].present &&
		    p[MD_UNSPLIT].bytes == 80 * MIB - 100000 && p[MD_OTHER].bytes == 20 * MIB,
		    "mimalloc: committed, not split");
	sampler_picture(m, "glibc", CULPERT_SAMPLER_ALLOC_GLIBC);
	mem_live__init(&lv, m);
	mem_decomp__compute(NULL, m, &lv, d);
	ASSERT_TRUE(d->available && !strcmp(d->key, "glibc-mallinfo2") &&
		    p[MD_IN_USE].bytes == 60 * MIB && p[MD_FREE].bytes == 20 * MIB &&
		    p[MD_OTHER].bytes == 10 * MIB && !p[MD_BINS].present, "mallinfo2");
	/* stale figures are said to be */
	m->alloc.sampler.fresh = false;
	m->alloc.sampler.age_ns = 2500000000ULL;
	mem_decomp__compute(NULL, m, &lv, d);
	ASSERT_TRUE(strstr(d->caveat, "figures are 2.5 s old") != NULL, "stale");
cleanup:
	free(m);
	free(d);
}

/* no figures: why and what would give them; the comment says so too */
static void test_unavailable(void)
{
	struct memstats *m = calloc(1, sizeof(*m));
	struct mem_decomp *d = calloc(1, sizeof(*d));
	struct collected *c = calloc(1, sizeof(*c));
	char *text;

	if (!ASSERT_TRUE(m && d && c, "allocated"))
		goto cleanup;
	set_anon(m, 100 << 20);
	m->alloc.read = m->alloc.glibc = true;
	snprintf(m->alloc.family, sizeof(m->alloc.family), "glibc");
	snprintf(m->alloc.glibc_absent, sizeof(m->alloc.glibc_absent),
		 "no debug info for libc ...; install it: apt install libc6-dbg");
	ASSERT_EQ(mem_decomp__compute(NULL, m, NULL, d), 0, "compute");
	text = render(d);
	ASSERT_TRUE(!d->available && text &&
		    strstr(text, "RSS not decomposed: glibc's arenas were not read: no debug info "
			   "for libc ...; install it: apt install libc6-dbg; or preload "
			   "libculpert-sampler.so"), "glibc without DWARF");
	free(text);
	mem_decomp__comments(d, "mem.decomp", collect, c);
	ASSERT_TRUE(c->n == 1 && !strncmp(c->c[0], "mem.decomp.unavailable=glibc's arenas", 37),
		    "one comment, the reason");
	m->alloc.glibc = false;
	snprintf(m->alloc.family, sizeof(m->alloc.family), "jemalloc");
	snprintf(m->alloc.sampler_absent, sizeof(m->alloc.sampler_absent),
		 "preload libculpert-sampler.so ahead of it");
	mem_decomp__compute(NULL, m, NULL, d);
	ASSERT_TRUE(!d->available && strstr(d->why, "no figures from jemalloc: preload "
					    "libculpert-sampler.so"), "jemalloc without the sampler");
	m->alloc.read = false;
	mem_decomp__compute(NULL, m, NULL, d);
	ASSERT_TRUE(!d->available && strstr(d->why, "was not read"), "not read");
	memset(&m->rollup, 0, sizeof(m->rollup));
	ASSERT_EQ(mem_decomp__compute(NULL, m, NULL, d), -ENODATA, "no rollup");
cleanup:
	free(m);
	free(d);
	free(c);
}

int main(void)
{
	test_group = "decompose";
	RUN_TEST(test_live_rounding);
	RUN_TEST(test_glibc);
	RUN_TEST(test_glibc_caveats);
	RUN_TEST(test_sampler);
	RUN_TEST(test_unavailable);
	return TEST_EXIT();
}
