// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The aggregate as a pprof profile: one mapping per executable mapping of
 * the target, locations at runtime addresses (symbolized when asked), one
 * sample per aggregate key with its unbiased values, sorted so the same
 * aggregate always gives the same bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "bsearch.h"
#include "elfobj.h"
#include "export.h"
#include "log.h"
#include "maphist.h"
#include "objcache.h"
#include "pprof.h"
#include "live.h"
#include "procmaps.h"
#include "profsym.h"
#include "spans.h"
#include "target.h"
#include "units.h"

/* frame -> location id, so that a frame seen again costs one probe (open addressing) */
struct loc_cache {
	uint64_t *frames, *ids;		/* ids[i] 0: empty */
	size_t cap, n;
};

struct exporter {
	const struct export_opts *o;
	struct pprof_writer *w;
	struct loc_cache lc;
	uint64_t pseudo[4];		/* [truncated], [folded], [throttled], [unknown stack] */
	uint64_t *map_ids;		/* pprof mapping id per maps entry, 0 if not exported */
	const struct procmap *hist;	/* mappings o->hist recorded */
	size_t n_hist;
	uint64_t *hist_ids;		/* their pprof mapping ids */
};

/* the pprof mapping of m, added; 0 on ENOMEM */
static uint64_t add_mapping(struct exporter *x, const struct procmap *m)
{
	struct pprof_mapping_desc d = {
		.memory_start = m->start,
		.memory_limit = m->end,
		.file_offset = m->offset,
		.filename = m->path,
		.build_id = "",
	};
	/* NULL for mappings without a file too */
	struct elfobj *obj = objcache__get(x->o->objs, m);

	if (obj)
		d.build_id = elfobj__build_id(obj);
	return pprof_writer__add_mapping(x->w, &d);
}

/*
 * Mappings recorded for samples of libraries that came and went: the one
 * of the last snapshot when it is the same mapping, else their own.
 */
static int add_hist_mappings(struct exporter *x)
{
	const struct procmaps *maps = x->o->maps;
	const struct procmap *m;
	size_t i;

	for (i = 0; i < x->n_hist; i++) {
		if (!x->hist[i].executable)
			continue;
		m = procmaps__find(maps, x->hist[i].start);
		if (m && procmap__same(m, &x->hist[i]) && x->map_ids[m - maps->v])
			x->hist_ids[i] = x->map_ids[m - maps->v];
		else if (!(x->hist_ids[i] = add_mapping(x, &x->hist[i])))
			return -ENOMEM;
	}
	return 0;
}

/* the main executable first (pprof tools treat mapping 1 as the program), then by address */
static int add_mappings(struct exporter *x)
{
	const struct procmaps *maps = x->o->maps;
	size_t i;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < maps->n; i++) {
			bool is_exe = !strcmp(maps->v[i].path, x->o->t->exe);

			if (!maps->v[i].executable || x->map_ids[i] || is_exe != (pass == 0))
				continue;
			x->map_ids[i] = add_mapping(x, &maps->v[i]);
			if (!x->map_ids[i])
				return -ENOMEM;
		}
	}
	return add_hist_mappings(x);
}

/*
 * Unsymbolized: the symbolizer fills the lines afterwards, as `culpert
 * symbolize` would.  The writer shares equal (mapping, address, no lines)
 * locations, so a repeated address gets its first id back.  A frame is the
 * return address or, once libraries came and went, what o->hist made of it.
 */
static uint64_t location_id(struct exporter *x, uint64_t frame)
{
	const struct procmaps *maps = x->o->maps;
	const struct procmap *h = NULL, *m = NULL;
	struct pprof_line none = { 0 };
	uint64_t ret_addr = frame, map_id = 0;

	if (x->o->hist)
		h = maphist__resolve(x->o->hist, frame, &ret_addr);
	if (h)
		map_id = x->hist_ids[h - x->hist];
	else if ((m = procmaps__find(maps, ret_addr - 1)))
		map_id = x->map_ids[m - maps->v];
	/* ret_addr - 1: inside the call instruction */
	return pprof_writer__add_location(x->w, map_id, ret_addr - 1, &none, 0);
}

