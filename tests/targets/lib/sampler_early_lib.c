// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A library whose constructor allocates: linked into
 * tests/targets/sampler_early, it is initialised before the program, and
 * before libculpert-sampler.so when that is linked (not preloaded) after
 * it, so its allocations are among the process's first.
 */
#include <stdlib.h>
#include <string.h>

unsigned long early_lib_failed;
char *early_lib_kept;

__attribute__((constructor)) static void early_lib_init(void)
{
	char *s = strdup("allocated by a library constructor");
	void *a = NULL;

	early_lib_kept = realloc(s, 4096);
	if (!early_lib_kept || strcmp(early_lib_kept, "allocated by a library constructor"))
		early_lib_failed++;
	if (posix_memalign(&a, 64, 1000) || (unsigned long)a % 64)
		early_lib_failed++;
	free(a);
	a = calloc(100, 10);
	for (int i = 0; a && i < 1000; i++)
		early_lib_failed += ((char *)a)[i] != 0;
	free(a);
}
