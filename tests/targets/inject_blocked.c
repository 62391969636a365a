// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A process to inject into while its threads are blocked: one each in
 * read, accept, epoll_wait, futex (a condition variable), nanosleep and
 * poll, none with a deadline before the end, plus BUSY threads that
 * allocate and count their own work.  Every blocked thread checks that
 * its call returned only when woken, never with EINTR, and the sleeper
 * that it slept its full time.  The main thread counts SIGRTMIN
 * deliveries (queued signals: none may be lost), the only thread that
 * does not block it.
 *
 * inject_blocked SECONDS [BUSY]: prints "pid N ready", runs SECONDS (or
 * until SIGUSR1), wakes everyone, prints "ok CALL" or "FAIL CALL: why" per blocked
 * thread, "busy N" (their rounds), "signals N" and "done", and exits 0
 * when nothing failed.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int seconds;
static int pipe_read[2], pipe_epoll[2], pipe_poll[2], listener;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int woken;
static atomic_int stop_busy, failures;
static atomic_ulong busy_rounds;
static volatile sig_atomic_t signals, ending;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(const char *call, long r, int err)
{
	if (r < 0) {
		printf("FAIL %s: %s\n", call, strerror(err));
		failures++;
	} else {
		printf("ok %s\n", call);
	}
}

static void *t_read(void *a)
{
	char c;
	long r = read(pipe_read[0], &c, 1);

	report("read", r, errno);
	return a;
}

static void *t_accept(void *a)
{
	int fd = accept(listener, NULL, NULL);

	report("accept", fd, errno);
	return a;
}

static void *t_epoll(void *a)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int ep = epoll_create1(0);
	long r;

	epoll_ctl(ep, EPOLL_CTL_ADD, pipe_epoll[0], &ev);
	r = epoll_wait(ep, &out, 1, -1);
	report("epoll_wait", r == 1 ? 0 : -1, r == 0 ? ETIME : errno);
	return a;
}

static void *t_futex(void *a)
{
	pthread_mutex_lock(&mu);
	while (!woken)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	report("futex", 0, 0);
	return a;
}

/* sleeps of 2 s to the end, each checked whole */
static void *t_nanosleep(void *a)
{
	struct timespec ts = { 2, 0 };
	long r = 0;
	int err = 0;

	while (!stop_busy && !r) {
		double t0 = now_s();

		r = nanosleep(&ts, NULL);
		err = errno;
		if (!r && now_s() - t0 < 2) {
			printf("FAIL nanosleep: slept %.3f s of 2\n", now_s() - t0);
			failures++;
			return a;
		}
	}
	report("nanosleep", r, err);
	return a;
}

static void *t_poll(void *a)
{
	struct pollfd p = { .fd = pipe_poll[0], .events = POLLIN };
	long r = poll(&p, 1, -1);

	report("poll", r == 1 ? 0 : -1, r == 0 ? ETIME : errno);
	return a;
}

static void *t_busy(void *a)
{
	while (!stop_busy) {
		void *p = malloc(64 + (busy_rounds & 1023));

		*(volatile char *)p = 1;
		free(p);
		busy_rounds++;
	}
	return a;
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		ending = 1;
	else
		signals++;
}

int main(int argc, char **argv)
{
	void *(*const blocked[])(void *) = { t_read, t_accept, t_epoll, t_futex, t_nanosleep, t_poll };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct sigaction act = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	int busy = argc > 2 ? atoi(argv[2]) : 0, i, c;
	size_t nb = sizeof(blocked) / sizeof(blocked[0]);
	pthread_t th[nb + 256];
	sigset_t rt;
	double end;

	seconds = argc > 1 ? atoi(argv[1]) : 3;
	if (busy > 256)
		busy = 256;
	if (pipe(pipe_read) || pipe(pipe_epoll) || pipe(pipe_poll))
		return 2;
	listener = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(listener, (struct sockaddr *)&sa, sizeof(sa)) || listen(listener, 1) ||
	    getsockname(listener, (struct sockaddr *)&sa, &sl))
		return 2;
	sigaction(SIGRTMIN, &act, NULL);
	sigaction(SIGUSR1, &act, NULL);
	sigemptyset(&rt);
	sigaddset(&rt, SIGRTMIN);
	sigaddset(&rt, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &rt, NULL);
	for (i = 0; i < (int)nb; i++)
		pthread_create(&th[i], NULL, blocked[i], NULL);
	for (i = 0; i < busy; i++)
		pthread_create(&th[nb + (size_t)i], NULL, t_busy, NULL);
	pthread_sigmask(SIG_UNBLOCK, &rt, NULL);
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	end = now_s() + seconds + 0.2;
	while (now_s() < end && !ending) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	/* wake each blocked thread the way it waits */
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (write(pipe_read[1], "x", 1) != 1 || write(pipe_epoll[1], "x", 1) != 1 ||
	    write(pipe_poll[1], "x", 1) != 1 || connect(c, (struct sockaddr *)&sa, sizeof(sa)))
		return 2;
	pthread_mutex_lock(&mu);
	woken = 1;
	pthread_cond_broadcast(&cv);
	stop_busy = 1;
	pthread_mutex_unlock(&mu);
	for (i = 0; i < (int)nb + busy; i++)
		pthread_join(th[i], NULL);
	printf("busy %lu\nsignals %d\ndone\n", (unsigned long)busy_rounds, (int)signals);
	fflush(stdout);
	return failures ? 1 : 0;
}
