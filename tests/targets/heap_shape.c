// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The two shapes of heap behind "why is RSS bigger than my heap?".
 *
 *   heap_shape fragment   allocates N blocks of SIZE bytes, then frees every
 *                         other one: half the bytes stay live, but no freed
 *                         block borders another, so malloc can return none
 *                         of them and the RSS stays -- a large gap
 *   heap_shape compact    allocates the same blocks and keeps them all: the
 *                         heap is as big as what is live -- a small gap
 *
 * Options after the mode: N (default 65536) and SIZE (default 1000 bytes,
 * so malloc's 8-byte chunk header is under 1%).  Prints "pid N ready",
 * waits for SIGUSR1 (so the profiler can attach first), runs, prints
 * "live <bytes> <blocks>" and "done", then waits until killed so its memory
 * can still be read.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))

static char **blocks;

static NOINLINE void fill(unsigned long n, size_t size)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		blocks[i] = malloc(size);
		if (!blocks[i])
			exit(1);
		/* make every page resident, as a real heap in use is */
		memset(blocks[i], 1, size);
	}
}

static NOINLINE void free_every_other(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i += 2) {
		free(blocks[i]);
		blocks[i] = NULL;
	}
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 65536;
	size_t size = argc > 3 ? strtoul(argv[3], NULL, 0) : 1000;
	int fragment = argc > 1 && !strcmp(argv[1], "fragment");
	unsigned long live;

	if (argc < 2 || (!fragment && strcmp(argv[1], "compact")) || !n || !size) {
		fprintf(stderr, "usage: heap_shape fragment|compact [N] [SIZE]\n");
		return 2;
	}
	/* the pointer array is one mmapped block, outside the heap being measured */
	blocks = calloc(n, sizeof(*blocks));
	if (!blocks)
		return 1;
	setvbuf(stdout, NULL, _IONBF, 0);
	ready_then_wait(stdout);
	fill(n, size);
	if (fragment)
		free_every_other(n);
	live = fragment ? n / 2 : n;
	printf("live %lu %lu\ndone\n", live * size, live);
	for (;;)
		pause();
}
