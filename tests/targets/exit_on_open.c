// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A process that exits while a profiler attaches to it: it watches its own
 * executable with inotify and exits the moment anything opens the file,
 * which culpert-bpf does to read its symbols, well before the probes go
 * in.  Prints "pid N ready" once the watch is set, then exits 0 at the
 * first open (or after 30 s).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

int main(void)
{
	struct pollfd pfd = { .events = POLLIN };

	pfd.fd = inotify_init1(IN_CLOEXEC);
	if (pfd.fd < 0 || inotify_add_watch(pfd.fd, "/proc/self/exe", IN_OPEN) < 0) {
		perror("inotify");
		return 1;
	}
	/* something to find: glibc's malloc is mapped, and used once */
	free(malloc(16));
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	if (poll(&pfd, 1, 30000) != 1)
		return 2;
	/* _exit: no stdio flush, no atexit work that could slow the exit down */
	_exit(0);
}