static size_t lc_slot(const struct loc_cache *lc, uint64_t frame)
{
	/* Fibonacci hashing: return addresses differ in their low bits */
	size_t i = (size_t)((frame * 0x9e3779b97f4a7c15ULL) >> 20) & (lc->cap - 1);

	while (lc->ids[i] && lc->frames[i] != frame)
		i = (i + 1) & (lc->cap - 1);
	return i;
}

static int lc_grow(struct loc_cache *lc)
{
	struct loc_cache old = *lc;
	size_t i, k;

	lc->cap = old.cap ? old.cap * 2 : 4096;
	lc->frames = malloc(lc->cap * sizeof(*lc->frames));
	lc->ids = calloc(lc->cap, sizeof(*lc->ids));
	if (!lc->frames || !lc->ids) {
		free(lc->frames);
		free(lc->ids);
		*lc = old;
		return -ENOMEM;
	}
	for (i = 0; i < old.cap; i++) {
		if (!old.ids[i])
			continue;
		k = lc_slot(lc, old.frames[i]);
		lc->frames[k] = old.frames[i];
		lc->ids[k] = old.ids[i];
	}
	free(old.frames);
	free(old.ids);
	return 0;
}

/* location_id() of a frame, remembered; 0 on ENOMEM */
static uint64_t cached_location(struct exporter *x, uint64_t frame)
{
	struct loc_cache *lc = &x->lc;
	size_t i;

	if (lc->cap && lc->ids[i = lc_slot(lc, frame)])
		return lc->ids[i];
	if ((lc->n + 1) * 2 > lc->cap && lc_grow(lc))
		return 0;
	i = lc_slot(lc, frame);
	lc->frames[i] = frame;
	lc->ids[i] = location_id(x, frame);
	lc->n += lc->ids[i] != 0;
	return lc->ids[i];
}

/*
 * A frame that stands for what could not be seen: "[unknown stack]" for a
 * failed walk (or a stack lost when even its leaf found no room in the
 * aggregate), "[truncated]" where a DWARF unwind ran out of copied stack,
 * "[folded]" for the callers of a stack cut to its leaf (--max-stacks),
 * "[throttled]" for samples past the process's stack rate.
 */
static uint64_t pseudo_location(struct exporter *x, const char *what)
{
	static const char *const names[] = { "[truncated]", "[folded]", "[throttled]",
					     "[unknown stack]" };
	struct pprof_line line = { 0 };
	size_t k;

	for (k = 0; k < 3 && strcmp(names[k], what); k++)
		;
	if (x->pseudo[k])
		return x->pseudo[k];
	line.function_id = pprof_writer__add_function(x->w, what, NULL, "", 0);
	x->pseudo[k] = line.function_id ? pprof_writer__add_location(x->w, 0, 0, &line, 1) : 0;
	return x->pseudo[k];
}

/* index of the first block of entry `idx` in blocks sorted by entry (n if none) */
static bool block_below(const void *elem, const void *key)
{
	return ((const struct live_block *)elem)->entry < *(const uint32_t *)key;
}

static size_t first_block(const struct live_block *blocks, size_t n, uint32_t idx)
{
	return lower_bound(&idx, blocks, n, sizeof(*blocks), block_below);
}

/* label keys, interned once */
struct label_keys {
	int64_t thread_id, span_name, span_id, span_parent_id, span_path, age_ns, nanoseconds;
	int64_t sampled_allocs, count, thinning_stddev, bytes;
};

/* span_name, span_id, span_parent_id, span_path of a sample (docs/profile-format.md) */
static size_t span_labels(struct exporter *x, uint32_t chain, const struct label_keys *k,
			  struct pprof_label *out)
{
	/* each byte of a name escaped, at worst (lib/treepath.h) */
	char path[CULPERT_MAX_SPAN_DEPTH * (2 * CULPERT_SPAN_NAME_MAX + 1) + 1];
	const char *inner;
	struct span_chain c;
	size_t n = 0;

