// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An idle process for the agent's tests: says "pid N ready" and waits to be
 * killed.  One option:
 *   --forks N        fork N children (no exec) at once, before "ready"
 *   --forks-later N  fork them half a second after "ready", when the agent
 *                    has picked this process up (its fork events, not the
 *                    children list it reads at pick-up, must show them)
 *   --rename NAME    half a second after "ready", set its comm to NAME
 *                    (prctl): no exec happens, only a /proc rescan can notice
 *   --exec PATH      half a second after "ready", exec PATH (no arguments)
 * Each child prints "child PID" and waits too.  Its comm is its file name:
 * the tests run copies with names of their own.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

static void forks(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (fork() == 0) {
			printf("child %d\n", (int)getpid());
			fflush(stdout);
			for (;;)
				pause();
		}
	}
}

int main(int argc, char **argv)
{
	const char *opt = argc > 2 ? argv[1] : "";

	if (!strcmp(opt, "--forks"))
		forks(atoi(argv[2]));
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(opt, "--forks-later")) {
		usleep(500000);
		forks(atoi(argv[2]));
	}
	if (!strcmp(opt, "--rename")) {
		/* well after the exec, so the agent has looked at the old name */
		usleep(500000);
		prctl(PR_SET_NAME, argv[2], 0, 0, 0);
		printf("renamed\n");
		fflush(stdout);
	}
	if (!strcmp(opt, "--exec")) {
		usleep(500000);
		execl(argv[2], argv[2], (char *)NULL);
		perror("exec");
		return 1;
	}
	for (;;)
		pause();
}
