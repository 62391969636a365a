// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "culpert.h"
#include "elfobj.h"
#include "exits.h"
#include "exe_kind.h"
#include "log.h"
#include "objcache.h"
#include "procmaps.h"
#include "target.h"
#include "vec.h"

struct entry_spec {
	const char *name;	/* without the family's prefix */
	uint32_t fn;		/* how the BPF side reads the size */
	uint32_t flags;		/* ENTRY_* */
};

/*
 * Calls no other entry point of its family (checked in the code of the
 * builds docs/allocators.md lists): its probe sets no nested-call guard,
 * which keeps the hottest probe cheap.  Only trusted for a known family's
 * unprefixed names; a prefixed malloc may be a wrapper of another.
 */
#define ENTRY_LEAF	(1U << 0)
/*
 * An exception can unwind through it: operator new throws std::bad_alloc
 * or whatever the program's new_handler throws.  Its return address must
 * never be replaced (exits.h); the C API's entry points cannot throw.
 */
#define ENTRY_THROWS	(1U << 1)
/*
 * libstdc++'s operator new: what it returns is what its nested call to
 * malloc (or aligned_alloc) returned; --inuse takes it from that call's
 * return probe (safe: malloc cannot throw, and returns before operator new
 * may throw) instead of single-stepped uprobes on its return instruction.
 */
#define ENTRY_DELEGATES	(1U << 2)

/* the C allocation API; every malloc replacement defines some of it */
static const struct entry_spec libc_entries[] = {
	{ "malloc", CULPERT_FN_MALLOC, ENTRY_LEAF },
	{ "calloc", CULPERT_FN_CALLOC, 0 },
	{ "realloc", CULPERT_FN_REALLOC, 0 },
	{ "reallocarray", CULPERT_FN_REALLOCARRAY, 0 },
	{ "posix_memalign", CULPERT_FN_POSIX_MEMALIGN, 0 },
	{ "aligned_alloc", CULPERT_FN_MEMALIGN, 0 },
	{ "memalign", CULPERT_FN_MEMALIGN, 0 },
	{ "valloc", CULPERT_FN_MALLOC, 0 },
	{ "pvalloc", CULPERT_FN_PVALLOC, 0 },
	/* probed with --inuse only, like every CULPERT_FN_FREE */
	{ "free", CULPERT_FN_FREE, 0 },
	{ NULL, 0, 0 },
};

/*
 * jemalloc's own API.  xallocx is left out on purpose: it resizes in place
 * or not at all and returns a size, and callers follow a failed one with
 * rallocx or mallocx, which are counted (docs/allocators.md).
 */
static const struct entry_spec jemalloc_entries[] = {
	{ "mallocx", CULPERT_FN_MALLOC, 0 },			/* (size, flags) */
	{ "rallocx", CULPERT_FN_REALLOC, 0 },			/* (ptr, size, flags) */
	{ "sdallocx", CULPERT_FN_FREE, 0 },			/* (ptr, size, flags) */
	{ "dallocx", CULPERT_FN_FREE, 0 },			/* (ptr, flags) */
	{ NULL, 0, 0 },
};

/*
 * mimalloc's API; trailing alignment and offset arguments do not change
 * where the size is.  Not probed: mi_heap_* (the heap comes first: a layout
 * of its own), mi_expand (in place, like xallocx), mi_strdup and the like
 * (the size is not an argument), mi_reallocarr (takes a void **).
 */
