// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "targets.h"

struct targets {
	pthread_mutex_t lock;
	struct agent_target *v;
	size_t n, max;
	uint64_t picked_up, dropped, refused;
};

struct targets *targets__new(size_t max)
{
	struct targets *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->v = calloc(max ? max : 1, sizeof(*t->v));
	if (!t->v) {
		free(t);
		return NULL;
	}
	t->max = max;
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void targets__free(struct targets *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->v);
	free(t);
}

static ssize_t find_live(const struct targets *t, pid_t pid, uint64_t start)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].pid == pid && !t->v[i].exited_ns &&
		    (!start || t->v[i].start_ticks == start))
			return (ssize_t)i;
	return -1;
}

/* the exited target that exited first */
static ssize_t oldest_exited(const struct targets *t)
{
	ssize_t best = -1;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].exited_ns && (best < 0 || t->v[i].exited_ns < t->v[best].exited_ns))
			best = (ssize_t)i;
	return best;
}

static void remove_at(struct targets *t, size_t i)
{
	t->v[i] = t->v[--t->n];
	t->dropped++;
}

int targets__add(struct targets *t, const struct agent_target *a, struct agent_target *evicted)
{
	ssize_t old;
	int ret = 0;

	if (evicted)
		evicted->pid = 0;
	pthread_mutex_lock(&t->lock);
	if (find_live(t, a->pid, 0) >= 0) {
		ret = -EEXIST;
	} else if (t->n == t->max && (old = oldest_exited(t)) < 0) {
		t->refused++;
		ret = -ENOSPC;
	} else {
		if (t->n == t->max) {
			if (evicted)
				*evicted = t->v[old];
			remove_at(t, (size_t)old);
		}
		t->v[t->n++] = *a;
		t->picked_up++;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

bool targets__get_live(struct targets *t, pid_t pid, struct agent_target *out)
{
	ssize_t i;

	pthread_mutex_lock(&t->lock);
	i = find_live(t, pid, 0);
	if (i >= 0)
		*out = t->v[i];
	pthread_mutex_unlock(&t->lock);
	return i >= 0;
}

int targets__update(struct targets *t, const struct agent_target *a)
{
	ssize_t i;

	pthread_mutex_lock(&t->lock);
	i = find_live(t, a->pid, a->start_ticks);
	if (i >= 0)
		t->v[i] = *a;
	pthread_mutex_unlock(&t->lock);
	return i >= 0 ? 0 : -ENOENT;
}

int targets__mark_exited(struct targets *t, pid_t pid, uint64_t start, const char *reason,
			 int64_t now_ns, struct agent_target *out)
{
	ssize_t i;

	pthread_mutex_lock(&t->lock);
	i = find_live(t, pid, start);
	if (i >= 0) {
		t->v[i].exited_ns = now_ns;
		snprintf(t->v[i].exit_reason, sizeof(t->v[i].exit_reason), "%s", reason);
		if (out)
			*out = t->v[i];
	}
	pthread_mutex_unlock(&t->lock);
	return i >= 0 ? 0 : -ENOENT;
}

bool targets__expire_one(struct targets *t, int64_t now_ns, uint64_t keep_ns,
			 struct agent_target *out)
{
	bool found = false;
	size_t i;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->n && !found; i++) {
		if (!t->v[i].exited_ns || now_ns - t->v[i].exited_ns < (int64_t)keep_ns)
			continue;
		*out = t->v[i];
		remove_at(t, i);
		found = true;
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

static int cmp_target(const void *a, const void *b)
{
	const struct agent_target *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->since_ns < y->since_ns ? -1 : x->since_ns > y->since_ns;
}

int targets__copy(struct targets *t, struct agent_target **v, size_t *n)
{
	pthread_mutex_lock(&t->lock);
	*n = t->n;
	*v = malloc((t->n ? t->n : 1) * sizeof(**v));
	if (*v)
		memcpy(*v, t->v, t->n * sizeof(**v));
	pthread_mutex_unlock(&t->lock);
	if (!*v)
		return -ENOMEM;
	qsort(*v, *n, sizeof(**v), cmp_target);
	return 0;
}

int targets__live_pids(struct targets *t, pid_t **v, uint64_t **starts, size_t *n)
{
	size_t i;

	pthread_mutex_lock(&t->lock);
	*v = malloc((t->n ? t->n : 1) * sizeof(**v));
	*starts = malloc((t->n ? t->n : 1) * sizeof(**starts));
	*n = 0;
	for (i = 0; *v && *starts && i < t->n; i++) {
		if (t->v[i].exited_ns)
			continue;
		(*v)[*n] = t->v[i].pid;
		(*starts)[(*n)++] = t->v[i].start_ticks;
	}
	pthread_mutex_unlock(&t->lock);
	if (*v && *starts)
		return 0;
	free(*v);
	free(*starts);
	return -ENOMEM;
}

void targets__counters(struct targets *t, struct targets_counters *c)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	pthread_mutex_lock(&t->lock);
	c->picked_up = t->picked_up;
	c->dropped = t->dropped;
	c->refused = t->refused;
	for (i = 0; i < t->n; i++) {
		if (t->v[i].exited_ns)
			c->exited++;
		else
			c->live++;
	}
	pthread_mutex_unlock(&t->lock);
}
