// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's collector: one BPF object (bpfobj__open()) shared by every
 * target, and per target a session over it (session__open_shared()): its
 * plan, its uprobe links, its aggregate bounded by --max-stacks, its live
 * blocks.  Records carry their tgid; the profiling thread hands each to
 * its target's session.  HTTP threads serialize a target's profile under
 * that target's lock; the profiling thread never waits for it: a record
 * that finds the lock taken goes to the target's backlog, handed over in
 * order once the lock is free (docs/agent.md, "Serving").  The state
 * (/targets, /metrics, the duty cycles) has a lock of its own, so reading
 * it waits for no serialization either.
 */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "agent.h"
#include "allocator.h"
#include "clock.h"
#include "collector.h"
#include "culpert.h"
#include "endpoints.h"
#include "export.h"
#include "log.h"
#include "memlimit.h"
#include "mmapwatch.h"
#include "otel.h"
#include "bpfobj.h"
#include "readfile.h"
#include "session.h"
#include "targets.h"
#include "thread.h"
#include "units.h"
#include "unwind_choice.h"
#include "vec.h"

#define NS_PER_SEC 1000000000ULL
/*
 * A target's records kept while a profile of it is serialized: past this
 * the profiling thread waits for the lock (the ring buffer holds the
 * rest), rather than grow without bound.  A serialization takes tens of
 * milliseconds, a backlog of it a few hundred KiB.  Under a memory limit,
 * a 16th of it at most (collector__set_memlimit()).
 */
#define BACKLOG_MAX	(32 << 20)
/* profiles serialized at once: each holds its whole encoding (memory) */
#define MAX_ENCODING	2
/* how long a scrape waits for its turn before it is answered 503 */
#define ENCODE_WAIT_NS	(30 * NS_PER_SEC)

/* scrapes of one profile answered by one encoding (the ones that came while it ran) */
#define MAX_FLIGHTS	8
/* sets of files whose unwinding is remembered: programs on a node, not processes */
#define UNWIND_CHOICES_MAX	256

/* a target to plan and attach, for the attach thread; or a session to release and close */
struct attach_job {
	struct ctarget *t;
	uint64_t gen;
	pid_t pid;
	uint64_t start;
	bool first;			/* its pick-up, not a retry */
	struct session *close;		/* set: only this, its injected sampler released first */
};

struct flight {
	bool used, done;
	pid_t pid;
	uint64_t start;
	bool exited;
	enum agent_profile kind;
	unsigned int waiters;
	int ret;
	void *buf;		/* a copy for the waiters; the last one frees it */
	size_t len;
	char err[256];
};

/* records back to back, each after its size (8 bytes: the next stays aligned) */
struct backlog {
	unsigned char *buf;
	size_t len, cap;
};

struct ctarget {
	bool used, exited;
	bool inject;			/* --inject selected it: the sampler is injected */
	bool attaching;			/* queued for the attach thread, or being attached */
	bool awaiting_entry;		/* planned again when it reaches its entry point */
	pid_t pid;
	uint64_t start_ticks;
	pthread_mutex_t lock;		/* the session: profiling thread vs HTTP threads */
	/*
	 * st, s, used, exited, pid, start_ticks, attaching and the proc's
	 * probe switch (observed time): written with lock and st_lock held
	 * (in that order), read with either
	 */
	pthread_mutex_t st_lock;
	struct session *s;		/* NULL: its probes failed (st.error says why) */
	struct collector_state st;	/* allocator, probes, error */
	uint64_t samples;		/* the session's, stored after each record (atomic) */
	struct backlog q;		/* the profiling thread's alone */
	int backlogged;			/* q holds records (atomic): serializers let it drain first */
	uint64_t gen;			/* claimed this many times: an attach is for its claim */
	uint64_t picked_ns;		/* CLOCK_MONOTONIC */
	int64_t heap_since_unix_ns;	/* the free probes were last re-attached; 0: never off */
	uint64_t retry_ns, retry_wait_ns;	/* failed: when to plan again, and the wait after */
	int64_t live_unix_ns;		/* when its probes went live (CLOCK_REALTIME); 0 before */
	/* its session keeps a symbolizer, last used then (CLOCK_MONOTONIC; atomic); 0: none */
	uint64_t sym_used_ns;
	uint64_t anon_rss_at;		/* its anonymous RSS then, bytes (what came before) */
	char comm[16];
};

struct collector {
	struct session_opts o;		/* every target's, but the pid */
	size_t max_stacks;
	bool labels_all;
	enum session_unwind unwind;
	struct bpfobj *sampler;
	/*
	 * Every target's new mappings, one set of perf rings for all: a ring set
	 * per target would have the kernel write each mapping on the node once
	 * per target, and cost every target a descriptor and ring per CPU
	 */
	struct mmapwatch *maps_watch;
	/* the unwinding of each set of files, judged once (docs/agent.md, "Many targets") */
	struct unwind_choices *unwind_choices;
	pthread_mutex_t table;		/* which slot is which target */
	struct ctarget *v;
	size_t n;
	volatile int stopping;
	pthread_mutex_t enc_lock;	/* encoding: serializations under way */
	pthread_cond_t enc_cond;
	unsigned int encoding;
	struct flight flights[MAX_FLIGHTS];	/* under enc_lock */
	const struct memlimit *mem;	/* NULL: no limit */
	uint64_t reserved;		/* the encodings' estimated peaks (under enc_lock) */
	size_t backlog_max;		/* a target's backlog, bytes */
	uint64_t mem_refused;		/* scrapes refused for memory (under enc_lock) */
	uint64_t backlogged, stalls;	/* records kept back; waits for a full backlog */
	bool sym_off;			/* memory: no symbolizer kept any more (atomic) */
	/* the duty cycle's read of every target's counters at once (profiling thread) */
	struct bpfobj_procs procs;
	bool procs_read, procs_said;
	/*
	 * Planning and attaching: on a thread of its own, fed by the
	 * profiling thread, which reads records and events meanwhile
	 * (docs/agent.md, "The collector").  done_fd counts the attaches
	 * finished, for the profiling thread to let held processes go.
	 */
	pthread_t attacher;
	bool attacher_started;
	pthread_mutex_t jobs_lock;
	pthread_cond_t jobs_cond;
	struct attach_job *jobs;	/* under jobs_lock */
	size_t n_jobs, cap_jobs;
	bool jobs_quit;
	int done_fd;
};

/* the live target of a tgid; table lock held */
static struct ctarget *find_live(struct collector *c, pid_t pid)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->v[i].used && !c->v[i].exited && c->v[i].pid == pid)
			return &c->v[i];
	return NULL;
}

/*
 * The target of pid and start, the live one first (or the exited one
 * first): a process that exec'd keeps its pid and start, and is then an
 * exited target and a new live one.
 */
static struct ctarget *find_as(struct collector *c, pid_t pid, uint64_t start, bool exited_first)
{
	struct ctarget *other = NULL;
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (!c->v[i].used || c->v[i].pid != pid || c->v[i].start_ticks != start)
			continue;
		if (c->v[i].exited == exited_first)
			return &c->v[i];
		other = other ?: &c->v[i];
	}
	return other;
}

/*
 * The target locked, if it still is pid and start once locked: the table's
 * lock is not held while waiting for a target's (probes going out, a
 * profile being serialized), so one slow target holds up no other.
 */
static struct ctarget *lock_one(struct collector *c, pid_t pid, uint64_t start, bool exited_first,
			       bool state)
{
	pthread_mutex_t *m;
	struct ctarget *t;

	pthread_mutex_lock(&c->table);
	t = find_as(c, pid, start, exited_first);
	pthread_mutex_unlock(&c->table);
	if (!t)
		return NULL;
	m = state ? &t->st_lock : &t->lock;
	pthread_mutex_lock(m);
	if (t->used && t->pid == pid && t->start_ticks == start)
		return t;
	pthread_mutex_unlock(m);
	return NULL;
}

