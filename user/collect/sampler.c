// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocator.h"
#include "clock.h"
#include "culpert.skel.h"
#include "kfeatures.h"
#include "log.h"
#include "sampler.h"
#include "spanfn.h"
#include "uprobe.h"
#include "usdt_link.h"
#include "vec.h"

struct sampler {
	struct culpert_bpf *skel;
	struct ring_buffer *rb;
	struct uprobe_set *probes;
	struct bpf_link **usdt_links;	/* span probes through libbpf's perf-event uprobes */
	struct uprobe_set *usdt_probes;	/* or through uprobe_multi links (usdt_link.h) */
	int next_spec;			/* USDT argument specs stored */
	struct bpf_link *exec_link;	/* notes an exec of the target */
	size_t n_usdt_links, cap_usdt_links;
	enum uprobe_mode mode;
	enum sampler_inuse inuse;
	bool fn_session;		/* --span-fn through one session program */
	sampler_event_fn on_event;	/* the caller's, behind deliver() */
	void *ctx;
	bool bounded;			/* in sampler__poll(), not draining */
	uint64_t poll_deadline_ns;	/* CLOCK_MONOTONIC; 0: set at the first record */
	unsigned int since_check;	/* records since the clock was last read */
	bool budget_spent;		/* deliver() stopped the ring at the deadline */
};

/* how long one sampler__poll() may deliver records, from the first, before it returns */
#define POLL_BUDGET_NS	(50 * 1000000ULL)
/* the clock is read once per this many records */
#define POLL_CHECK_EVERY 64

/*
 * libbpf 1.1's ring_buffer__poll() and __consume() return only once the
 * ring is empty, so a producer as fast as the reader (a target whose
 * allocations our own handling causes, or any busy one at --rate 1 under
 * DWARF unwinding) keeps them inside for ever: no --duration, no signal.
 * A negative return from the callback is the one way out it offers (the
 * record is consumed first); a deadline per poll makes it return.
 */
static int deliver(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	int ret = s->on_event(s->ctx, data, size);

	if (ret || !s->bounded)
		return ret;
	if (!s->poll_deadline_ns)
		s->poll_deadline_ns = clock_ns(CLOCK_MONOTONIC) + POLL_BUDGET_NS;
	if (++s->since_check < POLL_CHECK_EVERY)
		return 0;
	s->since_check = 0;
	if (clock_ns(CLOCK_MONOTONIC) < s->poll_deadline_ns)
		return 0;
	s->budget_spent = true;
	return -ECANCELED;
}

void sampler_fill_exp_table(__s64 *table, uint64_t rate)
{
	const size_t n = CULPERT_EXP_TABLE_SIZE;
	double sum = 0, scale;
	size_t i;

	/*
	 * Quantiles of Exp(1) at the bin midpoints: a random index then draws
	 * from the exponential distribution up to the 1/n quantisation.  The
	 * truncated tail makes the mean slightly low; rescale to exactly
	 * `rate`, since the estimate of small allocations is proportional to it.
	 */
	for (i = 0; i < n; i++)
		sum += -log1p(-((double)i + 0.5) / (double)n);
	scale = (double)rate / (sum / (double)n);
	for (i = 0; i < n; i++)
		table[i] = llround(-log1p(-((double)i + 0.5) / (double)n) * scale);
}

static struct bpf_program *program_for(struct culpert_bpf *skel, uint32_t fn)
{
	switch (fn) {
	case CULPERT_FN_MALLOC:
		return skel->progs.malloc_enter;
	case CULPERT_FN_CALLOC:
		return skel->progs.calloc_enter;
	case CULPERT_FN_REALLOC:
		return skel->progs.realloc_enter;
	case CULPERT_FN_REALLOCARRAY:
		return skel->progs.reallocarray_enter;
	case CULPERT_FN_POSIX_MEMALIGN:
		return skel->progs.posix_memalign_enter;
	case CULPERT_FN_MEMALIGN:
		return skel->progs.memalign_enter;
	case CULPERT_FN_PVALLOC:
		return skel->progs.pvalloc_enter;
	case CULPERT_FN_FREE:
		return skel->progs.free_enter;
	default:
		return NULL;
	}
}

