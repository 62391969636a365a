// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "allocfmt.h"
#include "units.h"

/* Prometheus label values of the arenas: "0", "1", ... (items point at them) */
static char arena_labels[GLIBC_MAX_ARENAS][12];

/* a number: path under `dir`, metric culpert_allocator_<prom> when prom is given */
static int add_u64(struct mem_items *items, const char *dir, const char *name, uint64_t v,
		   const char *prom, const char *label_key, const char *label_val, const char *help)
{
	char path[128];
	struct mem_item *it;

	snprintf(path, sizeof(path), "%s.%s", dir, name);
	it = mem_items__add(items, path, MEM_ITEM_U64);
	if (!it)
		return -ENOMEM;
	it->u = v;
	it->help = help;
	it->label_key = label_key;
	it->label_val = label_val;
	if (prom)
		snprintf(it->prom, sizeof(it->prom), "culpert_allocator_%s", prom);
	return 0;
}

static int add_str(struct mem_items *items, const char *dir, const char *name, const char *s)
{
	char path[128];

	snprintf(path, sizeof(path), "%s.%s", dir, name);
	return mem_items__add_plain(items, path, s, NULL);
}

/* the section `name` is absent: "dir.name": null and "dir.name_absent": why */
static int add_absent(struct mem_items *items, const char *dir, const char *name, const char *why)
{
	char path[128];
	int err;

	snprintf(path, sizeof(path), "%s.%s", dir, name);
	err = mem_items__add_plain(items, path, NULL, NULL);
	snprintf(path, sizeof(path), "%s.%s_absent", dir, name);
	return err ?: mem_items__add_plain(items, path, why, NULL);
}

static int add_arena(struct mem_items *items, const struct glibc_arena *a, uint32_t i)
{
	const char *lk = "arena", *lv = arena_labels[i];
	char dir[64];
	int err;

	snprintf(arena_labels[i], sizeof(arena_labels[i]), "%u", i);
	snprintf(dir, sizeof(dir), "allocator.glibc.arenas.%u", i);
	err = add_u64(items, dir, "address", a->addr, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "main", a->main, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "system_bytes", a->system_mem, "system_bytes", lk, lv,
			     "Bytes the glibc arena got from the system (system_mem).");
	err = err ?: add_u64(items, dir, "max_system_bytes", a->max_system_mem, "max_system_bytes",
			     lk, lv, "Most bytes the glibc arena ever held (max_system_mem).");
	err = err ?: add_u64(items, dir, "top_bytes", a->top_bytes, "top_bytes", lk, lv,
			     "Free bytes in the arena's top chunk, at its end (trimmable).");
	err = err ?: add_u64(items, dir, "fastbin_free_bytes", a->fast_bytes, "fastbin_free_bytes",
			     lk, lv, "Free bytes in the arena's fastbins.");
	err = err ?: add_u64(items, dir, "fastbin_free_chunks", a->fast_chunks,
			     "fastbin_free_chunks", lk, lv, "Free chunks in the arena's fastbins.");
	err = err ?: add_u64(items, dir, "bin_free_bytes", a->bin_bytes, "bin_free_bytes", lk, lv,
			     "Free bytes in the arena's unsorted, small and large bins.");
	err = err ?: add_u64(items, dir, "bin_free_chunks", a->bin_chunks, "bin_free_chunks", lk,
			     lv, "Free chunks in the arena's unsorted, small and large bins.");
	err = err ?: add_u64(items, dir, "unsorted_free_bytes", a->unsorted_bytes, NULL, NULL, NULL,
			     NULL);
	err = err ?: add_u64(items, dir, "unsorted_free_chunks", a->unsorted_chunks, NULL, NULL,
			     NULL, NULL);
	err = err ?: add_u64(items, dir, "attached_threads", a->attached_threads,
			     "attached_threads", lk, lv, "Threads using the glibc arena.");
	err = err ?: add_u64(items, dir, "heaps", a->heaps, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "aspace_bytes", a->aspace_bytes, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "tries", a->tries, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "approximate", !a->consistent, "approximate", lk, lv,
			     "1 when the arena changed while it was read: approximate figures.");
	if (!err && !a->consistent)
		err = add_str(items, dir, "approximate_reason", a->why);
	return err;
}

