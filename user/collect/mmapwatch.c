// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mmapwatch.h"
#include "procmaps.h"
#include "vec.h"

/*
 * Data pages per CPU.  A record is ~100 bytes and the path; the buffers
 * are read at every sample and every poll (100 ms), so 256 KiB holds the
 * mappings of ~10k dlopen calls a second; and 64 pages a CPU stay within
 * the perf_event_mlock_kb a user without CAP_IPC_LOCK may lock.
 */
#define DATA_PAGES 64

struct cpu_ring {
	int fd;
	struct perf_event_mmap_page *meta;
	const unsigned char *data;
	size_t size;			/* of data, a power of two */
};

/* a record kept for a joined watch until it reads (the path its own copy) */
struct queued {
	struct procmap m;
	uint64_t ts;
};

/*
 * A joined watch's queue holds at most this many records: a target whose
 * reads stop (its lock held by a long serialization) loses its oldest
 * records past it, counted, rather than growing without bound.
 */
#define MAX_QUEUED 1024

struct mmapwatch {
	pid_t pid;			/* 0: a shared watch, every process's records */
	struct cpu_ring *rings;		/* NULL for a joined watch: the shared one's */
	int n;
	size_t page;
	uint64_t lost;
	/* a shared watch: its joined ones, by pid; the lock guards them and their queues */
	pthread_mutex_t lock;
	struct mmapwatch **joined;
	size_t n_joined, cap_joined;
	/* a joined watch: the shared one, the records sorted out for it */
	struct mmapwatch *shared;
	struct queued *q;
	size_t n_q, cap_q;
};

/* one record of a process: kept (0) or a non-zero stop */
typedef int (*record_fn)(void *ctx, pid_t pid, const struct procmap *m, uint64_t ts_ns);

/* the fixed part of PERF_RECORD_MMAP2 without build IDs (include/uapi/linux/perf_event.h) */
struct mmap2_record {
	struct perf_event_header header;
	__u32 pid, tid;
	__u64 addr, len, pgoff;
	__u32 maj, min;
	__u64 ino, ino_generation;
	__u32 prot, flags;
	char filename[];
};

/* sample_id_all with PERF_SAMPLE_TID | PERF_SAMPLE_TIME: the tail of every record */
struct sample_id {
	__u32 pid, tid;
	__u64 time;
};

static int open_cpu(struct mmapwatch *w, int cpu)
{
	struct perf_event_attr a;
	struct cpu_ring *r = &w->rings[cpu];
	void *p;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.sample_id_all = 1;
	/* executable mappings only (mmap_data stays 0), with device and inode */
	a.mmap = 1;
	a.mmap2 = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	/* the clock of the BPF side's bpf_ktime_get_ns() */
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	/* a dummy event has no pid filter: per CPU, every process's mappings, ours kept */
	r->fd = (int)syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	r->size = DATA_PAGES * w->page;
	p = mmap(NULL, w->page + r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->meta = p;
	r->data = (const unsigned char *)p + w->page;
	return 0;
}

static void queued_free(struct queued *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].m.path);
}

struct mmapwatch *mmapwatch__new(pid_t pid)
{
	struct mmapwatch *w = calloc(1, sizeof(*w));
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int i, err = 0;

	if (!w)
		return NULL;
	w->pid = pid;
	pthread_mutex_init(&w->lock, NULL);
	w->page = (size_t)sysconf(_SC_PAGESIZE);
	w->n = ncpu > 0 ? (int)ncpu : 1;
	w->rings = calloc((size_t)w->n, sizeof(*w->rings));
	if (!w->rings)
		err = -ENOMEM;
	for (i = 0; !err && i < w->n; i++)
		w->rings[i].fd = -1;
	/* a CPU that is not online cannot be opened: those that can are enough */
	for (i = 0; !err && i < w->n; i++) {
		int ret = open_cpu(w, i);

		if (ret && i == 0)
			err = ret;
	}
	if (err) {
		mmapwatch__free(w);
		errno = -err;
		return NULL;
	}
	return w;
}

struct mmapwatch *mmapwatch__new_shared(void)
{
	return mmapwatch__new(0);
}