static size_t pow2_at_least(size_t v)
{
	size_t p = (size_t)sysconf(_SC_PAGESIZE);

	while (p < v)
		p <<= 1;
	return p;
}

/* span probes through uprobe_multi links (usdt_link.h), or libbpf's perf-event uprobes */
static bool usdt_multi(const struct sampler *s)
{
	return s->mode == UPROBE_MODE_MULTI && usdt_link__supported();
}

static int configure(struct sampler *s, const struct sampler_opts *o)
{
	struct culpert_bpf *skel = s->skel;
	const struct alloc_plan *plan = o->plan;
	struct bpf_program *prog;
	uint32_t fn;
	size_t i, ring;
	int err = 0;

	/* one frame more than kept: frames[0] is the probed instruction itself */
	skel->rodata->stack_bytes = (o->max_depth + 1) * sizeof(__u64);
	skel->rodata->target_tgid = (__u32)o->pid;
	skel->rodata->sample_every = o->rate == 1;
	skel->rodata->page_size = (__u64)sysconf(_SC_PAGESIZE);
	skel->rodata->track_inuse = s->inuse != SAMPLER_INUSE_OFF;
	skel->rodata->unwind_dwarf = o->unwind_dwarf;
	if (o->stack_copy_bytes)
		skel->rodata->stack_copy_bytes = o->stack_copy_bytes;
	skel->rodata->return_every_call = s->inuse == SAMPLER_INUSE_EVERY_RETURN;
	if (o->max_live)
		err = bpf_map__set_max_entries(skel->maps.live_allocs, (__u32)o->max_live);
	if (err)
		return err;
	for (i = 0; i < plan->n_objects && i < CULPERT_MAX_ALLOC_OBJS; i++) {
		skel->rodata->alloc_text_lo[i] = plan->objects[i].text_lo;
		skel->rodata->alloc_text_hi[i] = plan->objects[i].text_hi;
	}
	ring = pow2_at_least(o->ringbuf_bytes);
	skel->rodata->wakeup_bytes = ring / 4;
	err = bpf_map__set_max_entries(skel->maps.events, (__u32)ring);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.event_scratch,
					       (__u32)libbpf_num_possible_cpus());
	if (err)
		return err;
	/* allocator entries go through `mode`; USDT probes always through libbpf's perf uprobes */
	for (fn = 1; fn < CULPERT_FN__MAX; fn++) {
		prog = program_for(skel, fn);
		err = bpf_program__set_expected_attach_type(prog, uprobe_mode__attach_type(s->mode));
		if (err)
			return err;
	}
	err = bpf_program__set_expected_attach_type(skel->progs.span_fn_enter,
						    uprobe_mode__attach_type(s->mode));
	if (!err)
		err = bpf_program__set_expected_attach_type(skel->progs.span_fn_exit,
							    uprobe_mode__attach_type(s->mode));
	if (!err)
		err = bpf_program__set_expected_attach_type(skel->progs.alloc_exit,
							    uprobe_mode__attach_type(s->mode));
	/* span probes go through uprobe_multi too when allocator probes do (usdt_link.h) */
	if (!err && usdt_multi(s))
		err = bpf_program__set_expected_attach_type(skel->progs.span_enter,
							    uprobe_mode__attach_type(s->mode));
	if (!err && usdt_multi(s))
		err = bpf_program__set_expected_attach_type(skel->progs.span_exit,
							    uprobe_mode__attach_type(s->mode));
	if (!err && s->inuse == SAMPLER_INUSE_SESSION)
		err = bpf_program__set_expected_attach_type(skel->progs.alloc_session,
					uprobe_mode__attach_type(UPROBE_MODE_SESSION));
	if (!err)
		err = bpf_program__set_autoload(skel->progs.alloc_session,
						s->inuse == SAMPLER_INUSE_SESSION);
	/* the session program needs the kfuncs of 6.13+: not even loaded elsewhere */
	if (!err && s->fn_session)
		err = bpf_program__set_expected_attach_type(skel->progs.span_fn_session,
					uprobe_mode__attach_type(UPROBE_MODE_SESSION));
	if (!err)
		err = bpf_program__set_autoload(skel->progs.span_fn_session, s->fn_session);
	return err;
}