/* mp_'s values, those this glibc has */
static int add_mp(struct mem_items *items, const struct glibc_heap *h)
{
	static const struct {
		enum glibc_field f;
		const char *name, *prom, *help;
		size_t off;
	} mp[] = {
#define MP(f, name, prom, help, member) { f, name, prom, help, offsetof(struct glibc_heap, member) }
		MP(GF_MP_N_MMAPS, "mmapped_chunks", "mmapped_chunks",
		   "Blocks glibc malloc got from mmap() (each its own mapping).", mmapped_chunks),
		MP(GF_MP_MMAPPED_MEM, "mmapped_bytes", "mmapped_bytes",
		   "Bytes in blocks glibc malloc got from mmap().", mmapped_bytes),
		MP(GF_MP_MAX_N_MMAPS, "max_mmapped_chunks", NULL, NULL, max_mmapped_chunks),
		MP(GF_MP_MAX_MMAPPED_MEM, "max_mmapped_bytes", NULL, NULL, max_mmapped_bytes),
		MP(GF_MP_MMAP_THRESHOLD, "mmap_threshold_bytes", "mmap_threshold_bytes",
		   "Requests from this size up get their own mmap() (M_MMAP_THRESHOLD).",
		   mmap_threshold),
		MP(GF_MP_TRIM_THRESHOLD, "trim_threshold_bytes", "trim_threshold_bytes",
		   "A top chunk above this size is given back to the system (M_TRIM_THRESHOLD).",
		   trim_threshold),
		MP(GF_MP_TOP_PAD, "top_pad_bytes", NULL, NULL, top_pad),
		MP(GF_MP_ARENA_MAX, "arena_max", NULL, NULL, arena_max),
		MP(GF_MP_ARENA_TEST, "arena_test", NULL, NULL, arena_test),
		MP(GF_MP_N_MMAPS_MAX, "mmap_max", NULL, NULL, n_mmaps_max),
		MP(GF_MP_SBRK_BASE, "sbrk_base", NULL, NULL, sbrk_base),
		MP(GF_MP_TCACHE_BINS, "tcache_bins", NULL, NULL, tcache_bins),
		MP(GF_MP_TCACHE_COUNT, "tcache_count", NULL, NULL, tcache_count),
		MP(GF_MP_TCACHE_MAX_BYTES, "tcache_max_bytes", NULL, NULL, tcache_max_bytes),
#undef MP
	};
	const char *dir = "allocator.glibc";
	size_t i;
	int err = 0;

	for (i = 0; i < sizeof(mp) / sizeof(mp[0]) && !err; i++) {
		uint64_t v;

		if (!(h->present_mp & (1ULL << mp[i].f)))
			continue;
		memcpy(&v, (const char *)h + mp[i].off, sizeof(v));
		err = add_u64(items, dir, mp[i].name, v, mp[i].prom, NULL, NULL, mp[i].help);
	}
	if (!err && (h->present_mp & (1ULL << GF_MP_NO_DYN_THRESHOLD)))
		err = add_u64(items, dir, "mmap_threshold_dynamic", h->dynamic_threshold, NULL,
			      NULL, NULL, NULL);
	return err;
}

static int add_tcache(struct mem_items *items, const struct glibc_heap *h)
{
	const char *dir = "allocator.glibc.tcache";
	int err;

	if (!h->tcache.present)
		return add_absent(items, "allocator.glibc", "tcache", h->tcache_why);
	err = add_u64(items, dir, "threads", h->tcache.threads, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "free_chunks", h->tcache.chunks, "tcache_free_chunks",
			     NULL, NULL, "Free chunks held in the threads' tcaches.");
	err = err ?: add_u64(items, dir, "free_bytes", h->tcache.bytes, "tcache_free_bytes", NULL,
			     NULL, "Free bytes held in the threads' tcaches.");
	err = err ?: add_u64(items, dir, "tries", h->tcache.tries, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "approximate", !h->tcache.consistent, NULL, NULL, NULL,
			     NULL);
	if (!err && !h->tcache.consistent)
		err = add_str(items, dir, "approximate_reason", h->tcache_why);
	return err;
}

