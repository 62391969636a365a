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
#include <sys/sysmacros.h>
#include <unistd.h>

#include "procmaps.h"
#include "readfile.h"
#include "target.h"

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* what /proc/PID/status says about a thread id: its process, and whether it can be profiled */
struct pid_status {
	pid_t tgid;
	pid_t ppid;
	bool kthread;
	char state;		/* 'R', 'S', ... 'Z' (zombie), 'X' (dead) */
};

static int read_status(pid_t pid, struct pid_status *st)
{
	char path[64], *buf, *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file_at(AT_FDCWD, path, &buf, NULL))
		return -ESRCH;
	p = strstr(buf, "\nKthread:");
	st->kthread = p && atoi(p + 9) == 1;
	p = strstr(buf, "\nTgid:");
	st->tgid = p ? (pid_t)atoi(p + 6) : -1;
	p = strstr(buf, "\nPPid:");
	st->ppid = p ? (pid_t)atoi(p + 6) : 0;
	p = strstr(buf, "\nState:");
	st->state = p ? p[strspn(p + 7, " \t") + 7] : '?';
	free(buf);
	return st->tgid > 0 ? 0 : -ESRCH;
}

/*
 * Processes there is nothing to profile in, each with its reason: a zombie
 * (its memory is gone, only the exit status waits for the parent) and a
 * kernel thread.  0 or -errno with the reason in err.
 */
static int refuse(const struct target *t, const struct pid_status *st, bool no_exe, char *err,
		  size_t errlen)
{
	if (st->state == 'Z' || st->state == 'X') {
		snprintf(err, errlen, "pid %d (%s) has exited: it is a zombie, no longer running and "
			 "with no memory to profile, until its parent (pid %d) reaps it",
			 (int)t->pid, t->comm, (int)st->ppid);
		return -ESRCH;
	}
	if (st->kthread || no_exe) {
		snprintf(err, errlen, "pid %d (%s) is a kernel thread: it has no user-space heap to profile",
			 (int)t->pid, t->comm);
		return -EINVAL;
	}
	return 0;
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
	struct pid_status ps = { 0 };
	char path[64], *buf;
	struct stat st;
	ssize_t n;
	int ret;

	memset(t, 0, sizeof(*t));
	t->pidfd = -1;
	if (pid <= 0) {
		snprintf(err, errlen, "invalid pid %d: give the id of a running process", (int)pid);
		return -EINVAL;
	}
	if (read_status(pid, &ps)) {
		snprintf(err, errlen, "no process with pid %d (has it exited? check with 'ps -p %d')",
			 (int)pid, (int)pid);
		return -ESRCH;
	}
	t->pid = ps.tgid;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->pid);
	if (!read_file_at(AT_FDCWD, path, &buf, NULL)) {
		snprintf(t->comm, sizeof(t->comm), "%.*s", (int)strcspn(buf, "\n"), buf);
		free(buf);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)t->pid);
	n = readlink(path, t->exe, sizeof(t->exe) - 1);
	ret = refuse(t, &ps, n < 0 && errno == ENOENT, err, errlen);
	if (ret)
		return ret;
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

/* PF_EXITING of include/linux/sched.h, the flags field of /proc/PID/stat */
#define TASK_PF_EXITING 0x4

bool target__exiting(const struct target *t)
{
	char path[64], *buf, *p;
	unsigned long flags = 0;
	bool exiting;

	if (!target__alive(t))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	if (read_file_at(AT_FDCWD, path, &buf, NULL))
		return true;
	/* after "(comm)": state ppid pgrp session tty_nr tpgid flags */
	p = strrchr(buf, ')');
	exiting = !p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1 ||
		  (flags & TASK_PF_EXITING);
	free(buf);
	return exiting;
}

/* does `path` name the file mapping m maps (its device and inode)? */
static bool is_mapped_file(const char *path, const struct procmap *m)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_ino == m->inode &&
	       major(st.st_dev) == m->dev_major && minor(st.st_dev) == m->dev_minor;
}

static int path_fits(int n, size_t len)
{
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * /proc/PID/maps names a file as the reader would reach it from its own
 * root when it can: a container (another mount namespace) shows its own
 * paths, to be opened through /proc/PID/root, while a plain chroot in our
 * namespace shows the path from our root already, and /proc/PID/root
 * prepended would name the wrong file or none.  So the path through
 * /proc/PID/root is taken when it is the mapped inode, else the path as
 * shown when that is, else /proc/PID/root anyway when it exists (overlayfs
 * reports the lower file's inode in maps, not the overlay's), and last
 * map_files, which always opens the mapped object but needs CAP_SYS_ADMIN
 * (or CAP_CHECKPOINT_RESTORE) where /proc/PID/root needs CAP_SYS_PTRACE.
 */
int target__object_path(const struct target *t, const struct procmap *m, char *buf, size_t len)
{
	static const char deleted[] = " (deleted)";
	size_t plen = strlen(m->path), dlen = sizeof(deleted) - 1;
	char files[96];
	int ret;

	snprintf(files, sizeof(files), "/proc/%d/map_files/%llx-%llx", (int)t->pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	/* the file is gone from the tree; the mapping still pins it */
	if (plen > dlen && !strcmp(m->path + plen - dlen, deleted))
		return path_fits(snprintf(buf, len, "%s", files), len);
	ret = path_fits(snprintf(buf, len, "/proc/%d/root%s", (int)t->pid, m->path), len);
	if (ret || is_mapped_file(buf, m))
		return ret;
	if (m->path[0] == '/' && is_mapped_file(m->path, m))
		return path_fits(snprintf(buf, len, "%s", m->path), len);
	if (access(buf, F_OK) && access(files, F_OK) == 0)
		return path_fits(snprintf(buf, len, "%s", files), len);
	return 0;
}