/* --span-fn names get ids 1..n before any probe fires; USDT names come after */
static int register_fn_names(struct sampler *s, const struct span_fn_plan *p)
{
	int fd = bpf_map__fd(s->skel->maps.span_names);
	struct culpert_span_name key;
	__u32 id;
	size_t i;

	for (i = 0; p && i < p->n_names; i++) {
		memset(&key, 0, sizeof(key));
		key.len = (__u32)strnlen(p->names[i], CULPERT_SPAN_NAME_MAX);
		memcpy(key.name, p->names[i], key.len);
		id = (__u32)i + 1;
		if (bpf_map_update_elem(fd, &key, &id, BPF_NOEXIST))
			return -errno;
	}
	s->skel->data->next_name_id = p ? (__u32)p->n_names + 1 : 1;
	return 0;
}

static int attach_span_fns(struct sampler *s, const struct sampler_opts *o, char *err,
			   size_t errlen)
{
	const struct span_fn_plan *p = o->span_fns;
	uint64_t *offs, *cookies;
	size_t obj, i, n;
	int ret = 0;

	if (!p || !p->n_fns)
		return 0;
	offs = calloc(p->n_fns, sizeof(*offs));
	cookies = calloc(p->n_fns, sizeof(*cookies));
	if (!offs || !cookies) {
		ret = -ENOMEM;
		goto out;
	}
	for (obj = 0; obj < p->n_objects && !ret; obj++) {
		for (n = 0, i = 0; i < p->n_fns; i++) {
			if (p->fns[i].object != obj)
				continue;
			offs[n] = p->fns[i].offset;
			cookies[n++] = p->fns[i].name_id;
		}
		if (s->fn_session && !p->entry_only[obj]) {
			ret = uprobe_set__attach(s->probes, UPROBE_MODE_SESSION,
						 s->skel->progs.span_fn_session, p->objects[obj],
						 offs, cookies, n, o->pid, 0);
		} else {
			ret = uprobe_set__attach(s->probes, s->mode, s->skel->progs.span_fn_enter,
						 p->objects[obj], offs, cookies, n, o->pid, 0);
			if (!ret && !p->entry_only[obj])
				ret = uprobe_set__attach(s->probes, s->mode,
							 s->skel->progs.span_fn_exit,
							 p->objects[obj], offs, cookies, n, o->pid, 1);
		}
		if (ret)
			snprintf(err, errlen, "cannot attach --span-fn probes to %s: %s",
				 p->display[obj], strerror(-ret));
	}
out:
	free(offs);
	free(cookies);
	return ret;
}

/* offsets (and cookies: the entry kind and flags) of the plan's points in `obj` matching `want` */
static size_t collect_points(const struct alloc_plan *plan, size_t obj,
			     bool (*want)(uint32_t fn, uint32_t arg), uint32_t arg,
			     uint64_t *offs, uint64_t *cookies)
{
	size_t i, n = 0;

	for (i = 0; i < plan->n_points; i++) {
		const struct probe_point *p = &plan->points[i];

		if (p->object != (int)obj || !want(p->fn, arg))
			continue;
		offs[n] = p->offset;
		cookies[n++] = p->fn | p->flags;
	}
	return n;
}

static bool fn_is(uint32_t fn, uint32_t want)
{
	return fn == want;
}

static bool fn_allocates(uint32_t fn, uint32_t unused)
{
	return fn != CULPERT_FN_FREE;
}

