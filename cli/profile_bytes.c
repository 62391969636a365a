// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pprof.h"
#include "profile_bytes.h"

/* read fd to its end into *buf, growing it; -EFBIG past max */
static int read_fd(int fd, size_t max, char **buf, size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	char *b = malloc(cap);

	if (!b)
		return -ENOMEM;
	/* bounded: each pass reads at least one byte, and n > max ends it */
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb = realloc(b, cap * 2);

			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int ret = -errno;

			free(b);
			return ret;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(b);
			return -EFBIG;
		}
	}
	*buf = b;
	*len = n;
	return 0;
}

int profile_bytes_read(const char *path, size_t max, char **buf, size_t *len)
{
	struct stat st;
	int fd, ret;

	if (!strcmp(path, "-"))
		return read_fd(STDIN_FILENO, max, buf, len);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		ret = -errno;
	else if (S_ISDIR(st.st_mode))
		ret = -EISDIR;
	else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max)
		ret = -EFBIG;
	else
		ret = read_fd(fd, max, buf, len);
	close(fd);
	return ret;
}

static int skip_sample(const struct pprof_profile *p, const struct pprof_sample_ref *s, void *ctx)
{
	return 0;
}

int profile_bytes_check(const void *buf, size_t len, char *err, size_t errlen)
{
	struct pprof_read_opts o = { .sz = sizeof(o), .on_sample = skip_sample };
	struct pprof_profile *p;

	err[0] = '\0';
	p = pprof_decode_gzip_opts(buf, len, &o, err, errlen);
	if (!p) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(errno));
		return -EINVAL;
	}
	pprof_profile__free(p);
	return 0;
}
