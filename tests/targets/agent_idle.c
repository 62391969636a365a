// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An idle process for the agent's tests: says "pid N ready" and waits to be
 * killed.  Options, in order:
 *   --forks N     first fork N children (no exec), each printing "child PID"
 *   --rename NAME then set its comm to NAME (prctl): only a /proc rescan can
 *                 notice, no exec happens
 * Its comm is its file name: the tests run copies with names of their own.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

int main(int argc, char **argv)
{
	int i, n = 0;

	if (argc > 2 && !strcmp(argv[1], "--forks")) {
		n = atoi(argv[2]);
		argv += 2;
		argc -= 2;
	}
	for (i = 0; i < n; i++) {
		pid_t c = fork();

		if (c == 0) {
			printf("child %d\n", (int)getpid());
			fflush(stdout);
			for (;;)
				pause();
		}
	}
	if (argc > 2 && !strcmp(argv[1], "--rename"))
		prctl(PR_SET_NAME, argv[2], 0, 0, 0);
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	/* the children go with the parent: the test kills the process group or each */
	for (;;)
		pause();
}
