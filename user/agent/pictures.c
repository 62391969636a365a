// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocstate.h"
#include "bsearch.h"
#include "clock.h"
#include "log.h"
#include "memfmt.h"
#include "memstats.h"
#include "pictures.h"
#include "thread.h"
#include "vec.h"

struct picture {
	pid_t pid;
	uint64_t start_ticks;
	uint64_t read_ns;		/* CLOCK_MONOTONIC */
	struct memfmt_prom *w;
	bool live;			/* prune()'s mark */
};

struct pictures {
	struct targets *targets;
	pthread_mutex_t lock;		/* v, n, scraped_ns, stop */
	pthread_cond_t cond;
	struct picture *v;		/* by pid, then start: a scrape of 1000 targets finds each */
	size_t n, cap;
	uint64_t scraped_ns;		/* the last scrape; 0: none yet */
	bool stop;
	pthread_t thread;
	/*
	 * One reader for every target, kept: the objects the targets map (a
	 * libc's symbols read once for all) and glibc's layout.  Local debug
	 * files only (no debuginfod fetch while Prometheus waits), never the
	 * sampler's listener semaphore.  The thread and the scrapes take turns.
	 */
	pthread_mutex_t read_lock;
	struct alloc_reader *reader;
	struct memstats *m;		/* a quarter of a MiB (glibc's arena table): one */
};

/* t's picture read now and rendered; NULL when it cannot be read (gone meanwhile) */
static struct memfmt_prom *read_one(struct pictures *p, const struct agent_target *t)
{
	struct memfmt_prom *w = NULL;
	struct mem_prom_labels labels = {
		.key = { "container", "namespace", "pod" },
		.val = { t->ci.container_name, t->ci.pod_namespace, t->ci.pod_name },
		.n = 3,
	};
	char err[256];

	pthread_mutex_lock(&p->read_lock);
	if (!p->reader) {
		struct alloc_reader_opts o = { .sz = sizeof(o), .no_debuginfod = true,
					       .no_listen = true };

		p->reader = alloc_reader__new(&o);
	}
	if (memstats__read(t->pid, p->m, err, sizeof(err)))
		goto out;
	/* what cannot be read is said in the state, and left out of the metrics */
	if (p->reader)
		alloc_reader__read(p->reader, t->pid, &p->m->alloc);
	/* the target's attribution, which also reads cgroup v1 paths */
	snprintf(p->m->cg.container_id, sizeof(p->m->cg.container_id), "%s", t->ci.id);
	w = memfmt_prom__new();
	if (w && memfmt_prom__add(w, p->m, &labels)) {
		memfmt_prom__free(w);
		w = NULL;
	}
out:
	pthread_mutex_unlock(&p->read_lock);
	return w;
}

struct picture_key {
	pid_t pid;
	uint64_t start;
};

static bool picture_before(const void *elem, const void *key)
{
	const struct picture *pic = elem;
	const struct picture_key *k = key;

	return pic->pid < k->pid || (pic->pid == k->pid && pic->start_ticks < k->start);
}

/* where the picture of pid and start is or goes; lock held */
static size_t place(struct pictures *p, pid_t pid, uint64_t start)
{
	struct picture_key k = { pid, start };

	return lower_bound(&k, p->v, p->n, sizeof(*p->v), picture_before);
}

/* the picture of pid and start; lock held */
static struct picture *find(struct pictures *p, pid_t pid, uint64_t start)
{
	size_t i = place(p, pid, start);

	return i < p->n && p->v[i].pid == pid && p->v[i].start_ticks == start ? &p->v[i] : NULL;
}

/* w as t's picture, read at read_ns; lock held */
static void store(struct pictures *p, const struct agent_target *t, struct memfmt_prom *w,
		  uint64_t read_ns)
{
	struct picture *pic = find(p, t->pid, t->start_ticks);
	size_t i;

	if (!pic) {
		if (vec_reserve(&p->v, &p->cap, p->n + 1, sizeof(*p->v))) {
			memfmt_prom__free(w);
			return;
		}
		i = place(p, t->pid, t->start_ticks);
		memmove(&p->v[i + 1], &p->v[i], (p->n++ - i) * sizeof(*p->v));
		pic = &p->v[i];
		pic->pid = t->pid;
		pic->start_ticks = t->start_ticks;
		pic->w = NULL;
	}
	memfmt_prom__free(pic->w);
	pic->w = w;
	pic->read_ns = read_ns;
}

static void read_and_store(struct pictures *p, const struct agent_target *t)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct memfmt_prom *w = read_one(p, t);

	pthread_mutex_lock(&p->lock);
	if (w)
		store(p, t, w, now);
	pthread_mutex_unlock(&p->lock);
}

