// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ground truth for the sampler: a(), b() and c() allocate known totals with
 * different size mixes, a() and b() on threads of their own.  Prints its pid
 * and "ready", waits for SIGUSR1 (so the profiler can attach first), runs,
 * prints "total <fn> <bytes> <calls>" for each function and exits.
 *
 *   alloc_abc [SCALE]   SCALE multiplies every total (default 1)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))

struct total {
	unsigned long long bytes, calls;
};

static unsigned long scale = 1;
static struct total ta, tb, tc;
static volatile unsigned long sink;

/* far below any test rate: 16 and 64 bytes, 32 MiB in all */
static NOINLINE void a(struct total *t)
{
	unsigned long i, n = 32UL * 1024 * 1024 / 80 * scale;

	for (i = 0; i < n; i++) {
		char *p = malloc(16), *q = malloc(64);

		sink += (unsigned long)p ^ (unsigned long)q;
		free(p);
		free(q);
		t->bytes += 80;
		t->calls += 2;
	}
}

/* around the rate: 1..16 KiB, 48 MiB in all */
static NOINLINE void b(struct total *t)
{
	unsigned long long want = 48ULL * 1024 * 1024 * scale;
	unsigned long i = 0;

	while (t->bytes < want) {
		size_t sz = 1024 * (1 + i++ % 16);
		char *p = malloc(sz);

		sink += (unsigned long)p;
		free(p);
		t->bytes += sz;
		t->calls++;
	}
}

/* far above the rate: 256 KiB and 1 MiB, 60 MiB in all */
static NOINLINE void c(struct total *t)
{
	unsigned long i, n = 48UL * scale;

	for (i = 0; i < n; i++) {
		char *p = malloc(256 * 1024), *q = malloc(1024 * 1024);

		sink += (unsigned long)p ^ (unsigned long)q;
		free(p);
		free(q);
		t->bytes += 1280 * 1024;
		t->calls += 2;
	}
}

static void *run_a(void *arg)
{
	a(&ta);
	return NULL;
}

static void *run_b(void *arg)
{
	b(&tb);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tha, thb;

	if (argc > 1)
		scale = strtoul(argv[1], NULL, 10);
	ready_then_wait(stdout);

	pthread_create(&tha, NULL, run_a, NULL);
	pthread_create(&thb, NULL, run_b, NULL);
	c(&tc);
	pthread_join(tha, NULL);
	pthread_join(thb, NULL);
	printf("total a %llu %llu\n", ta.bytes, ta.calls);
	printf("total b %llu %llu\n", tb.bytes, tb.calls);
	printf("total c %llu %llu\n", tc.bytes, tc.calls);
	return 0;
}