static struct ctarget *lock_slot(struct collector *c, pid_t pid, uint64_t start, bool exited_first)
{
	return lock_one(c, pid, start, exited_first, false);
}

/* the same for the state: a serialization under way holds up no reader of it */
static struct ctarget *lock_state(struct collector *c, pid_t pid, uint64_t start,
				  bool exited_first)
{
	return lock_one(c, pid, start, exited_first, true);
}

/* a copy of the record at the end of the backlog; -ENOSPC when full, -ENOMEM */
static int backlog_add(struct backlog *q, const void *data, size_t size, size_t max)
{
	size_t need = q->len + 8 + ((size + 7) & ~(size_t)7), cap;
	unsigned char *nb;

	if (need > max)
		return -ENOSPC;
	if (need > q->cap) {
		for (cap = q->cap ?: 64 * 1024; cap < need; cap *= 2)
			;
		nb = realloc(q->buf, cap);
		if (!nb)
			return -ENOMEM;
		q->buf = nb;
		q->cap = cap;
	}
	*(uint64_t *)(q->buf + q->len) = size;
	memcpy(q->buf + q->len + 8, data, size);
	q->len = need;
	return 0;
}

/* the backlog to the session, in order; target lock held (profiling thread) */
static void drain(struct ctarget *t)
{
	size_t off = 0, size;

	while (t->s && off < t->q.len) {
		size = (size_t)*(uint64_t *)(t->q.buf + off);
		/* out of memory in one target's aggregate is that target's, as in on_record() */
		session__on_event(t->s, t->q.buf + off + 8, size);
		off += 8 + ((size + 7) & ~(size_t)7);
	}
	t->q.len = 0;
	__atomic_store_n(&t->backlogged, 0, __ATOMIC_RELAXED);
	/* a backlog is rare (a scrape at the moment of a record): not kept for the next one */
	free(t->q.buf);
	t->q.buf = NULL;
	t->q.cap = 0;
	if (t->s)
		__atomic_store_n(&t->samples, session__samples(t->s), __ATOMIC_RELAXED);
}

/* on the profiling thread: the record to its target's session */
static int on_record(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;
	struct ctarget *t;
	int ret = 0;

	/*
	 * Only this thread changes which slot is which target: the table's
	 * lock is for the HTTP threads' lookups, and is not held while this
	 * waits for a target an HTTP thread is serializing.
	 */
	pthread_mutex_lock(&c->table);
	t = find_live(c, (pid_t)bpfobj_record_tgid(data, size));
	pthread_mutex_unlock(&c->table);
	if (!t)
		return 0;
	if (!__atomic_load_n(&t->s, __ATOMIC_ACQUIRE)) {
		bool attaching, s;

		pthread_mutex_lock(&t->st_lock);
		attaching = t->attaching;
		s = t->s;
		pthread_mutex_unlock(&t->st_lock);
		/* its first records, before the attach thread has stored its session: kept */
		if (!s && attaching && !backlog_add(&t->q, data, size, c->backlog_max)) {
			__atomic_store_n(&t->backlogged, 1, __ATOMIC_RELAXED);
			c->backlogged++;
		}
		if (!s)
			return 0;
	}
	if (pthread_mutex_trylock(&t->lock)) {
		/* a profile of it is being serialized: keep the record, read on */
		__atomic_store_n(&t->backlogged, 1, __ATOMIC_RELAXED);
		if (!backlog_add(&t->q, data, size, c->backlog_max)) {
			c->backlogged++;
			return 0;
		}
		c->stalls++;
		pthread_mutex_lock(&t->lock);
	}
	if (t->q.len)
		drain(t);
	ret = session__on_event(t->s, data, size);
	__atomic_store_n(&t->samples, session__samples(t->s), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&t->lock);
	/* out of memory in one target's aggregate is that target's: the others go on */
	return ret == -ENOMEM ? 0 : ret;
}

static void *attacher(void *arg);

struct collector *collector__new(const struct session_opts *o, size_t max_targets,
				 size_t max_stacks, bool labels_all, bool injects, char *err,
				 size_t errlen)
{
	struct bpfobj_opts so = { 0 };
	struct collector *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;
	size_t i;

	if (!c || !(c->v = calloc(max_targets ?: 1, sizeof(*c->v)))) {
		free(c);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->o = *o;
	c->n = max_targets;
	c->max_stacks = max_stacks;
	c->backlog_max = BACKLOG_MAX;
	c->labels_all = labels_all;
	/* per target, as attach chooses; the object carries the stack copy unless fp for all */
	c->unwind = o->unwind;
	pthread_mutex_init(&c->table, NULL);
	pthread_mutex_init(&c->enc_lock, NULL);
	/* a monotonic wait: the wall clock may jump */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->enc_cond, &ca);
	pthread_condattr_destroy(&ca);
	for (i = 0; i < c->n; i++) {
		pthread_mutex_init(&c->v[i].lock, NULL);
		pthread_mutex_init(&c->v[i].st_lock, NULL);
	}
	/* auto may choose dwarf for any target: the object carries the stack copy unless fp */
	session_opts__bpfobj(o, c->unwind != SESSION_UNWIND_FP, &so);
	so.max_procs = max_targets;
	so.count_calls = true;
	/* both paths in the one object unless every target takes uprobes (a load less) */
	so.otel_progs = o->sampler != OTEL_MODE_UPROBES || injects;
	/* no grace period of a leaving target's links waited for on the profiling thread */
	so.async_teardown = true;
	so.on_event = on_record;
	so.ctx = c;
	pthread_mutex_init(&c->jobs_lock, NULL);
	pthread_cond_init(&c->jobs_cond, NULL);
	c->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->done_fd < 0) {
		snprintf(err, errlen, "cannot create an eventfd: %s", strerror(errno));
		collector__free(c);
		return NULL;
	}
	if (bpfobj__open(&so, &c->sampler, err, errlen)) {
		collector__free(c);
		return NULL;
	}
	/* optional, as for attach: without it, a target's mappings are re-read when needed */
	c->maps_watch = mmapwatch__new_shared();
	if (!c->maps_watch)
		pr_info("cannot follow new mappings as they are made (%s): libraries unloaded "
			"between two reads of a target's maps stay unknown\n", strerror(errno));
	/* optional too: without it each target's files are judged again */
	c->unwind_choices = unwind_choices__new(UNWIND_CHOICES_MAX);
	if (!c->unwind_choices)
		pr_info("cannot remember the unwinding chosen: %s\n", strerror(errno));
	c->attacher_started = !thread_start_unsignalled(&c->attacher, attacher, c);
	if (!c->attacher_started) {
		snprintf(err, errlen, "cannot start the attach thread: %s", strerror(EAGAIN));
		collector__free(c);
		return NULL;
	}
	return c;
}

void collector__stop(struct collector *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->enc_lock);
	c->stopping = 1;
	pthread_cond_broadcast(&c->enc_cond);
	pthread_mutex_unlock(&c->enc_lock);
}

/*
 * Injected samplers released at the agent's stop, all within this long, on
 * up to RELEASE_THREADS threads: each release stops one thread of its
 * target at a safe point, which may take a few tries
 */
#define STOP_RELEASE_NS	(500 * 1000000ULL)
#define RELEASE_THREADS	8

struct releases {
	struct session **v;
	size_t n, next;
	uint64_t deadline_ns;
};

static void *release_some(void *arg)
{
	struct releases *r = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED)) < r->n)
		session__release(r->v[i], r->deadline_ns);
	return NULL;
}

