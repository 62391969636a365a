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
	pid_t pid;
	uint64_t armed_ns, disarmed_ns;	/* the window where every probe was live */
	sampler_event_fn on_event;	/* the caller's, behind deliver() */
	void *ctx;
	bool bounded;			/* in sampler__poll(), not draining */
	uint64_t poll_deadline_ns;	/* CLOCK_MONOTONIC; 0: set at the first record */
	unsigned int since_check;	/* records since the clock was last read */
	bool budget_spent;		/* deliver() stopped the ring at the deadline */
	uint64_t load_ns, attach_ns;	/* sampler__timing() */
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

/*
 * Programs this capture attaches nothing to are not loaded: each load is a
 * verification, and attach waits for all of them (--span-fn's, the span
 * probes', --inuse's).
 */
static int skip_unused(struct sampler *s, const struct sampler_opts *o)
{
	struct culpert_bpf *skel = s->skel;
	bool fns = o->span_fns && o->span_fns->n_fns, usdt = o->n_usdt_objects > 0;
	bool inuse = s->inuse != SAMPLER_INUSE_OFF;
	int err;

	err = bpf_program__set_autoload(skel->progs.span_fn_enter, fns);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.span_fn_exit, fns);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.span_enter, usdt);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.span_exit, usdt);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.free_enter, inuse);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.alloc_exit_point, inuse);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.alloc_exit_hoist, inuse);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.alloc_exit,
						s->inuse == SAMPLER_INUSE_EVERY_RETURN);
	return err;
}

