// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --span-fn on a recursive function: level k of descend() allocates k
 * blocks of 4 KiB, so the span path of k nested "descend" spans must hold
 * exactly k * 4 KiB * ROUNDS.  A longjmp out of the deepest level then skips
 * five returns; the allocation after it must be outside any span.
 * Same protocol as the other targets ("pid N ready", SIGUSR1, "total ...").
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define LEVELS 5
#define ROUNDS 10

static volatile unsigned long sink;
static jmp_buf escape;

static NOINLINE void alloc_blocks(int n)
{
	for (int i = 0; i < n; i++) {
		char *p = malloc(4096);

		sink += (unsigned long)p;
		free(p);
	}
}

static NOINLINE void descend(int level, int jump)
{
	alloc_blocks(level);
	if (level < LEVELS)
		descend(level + 1, jump);
	else if (jump)
		longjmp(escape, 1);
	sink++;		/* not a tail call */
}

int main(void)
{
	int r;

	ready_then_wait(stdout);

	for (r = 0; r < ROUNDS; r++)
		descend(1, 0);
	if (!setjmp(escape))
		descend(1, 1);
	alloc_blocks(7);
	for (int k = 1; k <= LEVELS; k++) {
		printf("total ");
		for (int i = 0; i < k; i++)
			printf("%sdescend", i ? ";" : "");
		/* ROUNDS clean descents plus the one that jumped out */
		printf(" %d\n", k * 4096 * (ROUNDS + 1));
	}
	printf("total (no-span) %d\n", 7 * 4096);
	return 0;
}