static const struct entry_spec mimalloc_entries[] = {
	{ "mi_malloc", CULPERT_FN_MALLOC, 0 },
	{ "mi_zalloc", CULPERT_FN_MALLOC, 0 },
	{ "mi_malloc_small", CULPERT_FN_MALLOC, 0 },
	{ "mi_zalloc_small", CULPERT_FN_MALLOC, 0 },
	{ "mi_malloc_aligned", CULPERT_FN_MALLOC, 0 },		/* (size, align) */
	{ "mi_malloc_aligned_at", CULPERT_FN_MALLOC, 0 },	/* (size, align, offset) */
	{ "mi_zalloc_aligned", CULPERT_FN_MALLOC, 0 },
	{ "mi_zalloc_aligned_at", CULPERT_FN_MALLOC, 0 },
	{ "mi_new", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "mi_new_nothrow", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "mi_new_aligned", CULPERT_FN_MALLOC, ENTRY_THROWS },		/* (size, align) */
	{ "mi_new_aligned_nothrow", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "mi_valloc", CULPERT_FN_MALLOC, 0 },
	{ "_aligned_malloc", CULPERT_FN_MALLOC, 0 },		/* (size, align) */
	{ "mi_calloc", CULPERT_FN_CALLOC, 0 },
	{ "mi_mallocn", CULPERT_FN_CALLOC, 0 },			/* (count, size) */
	{ "mi_calloc_aligned", CULPERT_FN_CALLOC, 0 },		/* (count, size, align) */
	{ "mi_calloc_aligned_at", CULPERT_FN_CALLOC, 0 },
	{ "mi_new_n", CULPERT_FN_CALLOC, ENTRY_THROWS },
	{ "mi_realloc", CULPERT_FN_REALLOC, 0 },
	{ "mi_reallocf", CULPERT_FN_REALLOC, 0 },
	{ "reallocf", CULPERT_FN_REALLOC, 0 },
	{ "mi_rezalloc", CULPERT_FN_REALLOC, 0 },
	{ "mi_realloc_aligned", CULPERT_FN_REALLOC, 0 },	/* (ptr, size, align) */
	{ "mi_realloc_aligned_at", CULPERT_FN_REALLOC, 0 },
	{ "mi_rezalloc_aligned", CULPERT_FN_REALLOC, 0 },
	{ "mi_rezalloc_aligned_at", CULPERT_FN_REALLOC, 0 },
	{ "mi_new_realloc", CULPERT_FN_REALLOC, ENTRY_THROWS },
	{ "mi_reallocn", CULPERT_FN_REALLOCARRAY, 0 },		/* (ptr, count, size) */
	{ "mi_reallocarray", CULPERT_FN_REALLOCARRAY, 0 },
	{ "mi_recalloc", CULPERT_FN_REALLOCARRAY, 0 },
	{ "mi_recalloc_aligned", CULPERT_FN_REALLOCARRAY, 0 },	/* (ptr, count, size, align) */
	{ "mi_recalloc_aligned_at", CULPERT_FN_REALLOCARRAY, 0 },
	{ "mi_aligned_recalloc", CULPERT_FN_REALLOCARRAY, 0 },
	{ "mi_aligned_offset_recalloc", CULPERT_FN_REALLOCARRAY, 0 },
	{ "mi_new_reallocn", CULPERT_FN_REALLOCARRAY, ENTRY_THROWS },
	{ "mi_posix_memalign", CULPERT_FN_POSIX_MEMALIGN, 0 },
	{ "mi_memalign", CULPERT_FN_MEMALIGN, 0 },
	{ "mi_aligned_alloc", CULPERT_FN_MEMALIGN, 0 },
	{ "mi_pvalloc", CULPERT_FN_PVALLOC, 0 },
	{ "mi_free", CULPERT_FN_FREE, 0 },
	{ "mi_cfree", CULPERT_FN_FREE, 0 },
	{ "cfree", CULPERT_FN_FREE, 0 },
	{ "mi_free_size", CULPERT_FN_FREE, 0 },
	{ "mi_free_aligned", CULPERT_FN_FREE, 0 },
	{ "mi_free_size_aligned", CULPERT_FN_FREE, 0 },
	{ NULL, 0, 0 },
};

/* gperftools' tc_* names; in its builds most are aliases of the plain ones: one probe for both */
static const struct entry_spec tcmalloc_entries[] = {
	{ "tc_malloc", CULPERT_FN_MALLOC, 0 },
	{ "tc_malloc_skip_new_handler", CULPERT_FN_MALLOC, 0 },
	{ "tc_valloc", CULPERT_FN_MALLOC, 0 },
	{ "tc_new", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "tc_newarray", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "tc_new_nothrow", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "tc_newarray_nothrow", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "tc_new_aligned", CULPERT_FN_MALLOC, ENTRY_THROWS },		/* (size, align) */
	{ "tc_newarray_aligned", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "tc_new_aligned_nothrow", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "tc_newarray_aligned_nothrow", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "tc_calloc", CULPERT_FN_CALLOC, 0 },
	{ "tc_realloc", CULPERT_FN_REALLOC, 0 },
	{ "tc_posix_memalign", CULPERT_FN_POSIX_MEMALIGN, 0 },
	{ "tc_memalign", CULPERT_FN_MEMALIGN, 0 },
	{ "tc_pvalloc", CULPERT_FN_PVALLOC, 0 },
	{ "tc_free", CULPERT_FN_FREE, 0 },
	{ "tc_free_sized", CULPERT_FN_FREE, 0 },
	{ "tc_cfree", CULPERT_FN_FREE, 0 },
	{ "cfree", CULPERT_FN_FREE, 0 },
	{ "tc_delete", CULPERT_FN_FREE, 0 },
	{ "tc_deletearray", CULPERT_FN_FREE, 0 },
	{ "tc_delete_sized", CULPERT_FN_FREE, 0 },
	{ "tc_deletearray_sized", CULPERT_FN_FREE, 0 },
	{ "tc_delete_nothrow", CULPERT_FN_FREE, 0 },
	{ "tc_deletearray_nothrow", CULPERT_FN_FREE, 0 },
	{ "tc_delete_aligned", CULPERT_FN_FREE, 0 },
	{ "tc_deletearray_aligned", CULPERT_FN_FREE, 0 },
	{ "tc_delete_sized_aligned", CULPERT_FN_FREE, 0 },
	{ "tc_deletearray_sized_aligned", CULPERT_FN_FREE, 0 },
	{ "tc_delete_aligned_nothrow", CULPERT_FN_FREE, 0 },
	{ "tc_deletearray_aligned_nothrow", CULPERT_FN_FREE, 0 },
	{ NULL, 0, 0 },
};