	if (!x->o->spans || !chain || spans__get(x->o->spans, chain, &c) || !c.depth)
		return 0;
	inner = spans__name(x->o->spans, c.name_ids[c.depth - 1]);
	out[n++] = (struct pprof_label){ .key = k->span_name,
					 .str = pprof_writer__str(x->w, inner ? inner : "(unnamed span)") };
	spans__path(x->o->spans, chain, path, sizeof(path));
	out[n++] = (struct pprof_label){ .key = k->span_path, .str = pprof_writer__str(x->w, path) };
	/* ids are dropped from keys coarsened when the aggregate was full */
	if (x->o->span_labels_only)
		return n;
	if (c.id)
		out[n++] = (struct pprof_label){ .key = k->span_id, .num = (int64_t)c.id };
	if (c.id && c.parent_id)
		out[n++] = (struct pprof_label){ .key = k->span_parent_id, .num = (int64_t)c.parent_id };
	return n;
}

/* the sample's location ids, leaf first; count, 0 on ENOMEM */
static size_t sample_locations(struct exporter *x, const struct aggregate *a,
			       const struct agg_entry *e, uint64_t *ids)
{
	size_t nf, i, n = 0;
	const uint64_t *f = aggregate__stack_frames(a, e->key.stack, &nf);

	for (i = 0; i < nf && n < CULPERT_EXPORT_MAX_FRAMES; i++) {
		if (f[i] == CULPERT_FRAME_TRUNCATED)
			ids[n] = pseudo_location(x, "[truncated]");
		else if (f[i] == CULPERT_FRAME_FOLDED)
			ids[n] = pseudo_location(x, "[folded]");
		else if (f[i] == CULPERT_FRAME_THROTTLED)
			ids[n] = pseudo_location(x, "[throttled]");
		else
			ids[n] = cached_location(x, f[i]);
		if (!ids[n++])
			return 0;
	}
	if (!n) {
		ids[n] = pseudo_location(x, "[unknown stack]");
		if (!ids[n++])
			return 0;
	}
	return n;
}

/* thread and span labels; the caller leaves room for sampled_allocs and age_ns */
static size_t sample_labels(struct exporter *x, const struct agg_entry *e,
			    const struct label_keys *keys, struct pprof_label *labels)
{
	size_t n = 0;

	if (e->key.tid && !x->o->span_labels_only)
		labels[n++] = (struct pprof_label){ .key = keys->thread_id, .num = e->key.tid };
	return n + span_labels(x, e->key.span, keys, &labels[n]);
}

/* the age bucket of docs/profile-format.md: 0 under a second, else a power of two of seconds */
static int64_t age_bucket_ns(uint64_t age_ns)
{
	uint64_t s = age_ns / 1000000000ULL;

	if (!s)
		return 0;
	return (int64_t)((1ULL << (63 - __builtin_clzll(s))) * 1000000000ULL);
}

struct inuse_cursor {
	const struct live_block *v;	/* live blocks, by (entry, age bucket) */
	size_t n, next;
	uint64_t end_ns;
};

/*
 * One sample for what the entry allocated; with --inuse, one more per age
 * bucket of its blocks still live, with in-use values and an age_ns label.
 */
