/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Names for unwound frames, for the unwinder's tests and tools. */
#ifndef CULPERT_TEST_FRAME_NAME_H
#define CULPERT_TEST_FRAME_NAME_H

#include <stdint.h>

#include "elfobj.h"
#include "objcache.h"
#include "procmaps.h"

/* the function containing runtime address pc ("" when unknown) and, in *map, its mapping */
static inline const char *frame_name(struct objcache *objs, const struct procmaps *maps,
				     uint64_t pc, const struct procmap **map)
{
	const struct procmap *m = procmaps__find(maps, pc);
	const struct elf_symbol *sym;
	struct elfobj *obj;
	uint64_t vaddr;

	if (map)
		*map = m;
	if (!m || !procmap__is_file(m))
		return "";
	obj = objcache__get(objs, m);
	if (!obj || elfobj__offset_to_vaddr(obj, pc - m->start + m->offset, &vaddr))
		return "";
	sym = elfobj__sym_by_addr(obj, vaddr);
	return sym ? sym->name : "";
}

#endif /* CULPERT_TEST_FRAME_NAME_H */