/*
 * C++ operator new and delete (Itanium mangling, 64-bit size_t): the size
 * or the pointer comes first in every variant.  Probed where the allocator
 * library defines them, which Debian's jemalloc, mimalloc and tcmalloc do;
 * libstdc++'s own operator new calls malloc and needs no probe.
 */
static const struct entry_spec cxx_entries[] = {
	{ "_Znwm", CULPERT_FN_MALLOC, ENTRY_THROWS },			/* new(size_t) */
	{ "_Znam", CULPERT_FN_MALLOC, ENTRY_THROWS },			/* new[] */
	{ "_ZnwmRKSt9nothrow_t", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "_ZnamRKSt9nothrow_t", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "_ZnwmSt11align_val_t", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "_ZnamSt11align_val_t", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "_ZnwmSt11align_val_tRKSt9nothrow_t", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "_ZnamSt11align_val_tRKSt9nothrow_t", CULPERT_FN_MALLOC, ENTRY_THROWS },
	{ "_ZdlPv", CULPERT_FN_FREE, 0 },			/* delete(void *) */
	{ "_ZdaPv", CULPERT_FN_FREE, 0 },
	{ "_ZdlPvm", CULPERT_FN_FREE, 0 },			/* sized */
	{ "_ZdaPvm", CULPERT_FN_FREE, 0 },
	{ "_ZdlPvRKSt9nothrow_t", CULPERT_FN_FREE, 0 },
	{ "_ZdaPvRKSt9nothrow_t", CULPERT_FN_FREE, 0 },
	{ "_ZdlPvSt11align_val_t", CULPERT_FN_FREE, 0 },
	{ "_ZdaPvSt11align_val_t", CULPERT_FN_FREE, 0 },
	{ "_ZdlPvmSt11align_val_t", CULPERT_FN_FREE, 0 },
	{ "_ZdaPvmSt11align_val_t", CULPERT_FN_FREE, 0 },
	{ "_ZdlPvSt11align_val_tRKSt9nothrow_t", CULPERT_FN_FREE, 0 },
	{ "_ZdaPvSt11align_val_tRKSt9nothrow_t", CULPERT_FN_FREE, 0 },
	{ NULL, 0, 0 },
};

/*
 * libstdc++'s operator new and new[], each plain, nothrow, aligned and
 * both: loops on malloc (aligned_alloc) and the new_handler, throws
 * std::bad_alloc.  Probed when it is the operator new the process binds
 * to (no allocator before it defines one): at their entry the caller of
 * `new` is still at the stack pointer, which a frame-pointer walk through
 * libstdc++ (built without frame pointers) would lose.  Its operator
 * delete just calls free, which is probed.
 */
static const struct entry_spec libstdcxx_entries[] = {
	{ "_Znwm", CULPERT_FN_MALLOC, ENTRY_THROWS | ENTRY_DELEGATES },
	{ "_Znam", CULPERT_FN_MALLOC, ENTRY_THROWS | ENTRY_DELEGATES },
	{ "_ZnwmRKSt9nothrow_t", CULPERT_FN_MALLOC, ENTRY_THROWS | ENTRY_DELEGATES },
	{ "_ZnamRKSt9nothrow_t", CULPERT_FN_MALLOC, ENTRY_THROWS | ENTRY_DELEGATES },
	{ "_ZnwmSt11align_val_t", CULPERT_FN_MALLOC, ENTRY_THROWS | ENTRY_DELEGATES },
	{ "_ZnamSt11align_val_t", CULPERT_FN_MALLOC, ENTRY_THROWS | ENTRY_DELEGATES },
	{ "_ZnwmSt11align_val_tRKSt9nothrow_t", CULPERT_FN_MALLOC, ENTRY_THROWS | ENTRY_DELEGATES },
	{ "_ZnamSt11align_val_tRKSt9nothrow_t", CULPERT_FN_MALLOC, ENTRY_THROWS | ENTRY_DELEGATES },
	{ NULL, 0, 0 },
};

/*
 * What to probe in each family, and how to tell them apart: a marker is a
 * symbol only that family defines (with the prefix, for prefixed builds).
 * Checked in this order: glibc's marker __libc_malloc is also defined by
 * musl, mimalloc and tcmalloc.
 */
struct family {
	const char *name;
	const char *markers[2];
	const struct entry_spec *api[3];	/* entry tables whose names take the prefix */
	bool cxx;				/* defines operator new/delete when unprefixed */
	const char *prefixes[2];		/* of prefixed builds auto looks for */
};

static const struct family families[] = {
	{ .name = "jemalloc", .markers = { "mallocx" }, .api = { libc_entries, jemalloc_entries },
	  .cxx = true, .prefixes = { "je_", "_rjem_" } },
	{ .name = "mimalloc", .markers = { "mi_malloc" }, .api = { libc_entries, mimalloc_entries },
	  .cxx = true },
	{ .name = "tcmalloc", .markers = { "tc_malloc" }, .api = { libc_entries, tcmalloc_entries },
	  .cxx = true },
	/* mallocng (1.2.1+) and oldmalloc; static binaries keep them in .symtab */
	{ .name = "musl", .markers = { "__libc_malloc_impl", "__malloc_donate" },
	  .api = { libc_entries } },
	{ .name = "glibc", .markers = { "malloc_trim", "__libc_malloc" }, .api = { libc_entries } },
};