/* the injected samplers of every session left, released side by side, by the deadline */
static void release_all(struct collector *c)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	struct releases r = { .deadline_ns = t0 + STOP_RELEASE_NS };
	pthread_t th[RELEASE_THREADS];
	size_t i, n = 0, cap = 0;

	for (i = 0; i < c->n; i++)
		if (c->v[i].s && session__injected(c->v[i].s) &&
		    !vec_reserve(&r.v, &cap, r.n + 1, sizeof(*r.v)))
			r.v[r.n++] = c->v[i].s;
	for (i = 0; i < c->n_jobs; i++)
		if (c->jobs[i].close && !vec_reserve(&r.v, &cap, r.n + 1, sizeof(*r.v)))
			r.v[r.n++] = c->jobs[i].close;
	while (n < RELEASE_THREADS && n + 1 < r.n &&
	       !thread_start_unsignalled(&th[n], release_some, &r))
		n++;
	release_some(&r);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (r.n)
		pr_info("released the samplers injected into %zu targets in %.0f ms\n", r.n,
			(double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	free(r.v);
}

void collector__free(struct collector *c)
{
	size_t i;

	if (!c)
		return;
	/* the attach under way ends, the queued ones are not started */
	if (c->attacher_started) {
		pthread_mutex_lock(&c->jobs_lock);
		c->jobs_quit = true;
		pthread_cond_signal(&c->jobs_cond);
		pthread_mutex_unlock(&c->jobs_lock);
		pthread_join(c->attacher, NULL);
	}
	/* the targets go on as they were: no sampler of ours left switched on */
	release_all(c);
	for (i = 0; i < c->n_jobs; i++)
		session__close(c->jobs[i].close);
	free(c->jobs);
	if (c->done_fd > 0)
		close(c->done_fd);
	/* every target's links handed to the reaper, released together in bpfobj__free() */
	if (c->sampler)
		bpfobj__closing(c->sampler);
	for (i = 0; i < MAX_FLIGHTS; i++)
		free(c->flights[i].buf);
	for (i = 0; i < c->n; i++) {
		session__close(c->v[i].s);
		free(c->v[i].q.buf);
		pthread_mutex_destroy(&c->v[i].lock);
		pthread_mutex_destroy(&c->v[i].st_lock);
	}
	bpfobj_procs__free(&c->procs);
	bpfobj__free(c->sampler);
	/* after the sessions: each one's watch is joined to it */
	mmapwatch__free(c->maps_watch);
	unwind_choices__free(c->unwind_choices);
	pthread_mutex_destroy(&c->table);
	pthread_mutex_destroy(&c->jobs_lock);
	pthread_cond_destroy(&c->jobs_cond);
	pthread_mutex_destroy(&c->enc_lock);
	pthread_cond_destroy(&c->enc_cond);
	free(c->v);
	free(c);
}

/* the families probed, "glibc" or with a prefixed one beside it "glibc,jemalloc" */
static void set_allocator(struct ctarget *t)
{
	const struct alloc_plan *p[ALLOC_MAX_OBJECTS];
	size_t n = session__plans(t->s, p), i, j, len = 0;
	char *buf = t->st.allocator;

	buf[0] = 0;
	for (i = 0; i < n; i++)
		for (j = 0; j < p[i]->n_objects && len < sizeof(t->st.allocator); j++)
			len += (size_t)snprintf(buf + len, sizeof(t->st.allocator) - len, "%s%s",
						len ? "," : "", p[i]->objects[j].family);
}

/* a session for pid, injected or not; 0 or -errno with the reason in err */
static int open_session(struct collector *c, pid_t pid, bool inject, struct session **s,
			char *err, size_t errlen)
{
	/* --span-fn is not applied (the object is shared), nor is --ringbuf-size per target */
	struct session_opts so = {
		.pid = pid, .rate = c->o.rate, .max_depth = c->o.max_depth,
		.allocator = c->o.allocator ?: "auto", .symbolize = c->o.symbolize,
		.no_multi = c->o.no_multi, .no_session = c->o.no_session,
		.max_entries = c->max_stacks, .inuse = c->o.inuse, .unwind = c->unwind,
		.stack_size = c->o.stack_size, .max_live = c->o.max_live,
		.sampler = c->o.sampler, .maps_watch = c->maps_watch,
		.unwind_choices = c->unwind_choices,
	};

	/* the agent sets the injected sampler's rate; a process that refuses it goes on uprobes */
	if (inject) {
		so.sampler = OTEL_MODE_INJECT;
		so.rate_set = true;
		so.inject_fallback = true;
	}
	err[0] = 0;
	return session__open_shared(&so, c->sampler, s, err, errlen);
}

/* the first retry of a failed target, and the longest wait between two */
#define RETRY_FIRST_NS	(500 * 1000000ULL)
#define RETRY_MAX_NS	(30 * NS_PER_SEC)

/* RssAnon of /proc/PID/status in bytes; 0 when it cannot be read */
static uint64_t anon_rss(pid_t pid)
{
	unsigned long long kb = 0;
	char path[40], *text, *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file_at(AT_FDCWD, path, &text, NULL))
		return 0;
	p = strstr(text, "\nRssAnon:");
	if (!p || sscanf(p + 9, "%llu", &kb) != 1)
		kb = 0;
	free(text);
	return kb * 1024;
}

/*
 * Nothing mapped defines an allocator yet: a process picked up at its exec
 * before the loader mapped its libraries, or one that loads its allocator
 * later.  Its probes are pending, not failed.
 */
static bool not_mapped_yet(const char *err)
{
	return !strncmp(err, "allocator not found: no ", 24);
}

/* the outcome of an attempt, target lock held; takes the state's */
static void attempted(struct ctarget *t, int ret, struct session *s, const char *err)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	pthread_mutex_lock(&t->st_lock);
	t->attaching = false;
	t->s = ret ? NULL : s;
	t->samples = 0;
	if (ret) {
		snprintf(t->st.probes, sizeof(t->st.probes), "%s",
			 t->awaiting_entry || not_mapped_yet(err) || ret == -EAGAIN ? "pending" :
			 "failed");
		snprintf(t->st.error, sizeof(t->st.error), "%s", err);
		/*
		 * Picked up at its exec, a process has not mapped its libraries
		 * yet; one that dlopen()s its allocator has it later still: plan
		 * again, less and less often.
		 */
		t->retry_wait_ns = t->retry_wait_ns ? t->retry_wait_ns * 2 : RETRY_FIRST_NS;
		if (t->retry_wait_ns > RETRY_MAX_NS)
			t->retry_wait_ns = RETRY_MAX_NS;
		t->retry_ns = now + t->retry_wait_ns;
		pthread_mutex_unlock(&t->st_lock);
		return;
	}
	t->picked_ns = now;
	/* what the heap covers: blocks allocated from now on, beside what the process had */
	t->live_unix_ns = (int64_t)clock_ns(CLOCK_REALTIME);
	t->anon_rss_at = anon_rss(t->pid);
	t->awaiting_entry = false;
	t->st.error[0] = 0;
	snprintf(t->st.probes, sizeof(t->st.probes), "attached");
	snprintf(t->st.sampler, sizeof(t->st.sampler), "%s",
		 session__injected(s) ? "inject" : session__sampler(s));
	snprintf(t->st.sampler_why, sizeof(t->st.sampler_why), "%s", session__sampler_why(s));
	set_allocator(t);
	pthread_mutex_unlock(&t->st_lock);
}

/* how long a pick-up waits for the links of the program its process ran before */
#define RELEASE_WAIT_NS (2 * NS_PER_SEC)

/* a free slot for at, its probes pending; NULL when every slot is used */
static struct ctarget *claim_slot(struct collector *c, const struct agent_target *at)
{
	struct ctarget *t = NULL;
	size_t i;

	/* the slot first, so a scrape during the attach waits for it rather than missing it */
	pthread_mutex_lock(&c->table);
	for (i = 0; i < c->n && !t; i++)
		if (!c->v[i].used)
			t = &c->v[i];
	if (t) {
		pthread_mutex_lock(&t->lock);
		pthread_mutex_lock(&t->st_lock);
		memset(&t->st, 0, sizeof(t->st));
		t->used = true;
		t->exited = false;
		t->attaching = true;
		t->awaiting_entry = false;
		t->live_unix_ns = 0;
		t->anon_rss_at = 0;
		__atomic_store_n(&t->sym_used_ns, 0, __ATOMIC_RELAXED);
		t->s = NULL;
		t->pid = at->pid;
		t->start_ticks = at->start_ticks;
		t->inject = at->inject;
		t->retry_wait_ns = 0;
		t->gen++;
		t->st.duty = 1;
		memcpy(t->comm, at->comm, sizeof(t->comm));
		snprintf(t->st.probes, sizeof(t->st.probes), "pending");
		t->q.len = 0;
		pthread_mutex_unlock(&t->st_lock);
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&c->table);
	return t;
}

