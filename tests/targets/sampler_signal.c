// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocation in a signal handler.  The main thread allocates, grows and
 * frees blocks whose contents it checks, while a 50 µs interval timer's
 * SIGALRM handler allocates, checks and frees blocks of its own and hands
 * some to the main thread to free.  The handler interrupts whatever the
 * main thread is doing, the sampler's slow paths included.  Run over an
 * allocator that blocks signals while it runs (tests/targets/lib/
 * sigmask_alloc.c): glibc's own malloc does not survive being re-entered.
 *
 *   sampler_signal [ITERATIONS]
 *
 * SIGUSR1 ends the loop early (a target profiled for as long as it takes).
 * Prints "signals S handler_allocs H" and "checks N failed M".  Every block
 * is freed by the end, so a sampler tracking sampled blocks ends empty.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define HANDOFF 64

static volatile sig_atomic_t signals, stop;
static unsigned long handler_allocs;
static void *volatile handoff[HANDOFF];
static unsigned long checks, failed;
static volatile unsigned long hchecks, hfailed;

static void expect(int ok)
{
	checks++;
	failed += !ok;
}

static int filled(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static void on_usr1(int sig)
{
	stop = 1;
}

static void on_alarm(int sig)
{
	unsigned int n = (unsigned int)signals++;
	size_t size = 16 + (n * 97) % 3000;
	unsigned char *p = malloc(size), *q;
	int saved = errno;

	hchecks++;
	if (!p) {
		hfailed++;
		return;
	}
	memset(p, 0x5a, size);
	q = realloc(p, size * 2);
	hchecks++;
	if (!q || !filled(q, size, 0x5a)) {
		hfailed++;
		free(q ? q : p);
		return;
	}
	handler_allocs++;
	/* every other block is left for the main thread to free */
	if (n % 2 && !handoff[n % HANDOFF])
		handoff[n % HANDOFF] = q;
	else
		free(q);
	errno = saved;
}

int main(int argc, char **argv)
{
	unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	struct itimerval tv = { { 0, 50 }, { 0, 50 } };
	struct sigaction sa;
	char line[128];
	int n;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	setitimer(ITIMER_REAL, &tv, NULL);
	for (unsigned long i = 0; i < iterations && !stop; i++) {
		size_t size = 8 + (i * 131) % 5000;
		unsigned char *p = malloc(size), *q;
		void *h;

		expect(p != NULL);
		if (!p)
			continue;
		memset(p, (unsigned char)i, size);
		q = i % 3 ? realloc(p, size + 100) : p;
		expect(q && filled(q, size, (unsigned char)i));
		free(q ? q : p);
		h = handoff[i % HANDOFF];
		if (h) {
			handoff[i % HANDOFF] = NULL;
			free(h);
		}
	}
	tv.it_interval.tv_usec = tv.it_value.tv_usec = 0;
	setitimer(ITIMER_REAL, &tv, NULL);
	for (int i = 0; i < HANDOFF; i++)
		free(handoff[i]);
	/* not stdio: its buffer would stay allocated, and the sampler tracking it */
	n = snprintf(line, sizeof(line), "signals %d handler_allocs %lu\nchecks %lu failed %lu\n",
		     (int)signals, handler_allocs, checks + hchecks, failed + hfailed);
	if (write(1, line, (size_t)n) != n)
		return 3;
	return failed || hfailed;
}