/* an object that defines malloc but none of the markers: a program's own allocator */
static const struct family custom_family = { .name = "custom", .api = { libc_entries } };
/* the C++ runtime's operator new, probed beside the process's malloc */
static const struct family libstdcxx_family = { .name = "libstdc++" };

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static bool defines(struct elfobj *obj, const char *prefix, const char *name)
{
	char full[128];

	snprintf(full, sizeof(full), "%s%s", prefix, name);
	return elfobj__sym_by_name(obj, full) != NULL;
}

static const struct family *family_of(struct elfobj *obj, const char *prefix)
{
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(families); i++)
		for (j = 0; j < ARRAY_SIZE(families[i].markers) && families[i].markers[j]; j++)
			if (defines(obj, prefix, families[i].markers[j]))
				return &families[i];
	return &custom_family;
}

static const struct family *family_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(families); i++)
		if (!strcmp(name, families[i].name))
			return &families[i];
	return NULL;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool is_libc(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "ld-musl-", 8);
}

static bool is_ldso(const char *path)
{
	return !strncmp(base_name(path), "ld-linux", 8);
}

/*
 * Rank of an object in the dynamic linker's symbol search: the executable,
 * then the other libraries (LD_PRELOAD'ed and linked allocators), then libc.
 * The executable is told by its inode only: /proc/PID/maps gives the
 * superblock's device, which is not stat's st_dev on btrfs subvolumes.
 */
static int search_rank(const struct target *t, const struct procmap *m)
{
	/* 0: target__open() could not stat the executable */
	if (t->exe_ino && m->inode == t->exe_ino)
		return 0;
	if (is_libc(m->path))
		return 2;
	return 1;
}

/* one executable mapping per object, in search order */
static size_t candidates(const struct target *t, const struct procmaps *maps,
			 const struct procmap **out, size_t max)
{
	size_t i, j, n = 0;
	int rank;

	for (rank = 0; rank <= 2; rank++) {
		for (i = 0; i < maps->n && n < max; i++) {
			const struct procmap *m = &maps->v[i];
			bool dup = false;

			if (!m->executable || !procmap__is_file(m) || is_ldso(m->path) ||
			    search_rank(t, m) != rank)
				continue;
			for (j = 0; j < n; j++)
				dup |= out[j]->inode == m->inode && !strcmp(out[j]->path, m->path);
			if (!dup)
				out[n++] = m;
		}
	}
	return n;
}

static int add_skipped(struct alloc_plan *plan, size_t *cap, const char *name)
{
	char *s = strdup(name);

	if (!s || vec_reserve(&plan->skipped, cap, plan->n_skipped + 1, sizeof(char *))) {
		free(s);
		return -ENOMEM;
	}
	plan->skipped[plan->n_skipped++] = s;
	return 0;
}

static struct probe_point *point_at(struct alloc_plan *plan, int object, uint64_t off)
{
	size_t i;

	for (i = 0; i < plan->n_points; i++)
		if (plan->points[i].object == object && plan->points[i].sym_offset == off)
			return &plan->points[i];
	return NULL;
}

/*
 * An entry point an exception can unwind through gets plain uprobes on its
 * return instructions for --inuse, never a return probe.  Tail calls into
 * other objects are judged once the whole plan is known (check_tails()).
 */
static int find_exits(struct probe_point *pp, struct elfobj *obj, const struct elf_symbol *sym,
		      bool hoist)
{
	struct exits e;
	size_t i;
	int err;

	pp->flags |= CULPERT_PROBE_F_EXITS;
	err = exits__find(obj, sym->value, sym->size, hoist, &e);
	if (err)
		return err;
	free(pp->exits);
	free(pp->hoists);
	pp->exits = malloc((e.n ?: 1) * sizeof(*pp->exits));
	pp->hoists = malloc((e.n_hoists ?: 1) * sizeof(*pp->hoists));
	if (!pp->exits || !pp->hoists)
		return -ENOMEM;
	memcpy(pp->exits, e.offsets, e.n * sizeof(*pp->exits));
	memcpy(pp->hoists, e.hoists, e.n_hoists * sizeof(*pp->hoists));
	pp->n_exits = e.n;
	pp->n_hoists = e.n_hoists;
	if (!e.complete) {
		pp->flags |= CULPERT_PROBE_F_NO_RETURN;
		snprintf(pp->exits_missed, sizeof(pp->exits_missed), "%s", e.reason);
	}
	for (i = 0; i < e.n_tails && i < ALLOC_MAX_TAILS; i++)
		snprintf(pp->tails[i], sizeof(pp->tails[i]), "%s", e.tails[i]);
	pp->n_tails = i;
	if (e.n_tails > ALLOC_MAX_TAILS) {
		pp->flags |= CULPERT_PROBE_F_NO_RETURN;
		snprintf(pp->exits_missed, sizeof(pp->exits_missed), "too many tail calls");
	}
	return 0;
}

