// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An idle process for the agent's tests: says "pid N ready" and waits to be
 * killed.  Options, in order:
 *   --forks N     first fork N children (no exec), each printing "child PID"
 *   --rename NAME half a second after "ready", set its comm to NAME (prctl):
 *                 no exec happens, only a /proc rescan can notice
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
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[1], "--rename")) {
		/* well after the exec, so the agent has looked at the old name */
		usleep(500000);
		prctl(PR_SET_NAME, argv[2], 0, 0, 0);
		printf("renamed\n");
		fflush(stdout);
	}
	/* the children go with the parent: the test kills the process group or each */
	for (;;)
		pause();
}
