// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A stack that holds libc's __restore_rt and no signal frame: sigaction()
 * hands back an action with sa_restorer set to __restore_rt, and a program
 * that keeps it to restore later (main() here) carries the address in a
 * live frame, as CPython's interpreter was seen to.  work() allocates,
 * fills, checks and frees blocks until SIGUSR1, and prints "rounds N
 * checks N failed N".  With "handler", the counterpart: it waits for
 * SIGUSR1 inside a SIGUSR2 handler, on a real signal frame, once it has
 * printed "in handler".
 *   inject_stale [handler]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noipa))

static volatile sig_atomic_t stop;

static void on_usr1(int sig)
{
	stop = 1;
}

static void on_usr2(int sig)
{
	static const char line[] = "in handler\n";

	if (write(1, line, sizeof(line) - 1) < 0)
		_exit(3);
	while (!stop)
		pause();
}

static NOINLINE unsigned long work(unsigned long *checks, unsigned long *failed)
{
	unsigned long rounds = 0;

	while (!stop) {
		size_t size = 16 + (rounds * 131) % 4000;
		unsigned char *p = malloc(size);

		++*checks;
		if (!p) {
			++*failed;
			continue;
		}
		memset(p, (int)(rounds & 0xff), size);
		*failed += p[size - 1] != (unsigned char)(rounds & 0xff);
		free(p);
		rounds++;
	}
	return rounds;
}

int main(int argc, char **argv)
{
	unsigned long checks = 0, failed = 0, rounds;
	struct sigaction sa, now;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	/* the action as the kernel holds it: with libc's restorer */
	sigaction(SIGUSR1, NULL, &now);
	if (argc > 1 && !strcmp(argv[1], "handler")) {
		sa.sa_handler = on_usr2;
		sigaction(SIGUSR2, &sa, NULL);
		raise(SIGUSR2);
	}
	rounds = work(&checks, &failed);
	sigaction(SIGUSR1, &now, NULL);
	printf("rounds %lu checks %lu failed %lu\n", rounds, checks, failed);
	return failed != 0;
}