/* probe points for every entry of `specs` (with `prefix`) the object defines */
static int add_entries(struct alloc_plan *plan, int object, struct elfobj *obj, const char *prefix,
		       const struct entry_spec *specs, bool trust_leaf)
{
	size_t cap_points = plan->n_points, cap_skipped = plan->n_skipped;
	char name[128];
	int err;

	for (; specs->name; specs++) {
		const struct elf_symbol *sym;
		struct probe_point *pp;
		uint64_t off;

		snprintf(name, sizeof(name), "%s%s", prefix, specs->name);
		sym = elfobj__sym_by_name(obj, name);
		if (!sym || sym->type == STT_GNU_IFUNC ||
		    elfobj__vaddr_to_offset(obj, sym->value, &off)) {
			/* optional: allocators define different subsets of the API */
			err = add_skipped(plan, &cap_skipped, name);
			if (err)
				return err;
			continue;
		}
		/* aliases (memalign = aligned_alloc, tc_new = _Znwm): one probe or two counts */
		pp = point_at(plan, object, off);
		if (pp) {
			if ((specs->flags & ENTRY_THROWS) && !(pp->flags & CULPERT_PROBE_F_EXITS)) {
				err = find_exits(pp, obj, sym, true);
				if (err)
					return err;
			}
			continue;
		}
		if (vec_reserve(&plan->points, &cap_points, plan->n_points + 1, sizeof(*pp)))
			return -ENOMEM;
		pp = &plan->points[plan->n_points];
		memset(pp, 0, sizeof(*pp));
		/* past leading instructions its program cannot see to one the kernel emulates */
		err = probe_offset__for_symbol(obj, sym, specs->fn, &pp->at);
		if (err)
			return err;
		pp->object = object;
		pp->symbol = strdup(name);
		if (!pp->symbol)
			return -ENOMEM;
		pp->sym_offset = off;
		pp->offset = off + pp->at.offset;
		pp->fn = specs->fn;
		pp->flags = trust_leaf && (specs->flags & ENTRY_LEAF) ? CULPERT_PROBE_F_LEAF : 0;
		pp->flags |= probe_offset__args_cookie(&pp->at);
		plan->n_points++;
		if (specs->flags & ENTRY_DELEGATES) {
			pp->flags |= CULPERT_PROBE_F_EXITS | CULPERT_PROBE_F_DELEGATE;
		} else if (specs->flags & ENTRY_THROWS) {
			err = find_exits(pp, obj, sym, true);
			if (err)
				return err;
		}
	}
	return 0;
}

static const struct probe_point *point_named(const struct alloc_plan *plan, const char *name)
{
	size_t i;

	for (i = 0; i < plan->n_points; i++)
		if (!strcmp(plan->points[i].symbol, name))
			return &plan->points[i];
	return NULL;
}

/*
 * A tail call from an entry point into another object's function returns
 * to the entry point's caller from there: seen if that function is probed
 * itself (its exits, or its return where no exception can pass, the BPF
 * side knows it is a tail call), not otherwise.
 */
/* the opened object behind the plan's object `object` */
static struct elfobj *object_elf(const struct alloc_plan *plan, int object, struct objcache *cache,
				 const struct procmaps *maps)
{
	size_t i;

	for (i = 0; i < maps->n; i++)
		if (maps->v[i].executable && !strcmp(maps->v[i].path, plan->objects[object].path))
			return objcache__get(cache, &maps->v[i]);
	return NULL;
}

/* is a probe of the plan's entry points at this offset of the object? */
static bool entry_probe_at(const struct alloc_plan *plan, int object, uint64_t off)
{
	size_t i;

	for (i = 0; i < plan->n_points; i++)
		if (plan->points[i].object == object && plan->points[i].offset == off)
			return true;
	return false;
}

/*
 * A hoisted exit on the instruction of an entry probe would put two
 * programs on one uprobe, whose order nothing promises: that entry point's
 * exits stay on their return instructions.
 */
static int unhoist_collisions(struct alloc_plan *plan, struct objcache *cache,
			      const struct procmaps *maps)
{
	size_t i, j;

	for (i = 0; i < plan->n_points; i++) {
		struct probe_point *pp = &plan->points[i];
		const struct elf_symbol *sym;
		struct elfobj *obj;
		bool hit = false;

		for (j = 0; j < pp->n_hoists && !hit; j++)
			hit = entry_probe_at(plan, pp->object, pp->hoists[j].offset);
		if (!hit)
			continue;
		obj = object_elf(plan, pp->object, cache, maps);
		sym = obj ? elfobj__sym_by_name(obj, pp->symbol) : NULL;
		if (!sym)
			return -ENOENT;
		if (find_exits(pp, obj, sym, false))
			return -ENOMEM;
	}
	return 0;
}