static int configure(struct sampler *s, const struct sampler_opts *o)
{
	struct culpert_bpf *skel = s->skel;
	const struct alloc_plan *plan = o->plan;
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
	if (o->max_live)
		err = bpf_map__set_max_entries(skel->maps.live_allocs, (__u32)o->max_live);
	/* before 6.1 a tracing program's run-time allocated hash map makes the verifier WARN */
	if (!err && !features__get()->hash_no_prealloc) {
		pr_info("live table preallocated (kernel before 6.1): %u entries held from the start\n",
			bpf_map__max_entries(skel->maps.live_allocs));
		err = bpf_map__set_map_flags(skel->maps.live_allocs, 0);
	}
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
	/* allocator entries go through `mode`, USDT probes too where usdt_multi() */
	err = bpf_program__set_expected_attach_type(skel->progs.alloc_enter,
						    uprobe_mode__attach_type(s->mode));
	if (!err)
		err = bpf_program__set_expected_attach_type(skel->progs.free_enter,
							    uprobe_mode__attach_type(s->mode));
	if (!err)
		err = bpf_program__set_expected_attach_type(skel->progs.span_fn_enter,
						    uprobe_mode__attach_type(s->mode));
	if (!err)
		err = bpf_program__set_expected_attach_type(skel->progs.span_fn_exit,
							    uprobe_mode__attach_type(s->mode));
	if (!err)
		err = bpf_program__set_expected_attach_type(skel->progs.alloc_exit,
							    uprobe_mode__attach_type(s->mode));
	if (!err)
		err = bpf_program__set_expected_attach_type(skel->progs.alloc_exit_point,
							    uprobe_mode__attach_type(s->mode));
	if (!err)
		err = bpf_program__set_expected_attach_type(skel->progs.alloc_exit_hoist,
							    uprobe_mode__attach_type(s->mode));
	/* span probes go through uprobe_multi too when allocator probes do (usdt_link.h) */
	if (!err && usdt_multi(s))
		err = bpf_program__set_expected_attach_type(skel->progs.span_enter,
							    uprobe_mode__attach_type(s->mode));
	if (!err && usdt_multi(s))
		err = bpf_program__set_expected_attach_type(skel->progs.span_exit,
							    uprobe_mode__attach_type(s->mode));
	/* the session program needs the kfuncs of 6.13+: not even loaded elsewhere */
	if (!err && s->inuse == SAMPLER_INUSE_SESSION)
		err = bpf_program__set_expected_attach_type(skel->progs.alloc_session,
					uprobe_mode__attach_type(UPROBE_MODE_SESSION));
	if (!err)
		err = bpf_program__set_autoload(skel->progs.alloc_session,
						s->inuse == SAMPLER_INUSE_SESSION);
	return err ?: skip_unused(s, o);
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

/* offsets[] without repeats (two functions may share return code), in place; the new count */
static size_t dedupe(uint64_t *offs, size_t n)
{
	size_t i, j, m = 0;

	for (i = 0; i < n; i++) {
		for (j = 0; j < m && offs[j] != offs[i]; j++)
			;
		if (j == m)
			offs[m++] = offs[i];
	}
	return m;
}

/* the --span-fn functions of one object: every return instruction, then the entries */
static int attach_span_fn_object(struct sampler *s, const struct sampler_opts *o, size_t obj,
				 uint64_t *offs, uint64_t *cookies)
{
	const struct span_fn_plan *p = o->span_fns;
	size_t i, n = 0;
	int ret;

	for (i = 0; i < p->n_fns; i++) {
		if (p->fns[i].object != obj)
			continue;
		memcpy(&offs[n], p->fns[i].exits, p->fns[i].n_exits * sizeof(*offs));
		n += p->fns[i].n_exits;
	}
	ret = uprobe_set__attach(s->probes, s->mode, s->skel->progs.span_fn_exit, p->objects[obj],
				 offs, NULL, dedupe(offs, n), o->pid, 0);
	for (i = 0, n = 0; i < p->n_fns; i++) {
		if (p->fns[i].object != obj)
			continue;
		offs[n] = p->fns[i].offset;
		cookies[n++] = p->fns[i].name_id;
	}
	if (!ret)
		ret = uprobe_set__attach(s->probes, s->mode, s->skel->progs.span_fn_enter,
					 p->objects[obj], offs, cookies, n, o->pid, 0);
	return ret;
}

static int attach_span_fns(struct sampler *s, const struct sampler_opts *o, char *err,
			   size_t errlen)
{
	const struct span_fn_plan *p = o->span_fns;
	uint64_t *offs, *cookies;
	size_t obj, i, n = 0;
	int ret = 0;

	if (!p || !p->n_fns)
		return 0;
	for (i = 0; i < p->n_fns; i++)
		n += p->fns[i].n_exits + 1;
	offs = calloc(n, sizeof(*offs));
	cookies = calloc(n, sizeof(*cookies));
	if (!offs || !cookies)
		ret = -ENOMEM;
	for (obj = 0; obj < p->n_objects && !ret; obj++) {
		ret = attach_span_fn_object(s, o, obj, offs, cookies);
		if (ret)
			snprintf(err, errlen, "cannot attach --span-fn probes to %s: %s",
				 p->display[obj], strerror(-ret));
	}
	free(offs);
	free(cookies);
	return ret;
}

/* which of the plan's points an attach step takes */
enum point_set {
	POINTS_FREE,		/* deallocators */
	POINTS_RETURNED,	/* allocators whose return a return probe may see */
	POINTS_EXITS,		/* allocators an exception can unwind through */
};

static bool point_in(const struct probe_point *p, enum point_set set)
{
	if (p->fn == CULPERT_FN_FREE)
		return set == POINTS_FREE;
	if (p->flags & CULPERT_PROBE_F_EXITS)
		return set == POINTS_EXITS;
	return set == POINTS_RETURNED;
}

/* offsets (and cookies: the entry kind and flags) of the plan's points in `obj` in `set` of kind fn (0: any) */
static size_t collect_points(const struct alloc_plan *plan, size_t obj, enum point_set set,
			     uint32_t fn, uint64_t *offs, uint64_t *cookies)
{
	size_t i, n = 0;

	for (i = 0; i < plan->n_points; i++) {
		const struct probe_point *p = &plan->points[i];

		if (p->object != (int)obj || !point_in(p, set) || (fn && p->fn != fn))
			continue;
		offs[n] = p->offset;
		cookies[n++] = p->fn | p->flags;
	}
	return n;
}

/* the return instructions of the points in `obj` that need them and have them all */
static size_t collect_exits(const struct alloc_plan *plan, size_t obj, uint64_t *offs)
{
	size_t i, n = 0;

	for (i = 0; i < plan->n_points; i++) {
		const struct probe_point *p = &plan->points[i];

		if (p->object != (int)obj || !point_in(p, POINTS_EXITS) ||
		    (p->flags & (CULPERT_PROBE_F_NO_RETURN | CULPERT_PROBE_F_DELEGATE)))
			continue;
		memcpy(&offs[n], p->exits, p->n_exits * sizeof(*offs));
		n += p->n_exits;
	}
	return dedupe(offs, n);
}

/* the branches exits were moved to, and their cookies, of the points in `obj`, once each */
static size_t collect_hoists(const struct alloc_plan *plan, size_t obj, uint64_t *offs,
			     uint64_t *cookies)
{
	size_t i, j, k, n = 0;

	for (i = 0; i < plan->n_points; i++) {
		const struct probe_point *p = &plan->points[i];

		if (p->object != (int)obj || !point_in(p, POINTS_EXITS) ||
		    (p->flags & (CULPERT_PROBE_F_NO_RETURN | CULPERT_PROBE_F_DELEGATE)))
			continue;
		for (j = 0; j < p->n_hoists; j++) {
			for (k = 0; k < n && offs[k] != p->hoists[j].offset; k++)
				;
			/* shared code analysed from two entry points: the same branch, the same ways */
			if (k == n) {
				offs[n] = p->hoists[j].offset;
				cookies[n++] = 0;
			}
			cookies[k] |= p->hoists[j].cookie;
		}
	}
	return n;
}

/* the entry program on the points of `set` in `obj`, every kind in one link */
static int attach_entries(struct sampler *s, const struct sampler_opts *o, size_t obj,
			  enum point_set set, uint64_t *offs, uint64_t *cookies)
{
	size_t n = collect_points(o->plan, obj, set, 0, offs, cookies);

	return uprobe_set__attach(s->probes, s->mode, s->skel->progs.alloc_enter,
				  o->plan->objects[obj].open_path, offs, cookies, n, o->pid, 0);
}

/*
 * One link per (object, program): all of its offsets at once.  Return
 * probes go only where no exception can unwind: operator new and the like
 * get plain uprobes on their return instructions instead.
 */
static int attach_object(struct sampler *s, const struct sampler_opts *o, size_t obj,
			 uint64_t *offs, uint64_t *cookies)
{
	const struct alloc_plan *plan = o->plan;
	const char *path = plan->objects[obj].open_path;
	size_t n;
	int ret;

	ret = attach_entries(s, o, obj, POINTS_EXITS, offs, cookies);
	if (!ret && s->inuse == SAMPLER_INUSE_SESSION) {
		n = collect_points(plan, obj, POINTS_RETURNED, 0, offs, cookies);
		ret = uprobe_set__attach(s->probes, UPROBE_MODE_SESSION, s->skel->progs.alloc_session,
					 path, offs, cookies, n, o->pid, 0);
	} else if (!ret) {
		ret = attach_entries(s, o, obj, POINTS_RETURNED, offs, cookies);
		if (!ret && s->inuse == SAMPLER_INUSE_EVERY_RETURN) {
			n = collect_points(plan, obj, POINTS_RETURNED, 0, offs, cookies);
			ret = uprobe_set__attach(s->probes, s->mode, s->skel->progs.alloc_exit, path,
						 offs, NULL, n, o->pid, 1);
		}
	}
	if (ret || s->inuse == SAMPLER_INUSE_OFF)
		return ret;
	n = collect_exits(plan, obj, offs);
	ret = uprobe_set__attach(s->probes, s->mode, s->skel->progs.alloc_exit_point, path, offs,
				 NULL, n, o->pid, 0);
	if (!ret) {
		n = collect_hoists(plan, obj, offs, cookies);
		ret = uprobe_set__attach(s->probes, s->mode, s->skel->progs.alloc_exit_hoist, path,
					 offs, cookies, n, o->pid, 0);
	}
	if (!ret) {
		n = collect_points(plan, obj, POINTS_FREE, 0, offs, cookies);
		ret = uprobe_set__attach(s->probes, s->mode, s->skel->progs.free_enter, path, offs,
					 NULL, n, o->pid, 0);
	}
	return ret;
}

static int attach_plan(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen)
{
	const struct alloc_plan *plan = o->plan;
	size_t obj, i, n = plan->n_points + 1;
	uint64_t *offs, *cookies;
	int ret;

	for (i = 0; i < plan->n_points; i++)
		n += plan->points[i].n_exits + plan->points[i].n_hoists;
	offs = calloc(n, sizeof(*offs));
	cookies = calloc(n, sizeof(*cookies));
	ret = offs && cookies ? 0 : -ENOMEM;

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
	struct bpf_program *progs[] = { s->skel->progs.span_exit, s->skel->progs.span_enter };
	const char *names[] = { "span_exit", "span_enter" };
	struct bpf_link *l;
	size_t i, p;
	int ret;

	/*
	 * span_exit everywhere first: a span entered while only span_enter
	 * listened would stay open for good when its exit came before
	 * span_exit's probe did, and every later span of the thread would nest
	 * under it.  The BPF side follows spans only once the process is armed
	 * (proc_arm(), after every probe is in), which covers that already;
	 * the order costs nothing and holds should arming ever come earlier.
	 */
	for (p = 0; p < 2; p++) {
		for (i = 0; i < o->n_usdt_objects; i++) {
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

/* the process's entry in the procs map, before any of its probes can fire */
static int proc_register(struct sampler *s, pid_t pid, uint64_t stack_rate, char *err,
			 size_t errlen)
{
	struct culpert_proc p = { 0 };
	__u32 key = (__u32)pid;

	if (stack_rate) {
		p.tb_interval_ns = 1000000000ULL / stack_rate ?: 1;
		/* a tenth of a second's worth at once, so a short burst keeps its stacks */
		p.tb_burst_ns = p.tb_interval_ns * (stack_rate / 10 ?: 1);
	}

	s->pid = pid;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.procs), &key, &p, BPF_NOEXIST)) {
		snprintf(err, errlen, "cannot register pid %d with the BPF programs: %s", (int)pid,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

static int proc_arm(struct sampler *s, char *err, size_t errlen)
{
	__u32 key = (__u32)s->pid, one = 1;

	s->armed_ns = clock_ns(CLOCK_MONOTONIC);
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.armed_procs), &key, &one, BPF_ANY)) {
		snprintf(err, errlen, "cannot start following spans: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

int sampler__new(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s;
	uint64_t t0;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->mode = sampler_uprobe_mode(o->no_multi);
	if (o->track_inuse)
		s->inuse = sampler_inuse_mode(o->no_multi, o->no_session);
	s->skel = culpert_bpf__open();
	if (!s->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-ret));
		goto fail;
	}
	t0 = clock_ns(CLOCK_MONOTONIC);
	ret = configure(s, o);
	if (!ret)
		ret = culpert_bpf__load(s->skel);
	s->load_ns = clock_ns(CLOCK_MONOTONIC) - t0;
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
	t0 = clock_ns(CLOCK_MONOTONIC);
	ret = proc_register(s, o->pid, o->stack_rate, err, errlen);
	if (!ret)
		ret = attach_plan(s, o, err, errlen);
	if (!ret)
		ret = attach_usdt(s, o, err, errlen);
	if (!ret)
		ret = attach_span_fns(s, o, err, errlen);
	/* every probe is live: spans can be followed from here on */
	if (!ret)
		ret = proc_arm(s, err, errlen);
	if (ret)
		goto fail;
	s->attach_ns = clock_ns(CLOCK_MONOTONIC) - t0;
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

bool sampler__in_window(const struct sampler *s, uint64_t ts_ns)
{
	return ts_ns >= s->armed_ns && (!s->disarmed_ns || ts_ns < s->disarmed_ns);
}

void sampler__window(const struct sampler *s, uint64_t *start_ns, uint64_t *end_ns)
{
	*start_ns = s->armed_ns;
	*end_ns = s->disarmed_ns;
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
	__u32 key = (__u32)s->pid;

	/*
	 * Spans stop counting before any probe goes: exits still probed after
	 * their enters are gone would each count as unmatched.
	 */
	if (s->skel && !s->disarmed_ns) {
		s->disarmed_ns = clock_ns(CLOCK_MONOTONIC);
		bpf_map_delete_elem(bpf_map__fd(s->skel->maps.armed_procs), &key);
	}
	uprobe_set__free(s->probes);
	s->probes = NULL;
	detach_usdt(s);
}

int sampler__span_names(const struct sampler *s,
			int (*cb)(void *ctx, uint32_t id, const struct culpert_span_name *key),
			void *ctx)
{
	struct culpert_span_name key, next;
	int fd = bpf_map__fd(s->skel->maps.span_names);
	void *prev = NULL;
	__u32 id;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (next.len > CULPERT_SPAN_NAME_MAX)
			next.len = CULPERT_SPAN_NAME_MAX;
		if (bpf_map_lookup_elem(fd, &next, &id) == 0 && cb(ctx, id, &next))
			break;
		key = next;
		prev = &key;
	}
	return 0;
}

/* the ids in the live table, a batch at a time (5.6+), else one key after another */
static int live_ids_batch(int fd, int (*cb)(void *ctx, uint64_t id), void *ctx, bool *unsupported)
{
	enum { BATCH = 4096 };
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u64 keys[BATCH], in = 0, out = 0;
	struct live_value { __u64 id; } vals[BATCH];
	bool first = true;
	__u32 n, i;
	int err, ret;

	for (;;) {
		n = BATCH;
		err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &n, &opts);
		err = err ? -errno : 0;
		/* 524: the kernel's ENOTSUPP, for a map type without batch operations */
		if (err && err != -ENOENT) {
			*unsupported = first && (err == -EINVAL || err == -EOPNOTSUPP || err == -524);
			return err;
		}
		for (i = 0; i < n; i++) {
			ret = cb(ctx, vals[i].id);
			if (ret)
				return ret;
		}
		if (err == -ENOENT)
			return 0;
		in = out;
		first = false;
	}
}

int sampler__live_ids(const struct sampler *s, int (*cb)(void *ctx, uint64_t id), void *ctx)
{
	int fd = bpf_map__fd(s->skel->maps.live_allocs), ret;
	__u64 key, next, *prev = NULL, id;
	bool unsupported = false;

	ret = live_ids_batch(fd, cb, ctx, &unsupported);
	if (!unsupported)
		return ret;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (bpf_map_lookup_elem(fd, &next, &id) == 0 && (ret = cb(ctx, id)))
			return ret;
		key = next;
		prev = &key;
	}
	return 0;
}

