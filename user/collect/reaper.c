// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "culpert.h"
#include "log.h"
#include "reaper.h"
#include "thread.h"
#include "uprobe.h"
#include "vec.h"

struct sweep {
	__u32 tgid;
	uint64_t cut;
};

/* what is handed over and not yet done: the queue, then the batch the thread works on */
struct work {
	struct uprobe_set **sets;
	size_t n_sets, cap_sets;
	struct bpf_link **links;
	size_t n_links, cap_links;
	struct sweep *sweeps;
	size_t n_sweeps, cap_sweeps;
	pid_t *pids;			/* whose links these are */
	size_t n_pids, cap_pids;
};

struct reaper {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	struct work queued, running;
	bool quit;
	int live_fd;
	size_t value_size;
	uint64_t procs, swept;
};

static bool has_pid(const struct work *w, pid_t pid)
{
	size_t i;

	for (i = 0; i < w->n_pids; i++)
		if (w->pids[i] == pid)
			return true;
	return false;
}

static bool note_pid(struct work *w, pid_t pid)
{
	if (has_pid(w, pid))
		return true;
	if (vec_reserve(&w->pids, &w->cap_pids, w->n_pids + 1, sizeof(pid_t)))
		return false;
	w->pids[w->n_pids++] = pid;
	return true;
}

static void work_clear(struct work *w)
{
	w->n_sets = w->n_links = w->n_sweeps = w->n_pids = 0;
}

static void work_free(struct work *w)
{
	free(w->sets);
	free(w->links);
	free(w->sweeps);
	free(w->pids);
}

static bool is_swept(const struct sweep *v, size_t n, const struct culpert_live_key *k,
		     const void *value)
{
	uint64_t id;
	size_t i;

	memcpy(&id, value, sizeof(id));
	for (i = 0; i < n; i++)
		if (v[i].tgid == k->tgid && id <= v[i].cut)
			return true;
	return false;
}

#define SWEEP_BATCH 4096

/*
 * One pass over the whole table for every process of the batch: a table
 * shared by all targets holds up to --max-live entries, and a pass per
 * process (or a restart from the first key after each delete) costs that
 * many system calls each time.  Batched reads where the kernel has them
 * (5.6+), one key after another otherwise; the deletes after the walk.
 */
static uint64_t sweep_pass(struct reaper *r, const struct sweep *v, size_t n)
{
	size_t cap = SWEEP_BATCH, n_dead = 0, cap_dead = 0, i;
	struct culpert_live_key *keys = NULL, *dead = NULL, k, next;
	char token[16], *values = NULL, value[64];
	bool first = true, batched = true;
	__u32 count, bound;
	int ret;

	if (!n || r->live_fd < 0 || r->value_size < sizeof(uint64_t) ||
	    r->value_size > sizeof(value))
		return 0;
	keys = calloc(cap, sizeof(*keys));
	values = calloc(cap, r->value_size);
	while (keys && values) {
		count = (__u32)cap;
		ret = bpf_map_lookup_batch(r->live_fd, first ? NULL : token, token, keys, values,
					   &count, NULL);
		if (ret && ret != -ENOENT && first && count == 0 && ret != -ENOSPC) {
			batched = false;	/* no batch operations on this kernel */
			break;
		}
		first = false;
		for (i = 0; i < count; i++) {
			if (!is_swept(v, n, &keys[i], values + i * r->value_size))
				continue;
			if (vec_reserve(&dead, &cap_dead, n_dead + 1, sizeof(*dead)))
				break;
			dead[n_dead++] = keys[i];
		}
		if (ret)
			break;
	}
	/* a key deleted meanwhile restarts the walk from the first: bounded */
	for (first = true, bound = 1U << 26; !batched && bound-- &&
	     bpf_map_get_next_key(r->live_fd, first ? NULL : &k, &next) == 0; first = false) {
		k = next;
		if (bpf_map_lookup_elem(r->live_fd, &k, value) || !is_swept(v, n, &k, value))
			continue;
		if (vec_reserve(&dead, &cap_dead, n_dead + 1, sizeof(*dead)))
			break;
		dead[n_dead++] = k;
	}
	for (i = 0; i < n_dead; i++)
		bpf_map_delete_elem(r->live_fd, &dead[i]);
	free(keys);
	free(values);
	free(dead);
	return n_dead;
}

