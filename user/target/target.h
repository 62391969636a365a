/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The process being profiled: identity, liveness, and paths into its filesystem view. */
#ifndef CULPERT_TARGET_H
#define CULPERT_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct procmap;

struct target {
	pid_t pid;		/* thread group id, whatever thread id the user gave */
	char comm[32];
	char exe[PATH_MAX];	/* /proc/PID/exe as the target sees it */
	char argv0[PATH_MAX];	/* what it was started as: /proc/PID/cmdline's first word */
	char argv0_link[PATH_MAX];	/* where argv0 points when it is a symlink, else "" */
	int pidfd;		/* readable when the process exits; -1 if pidfd_open() is missing */
	dev_t exe_dev;		/* the executable's identity, to notice an exec */
	ino_t exe_ino;
};

/*
 * Check that `pid` names a live user-space process and fill t.  On failure
 * writes a user-facing reason into err and returns -errno.
 */
int target__open(pid_t pid, struct target *t, char *err, size_t errlen);
void target__close(struct target *t);
bool target__alive(const struct target *t);
/*
 * Has it exited, or begun to?  An exiting process loses /proc/PID/root and
 * its mappings before it can be waited for, so a failure to read them
 * during attach is its exit when this says so.
 */
bool target__exiting(const struct target *t);
/* has the process exec'd another program since target__open()? */
bool target__execed(const struct target *t);
/*
 * A path through which this process can open the object behind mapping m,
 * also for containers (/proc/PID/root/...) and deleted files (map_files).
 */
/* argv0 names another file than exe (a symlink, a renamed copy): worth showing both */
bool target__started_as_other(const struct target *t);
int target__object_path(const struct target *t, const struct procmap *m, char *buf, size_t len);

#endif /* CULPERT_TARGET_H */
