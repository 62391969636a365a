/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The start protocol of the test programs: say "pid N ready" on `out` and
 * wait for SIGUSR1, so that a profiler attached meanwhile sees everything
 * that follows (tests/lib.sh start_target and attach_bg drive it).
 */
#ifndef CULPERT_TEST_READY_H
#define CULPERT_TEST_READY_H

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static inline void ready_then_wait(FILE *out)
{
	sigset_t set;
	int sig;

	/* blocked before the line: a SIGUSR1 sent right after it is not lost */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fprintf(out, "pid %d ready\n", (int)getpid());
	fflush(out);
	sigwait(&set, &sig);
}

#endif /* CULPERT_TEST_READY_H */