/* one link per (object, program): all of its offsets at once */
static int attach_object(struct sampler *s, const struct sampler_opts *o, size_t obj,
			 uint64_t *offs, uint64_t *cookies)
{
	const struct alloc_plan *plan = o->plan;
	const char *path = plan->objects[obj].open_path;
	uint32_t fn;
	size_t n;
	int ret = 0;

	if (s->inuse == SAMPLER_INUSE_SESSION) {
		n = collect_points(plan, obj, fn_allocates, 0, offs, cookies);
		ret = uprobe_set__attach(s->probes, UPROBE_MODE_SESSION, s->skel->progs.alloc_session,
					 path, offs, cookies, n, o->pid, 0);
	} else {
		for (fn = 1; fn < CULPERT_FN__MAX && !ret; fn++) {
			if (fn == CULPERT_FN_FREE)
				continue;
			n = collect_points(plan, obj, fn_is, fn, offs, cookies);
			ret = uprobe_set__attach(s->probes, s->mode, program_for(s->skel, fn), path,
						 offs, cookies, n, o->pid, 0);
		}
		if (!ret && s->inuse == SAMPLER_INUSE_EVERY_RETURN) {
			n = collect_points(plan, obj, fn_allocates, 0, offs, cookies);
			ret = uprobe_set__attach(s->probes, s->mode, s->skel->progs.alloc_exit, path,
						 offs, NULL, n, o->pid, 1);
		}
	}
	if (!ret && s->inuse != SAMPLER_INUSE_OFF) {
		n = collect_points(plan, obj, fn_is, CULPERT_FN_FREE, offs, cookies);
		ret = uprobe_set__attach(s->probes, s->mode, s->skel->progs.free_enter, path, offs,
					 NULL, n, o->pid, 0);
	}
	return ret;
}

static int attach_plan(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen)
{
	const struct alloc_plan *plan = o->plan;
	uint64_t *offs = calloc(plan->n_points ?: 1, sizeof(*offs));
	uint64_t *cookies = calloc(plan->n_points ?: 1, sizeof(*cookies));
	size_t obj;
	int ret = offs && cookies ? 0 : -ENOMEM;

	for (obj = 0; obj < plan->n_objects && !ret; obj++) {
		ret = attach_object(s, o, obj, offs, cookies);
		if (ret)
			snprintf(err, errlen, "cannot attach uprobes to %s in pid %d: %s%s",
				 plan->objects[obj].path, (int)o->pid, strerror(-ret),
				 ret == -ESRCH ? " (the process exited)" : "");
	}
	free(offs);
	free(cookies);
	return ret;
}

/* one probe of one object through a uprobe_multi link: CAP_BPF + CAP_PERFMON suffice */
static int attach_usdt_multi(struct sampler *s, const struct sampler_opts *o, const char *path,
			     const struct bpf_program *prog, const char *name, char *err,
			     size_t errlen)
{
	struct usdt_link_opts uo = { .obj = s->skel->obj, .prog = prog, .path = path,
				     .provider = "culpert", .name = name, .pid = o->pid,
				     .next_spec = &s->next_spec };

	if (!s->usdt_probes && !(s->usdt_probes = uprobe_set__new()))
		return -ENOMEM;
	return usdt_link__attach(s->usdt_probes, &uo, err, errlen);
}

static int attach_usdt(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen)
{
	struct bpf_program *progs[] = { s->skel->progs.span_enter, s->skel->progs.span_exit };
	const char *names[] = { "span_enter", "span_exit" };
	struct bpf_link *l;
	size_t i, p;
	int ret;

	/*
	 * span_exit first: a span entered while only span_enter listened would
	 * stay open for good when its exit came before span_exit's probe did,
	 * and every later span of the thread would nest under it.  An exit of a
	 * span entered before span_enter listens is unmatched, and ignored.
	 */
	for (i = 0; i < o->n_usdt_objects; i++) {
		for (p = 2; p-- > 0;) {
			if (usdt_multi(s)) {
				ret = attach_usdt_multi(s, o, o->usdt_objects[i], progs[p],
							names[p], err, errlen);
				if (ret)
					return ret;
				continue;
			}
			if (vec_reserve(&s->usdt_links, &s->cap_usdt_links, s->n_usdt_links + 1,
					sizeof(*s->usdt_links)))
				return -ENOMEM;
			l = bpf_program__attach_usdt(progs[p], o->pid, o->usdt_objects[i], "culpert",
						     names[p], NULL);
			if (!l) {
				ret = -errno;
				snprintf(err, errlen, "cannot attach to the culpert:%s probes of %s: %s",
					 names[p], o->usdt_objects[i], strerror(-ret));
				return ret;
			}
			s->usdt_links[s->n_usdt_links++] = l;
		}
	}
	return 0;
}