static int add_glibc_totals(struct mem_items *items, const struct glibc_heap *h)
{
	const char *dir = "allocator.glibc";
	uint64_t free_bytes = h->top_bytes + h->fast_bytes + h->bin_bytes;
	int err;

	err = add_u64(items, dir, "arena_count", h->n_arenas, "arenas", NULL, NULL,
		      "glibc malloc arenas read (main and per-thread).");
	err = err ?: add_u64(items, dir, "system_bytes", h->system_mem, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "max_system_bytes", h->max_system_mem, NULL, NULL, NULL,
			     NULL);
	err = err ?: add_u64(items, dir, "top_bytes", h->top_bytes, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "fastbin_free_bytes", h->fast_bytes, NULL, NULL, NULL,
			     NULL);
	err = err ?: add_u64(items, dir, "fastbin_free_chunks", h->fast_chunks, NULL, NULL, NULL,
			     NULL);
	err = err ?: add_u64(items, dir, "bin_free_bytes", h->bin_bytes, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "bin_free_chunks", h->bin_chunks, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "free_bytes", free_bytes, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "in_use_bytes",
			     h->system_mem > free_bytes ? h->system_mem - free_bytes : 0, NULL,
			     NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "approximate", !h->consistent, NULL, NULL, NULL, NULL);
	if (!err && !h->consistent)
		err = add_str(items, dir, "approximate_reason", h->why);
	if (!err && h->has_narenas)
		err = add_u64(items, dir, "narenas", h->narenas, NULL, NULL, NULL, NULL);
	return err ?: add_u64(items, dir, "read_syscalls", h->syscalls, NULL, NULL, NULL, NULL);
}

static int add_glibc(struct mem_items *items, const struct alloc_state *st)
{
	const struct glibc_heap *h = &st->heap;
	const char *dir = "allocator.glibc";
	uint32_t i;
	int err;

	if (!st->glibc)
		return 0;
	err = add_str(items, "allocator", "libc", st->libc_path);
	err = err ?: add_str(items, "allocator", "libc_build_id", st->libc_build_id);
	if (err || !st->glibc_read)
		return err ?: add_absent(items, "allocator", "glibc", st->glibc_absent);
	err = add_str(items, dir, "version", st->glibc_version);
	err = err ?: add_str(items, dir, "debug_file", st->libc_debug);
	err = err ?: add_glibc_totals(items, h);
	err = err ?: add_mp(items, h);
	err = err ?: add_tcache(items, h);
	for (i = 0; i < h->n_arenas && !err; i++)
		err = add_arena(items, &h->arenas[i], i);
	return err;
}

static int add_sampler(struct mem_items *items, const struct alloc_state *st)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} figs[] = {
#define FIG(m, name, help) { name, help, offsetof(struct culpert_sampler_allocator_stats, m) }
		FIG(allocated, "allocated_bytes",
		    "Bytes in live blocks, as the allocator counts them."),
		FIG(active, "active_bytes",
		    "Bytes in the allocator's active pages (jemalloc stats.active)."),
		FIG(metadata, "metadata_bytes",
		    "Bytes of allocator metadata (jemalloc stats.metadata)."),
		FIG(resident, "resident_bytes",
		    "Resident bytes the allocator holds, as it counts them."),
		FIG(mapped, "mapped_bytes",
		    "Bytes the allocator has mapped (glibc: arenas + mmapped blocks)."),
		FIG(retained, "retained_bytes",
		    "Bytes the allocator keeps but gave back to the system (jemalloc)."),
		FIG(free_bytes, "free_bytes",
		    "Free bytes in the allocator's own lists (glibc mallinfo2 fordblks)."),
#undef FIG
	};
	const struct sampler_stats *ss = &st->sampler;
	const char *dir = "allocator.sampler", *lv = sampler_allocator_name(ss->allocator);
	size_t i;
	int err;

	if (!ss->present)
		return st->sampler_absent[0] || ss->note[0] ?
		       add_absent(items, "allocator", "sampler", ss->note[0] ? ss->note :
				  st->sampler_absent) : 0;
	err = add_str(items, dir, "library", ss->path);
	err = err ?: add_str(items, dir, "allocator", lv);
	err = err ?: add_u64(items, dir, "rate_bytes", ss->rate, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "listened", ss->listened, NULL, NULL, NULL, NULL);
	err = err ?: add_u64(items, dir, "fresh", ss->fresh, NULL, NULL, NULL, NULL);
	if (!err && ss->note[0])
		err = add_str(items, dir, "note", ss->note);
	if (err || !ss->has_figures)
		return err;
	err = add_u64(items, dir, "age_us", ss->age_ns / 1000, "stats_age_seconds", "allocator", lv,
		      "How old the allocator figures of the sampler's page are.");
	if (!err)
		items->v[items->n - 1].usec = true;
	for (i = 0; i < sizeof(figs) / sizeof(figs[0]) && !err; i++) {
		uint64_t v;

		memcpy(&v, (const char *)&ss->s + figs[i].off, sizeof(v));
		/* 0 is what the page holds for a figure the allocator does not have */
		if (v)
			err = add_u64(items, dir, figs[i].name, v, figs[i].name, "allocator", lv,
				      figs[i].help);
	}
	return err;
}

