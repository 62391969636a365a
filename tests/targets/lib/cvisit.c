// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A plain C library that calls back into its caller, as qsort and event
 * loops do: built as C, it has no landing pads and mentions no C++ runtime,
 * yet a C++ callback's exception unwinds through visit()'s frame.
 */
#include <stddef.h>

void visit(void **items, size_t n, void (*cb)(void *));

__attribute__((noinline)) void visit(void **items, size_t n, void (*cb)(void *))
{
	size_t i;

	for (i = 0; i < n; i++)
		cb(items[i]);
}