struct mmapwatch *mmapwatch__join(struct mmapwatch *shared, pid_t pid)
{
	struct mmapwatch *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
	w->pid = pid;
	w->shared = shared;
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_lock(&shared->lock);
	err = vec_reserve(&shared->joined, &shared->cap_joined, shared->n_joined + 1,
			  sizeof(*shared->joined));
	if (!err)
		shared->joined[shared->n_joined++] = w;
	pthread_mutex_unlock(&shared->lock);
	if (err) {
		pthread_mutex_destroy(&w->lock);
		free(w);
		errno = -err;
		return NULL;
	}
	return w;
}

/* w out of its shared watch's list, its queue dropped */
static void leave(struct mmapwatch *w)
{
	struct mmapwatch *sh = w->shared;
	size_t i;

	pthread_mutex_lock(&sh->lock);
	for (i = 0; i < sh->n_joined; i++) {
		if (sh->joined[i] == w) {
			sh->joined[i] = sh->joined[--sh->n_joined];
			break;
		}
	}
	pthread_mutex_unlock(&sh->lock);
	queued_free(w->q, w->n_q);
	free(w->q);
}

/* copy len bytes at ring offset off (wrapping) */
static void ring_copy(const struct cpu_ring *r, uint64_t off, void *dst, size_t len)
{
	size_t at = (size_t)(off & (r->size - 1)), first = r->size - at < len ? r->size - at : len;

	memcpy(dst, r->data + at, first);
	memcpy((unsigned char *)dst + first, r->data, len - first);
}

/* a record as a procmap of its pid; false for what is no executable file */
static bool to_procmap(const unsigned char *rec, struct procmap *m, pid_t *pid, uint64_t *ts)
{
	const struct mmap2_record *r = (const void *)rec;
	const struct sample_id *id = (const void *)(rec + r->header.size - sizeof(*id));
	size_t room = r->header.size - sizeof(*r) - sizeof(*id);

	if (r->header.size < sizeof(*r) + sizeof(*id) ||
	    (r->header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) || r->filename[0] != '/' ||
	    !memchr(r->filename, 0, room))
		return false;
	memset(m, 0, sizeof(*m));
	m->start = r->addr;
	m->end = r->addr + r->len;
	m->offset = r->pgoff;
	m->dev_major = r->maj;
	m->dev_minor = r->min;
	m->inode = r->ino;
	m->readable = r->prot & PROT_READ;
	m->writable = r->prot & PROT_WRITE;
	m->executable = r->prot & PROT_EXEC;
	m->path = (char *)r->filename;
	*pid = (pid_t)r->pid;
	*ts = id->time;
	return m->executable;
}

static int read_ring(struct mmapwatch *w, struct cpu_ring *r, record_fn cb, void *ctx)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;
	unsigned char buf[sizeof(struct mmap2_record) + 4096 + sizeof(struct sample_id)];
	struct perf_event_header h;
	struct procmap m;
	uint64_t ts;
	pid_t pid;
	int ret = 0;

	while (!ret && tail + sizeof(h) <= head) {
		ring_copy(r, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			__u64 lost[2];

			ring_copy(r, tail + sizeof(h), lost, sizeof(lost));
			__atomic_fetch_add(&w->lost, lost[1], __ATOMIC_RELAXED);
		} else if (h.type == PERF_RECORD_MMAP2 && h.size <= sizeof(buf)) {
			ring_copy(r, tail, buf, h.size);
			if (to_procmap(buf, &m, &pid, &ts))
				ret = cb(ctx, pid, &m, ts);
		}
		tail += h.size;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	return ret;
}

static int read_rings(struct mmapwatch *w, record_fn cb, void *ctx)
{
	int i, ret = 0;

	for (i = 0; !ret && i < w->n; i++)
		if (w->rings[i].meta)
			ret = read_ring(w, &w->rings[i], cb, ctx);
	return ret;
}

struct own_read {
	pid_t pid;
	mmapwatch_fn cb;
	void *ctx;
};

static int own_record(void *ctx, pid_t pid, const struct procmap *m, uint64_t ts_ns)
{
	struct own_read *o = ctx;

	return pid == o->pid ? o->cb(o->ctx, m, ts_ns) : 0;
}

static struct mmapwatch *joined_by_pid(struct mmapwatch *shared, pid_t pid)
{
	size_t i;