int allocfmt_items(struct mem_items *items, const struct alloc_state *st)
{
	int err;

	if (!st->read)
		return 0;
	if (st->absent[0]) {
		err = mem_items__add_plain(items, "allocator", NULL, NULL);
		return err ?: mem_items__add_plain(items, "allocator_absent", st->absent, NULL);
	}
	err = add_str(items, "allocator", "family", st->family[0] ? st->family : "unknown");
	err = err ?: add_str(items, "allocator", "object", st->provider);
	err = err ?: add_glibc(items, st);
	return err ?: add_sampler(items, st);
}

/* --- text --------------------------------------------------------------------------------- */

static const char *bytes(char *buf, size_t len, uint64_t v)
{
	return format_bytes(buf, len, (double)v);
}

static void text_arena_row(FILE *f, const char *name, const struct glibc_arena *a)
{
	char b[5][32], fc[48], bc[48];

	snprintf(fc, sizeof(fc), "%s (%" PRIu64 ")", bytes(b[2], sizeof(b[2]), a->fast_bytes),
		 a->fast_chunks);
	snprintf(bc, sizeof(bc), "%s (%" PRIu64 ")", bytes(b[3], sizeof(b[3]), a->bin_bytes),
		 a->bin_chunks);
	fprintf(f, "  %-10s %12s %12s %12s %20s %20s %8" PRIu64 "%s\n", name,
		bytes(b[0], sizeof(b[0]), a->system_mem),
		bytes(b[1], sizeof(b[1]), a->max_system_mem),
		bytes(b[4], sizeof(b[4]), a->top_bytes), fc, bc, a->attached_threads,
		a->consistent ? "" : "  approximate");
}

static void text_arenas(FILE *f, const struct glibc_heap *h)
{
	struct glibc_arena total = { .consistent = h->consistent };
	char name[16];
	uint32_t i;

	fprintf(f, "  %-10s %12s %12s %12s %20s %20s %8s\n", "arena", "system", "max system", "top",
		"fastbins (chunks)", "bins (chunks)", "threads");
	for (i = 0; i < h->n_arenas; i++) {
		const struct glibc_arena *a = &h->arenas[i];

		snprintf(name, sizeof(name), "%u%s", i, a->main ? " main" : "");
		text_arena_row(f, name, a);
		total.attached_threads += a->attached_threads;
	}
	total.system_mem = h->system_mem;
	total.max_system_mem = h->max_system_mem;
	total.top_bytes = h->top_bytes;
	total.fast_bytes = h->fast_bytes;
	total.fast_chunks = h->fast_chunks;
	total.bin_bytes = h->bin_bytes;
	total.bin_chunks = h->bin_chunks;
	if (h->n_arenas > 1)
		text_arena_row(f, "total", &total);
}