/* j to the attach thread's queue; 0 or -ENOMEM */
static int push_job(struct collector *c, const struct attach_job *j)
{
	int ret;

	pthread_mutex_lock(&c->jobs_lock);
	ret = vec_reserve(&c->jobs, &c->cap_jobs, c->n_jobs + 1, sizeof(*c->jobs));
	if (!ret) {
		c->jobs[c->n_jobs++] = *j;
		pthread_cond_signal(&c->jobs_cond);
	}
	pthread_mutex_unlock(&c->jobs_lock);
	return ret;
}

/* t to the attach thread; t's lock held, t->attaching set (profiling thread) */
static int queue_attach(struct collector *c, struct ctarget *t, bool first)
{
	struct attach_job j = { .t = t, .gen = t->gen, .pid = t->pid, .start = t->start_ticks,
				.first = first };

	return push_job(c, &j);
}

/* s to the attach thread, to release its injected sampler and close it; 0 or -ENOMEM */
static int queue_close(struct collector *c, struct session *s)
{
	struct attach_job j = { .close = s };

	return push_job(c, &j);
}

/* the outcome of an attempt, t's claim checked: the target may have exited or gone meanwhile */
static void attach_done(struct collector *c, const struct attach_job *j, int ret,
			struct session *s, const char *err)
{
	struct ctarget *t = j->t;
	bool exited;

	pthread_mutex_lock(&c->table);
	pthread_mutex_lock(&t->lock);
	if (!t->used || t->gen != j->gen) {
		/* forgotten while it was attached: its session goes with it */
		pthread_mutex_unlock(&t->lock);
		pthread_mutex_unlock(&c->table);
		session__close(s);
		return;
	}
	if (j->first)
		t->picked_ns = clock_ns(CLOCK_MONOTONIC);
	else
		t->awaiting_entry = false;
	attempted(t, ret, s, err);
	exited = t->exited;
	if (exited) {
		/* it exited while attached: out of the kernel's tables, as collector__remove() */
		pthread_mutex_lock(&t->st_lock);
		if (t->s)
			bpfobj_proc__unregister(session__proc(t->s));
		snprintf(t->st.probes, sizeof(t->st.probes), "detached");
		pthread_mutex_unlock(&t->st_lock);
	}
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&c->table);
	if (exited)
		return;
	/* the one warning of a refused injection: the target is profiled on uprobes all the same */
	if (!ret && session__inject_refused(s))
		pr_warn("pid %d (%s) is profiled through uprobes, not --inject: %s\n", (int)j->pid,
			t->comm, session__inject_refused(s));
	if (ret && j->first)
		pr_info("culpert-bpf: cannot profile pid %d (%s) yet: %s; trying again in %llu ms\n",
			(int)j->pid, t->comm, err, (unsigned long long)(t->retry_wait_ns / 1000000));
	else if (!ret && !j->first)
		pr_info("culpert-bpf: profiling pid %d (%s) now\n", (int)j->pid, t->comm);
}

/* a batch's time: the whole, and the probes' attach in it (mostly the kernel's) */
struct batch_time {
	uint64_t all_ns, attach_ns;
	size_t n;
};

static void run_job(struct collector *c, const struct attach_job *j, struct batch_time *bt)
{
	char err[sizeof(j->t->st.error)];
	struct session *s = NULL;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	bool gone;
	int ret;

	if (j->close) {
		session__release(j->close, t0 + STOP_RELEASE_NS);
		session__close(j->close);
		return;
	}
	/* exited (or forgotten) while queued: no attach to a process that is not there */
	pthread_mutex_lock(&j->t->st_lock);
	gone = !j->t->used || j->t->gen != j->gen || j->t->exited;
	pthread_mutex_unlock(&j->t->st_lock);
	if (gone) {
		attach_done(c, j, -ESRCH, NULL, "it exited before its probes were attached");
		return;
	}
	/*
	 * A program exec'd under a target's pid: the old program's links go
	 * first (they would fire in the new one, which maps the same libc).
	 * Only then: a new pid has nothing pending.
	 */
	if (bpfobj__releasing(c->sampler, j->pid) &&
	    !bpfobj__wait_released(c->sampler, j->pid, RELEASE_WAIT_NS))
		pr_warn("pid %d: the probes of its previous program are still going\n",
			(int)j->pid);
	ret = open_session(c, j->pid, j->t->inject, &s, err, sizeof(err));
	bt->attach_ns += ret ? 0 : bpfobj_proc__add_ns(session__proc(s));
	bt->all_ns += clock_ns(CLOCK_MONOTONIC) - t0;
	bt->n++;
	attach_done(c, j, ret, s, err);
}

static void log_batch(struct collector *c, const struct batch_time *bt)
{
	size_t judged = 0, reused = 0;

	if (c->unwind_choices)
		unwind_choices__counts(c->unwind_choices, &judged, &reused);
	pr_debug("attach thread: %zu targets in %.0f ms, of which the probes' attach %.0f ms; "
		 "unwinding judged %zu times, reused %zu\n", bt->n, (double)bt->all_ns / 1e6,
		 (double)bt->attach_ns / 1e6, judged, reused);
}

/*
 * The attach thread: every job queued since its last turn, in order (one
 * pid's attaches never overlap).  Each attach takes milliseconds, more
 * with every probe the kernel holds on the same file.
 */
static void *attacher(void *arg)
{
	struct collector *c = arg;
	struct attach_job *v = NULL;
	struct batch_time bt;
	size_t n, cap = 0, i;
	uint64_t one = 1;

	for (;;) {
		pthread_mutex_lock(&c->jobs_lock);
		while (!c->jobs_quit && !c->n_jobs)
			pthread_cond_wait(&c->jobs_cond, &c->jobs_lock);
		if (c->jobs_quit) {
			pthread_mutex_unlock(&c->jobs_lock);
			break;
		}
		/* the batch taken whole: the queue is free for the profiling thread again */
		n = c->n_jobs;
		if (vec_reserve(&v, &cap, n, sizeof(*v))) {
			pthread_mutex_unlock(&c->jobs_lock);
			continue;
		}
		memcpy(v, c->jobs, n * sizeof(*v));
		c->n_jobs = 0;
		pthread_mutex_unlock(&c->jobs_lock);
		bt = (struct batch_time){ 0 };
		for (i = 0; i < n && !__atomic_load_n(&c->jobs_quit, __ATOMIC_RELAXED); i++) {
			run_job(c, &v[i], &bt);
			if (write(c->done_fd, &one, sizeof(one)) < 0)
				pr_debug("attach thread: cannot signal an attach: %s\n",
					 strerror(errno));
		}
		/* releases not done when the agent stops: back to the queue, for collector__free() */
		for (; i < n; i++)
			if (v[i].close && queue_close(c, v[i].close))
				session__close(v[i].close);
		log_batch(c, &bt);
	}
	free(v);
	return NULL;
}

