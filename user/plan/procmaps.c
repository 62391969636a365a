// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "procmaps.h"
#include "readfile.h"
#include "vec.h"

int procmaps__parse_line(const char *line, size_t len, struct procmap *m)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perms[8];
	int pos = 0;
	/* sscanf() runs strlen() over its input: the line alone, not the rest of the file */
	char *copy = strndup(line, len), *path;

	if (!copy)
		return -ENOMEM;
	if (sscanf(copy, "%llx-%llx %7s %llx %x:%x %llu%n", &start, &end, perms, &off, &maj, &min,
		   &ino, &pos) < 7 || !pos) {
		free(copy);
		return -EINVAL;
	}
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->offset = off;
	m->inode = ino;
	m->dev_major = maj;
	m->dev_minor = min;
	m->readable = perms[0] == 'r';
	m->writable = perms[1] == 'w';
	m->executable = perms[2] == 'x';
	/* the path is padded into a column; it may itself contain spaces */
	for (path = copy + pos; *path == ' '; path++)
		;
	memmove(copy, path, strlen(path) + 1);
	m->path = copy;
	return 0;
}

int procmaps__parse(const char *text, struct procmaps *out)
{
	size_t cap = 0, len;
	const char *line = text;
	int err;

	memset(out, 0, sizeof(*out));
	for (; *line; line += len + (line[len] == '\n')) {
		len = strcspn(line, "\n");
		if (!len)
			continue;
		if (vec_reserve(&out->v, &cap, out->n + 1, sizeof(*out->v))) {
			procmaps__free(out);
			return -ENOMEM;
		}
		err = procmaps__parse_line(line, len, &out->v[out->n]);
		if (err) {
			procmaps__free(out);
			return err;
		}
		out->n++;
	}
	return 0;
}

int procmaps__read(pid_t pid, struct procmaps *out)
{
	char path[64], *text;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	err = read_file_at(AT_FDCWD, path, &text, NULL);
	if (err)
		return err;
	err = procmaps__parse(text, out);
	free(text);
	return err;
}

const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < m->v[mid].start)
			hi = mid;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

bool procmap__is_file(const struct procmap *m)
{
	return path_is_file(m->path);
}

void procmaps__free(struct procmaps *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	memset(m, 0, sizeof(*m));
}
