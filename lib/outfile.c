// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

enum out_kind {
	OUT_STDOUT,
	OUT_REPLACE,		/* a regular file or none: written aside, renamed over */
	OUT_THROUGH,		/* a device, FIFO...: written into, never replaced */
};

/* where and how a path is written */
struct out_target {
	enum out_kind kind;
	char path[PATH_MAX];	/* for a symbolic link, what it names */
	bool exists;
	struct stat st;		/* of path, when it exists */
};

struct outfile {
	struct out_target t;
	char tmp[PATH_MAX];	/* OUT_REPLACE: the file being written */
	FILE *f;
};

static int say(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* the reason into err; returns ret */
static int say(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

/* a symbolic link: what it names, which must exist (cp does not write through a dangling one) */
static int follow(const char *path, struct out_target *t, char *err, size_t errlen)
{
	char to[PATH_MAX];
	ssize_t n;

	if (realpath(path, t->path) && !stat(t->path, &t->st)) {
		t->exists = true;
		return 0;
	}
	if (errno != ENOENT)
		return say(err, errlen, -errno, "%s", strerror(errno));
	n = readlink(path, to, sizeof(to) - 1);
	to[n > 0 ? n : 0] = 0;
	return say(err, errlen, -ENOENT, "it is a symbolic link to %s, which does not exist: not "
		   "writing through it; create its target or remove the link", to);
}

static int resolve(const char *path, struct out_target *t, char *err, size_t errlen)
{
	int ret;

	memset(t, 0, sizeof(*t));
	if (!*path)
		return say(err, errlen, -EINVAL, "an empty path: give a file name, or '-' for "
			   "standard output");
	if (!strcmp(path, "-")) {
		t->kind = OUT_STDOUT;
		return 0;
	}
	if (strlen(path) >= sizeof(t->path))
		return say(err, errlen, -ENAMETOOLONG, "%s", strerror(ENAMETOOLONG));
	if (lstat(path, &t->st)) {
		if (errno != ENOENT)
			return say(err, errlen, -errno, "%s", strerror(errno));
		/* a new file; whether its directory takes one is for the write to tell */
		t->kind = OUT_REPLACE;
		snprintf(t->path, sizeof(t->path), "%s", path);
		return 0;
	}
	t->exists = true;
	snprintf(t->path, sizeof(t->path), "%s", path);
	if (S_ISLNK(t->st.st_mode) && (ret = follow(path, t, err, errlen)))
		return ret;
	if (S_ISDIR(t->st.st_mode))
		return say(err, errlen, -EISDIR, "it is a directory: give a file name, such as "
			   "%s/profile.pb.gz", path);
	if (S_ISSOCK(t->st.st_mode))
		return say(err, errlen, -ENXIO, "it is a socket: give a file name");
	t->kind = S_ISREG(t->st.st_mode) ? OUT_REPLACE : OUT_THROUGH;
	return 0;
}

/* what a new file gets: 0666 less the umask, as open(O_CREAT) would give it */
static mode_t new_file_mode(void)
{
	/* umask() can only be read by setting it: put it back at once */
	mode_t mask = umask(022);

	umask(mask);
	return 0666 & ~mask;
}

/* the file beside t->path that becomes it; an fd, or -errno with the reason */
static int make_temp(const struct out_target *t, char *tmp, size_t len, char *err, size_t errlen)
{
	int fd;

	if (snprintf(tmp, len, "%s.tmp.XXXXXX", t->path) >= (int)len)
		return say(err, errlen, -ENAMETOOLONG, "%s", strerror(ENAMETOOLONG));
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return say(err, errlen, -errno, "cannot create a file in its directory: %s",
			   strerror(errno));
	return fd;
}

/* replacing a file we may not write would undo its owner's choice */
static int not_writable(const struct out_target *t, const char *path, char *err, size_t errlen)
{
	int e = errno;

	if (strcmp(t->path, path))
		return say(err, errlen, -e, "%s, the file it links to: %s", t->path, strerror(e));
	return say(err, errlen, -e, "%s", strerror(e));
}

int outfile_check(const char *path, char *err, size_t errlen)
{
	struct out_target t;
	char tmp[PATH_MAX];
	int ret = resolve(path, &t, err, errlen), fd;

	if (ret || t.kind == OUT_STDOUT)
		return ret;
	if (t.exists && access(t.path, W_OK))
		return not_writable(&t, path, err, errlen);
	if (t.kind == OUT_THROUGH)
		return 0;
	fd = make_temp(&t, tmp, sizeof(tmp), err, errlen);
	if (fd < 0)
		return fd;
	close(fd);
	unlink(tmp);
	return 0;
}

/* an existing file keeps its owner (when we may set it) and mode; a new one gets the umask's */
static int set_mode(const struct out_target *t, int fd)
{
	if (!t->exists)
		return fchmod(fd, new_file_mode()) ? -errno : 0;
	/* best effort, as cp overwriting in place keeps the owner; before fchmod, which it resets */
	if (t->st.st_uid != geteuid() || t->st.st_gid != getegid())
		(void)!fchown(fd, t->st.st_uid, t->st.st_gid);
	return fchmod(fd, t->st.st_mode & 07777) ? -errno : 0;
}

static int open_fd(struct outfile *o, char *err, size_t errlen)
{
	int fd, ret;

	if (o->t.kind == OUT_THROUGH) {
		/* a FIFO blocks here until it has a reader, as `cat > fifo` does */
		fd = open(o->t.path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		return fd >= 0 ? fd : say(err, errlen, -errno, "%s", strerror(errno));
	}
	if (o->t.exists && access(o->t.path, W_OK))
		return not_writable(&o->t, o->t.path, err, errlen);
	fd = make_temp(&o->t, o->tmp, sizeof(o->tmp), err, errlen);
	if (fd < 0)
		return fd;
	ret = set_mode(&o->t, fd);
	if (!ret)
		return fd;
	close(fd);
	unlink(o->tmp);
	return say(err, errlen, ret, "cannot set the mode of the new file: %s", strerror(-ret));
}

struct outfile *outfile__open(const char *path, char *err, size_t errlen)
{
	struct outfile *o = calloc(1, sizeof(*o));
	int ret, fd;

	if (!o) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return NULL;
	}
	ret = resolve(path, &o->t, err, errlen);
	if (!ret && o->t.kind == OUT_STDOUT) {
		o->f = stdout;
		return o;
	}
	fd = ret ? ret : open_fd(o, err, errlen);
	if (fd >= 0 && !(o->f = fdopen(fd, "w"))) {
		ret = say(err, errlen, -errno, "%s", strerror(errno));
		close(fd);
		if (o->t.kind == OUT_REPLACE)
			unlink(o->tmp);
		fd = ret;
	}
	if (fd < 0) {
		free(o);
		errno = -fd;
		return NULL;
	}
	return o;
}

FILE *outfile__stream(struct outfile *f)
{
	return f->f;
}

int outfile__commit(struct outfile *o, char *err, size_t errlen)
{
	/* a write that failed before (fprintf's errors wait in the stream) fails the whole */
	bool failed = ferror(o->f);
	int ret = 0;

	if (o->t.kind == OUT_STDOUT)
		ret = fflush(stdout) ? -errno : 0;
	/* on disk before the rename: a crash leaves the old file or the whole new one */
	else if (o->t.kind == OUT_REPLACE && (fflush(o->f) || fsync(fileno(o->f))))
		ret = -errno;
	if (o->t.kind != OUT_STDOUT && fclose(o->f) && !ret)
		ret = -errno;
	if (!ret && failed)
		ret = -EIO;
	o->f = NULL;
	if (!ret && o->t.kind == OUT_REPLACE && rename(o->tmp, o->t.path))
		ret = -errno;
	if (ret) {
		say(err, errlen, ret, "%s", strerror(-ret));
		if (o->t.kind == OUT_REPLACE)
			unlink(o->tmp);
	}
	free(o);
	return ret;
}

void outfile__abort(struct outfile *o)
{
	if (!o)
		return;
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->f && o->t.kind == OUT_REPLACE)
		unlink(o->tmp);
	free(o);
}

int outfile_write(const char *path, const void *buf, size_t len, char *err, size_t errlen)
{
	struct outfile *o = outfile__open(path, err, errlen);
	int ret;

	if (!o)
		return -errno;
	if (len && fwrite(buf, 1, len, o->f) != len) {
		ret = -errno;
		say(err, errlen, ret, "%s", strerror(errno));
		outfile__abort(o);
		return ret;
	}
	return outfile__commit(o, err, errlen);
}
