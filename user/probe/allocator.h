/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Finding the allocator of a process: which mapped object serves malloc
 * (the dynamic linker's order: executable, preloaded and linked libraries,
 * libc), which family it belongs to, and the probe point of every entry
 * point it defines.
 */
#ifndef CULPERT_ALLOCATOR_H
#define CULPERT_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct target;
struct procmaps;
struct objcache;
struct elfobj;
struct procmap;

#include <linux/types.h>

#include "culpert.h"
#include "exits.h"
#include "probe_offset.h"

/* at most this many objects carry probes (the BPF side keeps their code ranges) */
#define ALLOC_MAX_OBJECTS CULPERT_MAX_ALLOC_OBJS
/* tail calls into other objects an entry point may make and still have its return seen */
#define ALLOC_MAX_TAILS 4

struct alloc_object {
	char *path;		/* as the target sees it */
	char *open_path;	/* how we reach it (/proc/PID/root/...) */
	char *build_id;
	const char *family;	/* "glibc", "jemalloc", ... */
	char *prefix;		/* of its entry points' names: "" or e.g. "je_" */
	uint64_t text_lo;	/* runtime range of its executable mapping */
	uint64_t text_hi;
};

struct probe_point {
	int object;		/* index into alloc_plan.objects */
	char *symbol;
	uint64_t sym_offset;	/* file offset of the symbol */
	uint64_t offset;	/* file offset where the probe goes: sym_offset + at.offset */
	struct probe_offset at;	/* how far past the symbol, and why */
	uint32_t fn;		/* enum culpert_fn */
	uint32_t flags;		/* CULPERT_PROBE_F_*; with fn, the probe's BPF cookie */
	/*
	 * CULPERT_PROBE_F_EXITS (operator new & co.): file offsets of its
	 * return instructions in the same object, where --inuse sees what it
	 * returned; with CULPERT_PROBE_F_NO_RETURN, why they are not all known.
	 */
	uint64_t *exits;
	size_t n_exits;
	struct exit_hoist *hoists;	/* exits moved to the branches before them (hoist.h) */
	size_t n_hoists;
	char exits_missed[192];
	char tails[ALLOC_MAX_TAILS][128];	/* tail calls into other objects, by name */
	size_t n_tails;
};

struct alloc_plan {
	struct alloc_object objects[ALLOC_MAX_OBJECTS];
	size_t n_objects;
	struct probe_point *points;
	size_t n_points;
	char **skipped;		/* optional entry points the allocator does not define */
	size_t n_skipped;
};

/*
 * Build the plan.  `allocator` is "auto" (the object that serves malloc,
 * plus any prefixed jemalloc such as je_ or _rjem_), a family name (glibc,
 * musl, jemalloc, mimalloc, tcmalloc: that family only) or a symbol prefix
 * ("je_": the object defining je_malloc, plus the one serving malloc).
 * On failure returns -errno and a user-facing reason (naming what was
 * searched) in err.
 */
int allocator__plan(const struct target *t, const struct procmaps *maps, struct objcache *cache,
		    const char *allocator, struct alloc_plan *plan, char *err, size_t errlen);
/*
 * The first object, in the dynamic linker's order, that defines malloc and
 * belongs to `family` ("glibc", ...), or whichever serves malloc when
 * family is NULL; its family's name in *family_out ("custom": none of the
 * known ones).  0, -ENOENT (none), -EINVAL (no such family).
 */
int allocator__find(const struct target *t, const struct procmaps *maps, struct objcache *cache,
		    const char *family, const struct procmap **map, struct elfobj **obj,
		    const char **family_out);
/* at -v: each object's family and probe count, and the entry points it lacks */
void alloc_plan__log(const struct alloc_plan *plan);
void alloc_plan__free(struct alloc_plan *plan);
/*
 * Drop from plan the objects (and their points) some plan of known[]
 * has already (same path, same code address): what is left is what a
 * process mapped since.  Returns the objects left.
 */
size_t alloc_plan__keep_new(struct alloc_plan *plan, const struct alloc_plan *const *known,
			    size_t n_known);

#endif /* CULPERT_ALLOCATOR_H */
