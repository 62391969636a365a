// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A malloc/free-heavy workload: THREADS threads each doing OPS pairs of
 * malloc(16 B..4 KiB) + free.  Prints "pid N ready", waits for SIGUSR1 so a
 * profiler can attach first, then runs and prints "ns_per_op X" measured
 * from the first to the last operation.
 *
 *   malloc_bench THREADS OPS
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "../targets/ready.h"

static unsigned long ops;
static volatile unsigned long sink;

static void *worker(void *arg)
{
	unsigned int seed = (unsigned int)(unsigned long)arg * 2654435761U;
	unsigned long i;

	for (i = 0; i < ops; i++) {
		/* 16 B .. 4 KiB, log-uniform-ish: most allocations are small */
		size_t sz = (size_t)16 << (rand_r(&seed) % 9);
		char *p = malloc(sz + rand_r(&seed) % sz);

		p[0] = (char)i;
		sink += (unsigned long)p[0];
		free(p);
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long threads, t;
	pthread_t th[64];
	double t0, t1;

	if (argc != 3 || !(threads = strtoul(argv[1], NULL, 10)) || threads > 64 ||
	    !(ops = strtoul(argv[2], NULL, 10))) {
		fprintf(stderr, "usage: malloc_bench THREADS(1..64) OPS\n");
		return 2;
	}
	ready_then_wait(stdout);
	t0 = now();
	for (t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, worker, (void *)(t + 1));
	for (t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	t1 = now();
	printf("ns_per_op %.1f\n", (t1 - t0) / (double)(threads * ops));
	return 0;
}
