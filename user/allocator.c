// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "allocator.h"
#include "culpert.h"
#include "elfobj.h"
#include "log.h"
#include "objcache.h"
#include "procmaps.h"
#include "target.h"
#include "vec.h"

struct entry_spec {
	const char *name;	/* without the family's prefix */
	uint32_t fn;		/* how the BPF side reads the size */
};

/* the C allocation API; every malloc replacement defines some of it */
static const struct entry_spec libc_entries[] = {
	{ "malloc", CULPERT_FN_MALLOC },
	{ "calloc", CULPERT_FN_CALLOC },
	{ "realloc", CULPERT_FN_REALLOC },
	{ "reallocarray", CULPERT_FN_REALLOCARRAY },
	{ "posix_memalign", CULPERT_FN_POSIX_MEMALIGN },
	{ "aligned_alloc", CULPERT_FN_MEMALIGN },
	{ "memalign", CULPERT_FN_MEMALIGN },
	{ "valloc", CULPERT_FN_MALLOC },
	{ "pvalloc", CULPERT_FN_PVALLOC },
	/* probed with --inuse only */
	{ "free", CULPERT_FN_FREE },
	{ NULL, 0 },
};

/* a symbol only one family defines tells which family an object belongs to */
static const struct {
	const char *marker;
	const char *family;
} family_markers[] = {
	{ "mallocx", "jemalloc" },
	{ "mi_malloc", "mimalloc" },
	{ "tc_malloc", "tcmalloc" },
	{ "__libc_malloc", "glibc" },
	{ "__malloc_donate", "musl" },
};

static const char *const known_families[] = { "glibc", "musl", "jemalloc", "mimalloc", "tcmalloc" };

static const char *family_of(struct elfobj *obj)
{
	size_t i;

	for (i = 0; i < sizeof(family_markers) / sizeof(family_markers[0]); i++)
		if (elfobj__sym_by_name(obj, family_markers[i].marker))
			return family_markers[i].family;
	return "custom";
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
 */
static int search_rank(const struct procmap *m, const struct stat *exe)
{
	if (exe && m->inode == exe->st_ino)
		return 0;
	if (is_libc(m->path))
		return 2;
	return 1;
}

/* one executable mapping per object, in search order */
static size_t candidates(const struct target *t, const struct procmaps *maps,
			 const struct procmap **out, size_t max)
{
	char exe_path[64];
	struct stat exe_st;
	bool have_exe;
	size_t i, j, n = 0;
	int rank;

	snprintf(exe_path, sizeof(exe_path), "/proc/%d/exe", (int)t->pid);
	have_exe = stat(exe_path, &exe_st) == 0;
	for (rank = 0; rank <= 2; rank++) {
		for (i = 0; i < maps->n && n < max; i++) {
			const struct procmap *m = &maps->v[i];
			bool dup = false;

			if (!m->executable || !procmap__is_file(m) || is_ldso(m->path) ||
			    search_rank(m, have_exe ? &exe_st : NULL) != rank)
				continue;
			for (j = 0; j < n; j++)
				dup |= out[j]->inode == m->inode && !strcmp(out[j]->path, m->path);
			if (!dup)
				out[n++] = m;
		}
	}
	return n;
}

static void text_range(const struct procmaps *maps, const struct procmap *m, uint64_t *lo,
		       uint64_t *hi)
{
	size_t i;

	*lo = UINT64_MAX;
	*hi = 0;
	for (i = 0; i < maps->n; i++) {
		const struct procmap *x = &maps->v[i];

		if (!x->executable || x->inode != m->inode || strcmp(x->path, m->path))
			continue;
		if (x->start < *lo)
			*lo = x->start;
		if (x->end > *hi)
			*hi = x->end;
	}
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

static bool have_offset(const struct alloc_plan *plan, int object, uint64_t off)
{
	size_t i;

	for (i = 0; i < plan->n_points; i++)
		if (plan->points[i].object == object && plan->points[i].sym_offset == off)
			return true;
	return false;
}

/* probe points for every entry of `specs` (with `prefix`) the object defines */
static int add_entries(struct alloc_plan *plan, int object, struct elfobj *obj, const char *prefix,
		       const struct entry_spec *specs)
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
		/* aliases (memalign == aligned_alloc) share one probe: two would count twice */
		if (have_offset(plan, object, off))
			continue;
		if (vec_reserve(&plan->points, &cap_points, plan->n_points + 1, sizeof(*pp)))
			return -ENOMEM;
		pp = &plan->points[plan->n_points];
		memset(pp, 0, sizeof(*pp));
		/* past flag-only leading instructions to one the kernel emulates, if provably safe */
		err = probe_offset__for_symbol(obj, sym, &pp->at);
		if (err)
			return err;
		pp->object = object;
		pp->symbol = strdup(name);
		if (!pp->symbol)
			return -ENOMEM;
		pp->sym_offset = off;
		pp->offset = off + pp->at.offset;
		pp->fn = specs->fn;
		plan->n_points++;
	}
	return 0;
}

