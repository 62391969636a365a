// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocation in start-up: a library constructor (lib/sampler_early_lib.c)
 * and the program's own constructors, the earliest at priority 101,
 * allocate, grow and free before main.  Built twice: plainly, for
 * LD_PRELOAD=libculpert-sampler.so, and as sampler_early_linked, with the
 * sampler linked after the library (tests via ldd which comes first).
 * main frees what the constructors kept.
 *
 * Prints "sampler present|absent" (the published page is found or not),
 * "early events E" (sampled calls before main, from the page: at rate 1
 * at least the 8 calls of the constructors), and
 * "checks N failed M".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <culpert/sampler.h>

extern unsigned long early_lib_failed;
extern char *early_lib_kept;

static unsigned long checks, failed;
static char *kept[3];

static void expect(int ok)
{
	checks++;
	failed += !ok;
}

static void early(int i, const char *text)
{
	char *p = malloc(strlen(text) + 1);

	expect(p != NULL);
	if (!p)
		return;
	strcpy(p, text);
	kept[i] = realloc(p, 10000);
	expect(kept[i] && !strcmp(kept[i], text));
}

__attribute__((constructor(101))) static void first(void)
{
	early(0, "constructor 101");
}

__attribute__((constructor)) static void second(void)
{
	early(1, "constructor");
}

int main(void)
{
	const struct culpert_sampler_page *pg = dlsym(RTLD_DEFAULT, "culpert_sampler_page");
	/* before stdio allocates its buffer */
	unsigned long long events = pg ? pg->events : 0;

	early(2, "main");
	expect(!early_lib_failed);
	expect(early_lib_kept && !strcmp(early_lib_kept, "allocated by a library constructor"));
	expect(!strcmp(kept[0], "constructor 101") && !strcmp(kept[1], "constructor"));
	for (int i = 0; i < 3; i++)
		free(kept[i]);
	free(early_lib_kept);
	printf("sampler %s\n", pg ? "present" : "absent");
	if (pg)
		printf("early events %llu\n", events);
	printf("checks %lu failed %lu\n", checks, failed);
	return failed != 0;
}