static int add_entry(struct exporter *x, const struct aggregate *a, uint32_t idx,
		     const struct label_keys *keys, struct inuse_cursor *c)
{
	const struct agg_entry *e = &aggregate__entries(a, &(size_t){ 0 })[idx];
	uint64_t ids[CULPERT_EXPORT_MAX_FRAMES];
	struct pprof_label labels[8];
	int64_t v[4] = { round_sat(e->alloc_objects), round_sat(e->alloc_space), 0, 0 };
	size_t n, n_labels;
	int err;

	if (idx < x->o->n_base) {
		v[0] = round_sat(e->alloc_objects - x->o->base[idx].alloc_objects);
		v[1] = round_sat(e->alloc_space - x->o->base[idx].alloc_space);
	}
	/* a delta leaves out what did not change, unless blocks of it are live */
	if (x->o->base && !v[0] && !v[1] &&
	    !(c && c->next < c->n && c->v[c->next].entry == idx))
		return 0;
	n = sample_locations(x, a, e, ids);
	if (!n)
		return -ENOMEM;
	n_labels = sample_labels(x, e, keys, labels);
	/* the sampled allocations behind the record: a record is one per distinct key */
	labels[n_labels] = (struct pprof_label){ .key = keys->sampled_allocs,
						 .num = (int64_t)e->samples, .num_unit = keys->count };
	/* past the stack rate: how far the kept samples' bytes may be off (docs/profile-format.md) */
	if (e->thinned_var > 0)
		labels[n_labels + 1] = (struct pprof_label){ .key = keys->thinning_stddev,
							     .num = round_sat(sqrt(e->thinned_var)),
							     .num_unit = keys->bytes };
	err = pprof_writer__add_sample(x->w, ids, n, v, labels,
				       n_labels + 1 + (e->thinned_var > 0));
	while (!err && c && c->next < c->n && c->v[c->next].entry == idx) {
		int64_t bucket = age_bucket_ns(c->end_ns - c->v[c->next].ts_ns);
		double objects = 0, space = 0;
		int64_t blocks = 0;

		for (; c->next < c->n && c->v[c->next].entry == idx &&
		       age_bucket_ns(c->end_ns - c->v[c->next].ts_ns) == bucket; c->next++) {
			objects += c->v[c->next].weight;
			space += c->v[c->next].weight * (double)c->v[c->next].size;
			blocks++;
		}
		v[0] = v[1] = 0;
		v[2] = round_sat(objects);
		v[3] = round_sat(space);
		labels[n_labels] = (struct pprof_label){ .key = keys->sampled_allocs, .num = blocks,
							 .num_unit = keys->count };
		labels[n_labels + 1] = (struct pprof_label){ .key = keys->age_ns, .num = bucket,
							     .num_unit = keys->nanoseconds };
		err = pprof_writer__add_sample(x->w, ids, n, v, labels, n_labels + 2);
	}
	return err;
}

