// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Process trees for attach --children: a master that allocates nothing
 * while its children do, as nginx's master and postgres' postmaster.
 *
 *   prefork workers N   a pre-forking server: N workers forked at start;
 *                       on SIGUSR1 one more ("late", forked while
 *                       profiled); on SIGUSR2 every worker allocates
 *                       (i + 1) * 100 blocks of 1000 + 8 i bytes, frees
 *                       them, says "worker I pid P bytes B" and stays
 *                       alive until the master exits; then "done"
 *   prefork server K    a forking server on 127.0.0.1 ("port N"): a child
 *                       per connection, which writes "pid P", reads
 *                       "COUNT SIZE", allocates and frees COUNT blocks of
 *                       SIZE bytes, answers "bytes B" and exits; "done"
 *                       after K connections
 *
 * Both say "pid N ready" and wait for SIGUSR1 first (ready.h).  The
 * children print with write(2): stdio would allocate in them.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ready.h"

#define MAX_WORKERS 16

/* blocks allocated one at a time and freed: every byte counted, nothing kept */
static unsigned long churn(unsigned long count, size_t size)
{
	unsigned long bytes = 0;

	for (unsigned long i = 0; i < count; i++) {
		char *p = malloc(size);

		if (!p)
			_exit(3);
		p[0] = (char)i;
		bytes += size;
		free(p);
	}
	return bytes;
}

static void say(const char *line)
{
	if (write(STDOUT_FILENO, line, strlen(line)) < 0)
		_exit(4);
}

/* wait for the go byte, allocate, report, then live until the master goes (EOF) */
static void worker(int i, int go, int done, int life)
{
	unsigned long bytes;
	char line[96], c;

	if (read(go, &c, 1) != 1)
		_exit(5);
	bytes = churn((unsigned long)(i + 1) * 100, 1000 + 8 * (size_t)i);
	snprintf(line, sizeof(line), "worker %d pid %d bytes %lu\n", i, (int)getpid(), bytes);
	say(line);
	if (write(done, "x", 1) != 1)
		_exit(6);
	while (read(life, &c, 1) > 0)
		;
	_exit(0);
}

static pid_t spawn(int i, int go[2], int done[2], int life[2])
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		/* the master's ends only: a master gone before its go byte is an EOF, not a hang */
		close(life[1]);
		close(go[1]);
		close(done[0]);
		worker(i, go[0], done[1], life[0]);
	}
	return pid;
}

static void wait_signal(int sig)
{
	sigset_t set;
	int got;

	sigemptyset(&set);
	sigaddset(&set, sig);
	sigwait(&set, &got);
}

static int run_workers(int n)
{
	int go[2], done[2], life[2];
	sigset_t set;
	char c;

	if (n < 1 || n >= MAX_WORKERS || pipe(go) || pipe(done) || pipe(life))
		return 2;
	/* blocked before any is sent: the test signals as soon as it reads a line */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < n; i++)
		printf("worker %d started pid %d\n", i, (int)spawn(i, go, done, life));
	ready_then_wait(stdout);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("late pid %d\n", (int)spawn(n, go, done, life));
	fflush(stdout);
	wait_signal(SIGUSR2);
	for (int i = 0; i <= n; i++)
		if (write(go[1], "g", 1) != 1)
			return 1;
	for (int i = 0; i <= n; i++)
		if (read(done[0], &c, 1) != 1)
			return 1;
	printf("done\n");
	fflush(stdout);
	/* alive with its workers until told to go: a capture ends with them all running */
	wait_signal(SIGUSR1);
	return 0;
}

/* one connection, in its own process */
static void handle(int fd)
{
	unsigned long count = 0, size = 0;
	char line[96];
	ssize_t got, at = 0;

	snprintf(line, sizeof(line), "pid %d\n", (int)getpid());
	if (write(fd, line, strlen(line)) < 0)
		_exit(4);
	while (at < (ssize_t)sizeof(line) - 1 && (got = read(fd, line + at, 1)) == 1 &&
	       line[at] != '\n')
		at++;
	line[at] = '\0';
	if (sscanf(line, "%lu %lu", &count, &size) != 2)
		_exit(5);
	snprintf(line, sizeof(line), "bytes %lu\n", churn(count, size));
	if (write(fd, line, strlen(line)) < 0)
		_exit(4);
	_exit(0);
}

static int run_server(int k)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), c;

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		perror("socket");
		return 1;
	}
	printf("port %d\n", ntohs(a.sin_port));
	ready_then_wait(stdout);
	for (int i = 0; i < k; i++) {
		c = accept(fd, NULL, NULL);
		if (c < 0) {
			perror("accept");
			return 1;
		}
		if (fork() == 0) {
			close(fd);
			handle(c);
		}
		close(c);
	}
	while (wait(NULL) > 0)
		;
	printf("done\n");
	fflush(stdout);
	wait_signal(SIGUSR1);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 0;

	if (argc == 3 && !strcmp(argv[1], "workers"))
		return run_workers(n);
	if (argc == 3 && !strcmp(argv[1], "server"))
		return run_server(n);
	fprintf(stderr, "usage: prefork workers N | prefork server K\n");
	return 2;
}