/* probe hits the kernel did not run a program for (another BPF program was running on the CPU) */
static uint64_t prog_misses(const struct bpf_program *p)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(p);

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.recursion_misses;
}

void sampler__misses(const struct sampler *s, uint64_t *all, uint64_t *frees)
{
	struct bpf_program *p;

	*all = 0;
	bpf_object__for_each_program(p, s->skel->obj)
		*all += prog_misses(p);
	/*
	 * Frees are also seen at realloc's entry, which shares its program
	 * with every allocating entry: a miss there may have been a free.
	 */
	*frees = prog_misses(s->skel->progs.free_enter) + prog_misses(s->skel->progs.alloc_enter);
}

int sampler__throttled(const struct sampler *s,
		       int (*cb)(void *ctx, uint64_t size, const struct culpert_throttle_path *path,
				 uint64_t count),
		       void *ctx, uint64_t *over_samples, uint64_t *over_bytes)
{
	int fd = bpf_map__fd(s->skel->maps.throttled);
	int paths = bpf_map__fd(s->skel->maps.throttle_paths);
	struct culpert_throttle_key key, next, *prev = NULL;
	struct culpert_throttle_path path;
	struct culpert_proc p;
	__u32 tgid = (__u32)s->pid;
	__u64 n;
	int ret;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (next.tgid != tgid || bpf_map_lookup_elem(fd, &next, &n))
			continue;
		/* a path the map could not spell out is counted outside spans */
		if (!next.path || bpf_map_lookup_elem(paths, &next.path, &path))
			ret = cb(ctx, next.size, NULL, n);
		else
			ret = cb(ctx, next.size, &path, n);
		if (ret)
			return ret;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.procs), &tgid, &p))
		return -errno;
	*over_samples = p.over_samples;
	*over_bytes = p.over_bytes;
	return 0;
}

void sampler__counters(const struct sampler *s, uint64_t out[CULPERT_CNT__MAX])
{
	struct culpert_proc p;
	__u32 key = (__u32)s->pid;

	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.procs), &key, &p))
		memset(&p, 0, sizeof(p));
	memcpy(out, p.counters, CULPERT_CNT__MAX * sizeof(uint64_t));
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

void sampler__timing(const struct sampler *s, uint64_t *load_ns, uint64_t *attach_ns)
{
	*load_ns = s->load_ns;
	*attach_ns = s->attach_ns;
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
		return "uprobe sessions: return probes for sampled calls only (operator new & co.: uprobes where they return, no return probe)";
	case SAMPLER_INUSE_EVERY_RETURN:
		return "a return probe on every call (operator new & co.: uprobes where they return, no return probe)";
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
