// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cost of a span site: LOOPS span enter+exit pairs (a fixed name, as a
 * request handler has) and, for the baseline, LOOPS turns of the same loop
 * without them.  Prints "pid N ready", waits for SIGUSR1 (a profiler may
 * attach first), then "ns_per_pair X" and "ns_per_empty_turn Y".
 *   span_bench LOOPS
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <culpert/span.h>
#include "../targets/ready.h"

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static __attribute__((noipa)) void pairs(unsigned long loops)
{
	unsigned long i;

	for (i = 1; i <= loops; i++) {
		CULPERT_SPAN_ENTER(i, 0, "bench_span", 10);
		sink += i;
		CULPERT_SPAN_EXIT(i);
	}
}

static __attribute__((noipa)) void empty(unsigned long loops)
{
	unsigned long i;

	for (i = 1; i <= loops; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	unsigned long loops = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	double t0, t1, t2;

	if (!loops) {
		fprintf(stderr, "usage: span_bench LOOPS\n");
		return 2;
	}
	ready_then_wait(stdout);
	t0 = now();
	pairs(loops);
	t1 = now();
	empty(loops);
	t2 = now();
	printf("ns_per_pair %.3f\nns_per_empty_turn %.3f\n", (t1 - t0) / (double)loops,
	       (t2 - t1) / (double)loops);
	return 0;
}
