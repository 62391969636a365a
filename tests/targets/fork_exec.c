// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A target that forks and execs while profiled: the parent allocates in
 * before_fork(), a child allocates and exits 0, then the parent execs
 * /bin/sh, which exits 0 in turn.  The profiler must write what it saw and
 * harm nobody.  Prints "child ok" when the child exited cleanly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ready.h"

#define NOINLINE __attribute__((noipa))

static volatile unsigned long sink;

static NOINLINE void before_fork(void)
{
	for (int i = 0; i < 20000; i++) {
		char *p = malloc(256);

		sink += (unsigned long)p;
		free(p);
	}
}

static NOINLINE void in_child(void)
{
	for (int i = 0; i < 20000; i++) {
		char *p = malloc(512);

		sink += (unsigned long)p;
		free(p);
	}
}

int main(void)
{
	int status;
	pid_t c;

	ready_then_wait(stdout);
	before_fork();
	c = fork();
	if (c == 0) {
		in_child();
		_exit(0);
	}
	waitpid(c, &status, 0);
	printf("child %s\n", WIFEXITED(status) && !WEXITSTATUS(status) ? "ok" : "failed");
	fflush(stdout);
	execl("/bin/sh", "sh", "-c", "echo exec ok", (char *)NULL);
	return 1;
}
