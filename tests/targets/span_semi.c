// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Span names holding the span path's separator and its escape: "semi;colon"
 * (one span, not two) with a child "frame", and a root "back\slash".  Each
 * allocates a known number of 1000-byte blocks:
 *   semi;colon 2 MB self, semi;colon > frame 1 MB, back\slash 4 MB.
 * Prints "pid N ready", waits for SIGUSR1, runs, exits 0.
 */
#include <stdio.h>
#include <stdlib.h>

#include <culpert/span.h>

#include "ready.h"

#define NOINLINE __attribute__((noipa))

static volatile unsigned long sink;

static NOINLINE void alloc_blocks(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		char *p = malloc(1000);

		sink += (unsigned long)p;
		free(p);
	}
}

static NOINLINE void frame(void)
{
	CULPERT_SPAN_SCOPE("frame");
	alloc_blocks(1000);
}

static NOINLINE void semicolon(void)
{
	CULPERT_SPAN_SCOPE("semi;colon");
	alloc_blocks(2000);
	frame();
}

static NOINLINE void backslash(void)
{
	CULPERT_SPAN_SCOPE("back\\slash");
	alloc_blocks(4000);
}

int main(void)
{
	ready_then_wait(stdout);
	semicolon();
	backslash();
	return 0;
}
