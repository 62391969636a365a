/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A thread that takes no signal. */
#ifndef CULPERT_THREAD_H
#define CULPERT_THREAD_H

#include <pthread.h>
#include <signal.h>

/*
 * pthread_create() with every signal blocked in the new thread: the
 * process's signals are for the thread that reads them (the agent's
 * signalfd, attach's handlers), which may block them only later.
 * pthread_create()'s result.
 */
static inline int thread_start_unsignalled(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

#endif /* CULPERT_THREAD_H */
