// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The held processes' watchdog (holdwatch.h).  The child is forked from a
 * process that may run threads: it calls no allocator and no stdio, only
 * system calls on its own buffers, until it exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <bpf/bpf.h>

#include "holdwatch.h"

/* the programs are polled this often once the agent is gone, at most this long (1 h) */
#define POLL_NS (100ULL * 1000000ULL)
#define POLL_MAX 36000
#define MAX_PROGS 8

/* /proc/PID/stat's starttime (field 22, clock ticks since boot); -1 when pid is gone */
static int64_t start_ticks(pid_t pid)
{
	char path[40], buf[1024], *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* comm may hold ')' and blanks: the fields start after the last ')' */
	p = strrchr(buf, ')');
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? (int64_t)strtoull(p + 1, NULL, 10) : -1;
}

static void say(int fd, pid_t pid)
{
	char line[160];
	int n;

	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "culpert-bpf: the agent is gone: pid %d, stopped for "
		     "it, let go\n", (int)pid);
	if (n > 0 && write(fd, line, (size_t)n) < 0)
		return;
}

void holdwatch__sweep(int held_fd, uint64_t ns_per_tick, int log_fd)
{
	__u32 key, next;
	__u64 start;
	void *prev = NULL;
	unsigned int n = 0;

	/* bounded: the map holds at most its max_entries */
	while (n++ < 1000000 && !bpf_map_get_next_key(held_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(held_fd, &key, &start))
			continue;
		/* the same process still, never another's that got its pid */
		if (start_ticks((pid_t)key) == (int64_t)(start / ns_per_tick) &&
		    !kill((pid_t)key, SIGCONT))
			say(log_fd, (pid_t)key);
		bpf_map_delete_elem(held_fd, &key);
	}
}

/* one of the programs that stop processes is still loaded (attached somewhere) */
static int progs_alive(const uint32_t *ids, size_t n)
{
	size_t i;
	int fd;

	for (i = 0; i < n; i++) {
		fd = bpf_prog_get_fd_by_id(ids[i]);
		if (fd >= 0) {
			close(fd);
			return 1;
		}
	}
	return 0;
}

static void __attribute__((noreturn)) watch(int held_fd, int pipe_r, const uint32_t *ids,
					   size_t n, uint64_t ns_per_tick)
{
	struct timespec poll = { 0, (long)POLL_NS };
	unsigned int i;
	char c;
	int devnull;

	/*
	 * Its own session: a terminal's ^C to the agent's group is the agent's
	 * to handle, and the child outlives it by design.  stderr stays, to say
	 * what it let go.
	 */
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_NAME, "culpert-watch");
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
	}
	for (;;) {
		ssize_t r = read(pipe_r, &c, 1);

		if (r == 0 || (r < 0 && errno != EINTR))
			break;
	}
	/*
	 * The agent is gone: what it held goes on now, and again until its
	 * programs are unloaded (the kernel releases its links in its exit)
	 */
	for (i = 0; i < POLL_MAX; i++) {
		holdwatch__sweep(held_fd, ns_per_tick, 2);
		if (!progs_alive(ids, n))
			break;
		nanosleep(&poll, NULL);
	}
	holdwatch__sweep(held_fd, ns_per_tick, 2);
	_exit(0);
}

/* every descriptor above stderr closed but a and b */
static void close_others(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo > 3)
		close_range(3, (unsigned int)lo - 1, 0);
	if (hi > lo + 1)
		close_range((unsigned int)lo + 1, (unsigned int)hi - 1, 0);
	close_range((unsigned int)hi + 1, ~0U, 0);
}

int holdwatch__start(int held_fd, const uint32_t *prog_ids, size_t n_progs,
		     uint64_t ns_per_tick, int *pipe_w)
{
	uint32_t ids[MAX_PROGS];
	int p[2];
	pid_t child;

	if (n_progs > MAX_PROGS)
		return -E2BIG;
	memcpy(ids, prog_ids, n_progs * sizeof(*ids));
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (child == 0) {
		close_others(held_fd, p[0]);
		watch(held_fd, p[0], ids, n_progs, ns_per_tick);
	}
	close(p[0]);
	*pipe_w = p[1];
	return 0;
}