static int add_object(struct alloc_plan *plan, const struct target *t,
		      const struct procmaps *maps, const struct procmap *m, struct elfobj *obj,
		      const char *family)
{
	struct alloc_object *o = &plan->objects[plan->n_objects];
	char path[PATH_MAX];

	if (plan->n_objects >= ALLOC_MAX_OBJECTS)
		return -E2BIG;
	if (target__object_path(t, m, path, sizeof(path)))
		return -ENAMETOOLONG;
	o->path = strdup(m->path);
	o->open_path = strdup(path);
	o->build_id = strdup(elfobj__build_id(obj));
	o->family = family;
	text_range(maps, m, &o->text_lo, &o->text_hi);
	if (!o->path || !o->open_path || !o->build_id)
		return -ENOMEM;
	return (int)plan->n_objects++;
}

static bool is_family(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(known_families) / sizeof(known_families[0]); i++)
		if (!strcmp(s, known_families[i]))
			return true;
	return false;
}

/* the first object that defines `prefix`malloc (and, when forced, belongs to `family`) */
static const struct procmap *find_provider(const struct procmap **cands, size_t n,
					   struct objcache *cache, const char *prefix,
					   const char *family, struct elfobj **objp)
{
	char name[128];
	size_t i;

	snprintf(name, sizeof(name), "%smalloc", prefix);
	for (i = 0; i < n; i++) {
		struct elfobj *obj = objcache__get(cache, cands[i]);

		if (!obj || !elfobj__sym_by_name(obj, name))
			continue;
		if (family && strcmp(family_of(obj), family))
			continue;
		*objp = obj;
		return cands[i];
	}
	return NULL;
}

static void describe_search(char *err, size_t errlen, const char *what,
			    const struct procmap **cands, size_t n)
{
	size_t i, len;

	len = (size_t)snprintf(err, errlen, "allocator not found: no %s in", what);
	for (i = 0; i < n && len < errlen; i++)
		len += (size_t)snprintf(err + len, errlen - len, "%s %s", i ? "," : "",
					cands[i]->path);
	if (len < errlen)
		snprintf(err + len, errlen - len,
			 "%s; use --allocator PREFIX if it uses prefixed names", n ? "" : " any object");
}

int allocator__plan(const struct target *t, const struct procmaps *maps, struct objcache *cache,
		    const char *allocator, struct alloc_plan *plan, char *err, size_t errlen)
{
	const struct procmap *cands[256], *m;
	const char *family = NULL, *prefix = "";
	struct elfobj *obj = NULL;
	size_t n;
	int idx, ret;

	memset(plan, 0, sizeof(*plan));
	if (allocator && strcmp(allocator, "auto")) {
		if (is_family(allocator))
			family = allocator;
		else
			prefix = allocator;
	}
	n = candidates(t, maps, cands, sizeof(cands) / sizeof(cands[0]));
	m = find_provider(cands, n, cache, prefix, family, &obj);
	if (!m) {
		char what[160];

		snprintf(what, sizeof(what), "%s%smalloc%s%s", family ? family : "", family ? " " : "",
			 *prefix ? " with prefix " : "", prefix);
		describe_search(err, errlen, what, cands, n);
		return -ENOENT;
	}
	idx = add_object(plan, t, maps, m, obj, family_of(obj));
	ret = idx < 0 ? idx : add_entries(plan, idx, obj, prefix, libc_entries);
	if (ret)
		snprintf(err, errlen, "cannot build the probe plan for %s: %s", m->path,
			 strerror(-ret));
	if (ret)
		alloc_plan__free(plan);
	return ret;
}

void alloc_plan__free(struct alloc_plan *plan)
{
	size_t i;

	for (i = 0; i < plan->n_objects; i++) {
		free(plan->objects[i].path);
		free(plan->objects[i].open_path);
		free(plan->objects[i].build_id);
	}
	for (i = 0; i < plan->n_points; i++)
		free(plan->points[i].symbol);
	for (i = 0; i < plan->n_skipped; i++)
		free(plan->skipped[i]);
	free(plan->points);
	free(plan->skipped);
	memset(plan, 0, sizeof(*plan));
}