int sampler__new(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->mode = sampler_uprobe_mode(o->no_multi);
	s->fn_session = sampler_sessions(o->no_multi, o->no_session);
	if (o->track_inuse)
		s->inuse = sampler_inuse_mode(o->no_multi, o->no_session);
	s->skel = culpert_bpf__open();
	if (!s->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-ret));
		goto fail;
	}
	ret = configure(s, o);
	if (!ret)
		ret = culpert_bpf__load(s->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the BPF programs: %s (run with -vvv for the verifier log)",
			 strerror(-ret));
		goto fail;
	}
	/* before any probe fires: a zero table would sample every call */
	sampler_fill_exp_table(s->skel->bss->exp_table, o->rate);
	ret = register_fn_names(s, o->span_fns);
	if (ret) {
		snprintf(err, errlen, "cannot register --span-fn names: %s", strerror(-ret));
		goto fail;
	}
	s->on_event = o->on_event;
	s->ctx = o->ctx;
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), deliver, s, NULL);
	s->probes = uprobe_set__new();
	if (!s->rb || !s->probes) {
		ret = -ENOMEM;
		snprintf(err, errlen, "cannot set up the ring buffer: %s", strerror(ENOMEM));
		goto fail;
	}
	/*
	 * Optional: without it, an exec is still found in /proc if it lasts
	 * until a poll, so a failure is a warning, not an error.
	 */
	s->exec_link = bpf_program__attach(s->skel->progs.target_exec);
	if (!s->exec_link)
		pr_warn("cannot watch for an exec of the target (%s); an exec may be reported as an exit\n",
			strerror(errno));
	ret = attach_plan(s, o, err, errlen);
	if (!ret)
		ret = attach_usdt(s, o, err, errlen);
	if (!ret)
		ret = attach_span_fns(s, o, err, errlen);
	if (ret)
		goto fail;
	pr_info("attached %zu probe sites with %s links\n", uprobe_set__count(s->probes),
		uprobe_mode__name(s->mode));
	*out = s;
	return 0;
fail:
	sampler__free(s);
	return ret;
}

/*
 * The BPF side wakes the reader only once the ring is a quarter full (a
 * wakeup per sample would cost the target an irq_work and a task wakeup
 * each), so a poll that times out still reads what has come in.
 */
int sampler__poll(struct sampler *s, int timeout_ms)
{
	int n;

	s->budget_spent = false;
	s->since_check = 0;
	s->poll_deadline_ns = 0;
	s->bounded = true;
	n = ring_buffer__poll(s->rb, timeout_ms);
	if (!s->budget_spent && (n == 0 || n == -EINTR))
		n = ring_buffer__consume(s->rb);
	/* what was delivered before the deadline is not counted: the caller needs only >= 0 */
	if (s->budget_spent && n == -ECANCELED)
		n = 0;
	s->bounded = false;
	return n;
}

/* after detach: what is queued is finite, deliver all of it */
int sampler__drain(struct sampler *s)
{
	return ring_buffer__consume(s->rb);
}

bool sampler__target_execed(const struct sampler *s)
{
	return __atomic_load_n(&s->skel->bss->target_execed, __ATOMIC_RELAXED);
}

static void detach_usdt(struct sampler *s)
{
	uprobe_set__free(s->usdt_probes);
	s->usdt_probes = NULL;
	while (s->n_usdt_links)
		bpf_link__destroy(s->usdt_links[--s->n_usdt_links]);
}

void sampler__detach(struct sampler *s)
{
	uprobe_set__free(s->probes);
	s->probes = NULL;
	detach_usdt(s);
}

int sampler__span_names(const struct sampler *s,
			int (*cb)(void *ctx, uint32_t id, const char *name, size_t len), void *ctx)
{
	struct culpert_span_name key, next;
	int fd = bpf_map__fd(s->skel->maps.span_names);
	void *prev = NULL;
	__u32 id;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		size_t len = next.len > CULPERT_SPAN_NAME_MAX ? CULPERT_SPAN_NAME_MAX : next.len;

		if (bpf_map_lookup_elem(fd, &next, &id) == 0 && cb(ctx, id, next.name, len))
			break;
		key = next;
		prev = &key;
	}
	return 0;
}

