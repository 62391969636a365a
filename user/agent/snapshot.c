// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "snapshot.h"

#define TMP_PREFIX ".culpert-snapshot-"
#define TMP_SUFFIX ".tmp"
/* "20240131T235959Z" */
#define STAMP_LEN 16
#define SUFFIX ".pb.gz"

/* "culpert-COMM-PID-": comm may hold '/' or blanks, the file name keeps one word */
static void name_prefix(const struct snapshot_target *t, char *buf, size_t len)
{
	char c[32];
	size_t i;

	snprintf(c, sizeof(c), "%s", t->comm);
	for (i = 0; c[i]; i++)
		if (c[i] == '/' || c[i] == ' ')
			c[i] = '_';
	snprintf(buf, len, "culpert-%s-%d-", c, (int)t->pid);
}

static bool is_snapshot_of(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix), n = strlen(name);

	/* the rest is exactly the time: "culpert-a-1-" must not take "culpert-a-1-2-..." */
	return n == pl + STAMP_LEN + strlen(SUFFIX) && !strncmp(name, prefix, pl) &&
	       name[pl + 8] == 'T' && name[pl + STAMP_LEN - 1] == 'Z' &&
	       !strcmp(name + pl + STAMP_LEN, SUFFIX);
}

static int cmp_desc(const void *a, const void *b)
{
	return -strcmp(*(char *const *)a, *(char *const *)b);
}

/* keep the newest `keep` snapshots with this prefix: the UTC time sorts as text */
static void rotate(const char *dir, const char *prefix, unsigned int keep)
{
	char **names = NULL, **nv, path[PATH_MAX];
	size_t n = 0, i;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!is_snapshot_of(de->d_name, prefix))
			continue;
		nv = realloc(names, (n + 1) * sizeof(*names));
		if (!nv || !(nv[n] = strdup(de->d_name))) {
			names = nv ? nv : names;
			break;
		}
		names = nv;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_desc);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (i >= keep && unlink(path) && errno != ENOENT)
			pr_warn("cannot remove the old snapshot %s: %s\n", path, strerror(errno));
		free(names[i]);
	}
	free(names);
}

/* a temporary file in dir, created with 0666 less the umask as any file we write */
static int open_tmp(const char *dir, char *tmp, size_t len)
{
	static unsigned int seq;
	int fd, tries;

	for (tries = 0; tries < 100; tries++) {
		snprintf(tmp, len, "%s/" TMP_PREFIX "%d-%u" TMP_SUFFIX, dir, (int)getpid(),
			 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

int snapshot__write(const char *dir, unsigned int keep, const struct snapshot_target *t,
		    snapshot_write_fn fn, void *ctx, char *path, size_t pathlen, char *err,
		    size_t errlen)
{
	char prefix[64], stamp[32], tmp[PATH_MAX];
	time_t secs = (time_t)(t->time_ns / 1000000000LL);
	struct tm tm;
	int fd, ret;

	name_prefix(t, prefix, sizeof(prefix));
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	if (snprintf(path, pathlen, "%s/%s%s" SUFFIX, dir, prefix, stamp) >= (int)pathlen)
		return -ENAMETOOLONG;
	fd = open_tmp(dir, tmp, sizeof(tmp));
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a file in %s: %s", dir, strerror(-fd));
		return fd;
	}
	err[0] = 0;
	ret = fn(ctx, fd, err, errlen);
	/* on disk before the name points at it: a crash leaves the old snapshot or the new one */
	if (!ret && fdatasync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		if (!err[0])
			snprintf(err, errlen, "cannot write %s: %s", path, strerror(-ret));
		unlink(tmp);
		return ret;
	}
	rotate(dir, prefix, keep);
	return 0;
}

int snapshot__clean(const char *dir)
{
	size_t pl = strlen(TMP_PREFIX), sl = strlen(TMP_SUFFIX), n;
	char path[PATH_MAX];
	struct dirent *de;
	int removed = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		n = strlen(de->d_name);
		if (n <= pl + sl || strncmp(de->d_name, TMP_PREFIX, pl) ||
		    strcmp(de->d_name + n - sl, TMP_SUFFIX))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		removed += !unlink(path);
	}
	closedir(d);
	return removed;
}
