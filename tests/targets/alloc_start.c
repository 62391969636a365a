// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocation from the first lines of main, then an exit: what a program a
 * profiler picks up at its exec must be seen from (tests/agent/test_pickup.sh).
 * at_start() allocates 512 blocks of 4096 bytes, keeps them and returns;
 * the program prints "total at_start ALLOCATED LIVE" and exits at once.
 *
 * With "fork": prints "pid N ready", waits for SIGUSR1, forks; the child
 * runs at_start() right away and exits; the parent prints "child PID",
 * waits for it, prints "done" and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define BLOCKS 512
#define SIZE 4096

static void *keep[BLOCKS];

static NOINLINE void at_start(void)
{
	for (int i = 0; i < BLOCKS; i++) {
		keep[i] = malloc(SIZE);
		memset(keep[i], i, SIZE);
	}
}

int main(int argc, char **argv)
{
	int status;
	pid_t c;

	if (argc < 2 || strcmp(argv[1], "fork")) {
		at_start();
		printf("total at_start %d %d\n", BLOCKS * SIZE, BLOCKS * SIZE);
		return 0;
	}
	ready_then_wait(stdout);
	c = fork();
	if (c == 0) {
		at_start();
		_exit(0);
	}
	printf("child %d\n", (int)c);
	fflush(stdout);
	if (c < 0 || waitpid(c, &status, 0) != c || !WIFEXITED(status))
		return 1;
	printf("done\n");
	return 0;
}