void sampler__counters(const struct sampler *s, uint64_t out[CULPERT_CNT__MAX])
{
	memcpy(out, (const void *)s->skel->bss->counters, CULPERT_CNT__MAX * sizeof(uint64_t));
}

/* the calls seen of `n` hot-state entries of value_size bytes each, added to *out */
static void add_seen(const char *values, size_t n, size_t value_size,
		     struct culpert_calls_seen *out)
{
	struct culpert_calls_seen c;
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(&c, values + i * value_size + value_size - sizeof(c), sizeof(c));
		out->calls += c.calls;
		out->bytes += c.bytes;
	}
}

/*
 * One batch read of the whole array where the kernel has it (5.6+); a
 * lookup per slot otherwise.  Read once, after detaching.
 */
int sampler__calls_seen(const struct sampler *s, struct culpert_calls_seen *out)
{
	const struct bpf_map *m = s->skel->maps.hot_states;
	size_t vsz = bpf_map__value_size(m), n = bpf_map__max_entries(m), done = 0, i;
	__u32 *keys = calloc(n, sizeof(*keys)), count, in_batch, out_batch;
	char *values = calloc(n, vsz);
	int fd = bpf_map__fd(m), err = 0, ret;
	void *in = NULL;

	memset(out, 0, sizeof(*out));
	if (!keys || !values || vsz < sizeof(*out)) {
		err = -ENOMEM;
		goto out;
	}
	/* at most n / 1 + 1 batches: each returns at least one entry or ends */
	while (done < n) {
		count = (__u32)(n - done);
		ret = bpf_map_lookup_batch(fd, in, &out_batch, keys, values, &count, NULL);
		if (ret && errno != ENOENT)
			break;
		add_seen(values, count, vsz, out);
		done += count;
		if (ret || !count)
			goto out;
		in_batch = out_batch;
		in = &in_batch;
	}
	if (done >= n)
		goto out;
	/* no batch operations (before 5.6): one lookup per slot */
	pr_debug("batch read of hot_states: %s; one lookup per slot\n", strerror(errno));
	memset(out, 0, sizeof(*out));
	for (i = 0; i < n && !err; i++) {
		__u32 k = (__u32)i;

		if (bpf_map_lookup_elem(fd, &k, values))
			err = -errno;
		else
			add_seen(values, 1, vsz, out);
	}
out:
	free(keys);
	free(values);
	return err;
}

size_t sampler__n_sites(const struct sampler *s)
{
	return uprobe_set__count(s->probes);
}

enum sampler_inuse sampler__inuse(const struct sampler *s)
{
	return s->inuse;
}

const char *sampler_inuse__name(enum sampler_inuse m)
{
	switch (m) {
	case SAMPLER_INUSE_SESSION:
		return "uprobe sessions: return probes for sampled calls only";
	case SAMPLER_INUSE_EVERY_RETURN:
		return "a return probe on every call";
	default:
		return "off";
	}
}

bool sampler_sessions(bool no_multi, bool no_session)
{
	const struct kfeatures *f = features__get();

	return !no_multi && !no_session && f->uprobe_multi && f->uprobe_session;
}

enum uprobe_mode sampler_uprobe_mode(bool no_multi)
{
	return !no_multi && features__get()->uprobe_multi ? UPROBE_MODE_MULTI : UPROBE_MODE_PERF;
}

enum sampler_inuse sampler_inuse_mode(bool no_multi, bool no_session)
{
	return sampler_sessions(no_multi, no_session) ? SAMPLER_INUSE_SESSION :
							 SAMPLER_INUSE_EVERY_RETURN;
}

const char *span_fn_mode_name(bool sessions, bool entry_only)
{
	if (entry_only)
		return "entry probes only (C++/Rust unwinding: return probes would break it)";
	return sessions ? "uprobe_session" : "entry+return probes";
}

const char *sampler__span_fn_mode(const struct sampler *s, bool entry_only)
{
	return span_fn_mode_name(s->fn_session, entry_only);
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	sampler__detach(s);
	bpf_link__destroy(s->exec_link);
	free(s->usdt_links);
	ring_buffer__free(s->rb);
	culpert_bpf__destroy(s->skel);
	free(s);
}
