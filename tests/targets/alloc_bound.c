// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An allocation-bound program that reports its own throughput, for the
 * overhead budget: each op frees the block RING ops older and allocates
 * one of SIZE bytes in ring_block(), so RING blocks of SIZE bytes are
 * always live (RING 1: a malloc and the previous block's free, the tight
 * loop).  OPS_PER_S 0 runs flat out, else ops are paced on absolute
 * deadlines.  Prints "pid N ready", then runs; every SIGUSR1 prints
 * "ops COUNT ns CLOCK_MONOTONIC cpu CLOCK_PROCESS_CPUTIME_ID" (one line,
 * flushed): ops per second of its own CPU is its throughput whatever else
 * runs on the machine.
 *   alloc_bound [OPS_PER_S [RING [SIZE]]]    (default 0, 1, 64)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noipa))
#define PACE_EVERY 64

static volatile sig_atomic_t report;
static volatile unsigned long sink;

static void on_usr1(int sig)
{
	report = 1;
}

static NOINLINE void *ring_block(unsigned long size)
{
	void *p = malloc(size);

	sink += (unsigned long)p;
	return p;
}

static unsigned long long clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* with OPS_PER_S, sleep until op n is due */
static void pace(unsigned long long n, unsigned long rate, unsigned long long t0)
{
	unsigned long long due = t0 + n * 1000000000ULL / rate;
	struct timespec ts = { .tv_sec = (time_t)(due / 1000000000ULL),
			       .tv_nsec = (long)(due % 1000000000ULL) };

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

int main(int argc, char **argv)
{
	unsigned long rate = argc > 1 ? strtoul(argv[1], NULL, 0) : 0;
	unsigned long ring = argc > 2 ? strtoul(argv[2], NULL, 0) : 1;
	unsigned long size = argc > 3 ? strtoul(argv[3], NULL, 0) : 64;
	unsigned long long n = 0, t0;
	void **slots;

	if (!ring || !size || !(slots = calloc(ring, sizeof(*slots))))
		return 2;
	signal(SIGUSR1, on_usr1);
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	t0 = clock_ns(CLOCK_MONOTONIC);
	for (;; n++) {
		free(slots[n % ring]);
		slots[n % ring] = ring_block(size);
		if (report) {
			report = 0;
			printf("ops %llu ns %llu cpu %llu\n", n, clock_ns(CLOCK_MONOTONIC),
			       clock_ns(CLOCK_PROCESS_CPUTIME_ID));
			fflush(stdout);
		}
		if (rate && n % PACE_EVERY == 0)
			pace(n, rate, t0);
	}
}
