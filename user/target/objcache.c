// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "hashtab.h"
#include "log.h"
#include "objcache.h"
#include "procmaps.h"
#include "target.h"
#include "vec.h"

struct cached_obj {
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	char *path;
	struct elfobj *obj;	/* NULL when opening failed */
	int err;
	unsigned int gen;	/* the target it failed through */
};

struct objcache {
	const struct target *t;
	struct cached_obj *v;
	size_t n, cap;
	struct hashtab ht;
	unsigned int gen;	/* objcache__retarget() calls */
};

struct objcache *objcache__new(const struct target *t)
{
	struct objcache *c = calloc(1, sizeof(*c));

	if (c)
		c->t = t;
	return c;
}

static bool obj_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct cached_obj *a = &((struct objcache *)ctx)->v[idx];
	const struct procmap *m = key;

	/* identity is the file, not the name: an inode replaced under the same path differs */
	return a->inode == m->inode && a->dev_major == m->dev_major &&
	       a->dev_minor == m->dev_minor && !strcmp(a->path, m->path);
}

static uint64_t obj_hash(const struct procmap *m)
{
	return hash_u64(m->inode, ((uint64_t)m->dev_major << 32) | m->dev_minor);
}

struct elfobj *objcache__get(struct objcache *c, const struct procmap *m)
{
	char path[PATH_MAX];
	struct cached_obj *e;
	uint32_t idx;

	if (!procmap__is_file(m)) {
		errno = ENOENT;
		return NULL;
	}
	if (hashtab__find(&c->ht, obj_hash(m), m, obj_eq, c, &idx)) {
		e = &c->v[idx];
		/* failed through another target (gone meanwhile): this one may open it */
		if (!e->obj && e->gen != c->gen) {
			e->gen = c->gen;
			errno = 0;
			if (target__object_path(c->t, m, path, sizeof(path)) == 0)
				e->obj = elfobj__open_unmapped(path);
			e->err = e->obj ? 0 : errno ? errno : ENOENT;
		}
		errno = e->err;
		return e->obj;
	}
	if (vec_reserve(&c->v, &c->cap, c->n + 1, sizeof(*c->v)))
		return NULL;
	e = &c->v[c->n];
	memset(e, 0, sizeof(*e));
	e->inode = m->inode;
	e->dev_major = m->dev_major;
	e->dev_minor = m->dev_minor;
	e->path = strdup(m->path);
	if (!e->path || hashtab__insert(&c->ht, obj_hash(m), (uint32_t)c->n)) {
		free(e->path);
		errno = ENOMEM;
		return NULL;
	}
	c->n++;
	e->gen = c->gen;
	if (target__object_path(c->t, m, path, sizeof(path)) == 0)
		e->obj = elfobj__open_unmapped(path);
	if (!e->obj) {
		e->err = errno ? errno : ENOENT;
		pr_debug("cannot open %s: %s\n", m->path, strerror(e->err));
	}
	errno = e->err;
	return e->obj;
}

void objcache__retarget(struct objcache *c, const struct target *t)
{
	c->t = t;
	c->gen++;
}

size_t objcache__size(const struct objcache *c)
{
	return c->n;
}

void objcache__trim(struct objcache *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		elfobj__trim(c->v[i].obj);
}

void objcache__free(struct objcache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++) {
		elfobj__free(c->v[i].obj);
		free(c->v[i].path);
	}
	free(c->v);
	hashtab__free(&c->ht);
	free(c);
}
