// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bsearch.h"
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

/* the mapping ends at or before the address: it sorts before any that holds it */
static bool ends_by(const void *elem, const void *key)
{
	return ((const struct procmap *)elem)->end <= *(const uint64_t *)key;
}

const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr)
{
	size_t i = lower_bound(&addr, m->v, m->n, sizeof(*m->v), ends_by);

	return i < m->n && m->v[i].start <= addr ? &m->v[i] : NULL;
}

/* does [start, end) overlap any of the n mappings v, sorted by start? */
static bool overlaps(const struct procmap *v, size_t n, uint64_t start, uint64_t end)
{
	/* the first mapping that ends after start: the only one that can overlap first */
	size_t i = lower_bound(&start, v, n, sizeof(*v), ends_by);

	return i < n && v[i].start < end;
}

static int by_start(const void *a, const void *b)
{
	const struct procmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* the entry of v that is the same mapping as m, NULL if none */
static const struct procmap *same_in(const struct procmaps *v, const struct procmap *m)
{
	const struct procmap *f = procmaps__find(v, m->start);

	return f && procmap__same(f, m) ? f : NULL;
}

int procmaps__carry(struct procmaps *fresh, const struct procmaps *old, uint64_t now_ns,
		    size_t max_gone, uint64_t *dropped)
{
	size_t i, n_live = fresh->n, n_gone = 0, cap = fresh->n;
	const struct procmap *same;

	for (i = 0; i < n_live; i++) {
		same = same_in(old, &fresh->v[i]);
		fresh->v[i].seen_ns = same ? same->seen_ns : now_ns;
	}
	for (i = 0; i < old->n; i++) {
		const struct procmap *o = &old->v[i];
		struct procmap *c;

		if (!o->executable || !procmap__is_file(o) ||
		    overlaps(fresh->v, n_live, o->start, o->end))
			continue;
		if (n_gone == max_gone) {
			(*dropped)++;
			continue;
		}
		if (vec_reserve(&fresh->v, &cap, fresh->n + 1, sizeof(*fresh->v)))
			return -ENOMEM;
		c = &fresh->v[fresh->n];
		*c = *o;
		c->gone = true;
		c->path = strdup(o->path);
		if (!c->path)
			return -ENOMEM;
		fresh->n++;
		n_gone++;
	}
	qsort(fresh->v, fresh->n, sizeof(*fresh->v), by_start);
	return 0;
}

bool procmaps__overlapped(const struct procmaps *v, const struct procmap *m)
{
	size_t i;

	for (i = 0; i < v->n && v->v[i].start < m->end; i++)
		if (v->v[i].end > m->start && !procmap__same(&v->v[i], m))
			return true;
	return false;
}

bool procmaps__newer(const struct procmaps *v, const struct procmap *m)
{
	size_t i;

	for (i = 0; i < v->n && v->v[i].start < m->end; i++)
		if (v->v[i].end > m->start && v->v[i].seen_ns > m->seen_ns)
			return true;
	return false;
}

int procmaps__insert(struct procmaps *v, const struct procmap *m)
{
	char *path = strdup(m->path);
	size_t i, j, cap = v->n;

	if (!path || vec_reserve(&v->v, &cap, v->n + 1, sizeof(*v->v))) {
		free(path);
		return -ENOMEM;
	}
	/* drop what the new mapping covers, keep the rest in order */
	for (i = 0, j = 0; i < v->n; i++) {
		if (v->v[i].start < m->end && v->v[i].end > m->start) {
			free(v->v[i].path);
			continue;
		}
		v->v[j++] = v->v[i];
	}
	v->n = j;
	for (i = 0; i < v->n && v->v[i].start < m->start; i++)
		;
	memmove(&v->v[i + 1], &v->v[i], (v->n - i) * sizeof(*v->v));
	v->v[i] = *m;
	v->v[i].path = path;
	v->v[i].gone = false;
	v->n++;
	return 0;
}

bool procmap__is_file(const struct procmap *m)
{
	return path_is_file(m->path);
}

bool procmap__same(const struct procmap *a, const struct procmap *b)
{
	return a->start == b->start && a->end == b->end && a->offset == b->offset &&
	       a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor;
}

void procmaps__free(struct procmaps *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

void procmaps__text_range(const struct procmaps *maps, const struct procmap *m, uint64_t *lo,
			  uint64_t *hi)
{
	size_t i;

	*lo = UINT64_MAX;
	*hi = 0;
	for (i = 0; i < maps->n; i++) {
		const struct procmap *x = &maps->v[i];

		if (!x->executable || x->inode != m->inode || strcmp(x->path, m->path))
			continue;
		if (x->start < *lo)
			*lo = x->start;
		if (x->end > *hi)
			*hi = x->end;
	}
}
