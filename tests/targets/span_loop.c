// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Spans entered and exited as fast as a loop goes, from before the profiler
 * attaches until killed: each "tick" span allocates 4 KiB and is closed.
 * No span is ever inside another, so a profile that shows tick;tick kept a
 * span whose exit it missed (an exit probe attached after the enter one).
 * Prints "pid N ready" once looping.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <culpert/span.h>

#define NOINLINE __attribute__((noipa))

static void *volatile sink;

static NOINLINE void tick(void)
{
	uint64_t id = culpert_span_enter("tick", 0);

	sink = malloc(4096);
	free(sink);
	culpert_span_exit(id);
}

int main(void)
{
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	for (;;)
		tick();
}