static void *reaper_main(void *arg)
{
	struct reaper *r = arg;
	struct work w;
	uint64_t swept;
	bool quit;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->quit && !r->queued.n_sets && !r->queued.n_links && !r->queued.n_sweeps)
			pthread_cond_wait(&r->wake, &r->lock);
		quit = r->quit;
		/* the queue becomes the batch; the batch's arrays, emptied, the next queue */
		w = r->running;
		r->running = r->queued;
		r->queued = w;
		work_clear(&r->queued);
		pthread_mutex_unlock(&r->lock);
		uprobe_sets__free(r->running.sets, r->running.n_sets, r->running.links,
				  r->running.n_links);
		/* the links first: no probe adds an entry of a leaving process after its sweep */
		swept = sweep_pass(r, r->running.sweeps, r->running.n_sweeps);
		pthread_mutex_lock(&r->lock);
		r->swept += swept;
		work_clear(&r->running);
		pthread_cond_broadcast(&r->done);
		if (quit && !r->queued.n_sets && !r->queued.n_links && !r->queued.n_sweeps)
			break;
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

struct reaper *reaper__new(int live_fd, size_t value_size)
{
	struct reaper *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return NULL;
	r->live_fd = live_fd;
	r->value_size = value_size;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->wake, NULL);
	pthread_cond_init(&r->done, NULL);
	ret = thread_start_unsignalled(&r->thread, reaper_main, r);
	if (ret) {
		pthread_mutex_destroy(&r->lock);
		pthread_cond_destroy(&r->wake);
		pthread_cond_destroy(&r->done);
		free(r);
		errno = ret;
		return NULL;
	}
	return r;
}

void reaper__free(struct reaper *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->quit = true;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	work_free(&r->queued);
	work_free(&r->running);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->wake);
	pthread_cond_destroy(&r->done);
	free(r);
}

bool reaper__put_set(struct reaper *r, pid_t pid, struct uprobe_set *set)
{
	struct work *q = &r->queued;
	bool ok;

	if (!set)
		return true;
	pthread_mutex_lock(&r->lock);
	ok = !vec_reserve(&q->sets, &q->cap_sets, q->n_sets + 1, sizeof(*q->sets)) &&
	     note_pid(q, pid);
	if (ok) {
		q->sets[q->n_sets++] = set;
		pthread_cond_signal(&r->wake);
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

bool reaper__put_link(struct reaper *r, pid_t pid, struct bpf_link *link)
{
	struct work *q = &r->queued;
	bool ok;

	if (!link)
		return true;
	pthread_mutex_lock(&r->lock);
	ok = !vec_reserve(&q->links, &q->cap_links, q->n_links + 1, sizeof(*q->links)) &&
	     note_pid(q, pid);
	if (ok) {
		q->links[q->n_links++] = link;
		pthread_cond_signal(&r->wake);
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

bool reaper__sweep(struct reaper *r, pid_t tgid, uint64_t cut)
{
	struct work *q = &r->queued;
	bool ok;

	pthread_mutex_lock(&r->lock);
	ok = !vec_reserve(&q->sweeps, &q->cap_sweeps, q->n_sweeps + 1, sizeof(*q->sweeps));
	if (ok) {
		q->sweeps[q->n_sweeps++] = (struct sweep){ .tgid = (__u32)tgid, .cut = cut };
		r->procs++;
		pthread_cond_signal(&r->wake);
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

bool reaper__pending(struct reaper *r, pid_t pid)
{
	bool ret;

	if (!r)
		return false;
	pthread_mutex_lock(&r->lock);
	ret = has_pid(&r->queued, pid) || has_pid(&r->running, pid);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

bool reaper__wait(struct reaper *r, pid_t pid, uint64_t timeout_ns)
{
	struct timespec until;
	bool ret = true;

	if (!r)
		return true;
	until = clock_deadline(CLOCK_REALTIME, timeout_ns);
	pthread_mutex_lock(&r->lock);
	while (ret && (has_pid(&r->queued, pid) || has_pid(&r->running, pid)))
		ret = pthread_cond_timedwait(&r->done, &r->lock, &until) == 0;
	pthread_mutex_unlock(&r->lock);
	return ret;
}
