// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A paced allocation workload: RATE malloc(64) + free a second, for SECONDS
 * seconds, each from five calls deep (frame pointers kept, so --unwind fp
 * and --unwind dwarf see the same stacks).  Profiled at --rate 1 every
 * allocation is a sample, so RATE is the sample rate.  Prints "pid N
 * ready", waits for SIGUSR1, runs, then prints "allocs N" and "cpu_ns N"
 * (its own CPU time, where the BPF programs' work is charged).
 *
 *   paced_alloc RATE SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include "../targets/ready.h"

static volatile unsigned long sink;

__attribute__((noinline)) static void level5(void)
{
	char *p = malloc(64);

	p[0] = 1;
	sink += (unsigned long)p[0];
	free(p);
}

__attribute__((noinline)) static void level4(void) { level5(); sink++; }
__attribute__((noinline)) static void level3(void) { level4(); sink++; }
__attribute__((noinline)) static void level2(void) { level3(); sink++; }
__attribute__((noinline)) static void level1(void) { level2(); sink++; }

static long long ns(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long rate, seconds, done = 0, due, i;
	struct timespec start, now, next;
	struct rusage ru;
	long long elapsed;

	if (argc != 3 || !(rate = strtoul(argv[1], NULL, 10)) || rate > 1000000 ||
	    !(seconds = strtoul(argv[2], NULL, 10))) {
		fprintf(stderr, "usage: paced_alloc RATE(1..1000000) SECONDS\n");
		return 2;
	}
	ready_then_wait(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	next = start;
	/* every millisecond, catch up with the allocations due by now */
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed = ns(&now) - ns(&start);
		if (elapsed >= (long long)seconds * 1000000000LL)
			break;
		due = (unsigned long)((double)rate * (double)elapsed / 1e9);
		for (i = done; i < due; i++)
			level1();
		done = due;
		next.tv_nsec += 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("allocs %lu\n", done);
	printf("cpu_ns %lld\n", (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
				 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL);
	return 0;
}