/* the pictures of targets no longer live go; lock held */
static void prune(struct pictures *p, const struct agent_target *v, size_t n)
{
	struct picture *pic;
	size_t i, k = 0;

	for (i = 0; i < p->n; i++)
		p->v[i].live = false;
	for (i = 0; i < n; i++)
		if (!v[i].exited_ns && (pic = find(p, v[i].pid, v[i].start_ticks)))
			pic->live = true;
	for (i = 0; i < p->n; i++) {
		if (p->v[i].live)
			p->v[k++] = p->v[i];
		else
			memfmt_prom__free(p->v[i].w);
	}
	p->n = k;
}

/* every live target read again, one after the other; stops between two when asked */
static void refresh(struct pictures *p)
{
	struct agent_target *v;
	bool stop = false, fresh;
	struct picture *pic;
	size_t i, n;

	if (targets__copy(p->targets, &v, &n))
		return;
	for (i = 0; i < n && !stop; i++) {
		if (v[i].exited_ns)
			continue;
		pthread_mutex_lock(&p->lock);
		pic = find(p, v[i].pid, v[i].start_ticks);
		/* read by a scrape within half a period */
		fresh = pic && clock_ns(CLOCK_MONOTONIC) - pic->read_ns < PICTURES_REFRESH_NS / 2;
		pthread_mutex_unlock(&p->lock);
		if (!fresh)
			read_and_store(p, &v[i]);
		pthread_mutex_lock(&p->lock);
		stop = p->stop;
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_lock(&p->lock);
	prune(p, v, n);
	pthread_mutex_unlock(&p->lock);
	free(v);
}

static void *run(void *arg)
{
	struct pictures *p = arg;
	struct timespec until;
	uint64_t now, at = 0;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		now = clock_ns(CLOCK_MONOTONIC);
		/* only while someone scrapes: no reads for nobody */
		if (!p->scraped_ns || now - p->scraped_ns >= PICTURES_IDLE_NS) {
			at = 0;
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		/* woken by a scrape, which has read what it lacked: a period from now */
		if (!at)
			at = now + PICTURES_REFRESH_NS;
		if (now >= at) {
			pthread_mutex_unlock(&p->lock);
			refresh(p);
			pthread_mutex_lock(&p->lock);
			at = now + PICTURES_REFRESH_NS;
			continue;
		}
		until.tv_sec = (time_t)(at / 1000000000ULL);
		until.tv_nsec = (long)(at % 1000000000ULL);
		pthread_cond_timedwait(&p->cond, &p->lock, &until);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct pictures *pictures__new(struct targets *t)
{
	struct pictures *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;
	int err;

	if (!p)
		return NULL;
	p->m = malloc(sizeof(*p->m));
	if (!p->m) {
		free(p);
		return NULL;
	}
	p->targets = t;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->read_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	err = thread_start_unsignalled(&p->thread, run, p);
	if (err) {
		pthread_cond_destroy(&p->cond);
		free(p->m);
		free(p);
		errno = err;
		return NULL;
	}
	return p;
}

void pictures__free(struct pictures *p)
{
	size_t i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	for (i = 0; i < p->n; i++)
		memfmt_prom__free(p->v[i].w);
	free(p->v);
	alloc_reader__free(p->reader);
	pthread_cond_destroy(&p->cond);
	free(p->m);
	free(p);
}

/* the live targets of v without a picture young enough, by index; -ENOMEM */
static int stale(struct pictures *p, const struct agent_target *v, size_t n, size_t **out,
		 size_t *n_out)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	struct picture *pic;
	size_t i, k = 0;
	size_t *idx = malloc((n ?: 1) * sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	/* a first scrape, or one after a pause, wakes the thread */
	if (!p->scraped_ns || now - p->scraped_ns >= PICTURES_IDLE_NS)
		pthread_cond_signal(&p->cond);
	p->scraped_ns = now;
	for (i = 0; i < n; i++) {
		if (v[i].exited_ns)
			continue;
		pic = find(p, v[i].pid, v[i].start_ticks);
		if (!pic || now - pic->read_ns > PICTURES_MAX_AGE_NS)
			idx[k++] = i;
	}
	pthread_mutex_unlock(&p->lock);
	*out = idx;
	*n_out = k;
	return 0;
}

int pictures__write(struct pictures *p, FILE *f, const struct agent_target *v, size_t n)
{
	struct memfmt_prom **w;
	struct picture *pic;
	size_t *idx, n_idx, i, k = 0;
	int ret;

	ret = stale(p, v, n, &idx, &n_idx);
	if (ret)
		return ret;
	for (i = 0; i < n_idx; i++)
		read_and_store(p, &v[idx[i]]);
	free(idx);
	w = malloc((n ?: 1) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	/* held while written: the thread replaces a picture only between two scrapes' writes */
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < n; i++) {
		pic = v[i].exited_ns ? NULL : find(p, v[i].pid, v[i].start_ticks);
		if (pic)
			w[k++] = pic->w;
	}
	ret = memfmt_prom__write(f, w, k);
	pthread_mutex_unlock(&p->lock);
	free(w);
	return ret;
}
