// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "procmaps.h"
#include "target.h"
#include "unwind_choice.h"

struct choice {
	char *key;		/* the executable path, then each executable file's identity */
	enum session_unwind unwind;
	char *why;
};

struct unwind_choices {
	pthread_mutex_t lock;
	struct choice *v;
	size_t n, max, next;	/* next: the slot to reuse once n == max */
	size_t judged, reused;
};

struct unwind_choices *unwind_choices__new(size_t max)
{
	struct unwind_choices *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max = max ? max : 1;
	c->v = calloc(c->max, sizeof(*c->v));
	if (!c->v) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void unwind_choices__free(struct unwind_choices *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++) {
		free(c->v[i].key);
		free(c->v[i].why);
	}
	free(c->v);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* append to a malloc'd string; false when out of memory (the string is the caller's still) */
static bool key_add(char **key, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool key_add(char **key, size_t *len, const char *fmt, ...)
{
	char *more, *grown;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&more, fmt, ap);
	va_end(ap);
	if (n < 0)
		return false;
	grown = realloc(*key, *len + (size_t)n + 1);
	if (grown) {
		memcpy(grown + *len, more, (size_t)n + 1);
		*key = grown;
		*len += (size_t)n;
	}
	free(more);
	return grown != NULL;
}

/*
 * What the choice depends on, as a string: NULL when a file cannot be
 * identified (gone, or replaced on disk since it was mapped: the inode the
 * path names now is not the mapped one), and then nothing is remembered.
 */
static char *choice_key(const struct target *t, const struct procmaps *maps)
{
	char path[PATH_MAX], *key = NULL;
	size_t i, len = 0;
	struct stat st;

	if (!key_add(&key, &len, "%s", t->exe))
		return NULL;
	for (i = 0; i < maps->n; i++) {
		const struct procmap *m = &maps->v[i];

		if (!m->executable || !procmap__is_file(m))
			continue;
		if (target__object_path(t, m, path, sizeof(path)) || stat(path, &st) ||
		    st.st_ino != m->inode ||
		    !key_add(&key, &len, "\n%s %llx %llu %lld %lld.%09ld", m->path,
			     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
			     (long long)st.st_size, (long long)st.st_mtim.tv_sec,
			     st.st_mtim.tv_nsec)) {
			free(key);
			return NULL;
		}
	}
	return key;
}

static struct choice *find(struct unwind_choices *c, const char *key)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].key, key))
			return &c->v[i];
	return NULL;
}

/* key and why are taken over (freed when they cannot be kept) */
static void remember(struct unwind_choices *c, char *key, enum session_unwind unwind,
		     const char *why)
{
	struct choice *e;
	char *w = strdup(why);

	if (!w) {
		free(key);
		return;
	}
	if (c->n < c->max) {
		e = &c->v[c->n++];
	} else {
		e = &c->v[c->next];
		c->next = (c->next + 1) % c->max;
		free(e->key);
		free(e->why);
	}
	*e = (struct choice){ .key = key, .unwind = unwind, .why = w };
}

int unwind_choices__choose(struct unwind_choices *c, const struct target *t,
			   const struct procmaps *maps, struct objcache *objs,
			   enum session_unwind want, enum session_unwind *out, char *why,
			   size_t len)
{
	const struct choice *e;
	char *key;
	int ret;

	if (!c || want != SESSION_UNWIND_AUTO || !(key = choice_key(t, maps)))
		return session_unwind__choose(t, maps, objs, want, out, why, len);
	pthread_mutex_lock(&c->lock);
	e = find(c, key);
	if (e) {
		*out = e->unwind;
		snprintf(why, len, "%s", e->why);
		c->reused++;
		pthread_mutex_unlock(&c->lock);
		free(key);
		return 0;
	}
	pthread_mutex_unlock(&c->lock);
	/* judged unlocked: another thread choosing meanwhile only judges the same files again */
	ret = session_unwind__choose(t, maps, objs, want, out, why, len);
	pthread_mutex_lock(&c->lock);
	c->judged++;
	if (ret || find(c, key))
		free(key);
	else
		remember(c, key, *out, why);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void unwind_choices__counts(struct unwind_choices *c, size_t *judged, size_t *reused)
{
	pthread_mutex_lock(&c->lock);
	*judged = c->judged;
	*reused = c->reused;
	pthread_mutex_unlock(&c->lock);
}