int collector__add(struct collector *c, const struct agent_target *at)
{
	struct ctarget *t = claim_slot(c, at);
	int ret;

	if (!t)
		return -ENOSPC;
	/* pending (claim_slot()) until the attach thread has its probes live */
	pthread_mutex_lock(&t->lock);
	t->picked_ns = clock_ns(CLOCK_MONOTONIC);
	ret = queue_attach(c, t, true);
	if (ret) {
		pthread_mutex_lock(&t->st_lock);
		t->attaching = false;
		t->retry_wait_ns = RETRY_FIRST_NS;
		t->retry_ns = t->picked_ns + RETRY_FIRST_NS;
		snprintf(t->st.error, sizeof(t->st.error), "%s", strerror(-ret));
		pthread_mutex_unlock(&t->st_lock);
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

bool collector__attaching(struct collector *c, pid_t pid, uint64_t start_ticks)
{
	struct ctarget *t = lock_state(c, pid, start_ticks, false);
	bool ret;

	if (!t)
		return false;
	ret = t->attaching;
	pthread_mutex_unlock(&t->st_lock);
	return ret;
}

int collector__done_fd(const struct collector *c)
{
	return c->done_fd;
}

int collector__add_later(struct collector *c, const struct agent_target *at)
{
	struct ctarget *t = claim_slot(c, at);

	if (!t)
		return -ENOSPC;
	pthread_mutex_lock(&t->lock);
	pthread_mutex_lock(&t->st_lock);
	t->attaching = false;
	t->picked_ns = clock_ns(CLOCK_MONOTONIC);
	t->retry_wait_ns = RETRY_FIRST_NS;
	t->retry_ns = t->picked_ns + RETRY_FIRST_NS;
	snprintf(t->st.error, sizeof(t->st.error), "its loader has not mapped its libraries yet");
	pthread_mutex_unlock(&t->st_lock);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

bool collector__pending(struct collector *c, pid_t pid, uint64_t start_ticks)
{
	struct ctarget *t = lock_slot(c, pid, start_ticks, false);
	bool pending;

	if (!t)
		return false;
	pending = !t->exited && !t->s;
	pthread_mutex_unlock(&t->lock);
	return pending;
}

void collector__await_entry(struct collector *c, pid_t pid, uint64_t start_ticks)
{
	struct ctarget *t = lock_slot(c, pid, start_ticks, false);

	if (!t)
		return;
	/* planned at the entry point; the retries only if that never comes */
	pthread_mutex_lock(&t->st_lock);
	t->awaiting_entry = true;
	t->retry_ns = clock_ns(CLOCK_MONOTONIC) + RETRY_MAX_NS;
	snprintf(t->st.probes, sizeof(t->st.probes), "pending");
	pthread_mutex_unlock(&t->st_lock);
	pthread_mutex_unlock(&t->lock);
}

/* a pending live target to the attach thread again, unless it is there; t's lock held */
static int requeue(struct collector *c, struct ctarget *t)
{
	bool busy;

	pthread_mutex_lock(&t->st_lock);
	busy = !t->used || t->exited || t->s || t->attaching;
	if (!busy)
		t->attaching = true;
	pthread_mutex_unlock(&t->st_lock);
	if (busy)
		return -ENOENT;
	if (!queue_attach(c, t, false))
		return 0;
	pthread_mutex_lock(&t->st_lock);
	t->attaching = false;
	pthread_mutex_unlock(&t->st_lock);
	return -ENOMEM;
}

int collector__retry(struct collector *c, pid_t pid, uint64_t start_ticks)
{
	struct ctarget *t = lock_slot(c, pid, start_ticks, false);
	int ret;

	if (!t)
		return -ENOENT;
	ret = requeue(c, t);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* failed targets whose time has come: planned and attached again (queued, profiling thread) */
static void retry_failed(struct collector *c, uint64_t now)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		struct ctarget *t = &c->v[i];

		/* only the profiling thread changes used and exited: no lock to read them */
		if (!t->used || t->exited || pthread_mutex_trylock(&t->lock))
			continue;
		/* retry_ns is the attach thread's too (under the lock) */
		if (now >= t->retry_ns)
			requeue(c, t);
		pthread_mutex_unlock(&t->lock);
	}
}

void collector__remove(struct collector *c, pid_t pid, uint64_t start_ticks)
{
	struct ctarget *t;

	/* its last records first: what it allocated just before it exited (no lock held here) */
	bpfobj__poll(c->sampler, 0);
	t = lock_slot(c, pid, start_ticks, false);
	if (!t)
		return;
	if (t->q.len)
		drain(t);
	pthread_mutex_lock(&t->st_lock);
	if (!t->exited) {
		t->exited = true;
		/* out of the kernel's tables now: the pid may come back (an exec, a reuse) */
		if (t->s)
			bpfobj_proc__unregister(session__proc(t->s));
		snprintf(t->st.probes, sizeof(t->st.probes), "detached");
	}
	pthread_mutex_unlock(&t->st_lock);
	pthread_mutex_unlock(&t->lock);
}

void collector__forget(struct collector *c, pid_t pid, uint64_t start_ticks)
{
	struct ctarget *t;
	struct session *s = NULL;

	/* only exited targets are forgotten (expired, or evicted for a new one) */
	pthread_mutex_lock(&c->table);
	t = find_as(c, pid, start_ticks, true);
	if (t) {
		pthread_mutex_lock(&t->lock);
		pthread_mutex_lock(&t->st_lock);
		s = t->s;
		t->s = NULL;
		t->used = false;
		t->q.len = 0;
		pthread_mutex_unlock(&t->st_lock);
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&c->table);
	/* a process still running keeps no sampler of ours switched on: released off this thread */
	if (s && session__injected(s) && !queue_close(c, s))
		return;
	session__close(s);
}

int collector__fd(const struct collector *c)
{
	return bpfobj__fd(c->sampler);
}

/* a library mapped since: a dlopen'd allocator gets its probes (target lock held) */
static void replan(struct ctarget *t)
{
	char err[256];
	int ret = session__replan(t->s, err, sizeof(err));

	if (ret > 0) {
		pthread_mutex_lock(&t->st_lock);
		set_allocator(t);
		pthread_mutex_unlock(&t->st_lock);
		pr_info("culpert-bpf: pid %d (%s): allocator %s now\n", (int)t->pid, t->comm,
			t->st.allocator);
	} else if (ret < 0) {
		pr_warn("pid %d (%s): cannot probe an allocator it loaded: %s\n", (int)t->pid,
			t->comm, err);
	}
}

/*
 * A target's symbolizer is kept from one profile to the next (an object's
 * DWARF read once, not at every scrape), for KEEP_SYMBOLIZERS targets at
 * most, the least recently served let go first, and SYMBOLIZER_IDLE_NS
 * after its last profile; under memory pressure none (docs/agent.md,
 * "Serving").  Another target's lock is only tried: a serializer holds
 * its own.
 */
#define KEEP_SYMBOLIZERS	4
#define SYMBOLIZER_IDLE_NS	(60 * NS_PER_SEC)

static bool drop_symbolizer(struct ctarget *t)
{
	if (pthread_mutex_trylock(&t->lock))
		return false;
	if (t->s)
		session__drop_symbolizer(t->s);
	__atomic_store_n(&t->sym_used_ns, 0, __ATOMIC_RELAXED);
	pr_debug("pid %d (%s): its symbolizer let go\n", (int)t->pid, t->comm);
	pthread_mutex_unlock(&t->lock);
	/* its DWARF's many small blocks stay in the arenas, else */
	malloc_trim(0);
	return true;
}

/* t keeps one now (its lock held): the others past the bound let go */
static void bound_symbolizers(struct collector *c, struct ctarget *t)
{
	struct ctarget *oldest;
	uint64_t used, min;
	size_t i, kept;

	do {
		oldest = NULL;
		min = UINT64_MAX;
		for (i = 0, kept = 1; i < c->n; i++) {
			used = __atomic_load_n(&c->v[i].sym_used_ns, __ATOMIC_RELAXED);
			if (&c->v[i] == t || !used)
				continue;
			kept++;
			if (used < min) {
				min = used;
				oldest = &c->v[i];
			}
		}
	} while (kept > KEEP_SYMBOLIZERS && drop_symbolizer(oldest));
}

/* the profiling thread's turn: symbolizers idle too long, or all under memory pressure */
static void expire_symbolizers(struct collector *c, uint64_t now_ns)
{
	bool off = __atomic_load_n(&c->sym_off, __ATOMIC_RELAXED);
	uint64_t used;
	size_t i;

	for (i = 0; i < c->n; i++) {
		used = __atomic_load_n(&c->v[i].sym_used_ns, __ATOMIC_RELAXED);
		if (used && (off || now_ns - used > SYMBOLIZER_IDLE_NS))
			drop_symbolizer(&c->v[i]);
	}
}

int collector__poll(struct collector *c, uint64_t now_ns)
{
	size_t i;
	int n;

	n = bpfobj__poll(c->sampler, 0);
	retry_failed(c, now_ns);
	expire_symbolizers(c, now_ns);
	/*
	 * Also while no samples come: the kernel's buffers of new mappings
	 * must not fill.  Only this thread changes slots: no table lock.  A
	 * target being serialized is left for a later turn (its backlog
	 * with it): the mappings wait in the kernel's buffer meanwhile.
	 */
	for (i = 0; i < c->n; i++) {
		struct ctarget *t = &c->v[i];

		if (!t->used || t->exited || pthread_mutex_trylock(&t->lock))
			continue;
		/* the attach thread stores s under the lock */
		if (!t->s) {
			pthread_mutex_unlock(&t->lock);
			continue;
		}
		if (t->q.len)
			drain(t);
		session__sync_maps(t->s);
		replan(t);
		pthread_mutex_unlock(&t->lock);
	}
	return n < 0 ? n : 0;
}

int collector__set_alloc_probes(struct collector *c, pid_t pid, uint64_t start_ticks, bool on)
{
	struct ctarget *t;
	int ret = -ENOENT;

	/* the state's lock: the probes switch while a profile is serialized */
	t = lock_state(c, pid, start_ticks, false);
	if (!t)
		return ret;
	if (!t->exited && t->s) {
		ret = bpfobj_proc__set_alloc(session__proc(t->s), on, t->st.error,
					      sizeof(t->st.error));
		snprintf(t->st.probes, sizeof(t->st.probes), "%s",
			 ret ? "failed" : on ? "attached" : "off");
	}
	pthread_mutex_unlock(&t->st_lock);
	return ret;
}

void collector__prog_run_ns(struct collector *c, uint64_t *alloc_ns, uint64_t *free_ns)
{
	bpfobj__prog_run_ns(c->sampler, alloc_ns, free_ns);
}

int collector__set_free_probes(struct collector *c, pid_t pid, uint64_t start_ticks, bool on)
{
	struct bpfobj_proc *pr;
	struct ctarget *t;
	int ret = -ENOENT;

	t = lock_slot(c, pid, start_ticks, false);
	if (!t)
		return ret;
	if (!t->exited && t->s) {
		pr = session__proc(t->s);
		pthread_mutex_lock(&t->st_lock);
		ret = bpfobj_proc__set_free(pr, on, t->st.error, sizeof(t->st.error));
		if (!ret && on && bpfobj_proc__heap_since(pr)) {
			session__heap_since(t->s, bpfobj_proc__heap_since(pr));
			t->heap_since_unix_ns = (int64_t)time(NULL) * (int64_t)NS_PER_SEC;
		}
		/* an in-process sampler's free probes stay: not a failure */
		if (ret && ret != -EOPNOTSUPP)
			snprintf(t->st.probes, sizeof(t->st.probes), "failed");
		pthread_mutex_unlock(&t->st_lock);
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* the state, state lock held; its counters from snap when given, else from the map */
static void fill_state_from(struct ctarget *t, const struct bpfobj_procs *snap,
			    struct collector_state *out)
{
	struct culpert_proc p = { 0 };
	uint64_t elapsed, now = clock_ns(CLOCK_MONOTONIC);
	struct bpfobj_proc *pr;

	*out = t->st;
	if (!t->s)
		return;
	pr = session__proc(t->s);
	if (snap)
		bpfobj_proc__state_in(pr, snap, &p);
	else
		bpfobj_proc__state(pr, &p);
	out->samples = __atomic_load_n(&t->samples, __ATOMIC_RELAXED);
	out->lost = p.counters[CULPERT_CNT_LOST_RINGBUF];
	out->calls_alloc = p.calls_alloc;
	out->calls_free = p.calls_free;
	out->calls_alloc_stepped = p.calls_alloc_stepped;
	out->calls_free_stepped = p.calls_free_stepped;
	out->observed_ns = bpfobj_proc__observed_ns(pr);
	out->live_unix_ns = t->live_unix_ns;
	out->anon_rss_at = t->anon_rss_at;
	out->heap_since_unix_ns = t->heap_since_unix_ns;
	out->session = bpfobj_proc__inuse(pr) == BPFOBJ_INUSE_SESSION;
	out->every_return = bpfobj_proc__inuse(pr) == BPFOBJ_INUSE_EVERY_RETURN;
	elapsed = now - t->picked_ns;
	if (!t->exited && elapsed)
		out->duty = (double)out->observed_ns / (double)elapsed > 1 ? 1 :
			    (double)out->observed_ns / (double)elapsed;
}

static void fill_state(struct ctarget *t, struct collector_state *out)
{
	fill_state_from(t, NULL, out);
}

void collector__read_counts(struct collector *c)
{
	int ret = c->sampler ? bpfobj__procs_read(c->sampler, &c->procs) : -ENOENT;

	c->procs_read = !ret;
	if (ret && !c->procs_said) {
		pr_debug("batch read of the procs map: %s; one lookup per target\n",
			 strerror(-ret));
		c->procs_said = true;
	}
}

int collector__state_read(struct collector *c, pid_t pid, uint64_t start_ticks,
			  struct collector_state *out)
{
	struct ctarget *t = lock_state(c, pid, start_ticks, false);

	if (!t)
		return -ENOENT;
	fill_state_from(t, c->procs_read ? &c->procs : NULL, out);
	pthread_mutex_unlock(&t->st_lock);
	return 0;
}

static int state_of(struct collector *c, pid_t pid, uint64_t start_ticks, bool exited,
		    struct collector_state *out)
{
	struct ctarget *t = lock_state(c, pid, start_ticks, exited);

	if (!t)
		return -ENOENT;
	fill_state(t, out);
	pthread_mutex_unlock(&t->st_lock);
	return 0;
}

int collector__state(struct collector *c, pid_t pid, uint64_t start_ticks,
		     struct collector_state *out)
{
	return state_of(c, pid, start_ticks, false, out);
}

int collector__state_cb(void *ctx, const struct agent_target *t, struct collector_state *out)
{
	return state_of(ctx, t->pid, t->start_ticks, t->exited_ns != 0, out);
}

/* how long a scrape waits for a target being picked up (its probes going in) */
#define ATTACH_WAIT_NS (15 * NS_PER_SEC)

/* the target locked, or NULL with the reason; unlock with pthread_mutex_unlock(&t->lock) */
static struct ctarget *lock_target(struct collector *c, const struct agent_target *at, char *err,
				   size_t errlen, int *ret)
{
	struct timespec step = { 0, 50 * 1000000L };
	uint64_t until = clock_ns(CLOCK_MONOTONIC) + ATTACH_WAIT_NS;
	struct ctarget *t;

	for (;;) {
		t = lock_slot(c, at->pid, at->start_ticks, at->exited_ns != 0);
		/* a live target the collector does not know yet is being picked up */
		if ((t && !t->attaching) || (!t && at->exited_ns) || c->stopping ||
		    clock_ns(CLOCK_MONOTONIC) >= until)
			break;
		if (t)
			pthread_mutex_unlock(&t->lock);
		nanosleep(&step, NULL);
	}
	if (t && t->attaching) {
		pthread_mutex_unlock(&t->lock);
		snprintf(err, errlen, "pid %d (%s) is still being attached to", (int)at->pid,
			 at->comm);
		*ret = -EAGAIN;
		return NULL;
	}
	if (!t) {
		snprintf(err, errlen, "pid %d (%s) is not profiled (any more)", (int)at->pid,
			 at->comm);
		*ret = -ESRCH;
	} else if (!t->s) {
		snprintf(err, errlen, "pid %d (%s) %s: %s", (int)at->pid, at->comm,
			 strcmp(t->st.probes, "pending") ? "could not be profiled" :
			 "is not profiled yet (its probes are pending)", t->st.error);
		pthread_mutex_unlock(&t->lock);
		*ret = -EAGAIN;
		t = NULL;
	}
	return t;
}

/* sleep up to ns, cut short by collector__stop(); false when cut */
static bool nap(struct collector *c, uint64_t ns)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + ns;
	struct timespec step = { 0, 100 * 1000000L };

	while (!c->stopping && clock_ns(CLOCK_MONOTONIC) < end)
		nanosleep(&step, NULL);
	return !c->stopping;
}

static int serialize(struct collector *c, struct ctarget *t, enum agent_profile kind,
		     const struct export_base *base, size_t n_base, uint64_t observed_ns,
		     int64_t duration_ns, void **buf, size_t *len)
{
	struct collector_state st;
	char comments[4][160], when[40];
	const char *extra[4] = { comments[0], comments[1], comments[2], comments[3] };
	struct session_profile_opts po = {
		.default_sample_type = kind == AGENT_PROFILE_HEAP ? "inuse_space" : "alloc_space",
		.span_labels_only = !c->labels_all,
		.base = base,
		.n_base = n_base,
		.extra = extra,
		.n_extra = 3,
		.keep_symbolizer = c->o.symbolize && !__atomic_load_n(&c->sym_off, __ATOMIC_RELAXED),
	};
	int ret;

	pthread_mutex_lock(&t->st_lock);
	fill_state(t, &st);
	pthread_mutex_unlock(&t->st_lock);
	snprintf(comments[0], sizeof(comments[0]), "observed_ns=%llu",
		 (unsigned long long)observed_ns);
	snprintf(comments[1], sizeof(comments[1]), "duty=%.3f", st.duty);
	format_rfc3339(when, sizeof(when), t->live_unix_ns);
	snprintf(comments[2], sizeof(comments[2]), "picked_up=%s anon_rss_at_pickup=%llu: %s", when,
		 (unsigned long long)t->anon_rss_at, COLLECTOR_COVERAGE);
	/* the budget switched the free probes off: what the heap leaves out */
	if (st.heap_since_unix_ns && kind == AGENT_PROFILE_HEAP) {
		snprintf(comments[3], sizeof(comments[3]), "heap_since_unix_ns=%lld: the free "
			 "probes were off before, blocks allocated then are not included",
			 (long long)st.heap_since_unix_ns);
		po.n_extra = 4;
	}
	po.duration_nanos = duration_ns;
	if (base)
		po.time_nanos = (int64_t)time(NULL) * (int64_t)NS_PER_SEC - duration_ns;
	ret = session__profile(t->s, &po, buf, len);
	__atomic_store_n(&t->sym_used_ns, po.keep_symbolizer ? clock_ns(CLOCK_MONOTONIC) : 0,
			 __ATOMIC_RELAXED);
	if (po.keep_symbolizer)
		bound_symbolizers(c, t);
	return ret;
}

/*
 * A turn to serialize: MAX_ENCODING at once, the others wait, so that
 * ten scrapers hold two encodings' memory, not ten.  False when the wait
 * was too long or the agent stops.
 */
static bool encode_begin(struct collector *c)
{
	struct timespec until;
	bool ok;

	until = clock_deadline(CLOCK_MONOTONIC, ENCODE_WAIT_NS);
	pthread_mutex_lock(&c->enc_lock);
	while (c->encoding >= MAX_ENCODING && !c->stopping)
		if (pthread_cond_timedwait(&c->enc_cond, &c->enc_lock, &until) == ETIMEDOUT)
			break;
	ok = c->encoding < MAX_ENCODING && !c->stopping;
	c->encoding += ok;
	pthread_mutex_unlock(&c->enc_lock);
	return ok;
}

static void encode_end(struct collector *c)
{
	pthread_mutex_lock(&c->enc_lock);
	c->encoding--;
	/* the followers of flights wait on it too */
	pthread_cond_broadcast(&c->enc_cond);
	pthread_mutex_unlock(&c->enc_lock);
}

/*
 * The target locked for a serialization, after its backlog: one
 * serialization after another would keep the profiling thread from the
 * lock (a mutex is not fair), so a serializer that finds records kept
 * back lets go and waits (up to a second) for the thread to hand them over.
 */
static struct ctarget *lock_to_encode(struct collector *c, const struct agent_target *at,
				      char *err, size_t errlen, int *ret)
{
	struct timespec step = { 0, 1000000L };
	struct ctarget *t = lock_target(c, at, err, errlen, ret);
	int i;

	if (!t || !__atomic_load_n(&t->backlogged, __ATOMIC_RELAXED))
		return t;
	pthread_mutex_unlock(&t->lock);
	for (i = 0; i < 1000 && __atomic_load_n(&t->backlogged, __ATOMIC_RELAXED); i++)
		nanosleep(&step, NULL);
	return lock_target(c, at, err, errlen, ret);
}

void collector__set_memlimit(struct collector *c, const struct memlimit *m)
{
	c->mem = m;
	/* the backlog of the target encoded grows beside the encoding: its share too */
	if (m->limit / 16 < c->backlog_max)
		c->backlog_max = m->limit / 16;
}

/*
 * Room for an encoding of an estimated need bytes at its peak: under 7/8
 * of the limit (where the memory guard would drop a target), beside the
 * memory in use and the other encodings' reservations (docs/agent.md,
 * "Memory").  Waits for those to finish; with none under way, or past
 * ENCODE_WAIT_NS, -EAGAIN and why in err.  Undo with mem_release().
 */
static int mem_admit(struct collector *c, const struct agent_target *at, uint64_t need,
		     char *err, size_t errlen)
{
	uint64_t used = 0, budget;
	struct timespec until;
	char n[32], u[32], l[32];
	bool ok = false;
	int ret = 0;

	if (!c->mem)
		return 0;
	budget = c->mem->limit / 8 * 7;
	until = clock_deadline(CLOCK_MONOTONIC, ENCODE_WAIT_NS);
	pthread_mutex_lock(&c->enc_lock);
	while (!c->stopping) {
		used = memlimit__usage(c->mem);
		ok = used + c->reserved + need <= budget;
		if (ok || !c->reserved ||
		    pthread_cond_timedwait(&c->enc_cond, &c->enc_lock, &until) == ETIMEDOUT)
			break;
	}
	if (ok) {
		c->reserved += need;
	} else {
		ret = -EAGAIN;
		c->mem_refused++;
		format_bytes(n, sizeof(n), (double)need);
		format_bytes(u, sizeof(u), (double)used);
		format_bytes(l, sizeof(l), (double)c->mem->limit);
		snprintf(err, errlen, "not encoded: the profile of pid %d (%s) would take about %s "
			 "to encode, and %s of the %s memory limit (%s) is in use; a higher limit "
			 "or a lower --max-stacks makes room", (int)at->pid, at->comm, n, u, l,
			 c->mem->source);
		/* once, then every 100th: a scrape loop would repeat it each time */
		if (c->mem_refused % 100 == 1)
			pr_warn("memory: %s (%llu scrapes refused so far)\n", err,
				(unsigned long long)c->mem_refused);
	}
	pthread_mutex_unlock(&c->enc_lock);
	return ret;
}

uint64_t collector__mem_reserved(struct collector *c)
{
	uint64_t r;

	pthread_mutex_lock(&c->enc_lock);
	r = c->reserved;
	pthread_mutex_unlock(&c->enc_lock);
	return r;
}

static void mem_release(struct collector *c, uint64_t need)
{
	if (!c->mem)
		return;
	pthread_mutex_lock(&c->enc_lock);
	c->reserved -= need;
	pthread_cond_broadcast(&c->enc_cond);
	pthread_mutex_unlock(&c->enc_lock);
}

/* the time the target's allocation probes were on; target lock held */
static uint64_t observed_of(struct ctarget *t)
{
	uint64_t ns;

	pthread_mutex_lock(&t->st_lock);
	ns = bpfobj_proc__observed_ns(session__proc(t->s));
	pthread_mutex_unlock(&t->st_lock);
	return ns;
}

/* the profile now, less base when given: in its turn, under the target's lock */
static int encode(struct collector *c, const struct agent_target *at, enum agent_profile kind,
		  const struct export_base *base, size_t n_base, uint64_t obs0, uint64_t seconds,
		  void **buf, size_t *len, char *err, size_t errlen)
{
	uint64_t obs1, t0, cpu0, need = 0;
	struct ctarget *t;
	int ret = 0;

	if (!encode_begin(c)) {
		snprintf(err, errlen, c->stopping ? "the agent is stopping" :
			 "%d profiles are being serialized and this one waited %llu s: try again",
			 MAX_ENCODING, (unsigned long long)(ENCODE_WAIT_NS / NS_PER_SEC));
		return -EAGAIN;
	}
	t = lock_to_encode(c, at, err, errlen, &ret);
	/* estimated always: -vv logs it beside what the encoding took */
	if (t)
		need = session__profile_need(t->s) + (c->mem ? c->backlog_max : 0);
	if (t && c->mem) {
		/* the memory is waited for without the target's lock: intake goes on */
		pthread_mutex_unlock(&t->lock);
		ret = mem_admit(c, at, need, err, errlen);
		if (!ret) {
			t = lock_to_encode(c, at, err, errlen, &ret);
			if (!t)
				mem_release(c, need);
		} else {
			t = NULL;
		}
	}
	if (!t) {
		encode_end(c);
		return ret;
	}
	obs1 = observed_of(t);
	t0 = clock_ns(CLOCK_MONOTONIC);
	cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (!base)
		ret = serialize(c, t, kind, NULL, 0, obs1, (int64_t)obs1, buf, len);
	else
		/* probes on the whole window: it lasted what was asked; else what was observed */
		ret = serialize(c, t, kind, base, n_base, obs1 - obs0,
				obs1 - obs0 + NS_PER_SEC / 10 >= seconds * NS_PER_SEC ?
					(int64_t)(seconds * NS_PER_SEC) : (int64_t)(obs1 - obs0),
				buf, len);
	pthread_mutex_unlock(&t->lock);
	mem_release(c, need);
	encode_end(c);
	pr_debug("profile of pid %d (%s): %zu bytes in %.1f ms (%.1f ms of CPU, %.1f MiB "
		 "estimated)\n", (int)at->pid, at->comm, ret ? 0 : *len,
		 (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6,
		 (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / 1e6,
		 (double)need / (1 << 20));
	if (ret)
		snprintf(err, errlen, "cannot serialize the profile of pid %d (%s): %s",
			 (int)at->pid, at->comm, strerror(-ret));
	return ret;
}

/* a follower's copy of a flight's result; enc_lock held */
static int take_flight(struct flight *f, void **buf, size_t *len, char *err, size_t errlen)
{
	int ret = f->ret;

	if (!ret) {
		*buf = malloc(f->len ?: 1);
		if (*buf) {
			memcpy(*buf, f->buf, f->len);
			*len = f->len;
		} else {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
		}
	} else {
		snprintf(err, errlen, "%s", f->err);
	}
	if (!--f->waiters) {
		free(f->buf);
		f->buf = NULL;
		f->used = false;
	}
	return ret;
}

/*
 * The profile now, once for all who ask while it is being encoded: ten
 * scrapers of one heap cost one encoding, not ten in a row.  Those who
 * came during it get its bytes, a profile as of at most one encoding's
 * time before they asked.
 */
static int encode_shared(struct collector *c, const struct agent_target *at,
			 enum agent_profile kind, void **buf, size_t *len, char *err,
			 size_t errlen)
{
	bool exited = at->exited_ns != 0;
	struct flight *f = NULL;
	size_t i;
	int ret;

	pthread_mutex_lock(&c->enc_lock);
	for (i = 0; i < MAX_FLIGHTS && !f; i++) {
		struct flight *g = &c->flights[i];

		if (g->used && !g->done && g->pid == at->pid && g->start == at->start_ticks &&
		    g->exited == exited && g->kind == kind)
			f = g;
	}
	if (f) {
		f->waiters++;
		while (!f->done && !c->stopping)
			pthread_cond_wait(&c->enc_cond, &c->enc_lock);
		if (!f->done) {
			/* the leader gives up too (encode_begin()); the last one out frees */
			f->waiters--;
			pthread_mutex_unlock(&c->enc_lock);
			snprintf(err, errlen, "the agent is stopping");
			return -EAGAIN;
		}
		ret = take_flight(f, buf, len, err, errlen);
		pthread_mutex_unlock(&c->enc_lock);
		return ret;
	}
	for (i = 0; i < MAX_FLIGHTS && c->flights[i].used; i++)
		;
	if (i < MAX_FLIGHTS) {
		f = &c->flights[i];
		*f = (struct flight){ .used = true, .pid = at->pid, .start = at->start_ticks,
				      .exited = exited, .kind = kind };
	}
	pthread_mutex_unlock(&c->enc_lock);
	ret = encode(c, at, kind, NULL, 0, 0, 0, buf, len, err, errlen);
	if (!f)
		return ret;
	pthread_mutex_lock(&c->enc_lock);
	f->done = true;
	f->ret = ret;
	if (f->waiters && !ret) {
		f->buf = malloc(*len ?: 1);
		if (f->buf) {
			memcpy(f->buf, *buf, *len);
			f->len = *len;
		} else {
			f->ret = -ENOMEM;
			snprintf(f->err, sizeof(f->err), "out of memory");
		}
	} else if (f->waiters) {
		snprintf(f->err, sizeof(f->err), "%s", err);
	} else {
		f->used = false;
	}
	pthread_cond_broadcast(&c->enc_cond);
	pthread_mutex_unlock(&c->enc_lock);
	return ret;
}

int collector__profile(void *ctx, const struct agent_target *at, enum agent_profile kind,
		       uint64_t seconds, void **buf, size_t *len, char *err, size_t errlen)
{
	struct collector *c = ctx;
	struct export_base *base = NULL;
	size_t n_base = 0;
	struct ctarget *t;
	uint64_t obs0;
	int ret = 0;

	if (!seconds)
		return encode_shared(c, at, kind, buf, len, err, errlen);
	/* Go's net/http/pprof: values now, sleep, the difference */
	t = lock_target(c, at, err, errlen, &ret);
	if (!t)
		return ret;
	obs0 = observed_of(t);
	ret = session__alloc_base(t->s, &base, &n_base);
	pthread_mutex_unlock(&t->lock);
	if (ret) {
		snprintf(err, errlen, "cannot serialize the profile of pid %d (%s): %s",
			 (int)at->pid, at->comm, strerror(-ret));
		return ret;
	}
	if (!nap(c, seconds * NS_PER_SEC)) {
		snprintf(err, errlen, "the agent is stopping");
		free(base);
		return -EAGAIN;
	}
	ret = encode(c, at, kind, base, n_base, obs0, seconds, buf, len, err, errlen);
	free(base);
	return ret;
}

int collector__span_totals(void *ctx, const struct agent_target *at, struct span_totals *out)
{
	struct ctarget *t = lock_slot(ctx, at->pid, at->start_ticks, false);
	int ret = -ENOENT;

	if (!t)
		return ret;
	/* an exited target's paths left the kernel's table with it: no series then */
	ret = t->exited || !t->s ? -ENODATA : session__span_totals_now(t->s, out);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void collector__freeze_stacks(struct collector *c)
{
	size_t i;

	/* what a kept symbolizer holds goes first (expire_symbolizers()), for good */
	__atomic_store_n(&c->sym_off, true, __ATOMIC_RELAXED);
	/* only this thread changes slots: no table lock to read them */
	for (i = 0; i < c->n; i++) {
		struct ctarget *t = &c->v[i];

		if (!t->used || !t->s)
			continue;
		pthread_mutex_lock(&t->lock);
		if (t->s)
			session__freeze_stacks(t->s);
		pthread_mutex_unlock(&t->lock);
	}
}
