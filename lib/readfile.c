// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "readfile.h"
#include "vec.h"

int read_file_at(int dirfd, const char *path, char **buf, size_t *len)
{
	size_t cap = 0, n = 0;
	char *text = NULL;
	ssize_t got;
	int fd, err = 0;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (vec_reserve(&text, &cap, n + 4097, 1)) {
			err = -ENOMEM;
			break;
		}
		got = read(fd, text + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			break;
		}
		if (!got)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (err) {
		free(text);
		return err;
	}
	text[n] = 0;
	*buf = text;
	if (len)
		*len = n;
	return 0;
}