static int block_cmp(const void *pa, const void *pb, void *arg)
{
	const struct live_block *x = pa, *y = pb;
	uint64_t end = *(const uint64_t *)arg;
	int64_t ax, ay;

	if (x->entry != y->entry)
		return x->entry < y->entry ? -1 : 1;
	ax = age_bucket_ns(end - x->ts_ns);
	ay = age_bucket_ns(end - y->ts_ns);
	if (ax != ay)
		return ax < ay ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int add_samples(struct exporter *x, struct aggregate *a)
{
	struct inuse_cursor cur = { .end_ns = x->o->end_mono_ns };
	struct live_block *blocks = NULL;
	const uint32_t *order;
	struct label_keys keys;
	size_t n, i;
	int err = 0;

	aggregate__entries(a, &n);
	order = aggregate__order(a);
	/* one sample per entry at least, with its sampled_allocs label */
	if (!order || pprof_writer__reserve(x->w, n, aggregate__entry_frames(a), n))
		return -ENOMEM;
	if (x->o->live) {
		const struct live_block *v = live__blocks(x->o->live, &cur.n);

		blocks = malloc((cur.n ?: 1) * sizeof(*blocks));
		if (!blocks)
			return -ENOMEM;
		memcpy(blocks, v, cur.n * sizeof(*blocks));
		qsort_r(blocks, cur.n, sizeof(*blocks), block_cmp, &cur.end_ns);
		cur.v = blocks;
	}
	keys.thread_id = pprof_writer__str(x->w, "thread_id");
	keys.span_name = pprof_writer__str(x->w, "span_name");
	keys.span_id = pprof_writer__str(x->w, "span_id");
	keys.span_parent_id = pprof_writer__str(x->w, "span_parent_id");
	keys.span_path = pprof_writer__str(x->w, "span_path");
	keys.age_ns = pprof_writer__str(x->w, "age_ns");
	keys.nanoseconds = pprof_writer__str(x->w, "nanoseconds");
	keys.sampled_allocs = pprof_writer__str(x->w, "sampled_allocs");
	keys.count = pprof_writer__str(x->w, "count");
	keys.thinning_stddev = pprof_writer__str(x->w, "thinning_stddev");
	keys.bytes = pprof_writer__str(x->w, "bytes");
	for (i = 0; i < n && !err; i++) {
		aggregate__prefetch(a, order, n, i);
		/* blocks are sorted by entry: skip to this one's */
		if (blocks)
			cur.next = first_block(blocks, cur.n, order[i]);
		err = add_entry(x, a, order[i], &keys, blocks ? &cur : NULL);
	}
	free(blocks);
	return err;
}

static int add_comments(struct exporter *x)
{
	const struct export_opts *o = x->o;
	char buf[4200];
	size_t i;
	int err = 0;

#define COMMENT(...)                                                    \
	do {                                                            \
		snprintf(buf, sizeof(buf), __VA_ARGS__);                \
		if (!err)                                               \
			err = pprof_writer__add_comment(x->w, buf);     \
	} while (0)
	COMMENT("culpert.version=%s", CULPERT_VERSION);
	COMMENT("target.pid=%d", (int)o->t->pid);
	COMMENT("target.comm=%s", o->t->comm);
	COMMENT("target.exe=%s", o->t->exe);
	/* what it was started as: target.exe is where a symlink led */
	if (o->t->argv0[0])
		COMMENT("target.argv0=%s", o->t->argv0);
	if (o->t->argv0_link[0])
		COMMENT("target.argv0_link=%s", o->t->argv0_link);
	COMMENT("kernel=%s", o->kernel);
	COMMENT("rate=%llu", (unsigned long long)o->rate);
	COMMENT("unwind=%s", o->unwind);
	COMMENT("lost_samples=%llu", (unsigned long long)o->lost);
#undef COMMENT
	for (i = 0; i < o->n_extra && !err; i++)
		err = pprof_writer__add_comment(x->w, o->extra[i]);
	return err;
}

/* capture time: the objects the target maps, opened through its own view of the filesystem */
static struct elfobj *local_object(void *ctx, const struct pprof_mapping *m)
{
	struct exporter *x = ctx;
	size_t i;

	for (i = 0; i < x->o->maps->n; i++)
		if (x->map_ids[i] == m->id)
			return objcache__get(x->o->objs, &x->o->maps->v[i]);
	for (i = 0; i < x->n_hist; i++)
		if (x->hist_ids[i] == m->id)
			return objcache__get(x->o->objs, &x->hist[i]);
	return NULL;
}

/*
 * The profile goes through the same pass as `culpert symbolize`, so that a
 * --no-symbolize capture symbolized later is byte for byte this one.
 */
/* to path, or with path NULL into *buf */
static int write_out(const struct pprof_writer *w, const char *path, void **buf, size_t *len)
{
	const struct pprof_profile *p;

	if (path)
		return pprof_writer__write((struct pprof_writer *)w, path);
	p = pprof_writer__profile((struct pprof_writer *)w);
	return p ? pprof_encode_gzip(p, buf, len) : -ENOMEM;
}

static int write_symbolized(struct exporter *x, const char *path, void **buf, size_t *len)
{
	struct symbolizer_opts so = { .sz = sizeof(so) };
	struct profsym_opts po = { .sz = sizeof(po), .local_object = local_object, .ctx = x };
	const struct pprof_profile *raw = pprof_writer__profile(x->w);
	struct pprof_writer *out = NULL;
	struct profsym *ps = NULL;
	int err = -ENOMEM;

	po.sym = x->o->sym ?: symbolizer__new(&so);
	if (po.sym)
		ps = profsym__new(&po);
	if (raw && ps)
		err = profsym__run(ps, raw, &out);
	/* the report names mappings by the raw profile's strings: said before they go */
	if (!err && log_level >= LOG_INFO)
		profsym__print(ps, stderr, log_level >= LOG_DEBUG);
	/* the raw profile is copied: gone before the copy is encoded, not beside it */
	pprof_writer__free(x->w);
	x->w = NULL;
	if (!err)
		err = write_out(out, path, buf, len);
	pprof_writer__free(out);
	profsym__free(ps);
	if (po.sym != x->o->sym)
		symbolizer__free(po.sym);
	return err;
}

static void exporter_free(struct exporter *x)
{
	pprof_writer__free(x->w);
	free(x->lc.frames);
	free(x->lc.ids);
	free(x->map_ids);
	free(x->hist_ids);
}

static int export_to(struct aggregate *a, const struct export_opts *o, const char *path,
		     void **buf, size_t *len)
{
	/* Go's heap profile order: a reader finds inuse_space where it expects it */
	static const char *const names[] = { "alloc_objects", "alloc_space", "inuse_objects",
					     "inuse_space" };
	static const char *const units[] = { "count", "bytes", "count", "bytes" };
	struct pprof_writer_opts wo = {
		.sz = sizeof(wo),
		.n_sample_types = o->live ? 4 : 2,
		.sample_type_names = names,
		.sample_type_units = units,
		.default_sample_type = o->default_sample_type ?: "alloc_space",
		.period_type = "space",
		.period_unit = "bytes",
		.period = (int64_t)o->rate,
		.time_nanos = o->time_nanos,
		.duration_nanos = o->duration_nanos,
	};
	struct exporter x = { .o = o };
	int err;

	x.w = pprof_writer__new(&wo);
	x.map_ids = calloc(o->maps->n ?: 1, sizeof(*x.map_ids));
	if (o->hist)
		x.hist = maphist__mappings(o->hist, &x.n_hist);
	x.hist_ids = calloc(x.n_hist ?: 1, sizeof(*x.hist_ids));
	err = x.w && x.map_ids && x.hist_ids ? 0 : -ENOMEM;
	if (!err)
		err = add_mappings(&x);
	if (!err)
		err = add_samples(&x, a);
	if (!err)
		err = add_comments(&x);
	if (!err)
		err = o->symbolize ? write_symbolized(&x, path, buf, len) :
				     write_out(x.w, path, buf, len);
	exporter_free(&x);
	return err;
}

/*
 * Measured on a target of 65536 stacks of 20 frames (make bench, part
 * scrape): the peak of an encoding, symbolized, was 600-900 bytes a
 * sample, 480 since the protobuf is written without protobuf-c's messages
 * (the estimate below was left as it was: on the safe side): each sample
 * is held twice (the raw profile and its symbolized copy, 8 bytes a frame
 * in each, and its values and labels).  A live block adds a sample at
 * most (its age bucket) and its sorted copy; buckets are counted up to 4
 * per entry.
 */
#define NEED_PER_SAMPLE		384
#define NEED_PER_FRAME		16
#define NEED_PER_BLOCK		(sizeof(struct live_block))
#define NEED_FIXED		(1 << 20)

size_t export_profile_need(const struct aggregate *a, const struct live *live, bool symbolize)
{
	size_t n, n_stacks, frames = aggregate__n_frames(a, &n_stacks), blocks = 0, samples;
	size_t per;

	aggregate__entries(a, &n);
	if (live)
		live__blocks(live, &blocks);
	samples = n + (blocks < 4 * n ? blocks : 4 * n);
	/* entries share stacks: the stacks' mean depth */
	per = NEED_PER_SAMPLE + NEED_PER_FRAME * (n_stacks ? frames / n_stacks + 1 : 1);
	if (!symbolize)
		per /= 2;
	return NEED_FIXED + samples * per + blocks * NEED_PER_BLOCK;
}

int export_profile(struct aggregate *a, const struct export_opts *o, const char *path)
{
	return export_to(a, o, path, NULL, NULL);
}

int export_profile_buf(struct aggregate *a, const struct export_opts *o, void **buf,
		       size_t *len)
{
	return export_to(a, o, NULL, buf, len);
}