static void check_tails(struct alloc_plan *plan)
{
	size_t i, j;

	for (i = 0; i < plan->n_points; i++) {
		struct probe_point *pp = &plan->points[i];

		for (j = 0; j < pp->n_tails && !(pp->flags & CULPERT_PROBE_F_NO_RETURN); j++) {
			if (point_named(plan, pp->tails[j]))
				continue;
			pp->flags |= CULPERT_PROBE_F_NO_RETURN;
			snprintf(pp->exits_missed, sizeof(pp->exits_missed),
				 "tail call to %s, which is not probed", pp->tails[j]);
		}
	}
}

/* the plan's index of the object behind `m`, added if new; -errno */
static int add_object(struct alloc_plan *plan, const struct target *t,
		      const struct procmaps *maps, const struct procmap *m, struct elfobj *obj,
		      const struct family *fam, const char *prefix)
{
	struct alloc_object *o = &plan->objects[plan->n_objects];
	char path[PATH_MAX];
	size_t i;

	/* an executable may define both malloc and je_malloc: one object, one code range */
	for (i = 0; i < plan->n_objects; i++)
		if (!strcmp(plan->objects[i].path, m->path))
			return (int)i;
	if (plan->n_objects >= ALLOC_MAX_OBJECTS)
		return -E2BIG;
	if (target__object_path(t, m, path, sizeof(path)))
		return -ENAMETOOLONG;
	o->path = strdup(m->path);
	o->open_path = strdup(path);
	o->build_id = strdup(elfobj__build_id(obj));
	o->prefix = strdup(prefix);
	o->family = fam->name;
	procmaps__text_range(maps, m, &o->text_lo, &o->text_hi);
	if (!o->path || !o->open_path || !o->build_id || !o->prefix)
		return -ENOMEM;
	return (int)plan->n_objects++;
}

/* what planning looks at: the target, its objects in the dynamic linker's order */
struct planner {
	const struct target *t;
	const struct procmaps *maps;
	struct objcache *cache;
	const struct procmap *cands[256];
	size_t n;
};

/*
 * The first object that defines `prefix`malloc and, when `want` is given,
 * belongs to that family.  NULL if none.
 */
static const struct procmap *find_provider(struct planner *pl, const char *prefix,
					   const struct family *want, struct elfobj **objp,
					   const struct family **famp)
{
	size_t i;

	for (i = 0; i < pl->n; i++) {
		struct elfobj *obj = objcache__get(pl->cache, pl->cands[i]);

		if (!obj || !defines(obj, prefix, "malloc"))
			continue;
		*famp = family_of(obj, prefix);
		if (want && *famp != want)
			continue;
		*objp = obj;
		return pl->cands[i];
	}
	return NULL;
}

/*
 * Probe the allocator that defines `prefix`malloc (of family `want`, if
 * given) with its family's tables.  1 when added, 0 when there is none, or
 * -errno.
 */
static int plan_provider(struct planner *pl, struct alloc_plan *plan, const char *prefix,
			 const struct family *want)
{
	const struct family *fam = NULL;
	const struct procmap *m;
	struct elfobj *obj = NULL;
	bool trust_leaf;
	size_t i;
	int idx, err = 0;

	m = find_provider(pl, prefix, want, &obj, &fam);
	if (!m)
		return 0;
	idx = add_object(plan, pl->t, pl->maps, m, obj, fam, prefix);
	if (idx < 0)
		return idx;
	trust_leaf = !*prefix && fam != &custom_family;
	for (i = 0; i < ARRAY_SIZE(fam->api) && fam->api[i] && !err; i++)
		err = add_entries(plan, idx, obj, prefix, fam->api[i], trust_leaf);
	/* a prefixed build leaves operator new to libstdc++, which calls the unprefixed malloc */
	if (!err && fam->cxx && !*prefix)
		err = add_entries(plan, idx, obj, "", cxx_entries, trust_leaf);
	return err ? err : 1;
}

/* prefixed builds of the families that have them, next to the process's malloc */
/*
 * The object defining operator new for the process, when the allocator
 * the plan probes does not (jemalloc & co. define their own, and the
 * dynamic linker binds `new` to them ahead of libstdc++: they come first,
 * preloaded or linked before it): libstdc++, or an executable that links
 * it statically.
 */
static int plan_libstdcxx(struct planner *pl, struct alloc_plan *plan)
{
	size_t i;
	int idx;

	/* an unprefixed allocator of the plan that defines it (tcmalloc's is named tc_new too) */
	for (i = 0; i < pl->n; i++) {
		struct elfobj *obj = objcache__get(pl->cache, pl->cands[i]);
		size_t o;

		for (o = 0; obj && o < plan->n_objects; o++)
			if (!*plan->objects[o].prefix &&
			    !strcmp(plan->objects[o].path, pl->cands[i]->path) &&
			    defines(obj, "", "_Znwm"))
				return 0;
	}
	for (i = 0; i < pl->n; i++) {
		struct elfobj *obj = objcache__get(pl->cache, pl->cands[i]);

		if (!obj || !defines(obj, "", "_Znwm"))
			continue;
		idx = add_object(plan, pl->t, pl->maps, pl->cands[i], obj, &libstdcxx_family, "");
		if (idx < 0)
			return idx;
		return add_entries(plan, idx, obj, "", libstdcxx_entries, false);
	}
	return 0;
}