	for (i = 0; i < shared->n_joined; i++)
		if (shared->joined[i]->pid == pid)
			return shared->joined[i];
	return NULL;
}

/* a record into its joined watch's queue (shared lock held); other processes' are dropped */
static int sort_out(void *ctx, pid_t pid, const struct procmap *m, uint64_t ts_ns)
{
	struct mmapwatch *j = joined_by_pid(ctx, pid);
	struct queued *e;

	if (!j)
		return 0;
	if (j->n_q == MAX_QUEUED) {
		queued_free(j->q, 1);
		memmove(j->q, j->q + 1, (j->n_q - 1) * sizeof(*j->q));
		j->n_q--;
		__atomic_fetch_add(&j->lost, 1, __ATOMIC_RELAXED);
	}
	if (vec_reserve(&j->q, &j->cap_q, j->n_q + 1, sizeof(*j->q))) {
		__atomic_fetch_add(&j->lost, 1, __ATOMIC_RELAXED);
		return 0;
	}
	e = &j->q[j->n_q];
	e->m = *m;
	e->ts = ts_ns;
	e->m.path = strdup(m->path);
	if (!e->m.path) {
		__atomic_fetch_add(&j->lost, 1, __ATOMIC_RELAXED);
		return 0;
	}
	j->n_q++;
	return 0;
}

/* under the shared lock: records not delivered go before those sorted out meanwhile */
static void requeue(struct mmapwatch *w, struct queued *rest, size_t n_rest)
{
	size_t n = n_rest + w->n_q, cap = 0;
	struct queued *v = NULL;

	if (vec_reserve(&v, &cap, n, sizeof(*v))) {
		queued_free(rest, n_rest);
		__atomic_fetch_add(&w->lost, n_rest, __ATOMIC_RELAXED);
		return;
	}
	/* either may be empty, and then NULL: memcpy() takes no NULL */
	if (n_rest)
		memcpy(v, rest, n_rest * sizeof(*v));
	if (w->n_q)
		memcpy(v + n_rest, w->q, w->n_q * sizeof(*v));
	free(w->q);
	w->q = v;
	w->n_q = n;
	w->cap_q = cap;
}

/*
 * Through the shared rings: everything recorded is sorted out to the joined
 * watches first, then this one's records are delivered without the lock
 * (cb may open files).
 */
static int read_joined(struct mmapwatch *w, mmapwatch_fn cb, void *ctx)
{
	struct mmapwatch *sh = w->shared;
	struct queued *v;
	size_t n, i;
	int ret = 0;

	pthread_mutex_lock(&sh->lock);
	read_rings(sh, sort_out, sh);
	v = w->q;
	n = w->n_q;
	w->q = NULL;
	w->n_q = w->cap_q = 0;
	pthread_mutex_unlock(&sh->lock);
	for (i = 0; i < n && !ret; i++)
		ret = cb(ctx, &v[i].m, v[i].ts);
	if (i < n) {
		pthread_mutex_lock(&sh->lock);
		requeue(w, v + i, n - i);
		pthread_mutex_unlock(&sh->lock);
	}
	queued_free(v, i);
	free(v);
	return ret;
}

int mmapwatch__read(struct mmapwatch *w, mmapwatch_fn cb, void *ctx)
{
	struct own_read o = { .pid = w->pid, .cb = cb, .ctx = ctx };

	if (w->shared)
		return read_joined(w, cb, ctx);
	return read_rings(w, own_record, &o);
}

uint64_t mmapwatch__lost(const struct mmapwatch *w)
{
	/* a joined watch misses what the shared rings lost too (counted under their lock) */
	uint64_t lost = __atomic_load_n(&w->lost, __ATOMIC_RELAXED);

	return w->shared ? lost + __atomic_load_n(&w->shared->lost, __ATOMIC_RELAXED) : lost;
}

void mmapwatch__free(struct mmapwatch *w)
{
	int i;

	if (!w)
		return;
	if (w->shared)
		leave(w);
	for (i = 0; w->rings && i < w->n; i++) {
		if (w->rings[i].meta)
			munmap(w->rings[i].meta, w->page + w->rings[i].size);
		if (w->rings[i].fd >= 0)
			close(w->rings[i].fd);
	}
	free(w->rings);
	free(w->joined);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
