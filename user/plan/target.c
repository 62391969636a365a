// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procmaps.h"
#include "readfile.h"
#include "target.h"

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* "Tgid:" of /proc/PID/status, so a thread id selects its whole process */
static pid_t status_tgid(pid_t pid, bool *kthread)
{
	char path[64], *buf, *p;
	pid_t tgid;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file_at(AT_FDCWD, path, &buf, NULL))
		return -1;
	p = strstr(buf, "\nKthread:");
	*kthread = p && atoi(p + 9) == 1;
	p = strstr(buf, "\nTgid:");
	tgid = p ? (pid_t)atoi(p + 6) : -1;
	free(buf);
	return tgid;
}

/*
 * argv0 and, when it is a path to a symlink (Debian's redis-server ->
 * redis-check-rdb), where the link points, as the target sees its files.
 * Optional: a process may rewrite its argv, or have none.
 */
static void read_argv0(struct target *t)
{
	char path[PATH_MAX + 64], *buf;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)t->pid);
	if (read_file_at(AT_FDCWD, path, &buf, NULL))
		return;
	snprintf(t->argv0, sizeof(t->argv0), "%s", buf);
	free(buf);
	if (!strchr(t->argv0, '/'))
		return;
	snprintf(path, sizeof(path), t->argv0[0] == '/' ? "/proc/%d/root%s" : "/proc/%d/cwd/%s",
		 (int)t->pid, t->argv0);
	n = readlink(path, t->argv0_link, sizeof(t->argv0_link) - 1);
	t->argv0_link[n > 0 ? n : 0] = '\0';
}

bool target__started_as_other(const struct target *t)
{
	const char *a = strrchr(t->argv0, '/'), *e = strrchr(t->exe, '/');

	if (!t->argv0[0])
		return false;
	return t->argv0_link[0] || strcmp(a ? a + 1 : t->argv0, e ? e + 1 : t->exe);
}

int target__open(pid_t pid, struct target *t, char *err, size_t errlen)
{
	char path[64], *buf;
	bool kthread = false;
	struct stat st;
	ssize_t n;

	memset(t, 0, sizeof(*t));
	t->pidfd = -1;
	if (pid <= 0) {
		snprintf(err, errlen, "invalid pid %d: give the id of a running process", (int)pid);
		return -EINVAL;
	}
	t->pid = status_tgid(pid, &kthread);
	if (t->pid <= 0) {
		snprintf(err, errlen, "no process with pid %d (has it exited? check with 'ps -p %d')",
			 (int)pid, (int)pid);
		return -ESRCH;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->pid);
	if (!read_file_at(AT_FDCWD, path, &buf, NULL)) {
		snprintf(t->comm, sizeof(t->comm), "%.*s", (int)strcspn(buf, "\n"), buf);
		free(buf);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)t->pid);
	n = readlink(path, t->exe, sizeof(t->exe) - 1);
	if (kthread || (n < 0 && errno == ENOENT)) {
		snprintf(err, errlen, "pid %d (%s) is a kernel thread: it has no user-space heap to profile",
			 (int)t->pid, t->comm);
		return -EINVAL;
	}
	if (n < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot inspect pid %d (%s): %s%s", (int)t->pid, t->comm,
			 strerror(e), e == EACCES ? " (run as root, or with CAP_SYS_PTRACE)" : "");
		return -e;
	}
	t->exe[n] = 0;
	read_argv0(t);
	if (stat(path, &st) == 0) {
		t->exe_dev = st.st_dev;
		t->exe_ino = st.st_ino;
	}
	t->pidfd = (int)syscall(__NR_pidfd_open, t->pid, 0);
	return 0;
}

bool target__execed(const struct target *t)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)t->pid);
	/* gone is not exec'd: target__alive() tells that */
	if (stat(path, &st))
		return false;
	return st.st_dev != t->exe_dev || st.st_ino != t->exe_ino;
}

void target__close(struct target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}

bool target__alive(const struct target *t)
{
	struct pollfd pfd = { .fd = t->pidfd, .events = POLLIN };
	char path[64], *buf, *p;
	bool alive;

	if (t->pidfd >= 0)
		return poll(&pfd, 1, 0) == 0;
	/* no pidfd (kernel < 5.3): a zombie still answers kill(0), so read its state */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	if (read_file_at(AT_FDCWD, path, &buf, NULL))
		return false;
	p = strrchr(buf, ')');
	alive = p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	free(buf);
	return alive;
}

int target__object_path(const struct target *t, const struct procmap *m, char *buf, size_t len)
{
	static const char deleted[] = " (deleted)";
	size_t plen = strlen(m->path), dlen = sizeof(deleted) - 1;
	int n;

	if (plen > dlen && !strcmp(m->path + plen - dlen, deleted))
		/* the file is gone from the tree; the mapping still pins it */
		n = snprintf(buf, len, "/proc/%d/map_files/%llx-%llx", (int)t->pid,
			     (unsigned long long)m->start, (unsigned long long)m->end);
	else
		n = snprintf(buf, len, "/proc/%d/root%s", (int)t->pid, m->path);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
