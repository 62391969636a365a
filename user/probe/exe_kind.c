// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "elfobj.h"
#include "exe_kind.h"
#include "objcache.h"
#include "procmaps.h"
#include "readfile.h"
#include "target.h"

bool exe_kind__is_go(struct elfobj *obj)
{
	Elf *elf = obj ? elfobj__elf(obj) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid"))
			return true;
	}
	return false;
}

const struct procmap *exe_kind__exe_mapping(const struct target *t, const struct procmaps *maps)
{
	size_t i;

	/* by inode: the path in maps and /proc/PID/exe may differ in a container */
	for (i = 0; i < maps->n; i++)
		if (maps->v[i].executable && t->exe_ino && maps->v[i].inode == t->exe_ino)
			return &maps->v[i];
	for (i = 0; i < maps->n; i++)
		if (maps->v[i].executable && !strcmp(maps->v[i].path, t->exe))
			return &maps->v[i];
	return NULL;
}

static bool is_allocator_object(const struct alloc_plan *plan, const struct procmap *m)
{
	size_t i;

	for (i = 0; i < plan->n_objects; i++)
		if (!strcmp(plan->objects[i].path, m->path))
			return true;
	return false;
}

bool exe_kind__calls_allocator(const struct procmaps *maps, struct objcache *objs,
			       const struct alloc_plan *plan)
{
	const char **names = calloc(plan->n_points ?: 1, sizeof(*names));
	bool found = false;
	size_t i;

	/* out of memory proves nothing: say it calls it */
	if (!names)
		return true;
	for (i = 0; i < plan->n_points; i++)
		names[i] = plan->points[i].symbol;
	for (i = 0; i < maps->n && !found; i++) {
		const struct procmap *m = &maps->v[i];
		struct elfobj *obj;

		if (!m->executable || !procmap__is_file(m) || is_allocator_object(plan, m))
			continue;
		obj = objcache__get(objs, m);
		found = obj && elfobj__mentions_any(obj, names, plan->n_points);
	}
	free(names);
	return found;
}

static bool defines_function(struct elfobj *obj, const char *name)
{
	const struct elf_symbol *sym = obj ? elfobj__sym_by_name(obj, name) : NULL;

	return sym && sym->value;
}

/* PYTHONMALLOC=malloc or malloc_debug in the process's environment: every object is malloc's */
static bool python_uses_malloc(pid_t pid)
{
	char path[40], *env, *p;
	size_t len;
	bool yes = false;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if (read_file_at(AT_FDCWD, path, &env, &len))
		return false;
	for (p = env; p < env + len; p += strlen(p) + 1)
		if (!strcmp(p, "PYTHONMALLOC=malloc") || !strcmp(p, "PYTHONMALLOC=malloc_debug"))
			yes = true;
	free(env);
	return yes;
}

bool exe_kind__pymalloc(pid_t pid, const struct procmaps *maps, struct objcache *objs)
{
	const char *base;
	size_t i;

	for (i = 0; i < maps->n; i++) {
		const struct procmap *m = &maps->v[i];

		if (!m->executable || !path_is_file(m->path))
			continue;
		base = strrchr(m->path, '/');
		base = base ? base + 1 : m->path;
		/* python3.11, libpython3.11.so.1.0: where CPython's allocator lives */
		if (strncmp(base, "python", 6) && strncmp(base, "libpython", 9))
			continue;
		if (defines_function(objcache__get(objs, m), "PyObject_Malloc"))
			return !python_uses_malloc(pid);
	}
	return false;
}
