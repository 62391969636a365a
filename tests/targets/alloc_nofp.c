// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Built WITHOUT frame pointers (-O2 -fomit-frame-pointer, see
 * tests/Makefile.inc): chain_a -> chain_b -> chain_c -> malloc, none
 * inlined, each with a frame of its own; then deep() recursing 24 levels
 * with 512 bytes of stack each, for stacks longer than a small copy.
 * Prints "pid N ready", waits for SIGUSR1, prints "done" and exits.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))

static volatile unsigned long sink;

static NOINLINE void chain_c(int i)
{
	char pad[64];
	char *p;

	memset(pad, i, sizeof(pad));
	p = malloc(64 + (size_t)(i % 64));
	sink += (unsigned long)p + (unsigned long)pad[i % 64];
	free(p);
}

static NOINLINE void chain_b(int i)
{
	char pad[128];

	memset(pad, i, sizeof(pad));
	chain_c(i);
	sink += (unsigned long)pad[i % 128];
}

static NOINLINE void chain_a(int i)
{
	char pad[32];

	memset(pad, i, sizeof(pad));
	chain_b(i);
	sink += (unsigned long)pad[i % 32];
}

static NOINLINE void deep(int level)
{
	char pad[512];

	memset(pad, level, sizeof(pad));
	if (level < 24) {
		deep(level + 1);
	} else {
		char *p = malloc(4096);

		sink += (unsigned long)p;
		free(p);
	}
	sink += (unsigned long)pad[level];
}

int main(void)
{
	int i;

	ready_then_wait(stdout);
	for (i = 0; i < 200000; i++)
		chain_a(i);
	for (i = 0; i < 2000; i++)
		deep(0);
	printf("done\n");
	return 0;
}
