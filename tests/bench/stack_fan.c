// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Bench workload: 2^DEPTH distinct allocation stacks (65536 by default).
 * fan_a() and fan_b() call each other DEPTH deep, the bits of i choosing
 * which at each level, and the leaf allocates and frees SIZE bytes: every
 * i is another call path.  One sweep of the paths at once, then one every
 * PERIOD seconds, so that profiling goes on while the profile is scraped.
 * Prints "pid N ready" first and "swept" after the first sweep.  With
 * "usr1" the first sweep waits for SIGUSR1 (not a second): a profiler that
 * must see every call is attached first.
 *   stack_fan [SIZE [PERIOD [DEPTH [usr1]]]]    (default 8192 bytes, 10 s, 16)
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noipa))
static int depth = 16;

static volatile unsigned long sink;
static unsigned long size = 8192;

static NOINLINE void fan_b(unsigned int i, int d);

static NOINLINE void leaf(void)
{
	char *p = malloc(size);

	sink += (unsigned long)p;
	free(p);
}

/* two functions of one body: which of them each level is makes the path */
#define FAN(name)							\
	static NOINLINE void name(unsigned int i, int d)		\
	{								\
		if (!d)							\
			leaf();						\
		else if (i & 1)						\
			fan_b(i >> 1, d - 1);				\
		else							\
			fan_a(i >> 1, d - 1);				\
		sink++;	/* no tail call: the frame stays on the stack */	\
	}
static NOINLINE void fan_a(unsigned int i, int d);
FAN(fan_a)
FAN(fan_b)

static void sweep(void)
{
	unsigned int i;

	for (i = 0; i < 1U << depth; i++)
		fan_a(i, depth);
}

int main(int argc, char **argv)
{
	unsigned int period = argc > 2 ? (unsigned int)strtoul(argv[2], NULL, 0) : 10;
	bool usr1 = argc > 4 && !strcmp(argv[4], "usr1");
	sigset_t set;
	int sig;

	if (argc > 1)
		size = strtoul(argv[1], NULL, 0);
	if (argc > 3)
		depth = (int)strtoul(argv[3], NULL, 0);
	if (depth < 1 || depth > 24)
		depth = 16;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	if (usr1)
		sigwait(&set, &sig);
	else
		sleep(1);
	sweep();
	printf("swept\n");
	fflush(stdout);
	for (;;) {
		sleep(period ? period : 1);
		sweep();
	}
}
