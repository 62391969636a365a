// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ground truth for exact span totals: every allocator call after SIGUSR1 is
 * known, and counted here as it is made.
 *   outside any span     100 x malloc(1000)
 *   request (200 times)  instance i: i x malloc(1000) itself, then
 *   request;db           3 x malloc(512)   -> bytes per request 1000 i + 1536
 *   fill                 5 x calloc(10, 100)
 *   an exit of an id never entered (ignored)
 *   leaked               a thread that allocates 7 x malloc(4000) inside it
 *                        and exits without closing it (created before
 *                        SIGUSR1, so its start allocates nothing seen)
 *   still_open           entered last, 9 x malloc(300), never closed: the
 *                        program says "done" and waits to be killed
 * Prints "exact PATH SELF_BYTES SELF_CALLS INCL_BYTES INCL_CALLS INSTANCES
 * OPEN", "outside BYTES CALLS" and "spread PATH P50 P99 MAX" (nearest rank)
 * before entering still_open.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <culpert/span.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define REQUESTS 200

static volatile unsigned long sink;
static unsigned long bytes, calls;	/* since the last take() */
static pthread_mutex_t go = PTHREAD_MUTEX_INITIALIZER;

static NOINLINE void m(size_t n, unsigned long k)
{
	unsigned long i;

	for (i = 0; i < k; i++) {
		char *p = malloc(n);

		sink += (unsigned long)p;
		free(p);
	}
	bytes += n * k;
	calls += k;
}

static void take(unsigned long *b, unsigned long *c)
{
	*b += bytes, *c += calls;
	bytes = calls = 0;
}

static void *leaker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&go);
	culpert_span_enter("leaked", 0);
	/* its own counts: this thread's m() calls do not touch main's */
	for (int i = 0; i < 7; i++) {
		char *p = malloc(4000);

		sink += (unsigned long)p;
		free(p);
	}
	pthread_mutex_unlock(&go);
	return NULL;
}

int main(void)
{
	unsigned long out_b = 0, out_c = 0, rq_b = 0, rq_c = 0, db_b = 0, db_c = 0, f_b = 0, f_c = 0;
	pthread_t th;
	int i;

	pthread_mutex_lock(&go);
	pthread_create(&th, NULL, leaker, NULL);
	ready_then_wait(stdout);

	m(1000, 100);
	take(&out_b, &out_c);
	for (i = 1; i <= REQUESTS; i++) {
		uint64_t r = culpert_span_enter("request", 0), d;

		m(1000, (unsigned long)i);
		take(&rq_b, &rq_c);
		d = culpert_span_enter("db", 0);
		m(512, 3);
		take(&db_b, &db_c);
		culpert_span_exit(d);
		culpert_span_exit(r);
	}
	{
		uint64_t f = culpert_span_enter("fill", 0);

		for (i = 0; i < 5; i++)
			sink += (unsigned long)calloc(10, 100);
		f_b = 5000, f_c = 5;
		culpert_span_exit(f);
	}
	culpert_span_exit(0x7777777777ULL);
	pthread_mutex_unlock(&go);
	pthread_join(th, NULL);

	printf("outside %lu %lu\n", out_b, out_c);
	printf("exact request %lu %lu %lu %lu %d 0\n", rq_b, rq_c, rq_b + db_b, rq_c + db_c,
	       REQUESTS);
	printf("exact request;db %lu %lu %lu %lu %d 0\n", db_b, db_c, db_b, db_c, REQUESTS);
	printf("exact fill %lu %lu %lu %lu 1 0\n", f_b, f_c, f_b, f_c);
	printf("exact leaked 28000 7 28000 7 0 1\n");
	printf("exact still_open 2700 9 2700 9 0 1\n");
	/* bytes per request 1000 i + 1536: nearest ranks 100, 198, 200 */
	printf("spread request %d %d %d\n", 1000 * 100 + 1536, 1000 * 198 + 1536,
	       1000 * REQUESTS + 1536);
	culpert_span_enter("still_open", 0);
	m(300, 9);
	printf("done\n");
	fflush(stdout);
	pause();
	return 0;
}
