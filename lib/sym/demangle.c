// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

char *demangle(const char *sym, bool params)
{
	char *d = NULL;

	/* only mangled names: libiberty would otherwise try a GNU v2 reading of plain C names */
	if (!strncmp(sym, "_Z", 2) || !strncmp(sym, "_R", 2))
		d = cplus_demangle(sym, DMGL_ANSI | (params ? DMGL_PARAMS : 0));
	return d ? d : strdup(sym);
}
