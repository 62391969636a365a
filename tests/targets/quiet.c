// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A process that allocates little or nothing while it is profiled.
 *
 *   quiet           never calls malloc itself (it does not even import it):
 *                   after SIGUSR1 prints "done" and sleeps until killed
 *   quiet_little N  (built with -DQUIET_ALLOCS) after SIGUSR1 allocates N
 *                   blocks of 64 bytes (kept), then the same: far less than
 *                   one sampling interval
 *   quiet_static_stripped   quiet, static and stripped: no symbol table to
 *                   find the malloc linked into it by
 *
 * Prints "pid N ready" first (stdio's buffer is allocated then, before any
 * profiler attaches).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))

#ifdef QUIET_ALLOCS
static void *volatile sink;

static NOINLINE void little(long n)
{
	long i;

	for (i = 0; i < n; i++)
		sink = malloc(64);
}
#endif

int main(int argc, char **argv)
{
	struct timespec hour = { 3600, 0 };

	ready_then_wait(stdout);
#ifdef QUIET_ALLOCS
	if (argc > 1)
		little(atol(argv[1]));
#endif
	printf("done\n");
	fflush(stdout);
	for (;;)
		nanosleep(&hour, NULL);
}