static int plan_prefixed(struct planner *pl, struct alloc_plan *plan)
{
	size_t i, j;
	int ret;

	for (i = 0; i < ARRAY_SIZE(families); i++) {
		for (j = 0; j < ARRAY_SIZE(families[i].prefixes) && families[i].prefixes[j]; j++) {
			ret = plan_provider(pl, plan, families[i].prefixes[j], &families[i]);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* "no je_malloc in /a, /b" */
static size_t describe_search(const struct planner *pl, char *err, size_t errlen,
			      const char *what)
{
	size_t i, len;

	len = (size_t)snprintf(err, errlen, "allocator not found: no %s in", what);
	for (i = 0; i < pl->n && len < errlen; i++)
		len += (size_t)snprintf(err + len, errlen - len, "%s %s", i ? "," : "",
					pl->cands[i]->path);
	if (!pl->n && len < errlen)
		len += (size_t)snprintf(err + len, errlen - len, " any object");
	/* an object that could not be read is the likelier cause: say so without -v */
	for (i = 0; i < pl->n && len < errlen; i++)
		if (!objcache__get(pl->cache, pl->cands[i]))
			len += (size_t)snprintf(err + len, errlen - len, "; cannot read %s: %s%s",
						pl->cands[i]->path, strerror(errno),
						errno == EPERM && strstr(pl->cands[i]->path, " (deleted)") ?
						" (a deleted file is read through /proc/PID/map_files, "
						"which needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)" : "");
	return len < errlen ? len : errlen;
}

/*
 * The executable itself says why nothing defines malloc: a Go program (its
 * runtime has an allocator of its own), or a static executable stripped of
 * the symbol table malloc would be found in.  false when neither.
 */
static bool exe_reason(struct planner *pl, char *err, size_t errlen)
{
	const struct procmap *exe = pl->n && !search_rank(pl->t, pl->cands[0]) ? pl->cands[0] : NULL;
	struct elfobj *obj = exe ? objcache__get(pl->cache, exe) : NULL;
	size_t i;

	if (!obj)
		return false;
	if (exe_kind__is_go(obj)) {
		snprintf(err, errlen, "allocator not found: pid %d runs a Go program (%s), and Go's "
			 "runtime allocates without malloc, so there is no C allocator to probe; "
			 "profile its heap with runtime/pprof or net/http/pprof's /debug/pprof/heap",
			 (int)pl->t->pid, exe->path);
		return true;
	}
	for (i = 0; i < pl->n; i++)
		if (is_libc(pl->cands[i]->path))
			return false;
	if (elfobj__has_symtab(obj))
		return false;
	snprintf(err, errlen, "allocator not found: %s is a static executable without a symbol "
		 "table (stripped), so the malloc linked into it cannot be found by name; profile a "
		 "build that keeps its symbols (not stripped), or one linked against the shared "
		 "libc, whose malloc is always found (e.g. Debian's busybox, not busybox-static)",
		 exe->path);
	return true;
}

static void not_found(struct planner *pl, const char *allocator, const struct family *want,
		      char *err, size_t errlen)
{
	const struct family *fam = NULL;
	const struct procmap *m;
	struct elfobj *obj;
	char what[160];
	size_t i, len;

	if (want) {
		/* say what is there instead: the usual mistake is naming the wrong family */
		m = find_provider(pl, "", NULL, &obj, &fam);
		if (m) {
			snprintf(err, errlen,
				 "allocator not found: --allocator %s, but pid %d gets malloc from %s in %s; use --allocator auto%s%s",
				 want->name, (int)pl->t->pid, fam->name, m->path,
				 fam != &custom_family ? " or " : "",
				 fam != &custom_family ? fam->name : "");
			return;
		}
		snprintf(what, sizeof(what), "%s malloc", want->name);
		describe_search(pl, err, errlen, what);
		return;
	}
	if (!*allocator && exe_reason(pl, err, errlen))
		return;
	snprintf(what, sizeof(what), "%smalloc", allocator);
	len = describe_search(pl, err, errlen, what);
	if (!*allocator) {
		snprintf(err + len, errlen - len, "; use --allocator PREFIX if it uses prefixed names");
		return;
	}
	len += (size_t)snprintf(err + len, errlen - len,
				" (--allocator %s is taken as a symbol prefix; the families are",
				allocator);
	for (i = 0; i < ARRAY_SIZE(families) && len < errlen; i++)
		len += (size_t)snprintf(err + len, errlen - len, " %s%s", families[i].name,
					i + 1 < ARRAY_SIZE(families) ? "," : ")");
}

int allocator__plan(const struct target *t, const struct procmaps *maps, struct objcache *cache,
		    const char *allocator, struct alloc_plan *plan, char *err, size_t errlen)
{
	struct planner pl = { .t = t, .maps = maps, .cache = cache };
	const struct family *want = NULL;
	const char *prefix = "";
	size_t i;
	int ret;

	memset(plan, 0, sizeof(*plan));
	if (allocator && strcmp(allocator, "auto")) {
		want = family_by_name(allocator);
		if (!want)
			prefix = allocator;
	}
	pl.n = candidates(t, maps, pl.cands, ARRAY_SIZE(pl.cands));
	ret = plan_provider(&pl, plan, prefix, want);
	/* --allocator jemalloc also finds a jemalloc built with je_ or _rjem_ names */
	for (i = 0; want && !ret && i < ARRAY_SIZE(want->prefixes) && want->prefixes[i]; i++)
		ret = plan_provider(&pl, plan, want->prefixes[i], want);
	if (!ret) {
		not_found(&pl, prefix, want, err, errlen);
		return -ENOENT;
	}
	/* auto: also any prefixed jemalloc; a forced prefix: also the process's malloc */
	if (ret > 0 && !want)
		ret = *prefix ? plan_provider(&pl, plan, "", NULL) : plan_prefixed(&pl, plan);
	/* a family forced with --allocator is that family only */
	if (ret >= 0 && !want)
		ret = plan_libstdcxx(&pl, plan);
	if (ret < 0) {
		snprintf(err, errlen, "cannot build the probe plan for pid %d: %s", (int)t->pid,
			 strerror(-ret));
		alloc_plan__free(plan);
		return ret;
	}
	check_tails(plan);
	ret = unhoist_collisions(plan, cache, maps);
	if (ret) {
		snprintf(err, errlen, "cannot build the probe plan for pid %d: %s", (int)t->pid,
			 strerror(-ret));
		alloc_plan__free(plan);
		return ret;
	}
	return 0;
}

int allocator__find(const struct target *t, const struct procmaps *maps, struct objcache *cache,
		    const char *family, const struct procmap **map, struct elfobj **obj,
		    const char **family_out)
{
	struct planner pl = { .t = t, .maps = maps, .cache = cache };
	const struct family *want = NULL, *fam = NULL;

	if (family && !(want = family_by_name(family)))
		return -EINVAL;
	pl.n = candidates(t, maps, pl.cands, ARRAY_SIZE(pl.cands));
	*map = find_provider(&pl, "", want, obj, &fam);
	if (!*map)
		return -ENOENT;
	*family_out = fam->name;
	return 0;
}

void alloc_plan__log(const struct alloc_plan *plan)
{
	size_t i, o, n;

	for (o = 0; o < plan->n_objects; o++) {
		const struct alloc_object *obj = &plan->objects[o];

		for (i = 0, n = 0; i < plan->n_points; i++)
			n += plan->points[i].object == (int)o;
		pr_info("allocator %s%s%s%s in %s: %zu entry points\n", obj->family,
			*obj->prefix ? " (names " : "", obj->prefix, *obj->prefix ? "*)" : "",
			obj->path, n);
	}
	if (!plan->n_skipped)
		return;
	pr_info("allocator entry points not defined, not probed:");
	for (i = 0; i < plan->n_skipped; i++)
		pr_info(" %s", plan->skipped[i]);
	pr_info("\n");
}

static bool object_known(const struct alloc_object *o, const struct alloc_plan *const *known,
			 size_t n_known)
{
	size_t i, j;

	for (i = 0; i < n_known; i++)
		for (j = 0; j < known[i]->n_objects; j++)
			if (known[i]->objects[j].text_lo == o->text_lo &&
			    !strcmp(known[i]->objects[j].path, o->path))
				return true;
	return false;
}

static void point_free(struct probe_point *p)
{
	free(p->symbol);
	free(p->exits);
	free(p->hoists);
}

size_t alloc_plan__keep_new(struct alloc_plan *plan, const struct alloc_plan *const *known,
			    size_t n_known)
{
	int index[ALLOC_MAX_OBJECTS];
	size_t i, n = 0;

	for (i = 0; i < plan->n_objects; i++) {
		struct alloc_object *o = &plan->objects[i];

		if (object_known(o, known, n_known)) {
			free(o->path);
			free(o->open_path);
			free(o->build_id);
			free(o->prefix);
			index[i] = -1;
			continue;
		}
		index[i] = (int)n;
		plan->objects[n++] = *o;
	}
	plan->n_objects = n;
	for (i = 0, n = 0; i < plan->n_points; i++) {
		struct probe_point *p = &plan->points[i];

		if (p->object < 0 || p->object >= ALLOC_MAX_OBJECTS || index[p->object] < 0) {
			point_free(p);
			continue;
		}
		p->object = index[p->object];
		plan->points[n++] = *p;
	}
	plan->n_points = n;
	return plan->n_objects;
}

void alloc_plan__free(struct alloc_plan *plan)
{
	size_t i;

	for (i = 0; i < plan->n_objects; i++) {
		free(plan->objects[i].path);
		free(plan->objects[i].open_path);
		free(plan->objects[i].build_id);
		free(plan->objects[i].prefix);
	}
	for (i = 0; i < plan->n_points; i++)
		point_free(&plan->points[i]);
	for (i = 0; i < plan->n_skipped; i++)
		free(plan->skipped[i]);
	free(plan->points);
	free(plan->skipped);
	memset(plan, 0, sizeof(*plan));
}
