// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>

#include "elfobj.h"
#include "symbolize.h"

int symbolize_vaddr(struct elfobj *obj, uint64_t vaddr, struct sym_frame *out, int max)
{
	const struct elf_symbol *sym;

	if (!obj || max < 1)
		return 0;
	sym = elfobj__sym_by_addr(obj, vaddr);
	if (!sym)
		return 0;
	memset(out, 0, sizeof(*out));
	out->name = sym->name;
	out->system_name = sym->name;
	out->file = "";
	return 1;
}