static void text_glibc(FILE *f, const struct alloc_state *st)
{
	const struct glibc_heap *h = &st->heap;
	char b[4][32];

	if (!st->glibc_read) {
		fprintf(f, "  glibc arenas: absent: %s\n", st->glibc_absent);
		return;
	}
	fprintf(f, "  read from the target's memory (%" PRIu64 " reads), layout from %s\n",
		h->syscalls, st->libc_debug);
	text_arenas(f, h);
	fprintf(f, "  mmapped     %" PRIu64 " blocks, %s (peak %" PRIu64 ", %s)\n",
		h->mmapped_chunks, bytes(b[0], sizeof(b[0]), h->mmapped_bytes), h->max_mmapped_chunks,
		bytes(b[1], sizeof(b[1]), h->max_mmapped_bytes));
	snprintf(b[3], sizeof(b[3]), "%" PRIu64, h->arena_max);
	fprintf(f, "  thresholds  mmap %s (%s), trim %s, top pad %s, arena max %s\n",
		bytes(b[0], sizeof(b[0]), h->mmap_threshold),
		h->dynamic_threshold ? "dynamic" : "fixed",
		bytes(b[1], sizeof(b[1]), h->trim_threshold), bytes(b[2], sizeof(b[2]), h->top_pad),
		h->arena_max ? b[3] : "default (8 per core)");
	if (h->tcache.present)
		fprintf(f, "  tcache      %" PRIu64 " threads, %" PRIu64 " free chunks, %s%s%s\n",
			h->tcache.threads, h->tcache.chunks,
			bytes(b[3], sizeof(b[3]), h->tcache.bytes),
			h->tcache.consistent ? "" : "; approximate: ",
			h->tcache.consistent ? "" : h->tcache_why);
	else
		fprintf(f, "  tcache      not counted: %s\n", h->tcache_why);
	if (!h->consistent)
		fprintf(f, "  approximate: %s\n", h->why);
}

static void text_sampler(FILE *f, const struct alloc_state *st)
{
	static const struct {
		const char *name;
		size_t off;
	} figs[] = {
#define FIG(m) { #m, offsetof(struct culpert_sampler_allocator_stats, m) }
		FIG(allocated), FIG(active), FIG(metadata), FIG(resident), FIG(mapped),
		FIG(retained),
		{ "free", offsetof(struct culpert_sampler_allocator_stats, free_bytes) },
#undef FIG
	};
	const struct sampler_stats *ss = &st->sampler;
	const char *sep = "  ";
	char b[32];
	uint64_t v;
	size_t i;

	if (!ss->present) {
		if (ss->note[0] || st->sampler_absent[0])
			fprintf(f, "  sampler figures: absent: %s\n",
				ss->note[0] ? ss->note : st->sampler_absent);
		return;
	}
	fprintf(f, "  from %s (%s, rate %s)", ss->path, sampler_allocator_name(ss->allocator),
		bytes(b, sizeof(b), ss->rate));
	if (ss->has_figures)
		fprintf(f, ", refreshed %.1f s ago", ss->age_ns / 1e9);
	fputc('\n', f);
	/* 0 is what the page holds for a figure the allocator does not have */
	for (i = 0; ss->has_figures && i < sizeof(figs) / sizeof(figs[0]); i++) {
		memcpy(&v, (const char *)&ss->s + figs[i].off, sizeof(v));
		if (v) {
			fprintf(f, "%s%s %s", sep, figs[i].name, bytes(b, sizeof(b), v));
			sep = ", ";
		}
	}
	if (ss->has_figures)
		fputc('\n', f);
	if (ss->note[0])
		fprintf(f, "  note: %s\n", ss->note);
}

void allocfmt_text(FILE *f, const struct alloc_state *st)
{
	if (!st->read)
		return;
	if (st->absent[0]) {
		fprintf(f, "allocator: absent: %s\n", st->absent);
		return;
	}
	fprintf(f, "allocator: %s%s%s serves malloc%s%s%s\n",
		st->family[0] ? st->family : "unknown", st->glibc_version[0] ? " " : "",
		st->glibc_version, st->provider[0] ? " (" : "", st->provider,
		st->provider[0] ? ")" : "");
	if (st->glibc)
		text_glibc(f, st);
	text_sampler(f, st);
}
