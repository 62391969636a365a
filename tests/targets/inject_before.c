// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Blocks from before an injection and after it, in known numbers.
 * f_before() allocates 2000 blocks of 1000 bytes and keeps them; prints
 * "pid N ready" and waits for SIGUSR1 (the injection and the attach are
 * done by then); frees 1000 of the old blocks (the real allocator must
 * take them back untouched), then f_kept() allocates 300 blocks of 3000
 * bytes and keeps them, f_freed() allocates and frees 500 of 700 bytes.
 * Prints "total FN BYTES CALLS" for the two, "live FN BYTES CALLS" and
 * "done", and sleeps until killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ready.h"

#define NOINLINE __attribute__((noipa))

static void *before[2000], *kept[300];
/* through a volatile: the compiler may drop a malloc whose block is only freed */
static void *volatile sink;

static NOINLINE void f_before(void)
{
	for (int i = 0; i < 2000; i++) {
		before[i] = malloc(1000);
		memset(before[i], 1, 1000);
	}
}

static NOINLINE void f_kept(void)
{
	for (int i = 0; i < 300; i++) {
		kept[i] = malloc(3000);
		memset(kept[i], 2, 3000);
	}
}

static NOINLINE void f_freed(void)
{
	for (int i = 0; i < 500; i++) {
		sink = malloc(700);
		free(sink);
	}
}

int main(void)
{
	f_before();
	ready_then_wait(stdout);
	for (int i = 0; i < 2000; i += 2)
		free(before[i]);
	f_kept();
	f_freed();
	printf("total f_kept %d %d\ntotal f_freed %d %d\nlive f_kept %d %d\ndone\n",
	       300 * 3000, 300, 500 * 700, 500, 300 * 3000, 300);
	fflush(stdout);
	for (;;)
		pause();
}
