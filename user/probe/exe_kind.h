/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What kind of program a process runs, as far as it decides whether
 * probing the C allocator can see its allocations: a Go program (its
 * runtime allocates without malloc), a program whose objects never call the
 * probed entry points, a static executable without a symbol table.
 */
#ifndef CULPERT_EXE_KIND_H
#define CULPERT_EXE_KIND_H

#include <stdbool.h>
#include <sys/types.h>

struct alloc_plan;
struct elfobj;
struct objcache;
struct procmap;
struct procmaps;
struct target;

/* a Go program: a .go.buildinfo section or a Go build ID note (both survive stripping) */
bool exe_kind__is_go(struct elfobj *obj);
/* the executable's mapping; NULL when the target's maps do not show it */
const struct procmap *exe_kind__exe_mapping(const struct target *t, const struct procmaps *maps);
/*
 * Does any mapped object besides the allocator's own name one of the plan's
 * entry points (an import, for a dynamic object)?  When none does, only the
 * allocator's library calls them, for its own needs.
 */
bool exe_kind__calls_allocator(const struct procmaps *maps, struct objcache *objs,
			       const struct alloc_plan *plan);

/*
 * CPython with its own small-object allocator: an executable or libpython
 * mapped that defines PyObject_Malloc.  Objects of 512 bytes or less come
 * from pymalloc's arenas (256 KiB mmaps), never from malloc, unless the
 * process was started with PYTHONMALLOC=malloc.
 */
bool exe_kind__pymalloc(pid_t pid, const struct procmaps *maps, struct objcache *objs);

#endif /* CULPERT_EXE_KIND_H */
