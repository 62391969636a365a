// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
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
#include "otel.h"
#include "bpfobj.h"
#include "probe_offset.h"
#include "reaper.h"
#include "spanfn.h"
#include "uprobe.h"
#include "usdt_link.h"
#include "vec.h"
#if defined(__x86_64__)
#include "x86dec.h"
#endif

/* USDT links of one kind: uprobe_multi links (usdt_link.h), or libbpf's perf-event uprobes */
struct usdt_links {
	struct uprobe_set *multi;
	struct usdt_held held;		/* the multi links' argument specs */
	struct bpf_link **links;
	size_t n, cap;
};

/* one process's probes over the shared object */
struct bpfobj_proc {
	struct bpfobj *s;
	pid_t pid;
	const struct alloc_plan *plan;	/* the one attach_plan() works on */
	/* the caller's, kept for re-attaching (duty cycling): the first, then later objects' */
	const struct alloc_plan *plans[CULPERT_MAX_ALLOC_OBJS];
	size_t n_plans, n_objects;
	struct culpert_alloc_text text;
	struct uprobe_set *alloc_probes;	/* allocator entries and returns */
	struct uprobe_set *probes;	/* --span-fn: attached for good */
	struct uprobe_set *free_probes;	/* deallocators: off only when the budget says so */
	/* per plan, per point: 0 not looked at yet, else CULPERT_PROBE_F_STEPPED or 1 */
	uint32_t *site_class[CULPERT_MAX_ALLOC_OBJS];
	struct usdt_links usdt;		/* span probes and otel_memory:free: attached for good */
	/* with otel: the otel_memory probes instead of the allocator's entry points */
	const struct otel_plan *otel;	/* the caller's, kept for re-attaching */
	struct usdt_links otel_alloc;	/* otel_memory:alloc: duty cycling takes it out */
	size_t n_otel_alloc, n_otel_free;	/* their sites */
	uint64_t armed_ns, disarmed_ns;	/* the window where every probe was live */
	uint64_t add_ns;		/* bpfobj__add_proc()'s time: the kernel's attaches */
	bool alloc_on;			/* allocation probes attached */
	/* deallocator probes detached (bpfobj_proc__set_free) */
	bool free_off;
	/* blocks allocated before this are not in the live table */
	uint64_t heap_since_ns;
	uint64_t on_since_ns, observed_ns;	/* time they were on */
	bool registered;		/* in the procs map */
	struct culpert_proc final;	/* its entry when it left the map (unregistered) */
};

struct bpfobj {
	struct culpert_bpf *skel;
	struct ring_buffer *rb;
	struct usdt_spec_ids spec_ids;	/* USDT argument specs stored (uprobe_multi links) */
	/*
	 * spec_ids and libbpf's USDT manager of the object: an agent attaches
	 * on one thread while its event thread releases and switches
	 */
	pthread_mutex_t usdt_lock;
	struct bpf_link *exec_link;	/* notes an exec of the target */
	struct bpf_link *exit_link;	/* folds the totals of spans a thread exits inside */
	enum uprobe_mode mode;
	enum bpfobj_inuse inuse;
	bool otel_loaded;		/* the otel_memory programs are loaded */
	struct bpfobj_proc *only;	/* bpfobj__new(): the one process */
	bpfobj_event_fn on_event;	/* the caller's, behind deliver() */
	void *ctx;
	bool bounded;			/* in bpfobj__poll(), not draining */
	uint64_t poll_deadline_ns;	/* CLOCK_MONOTONIC; 0: set at the first record */
	unsigned int since_check;	/* records since the clock was last read */
	bool budget_spent;		/* deliver() stopped the ring at the deadline */
	uint64_t load_ns, attach_ns;	/* bpfobj__timing() */
	struct reaper *reaper;		/* async_teardown: links and live entries let go of there */
	bool closing;			/* bpfobj__closing(): the maps go with the object */
};

/* how long one bpfobj__poll() may deliver records, from the first, before it returns */
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
	struct bpfobj *s = ctx;
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

void bpfobj_fill_exp_table(__s64 *table, uint64_t rate)
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
static bool usdt_multi(const struct bpfobj *s)
{
	return s->mode == UPROBE_MODE_MULTI && usdt_link__supported();
}

static bool otel_use(const struct bpfobj_opts *o)
{
	return o->otel && o->otel->use;
}

/* how one program is set up before the load */
struct prog_setup {
	struct bpf_program *prog;
	bool load;
	bool typed;			/* loaded with `mode`'s attach type (else libbpf's default) */
	enum uprobe_mode mode;
};

/*
 * Every program whose set-up depends on the capture, in one place.
 *
 * Programs this capture attaches nothing to are not loaded: each load is a
 * verification, and attach waits for all of them (--span-fn's, the span
 * probes', --inuse's).  That is for attach's own object only (opts->pid
 * set): the agent's shared object serves processes it does not know yet.
 *
 * attach's own object loads the otel_memory programs only when used (free
 * only for --inuse), and then the allocator's entry and exit programs are
 * not.  The agent's shared object (otel_progs) loads both sets: each
 * process takes one path or the other.
 *
 * Allocator entries go through `mode`, USDT probes too where
 * usdt_multi(); the session program needs the kfuncs of 6.13+, so it is
 * not even loaded elsewhere.
 */
static int setup_programs(struct bpfobj *s, const struct bpfobj_opts *o)
{
	const struct culpert_bpf *skel = s->skel;
	bool own = o->pid != 0, otel = otel_use(o), multi = usdt_multi(s);
	bool fns = o->span_fns && o->span_fns->n_fns, usdt = o->n_usdt_objects > 0;
	bool inuse = s->inuse != BPFOBJ_INUSE_OFF, session = s->inuse == BPFOBJ_INUSE_SESSION;
	bool every_return = s->inuse == BPFOBJ_INUSE_EVERY_RETURN;
	bool otel_alloc = otel || o->otel_progs;
	bool otel_free = otel ? o->otel->with_free : otel_alloc && o->track_inuse;
	enum uprobe_mode m = s->mode;
	const struct prog_setup v[] = {
		{ skel->progs.alloc_enter, !otel, true, m },
		{ skel->progs.free_enter, !otel && (!own || inuse), true, m },
		{ skel->progs.alloc_exit, !otel && (!own || every_return), true, m },
		{ skel->progs.alloc_exit_point, !otel && (!own || inuse), true, m },
		{ skel->progs.alloc_exit_hoist, !otel && (!own || inuse), true, m },
		{ skel->progs.alloc_session, session, session, UPROBE_MODE_SESSION },
		{ skel->progs.span_fn_enter, !own || fns, true, m },
		{ skel->progs.span_fn_exit, !own || fns, true, m },
		{ skel->progs.span_enter, !own || usdt, multi, m },
		{ skel->progs.span_exit, !own || usdt, multi, m },
		{ skel->progs.otel_alloc, otel_alloc, otel_alloc && multi, m },
		{ skel->progs.otel_free, otel_free, otel_free && multi, m },
	};
	size_t i;
	int err = 0;

	for (i = 0; i < sizeof(v) / sizeof(v[0]) && !err; i++) {
		err = bpf_program__set_autoload(v[i].prog, v[i].load);
		if (!err && v[i].typed)
			err = bpf_program__set_expected_attach_type(v[i].prog,
								    uprobe_mode__attach_type(v[i].mode));
	}
	s->otel_loaded = otel_alloc;
	return err;
}

static int configure(struct bpfobj *s, const struct bpfobj_opts *o)
{
	struct culpert_bpf *skel = s->skel;
	size_t ring;
	int err = 0;

	/* one frame more than kept: frames[0] is the probed instruction itself */
	skel->rodata->stack_bytes = (o->max_depth + 1) * sizeof(__u64);
	skel->rodata->count_calls = o->count_calls;
	skel->rodata->sample_every = o->rate == 1;
	skel->rodata->page_size = (__u64)sysconf(_SC_PAGESIZE);
	skel->rodata->track_inuse = s->inuse != BPFOBJ_INUSE_OFF;
	skel->rodata->exact_totals = !o->no_exact;
	skel->rodata->unwind_dwarf = o->unwind_dwarf;
	if (o->stack_copy_bytes)
		skel->rodata->stack_copy_bytes = o->stack_copy_bytes;
	if (o->max_procs)
		err = bpf_map__set_max_entries(skel->maps.procs, (__u32)o->max_procs);
	if (!err && o->max_procs)
		err = bpf_map__set_max_entries(skel->maps.armed_procs, (__u32)o->max_procs);
	if (!err && o->max_procs)
		err = bpf_map__set_max_entries(skel->maps.alloc_text, (__u32)o->max_procs);
	if (!err && o->max_live)
		err = bpf_map__set_max_entries(skel->maps.live_allocs, (__u32)o->max_live);
	/* before 6.1 a tracing program's run-time allocated hash map makes the verifier WARN */
	if (!err && !features__get()->hash_no_prealloc) {
		pr_info("live table preallocated (kernel before 6.1): %u entries held from the start\n",
			bpf_map__max_entries(skel->maps.live_allocs));
		err = bpf_map__set_map_flags(skel->maps.live_allocs, 0);
	}
	if (err)
		return err;
	ring = pow2_at_least(o->ringbuf_bytes);
	skel->rodata->wakeup_bytes = ring / 4;
	err = bpf_map__set_max_entries(skel->maps.events, (__u32)ring);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.event_scratch,
					       (__u32)libbpf_num_possible_cpus());
	if (err)
		return err;
	return setup_programs(s, o);
}

/* --span-fn names get ids 1..n before any probe fires; USDT names come after */
static int register_fn_names(struct bpfobj *s, const struct span_fn_plan *p)
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
static int attach_span_fn_object(struct bpfobj_proc *pr, const struct bpfobj_proc_opts *o,
				 size_t obj, uint64_t *offs, uint64_t *cookies)
{
	struct bpfobj *s = pr->s;
	const struct span_fn_plan *p = o->span_fns;
	size_t i, n = 0;
	int ret;

	for (i = 0; i < p->n_fns; i++) {
		if (p->fns[i].object != obj)
			continue;
		memcpy(&offs[n], p->fns[i].exits, p->fns[i].n_exits * sizeof(*offs));
		n += p->fns[i].n_exits;
	}
	ret = uprobe_set__attach(pr->probes, s->mode, s->skel->progs.span_fn_exit, p->objects[obj],
				 offs, NULL, dedupe(offs, n), o->pid, 0);
	for (i = 0, n = 0; i < p->n_fns; i++) {
		if (p->fns[i].object != obj)
			continue;
		offs[n] = p->fns[i].offset;
		cookies[n++] = p->fns[i].name_id;
	}
	if (!ret)
		ret = uprobe_set__attach(pr->probes, s->mode, s->skel->progs.span_fn_enter,
					 p->objects[obj], offs, cookies, n, o->pid, 0);
	return ret;
}

static int attach_span_fns(struct bpfobj_proc *pr, const struct bpfobj_proc_opts *o, char *err,
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
		ret = attach_span_fn_object(pr, o, obj, offs, cookies);
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

/*
 * Does the kernel single-step the instruction at file offset `off` of
 * `path` (rather than emulate it)?  What the probe actually sits on,
 * whoever placed it: its hits cost several times an emulated one's, and
 * the BPF side counts them apart for the overhead budget.  arm64 is not
 * classified (every site counts as emulated); unreadable code counts as
 * single-stepped, the dearer guess.
 */
static bool site_stepped(const char *path, uint64_t off)
{
#if defined(__x86_64__)
	uint8_t code[16];
	const cs_insn *in;
	struct x86dec d;
	bool stepped = true;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return true;
	n = pread(fd, code, sizeof(code), (off_t)off);
	close(fd);
	if (n <= 0 || x86dec__open(&d, code, (size_t)n, off))
		return true;
	in = x86dec__at(&d, 0);
	if (in)
		stepped = !probe_offset__emulated(in->bytes, in->size);
	x86dec__close(&d);
	return stepped;
#else
	(void)path;
	(void)off;
	return false;
#endif
}

/*
 * CULPERT_PROBE_F_STEPPED for point i of the plan being attached, looked at
 * once: site_class holds 0 (not looked at yet), 1 (emulated) or 2
 */
static uint64_t point_class(struct bpfobj_proc *pr, size_t i)
{
	const struct alloc_plan *plan = pr->plan;
	const struct probe_point *p = &plan->points[i];
	size_t k;
	uint32_t *cls;

	for (k = 0; k < pr->n_plans && pr->plans[k] != plan; k++)
		;
	if (k == pr->n_plans || k >= CULPERT_MAX_ALLOC_OBJS)
		return site_stepped(plan->objects[p->object].open_path, p->offset) ?
		       CULPERT_PROBE_F_STEPPED : 0;
	if (!pr->site_class[k])
		pr->site_class[k] = calloc(plan->n_points ?: 1, sizeof(uint32_t));
	cls = pr->site_class[k];
	if (!cls)
		return CULPERT_PROBE_F_STEPPED;
	if (!cls[i])
		cls[i] = site_stepped(plan->objects[p->object].open_path, p->offset) ? 2 : 1;
	return cls[i] == 2 ? CULPERT_PROBE_F_STEPPED : 0;
}

/*
 * offsets (and cookies: the entry kind, flags and the site's class) of the
 * points of the plan being attached in `obj` in `set`
 */
static size_t collect_points(struct bpfobj_proc *pr, size_t obj, enum point_set set,
			     uint64_t *offs, uint64_t *cookies)
{
	const struct alloc_plan *plan = pr->plan;
	size_t i, n = 0;

	for (i = 0; i < plan->n_points; i++) {
		const struct probe_point *p = &plan->points[i];

		if (p->object != (int)obj || !point_in(p, set))
			continue;
		offs[n] = p->offset;
		cookies[n++] = p->fn | p->flags | point_class(pr, i);
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
static int attach_entries(struct bpfobj_proc *pr, size_t obj, enum point_set set,
			  uint64_t *offs, uint64_t *cookies)
{
	size_t n = collect_points(pr, obj, set, offs, cookies);

	return uprobe_set__attach(pr->alloc_probes, pr->s->mode, pr->s->skel->progs.alloc_enter,
				  pr->plan->objects[obj].open_path, offs, cookies, n, pr->pid, 0);
}

/*
 * One link per (object, program): all of its offsets at once.  Return
 * probes go only where no exception can unwind: operator new and the like
 * get plain uprobes on their return instructions instead.  The allocation
 * side only: duty cycling takes it out and puts it back (free_object()'s
 * probes stay).
 */
static int alloc_object(struct bpfobj_proc *pr, size_t obj, uint64_t *offs, uint64_t *cookies)
{
	const struct alloc_plan *plan = pr->plan;
	const char *path = plan->objects[obj].open_path;
	struct bpfobj *s = pr->s;
	size_t n;
	int ret;

	ret = attach_entries(pr, obj, POINTS_EXITS, offs, cookies);
	if (!ret && s->inuse == BPFOBJ_INUSE_SESSION) {
		n = collect_points(pr, obj, POINTS_RETURNED, offs, cookies);
		ret = uprobe_set__attach(pr->alloc_probes, UPROBE_MODE_SESSION,
					 s->skel->progs.alloc_session, path, offs, cookies, n,
					 pr->pid, 0);
	} else if (!ret) {
		ret = attach_entries(pr, obj, POINTS_RETURNED, offs, cookies);
		if (!ret && s->inuse == BPFOBJ_INUSE_EVERY_RETURN) {
			n = collect_points(pr, obj, POINTS_RETURNED, offs, cookies);
			ret = uprobe_set__attach(pr->alloc_probes, s->mode, s->skel->progs.alloc_exit,
						 path, offs, NULL, n, pr->pid, 1);
		}
	}
	if (ret || s->inuse == BPFOBJ_INUSE_OFF)
		return ret;
	n = collect_exits(plan, obj, offs);
	ret = uprobe_set__attach(pr->alloc_probes, s->mode, s->skel->progs.alloc_exit_point, path,
				 offs, NULL, n, pr->pid, 0);
	if (!ret) {
		n = collect_hoists(plan, obj, offs, cookies);
		ret = uprobe_set__attach(pr->alloc_probes, s->mode, s->skel->progs.alloc_exit_hoist,
					 path, offs, cookies, n, pr->pid, 0);
	}
	return ret;
}

static int free_object(struct bpfobj_proc *pr, size_t obj, uint64_t *offs, uint64_t *cookies)
{
	struct bpfobj *s = pr->s;
	size_t n;

	if (s->inuse == BPFOBJ_INUSE_OFF)
		return 0;
	n = collect_points(pr, obj, POINTS_FREE, offs, cookies);
	/* the cookie says where the pointer is at a probe moved past copies of it */
	return uprobe_set__attach(pr->free_probes, s->mode, s->skel->progs.free_enter,
				  pr->plan->objects[obj].open_path, offs, cookies, n, pr->pid, 0);
}

/* the plan's allocation probes (alloc true) or its free probes, every object */
static int attach_plan(struct bpfobj_proc *pr, bool alloc, char *err, size_t errlen)
{
	const struct alloc_plan *plan = pr->plan;
	size_t obj, i, n = plan->n_points + 1;
	uint64_t *offs, *cookies;
	int ret;

	for (i = 0; i < plan->n_points; i++)
		n += plan->points[i].n_exits + plan->points[i].n_hoists;
	offs = calloc(n, sizeof(*offs));
	cookies = calloc(n, sizeof(*cookies));
	ret = offs && cookies ? 0 : -ENOMEM;
	if (!ret && alloc && !pr->alloc_probes && !(pr->alloc_probes = uprobe_set__new()))
		ret = -ENOMEM;
	if (!ret && !alloc && !pr->free_probes && !(pr->free_probes = uprobe_set__new()))
		ret = -ENOMEM;

	for (obj = 0; obj < plan->n_objects && !ret; obj++) {
		ret = alloc ? alloc_object(pr, obj, offs, cookies) :
			      free_object(pr, obj, offs, cookies);
		if (ret)
			snprintf(err, errlen, "cannot attach uprobes to %s in pid %d: %s%s",
				 plan->objects[obj].path, (int)pr->pid, strerror(-ret),
				 ret == -ESRCH ? " (the process exited)" : "");
	}
	free(offs);
	free(cookies);
	return ret;
}

/* one probe of one object through a uprobe_multi link: CAP_BPF + CAP_PERFMON suffice */
static int attach_usdt_multi(struct bpfobj_proc *pr, struct usdt_links *to, const char *path,
			     const struct bpf_program *prog, const char *provider, const char *name,
			     char *err, size_t errlen)
{
	struct bpfobj *s = pr->s;
	struct usdt_link_opts uo = { .obj = s->skel->obj, .prog = prog, .path = path,
				     .provider = provider, .name = name, .pid = pr->pid,
				     .pool = &s->spec_ids, .held = &to->held };

	int ret;

	if (!to->multi && !(to->multi = uprobe_set__new()))
		return -ENOMEM;
	pthread_mutex_lock(&s->usdt_lock);
	ret = usdt_link__attach(to->multi, &uo, err, errlen);
	pthread_mutex_unlock(&s->usdt_lock);
	return ret;
}

/* one probe of one object, through uprobe_multi where it can, else libbpf's perf-event USDT */
static int attach_usdt_probe(struct bpfobj_proc *pr, struct usdt_links *to, const char *path,
			     const struct bpf_program *prog, const char *provider, const char *name,
			     char *err, size_t errlen)
{
	struct bpf_link *l;
	int ret;

	if (usdt_multi(pr->s))
		return attach_usdt_multi(pr, to, path, prog, provider, name, err, errlen);
	if (vec_reserve(&to->links, &to->cap, to->n + 1, sizeof(*to->links)))
		return -ENOMEM;
	pthread_mutex_lock(&pr->s->usdt_lock);
	l = bpf_program__attach_usdt(prog, pr->pid, path, provider, name, NULL);
	pthread_mutex_unlock(&pr->s->usdt_lock);
	if (!l) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach to the %s:%s probes of %s: %s", provider, name,
			 path, strerror(-ret));
		return ret;
	}
	to->links[to->n++] = l;
	return 0;
}

/* detach every link of `l`, keeping its arrays for the next attach; its spec ids go back */
static void usdt_links__detach(struct bpfobj *s, struct usdt_links *l)
{
	uprobe_set__free(l->multi);
	l->multi = NULL;
	pthread_mutex_lock(&s->usdt_lock);
	usdt_held__release(&l->held, &s->spec_ids);
	while (l->n)
		bpf_link__destroy(l->links[--l->n]);
	pthread_mutex_unlock(&s->usdt_lock);
}

/* one side of the contract (alloc true: otel_memory:alloc) in every object that has it */
static int attach_otel_side(struct bpfobj_proc *pr, bool alloc, char *err, size_t errlen)
{
	const struct culpert_bpf *skel = pr->s->skel;
	const struct otel_plan *p = pr->otel;
	size_t i, sites = 0;
	int ret;

	for (i = 0; i < p->n; i++) {
		const struct otel_object *obj = &p->objects[i];
		size_t n = alloc ? obj->n_alloc : obj->n_free;

		if (!n)
			continue;
		ret = attach_usdt_probe(pr, alloc ? &pr->otel_alloc : &pr->usdt, obj->open_path,
					alloc ? skel->progs.otel_alloc : skel->progs.otel_free,
					"otel_memory", alloc ? "alloc" : "free", err, errlen);
		if (ret)
			return ret;
		sites += n;
	}
	*(alloc ? &pr->n_otel_alloc : &pr->n_otel_free) = sites;
	return 0;
}

/*
 * The contract's probes in every object that has them: free everywhere
 * before alloc anywhere, so that no block whose alloc was seen has its
 * free missed while probes go in (it would look live to the end).
 */
static int attach_otel(struct bpfobj_proc *pr, char *err, size_t errlen)
{
	int ret = 0;

	if (!pr->s->otel_loaded) {
		snprintf(err, errlen, "the BPF object was loaded without the otel_memory programs");
		return -EINVAL;
	}
	if (pr->otel->with_free)
		ret = attach_otel_side(pr, false, err, errlen);
	return ret ?: attach_otel_side(pr, true, err, errlen);
}

static int attach_usdt(struct bpfobj_proc *pr, const struct bpfobj_proc_opts *o, char *err,
		       size_t errlen)
{
	struct bpfobj *s = pr->s;
	struct bpf_program *progs[] = { s->skel->progs.span_exit, s->skel->progs.span_enter };
	const char *names[] = { "span_exit", "span_enter" };
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
			ret = attach_usdt_probe(pr, &pr->usdt, o->usdt_objects[i], progs[p],
						"culpert", names[p], err, errlen);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* the code ranges of a plan's objects, after those known, in the alloc_text map */
static int set_text(struct bpfobj_proc *pr, const struct alloc_plan *plan, char *err,
		    size_t errlen)
{
	__u32 key = (__u32)pr->pid;
	size_t i;

	for (i = 0; i < plan->n_objects && pr->n_objects < CULPERT_MAX_ALLOC_OBJS; i++) {
		pr->text.lo[pr->n_objects] = plan->objects[i].text_lo;
		pr->text.hi[pr->n_objects++] = plan->objects[i].text_hi;
	}
	if (bpf_map_update_elem(bpf_map__fd(pr->s->skel->maps.alloc_text), &key, &pr->text,
				BPF_ANY)) {
		snprintf(err, errlen, "cannot register the allocator of pid %d: %s", (int)pr->pid,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/* the process's entry in the procs map, before any of its probes can fire */
static int proc_register(struct bpfobj_proc *pr, const struct bpfobj_proc_opts *o, char *err,
			 size_t errlen)
{
	struct culpert_proc p = { 0 };
	__u32 key = (__u32)o->pid;

	p.unwind_dwarf = o->unwind_dwarf;
	if (o->stack_rate) {
		p.tb_interval_ns = 1000000000ULL / o->stack_rate ?: 1;
		/* a tenth of a second's worth at once, so a short burst keeps its stacks */
		p.tb_burst_ns = p.tb_interval_ns * (o->stack_rate / 10 ?: 1);
	}
	if (bpf_map_update_elem(bpf_map__fd(pr->s->skel->maps.procs), &key, &p, BPF_NOEXIST)) {
		snprintf(err, errlen, "cannot register pid %d with the BPF programs: %s%s", (int)o->pid,
			 strerror(errno), errno == E2BIG ? " (as many processes as the BPF maps hold)" :
			 "");
		return -errno;
	}
	pr->registered = true;
	return set_text(pr, o->plan, err, errlen);
}

static int proc_arm(struct bpfobj_proc *pr, char *err, size_t errlen)
{
	__u32 key = (__u32)pr->pid, one = 1;

	pr->armed_ns = clock_ns(CLOCK_MONOTONIC);
	if (bpf_map_update_elem(bpf_map__fd(pr->s->skel->maps.armed_procs), &key, &one, BPF_ANY)) {
		snprintf(err, errlen, "cannot start following spans: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

int bpfobj__open(const struct bpfobj_opts *o, struct bpfobj **out, char *err, size_t errlen)
{
	struct bpfobj *s;
	uint64_t t0;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->usdt_lock, NULL);
	s->mode = bpfobj_uprobe_mode(o->no_multi);
	if (o->track_inuse)
		s->inuse = otel_use(o) ? BPFOBJ_INUSE_OTEL :
					 bpfobj_inuse_mode(o->no_multi, o->no_session);
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
	bpfobj_fill_exp_table(s->skel->bss->exp_table, o->rate);
	ret = register_fn_names(s, o->span_fns);
	if (ret) {
		snprintf(err, errlen, "cannot register --span-fn names: %s", strerror(-ret));
		goto fail;
	}
	s->on_event = o->on_event;
	s->ctx = o->ctx;
	if (o->async_teardown) {
		s->reaper = reaper__new(bpf_map__fd(s->skel->maps.live_allocs),
					bpf_map__value_size(s->skel->maps.live_allocs));
		if (!s->reaper) {
			ret = -errno;
			snprintf(err, errlen, "cannot start the teardown thread: %s",
				 strerror(-ret));
			goto fail;
		}
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), deliver, s, NULL);
	if (!s->rb) {
		ret = -ENOMEM;
		snprintf(err, errlen, "cannot set up the ring buffer: %s", strerror(ENOMEM));
		goto fail;
	}
	/*
	 * Optional: without it, spans a thread exits inside are not in the
	 * totals.  One for the object: the agent's targets share it.
	 */
	if (!o->no_exact)
		s->exit_link = bpf_program__attach(s->skel->progs.totals_thread_exit);
	if (!o->no_exact && !s->exit_link)
		pr_warn("cannot watch threads exit (%s); spans a thread exits inside are left out of the exact totals\n",
			strerror(errno));
	*out = s;
	return 0;
fail:
	bpfobj__free(s);
	return ret;
}

int bpfobj__add_proc(struct bpfobj *s, const struct bpfobj_proc_opts *o,
		      struct bpfobj_proc **out, char *err, size_t errlen)
{
	struct bpfobj_proc *pr = calloc(1, sizeof(*pr));
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	int ret;

	if (!pr)
		return -ENOMEM;
	pr->s = s;
	pr->pid = o->pid;
	pr->plan = o->plan;
	pr->plans[pr->n_plans++] = o->plan;
	pr->otel = o->otel && o->otel->use ? o->otel : NULL;
	pr->probes = uprobe_set__new();
	ret = pr->probes ? proc_register(pr, o, err, errlen) : -ENOMEM;
	/* frees first: a block sampled before its free probe was in would look live for good */
	if (!ret && pr->otel)
		ret = attach_otel(pr, err, errlen);
	else if (!ret)
		ret = attach_plan(pr, false, err, errlen);
	if (!ret && !pr->otel)
		ret = attach_plan(pr, true, err, errlen);
	if (!ret)
		ret = attach_usdt(pr, o, err, errlen);
	if (!ret)
		ret = attach_span_fns(pr, o, err, errlen);
	/* every probe is live: spans can be followed from here on */
	if (!ret)
		ret = proc_arm(pr, err, errlen);
	if (ret) {
		bpfobj_proc__free(pr);
		return ret;
	}
	pr->alloc_on = true;
	pr->on_since_ns = pr->armed_ns;
	pr->add_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	pr_info("attached %zu probe sites to pid %d with %s links\n", bpfobj_proc__n_sites(pr),
		(int)pr->pid, uprobe_mode__name(s->mode));
	*out = pr;
	return 0;
}

static void release_set(struct bpfobj_proc *pr, struct uprobe_set *set);

/* the longest an allocation switch on waits for the links its switch off let go */
#define SET_ALLOC_WAIT_NS (2000ULL * 1000000ULL)

/* the links a switch off handed to the reaper gone: else both would fire, each hit twice */
static int switched_off_gone(struct bpfobj_proc *pr, const char *which, char *err, size_t errlen)
{
	if (pr->s->reaper && reaper__pending(pr->s->reaper, pr->pid) &&
	    !reaper__wait(pr->s->reaper, pr->pid, SET_ALLOC_WAIT_NS)) {
		snprintf(err, errlen, "the %s probes switched off are still going", which);
		return -EAGAIN;
	}
	return 0;
}

int bpfobj_proc__set_alloc(struct bpfobj_proc *pr, bool on, char *err, size_t errlen)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	size_t i;
	int ret;

	if (on == pr->alloc_on || pr->disarmed_ns)
		return 0;
	if (!on) {
		/*
		 * Through the reaper: a release waits out the kernel's grace
		 * periods, which the caller (the agent's event thread) must not.
		 */
		release_set(pr, pr->alloc_probes);
		pr->alloc_probes = NULL;
		usdt_links__detach(pr->s, &pr->otel_alloc);
		pr->observed_ns += now - pr->on_since_ns;
		pr->alloc_on = false;
		return 0;
	}
	ret = switched_off_gone(pr, "allocation", err, errlen);
	if (ret)
		return ret;
	/* otel_memory:free stayed (pr->usdt): only the alloc side comes back */
	ret = pr->otel ? attach_otel_side(pr, true, err, errlen) : 0;
	for (i = 0; !pr->otel && i < pr->n_plans && !ret; i++) {
		pr->plan = pr->plans[i];
		ret = attach_plan(pr, true, err, errlen);
	}
	if (ret) {
		uprobe_set__free(pr->alloc_probes);
		pr->alloc_probes = NULL;
		usdt_links__detach(pr->s, &pr->otel_alloc);
		return ret;
	}
	pr->alloc_on = true;
	pr->on_since_ns = clock_ns(CLOCK_MONOTONIC);
	return 0;
}

static void forget_keys(struct bpfobj_proc *pr, const struct bpf_map *map);

/*
 * The deallocators' probes go only once the allocation probes are off (no
 * block is sampled while frees go unseen), and come back first.  A block
 * sampled before they went may have been freed while they were off: the
 * live table forgets every block of the process then, and from that time
 * on holds the blocks allocated since (bpfobj_proc__heap_since()).
 */
int bpfobj_proc__set_free(struct bpfobj_proc *pr, bool on, char *err, size_t errlen)
{
	size_t i;
	int ret = 0;

	if (on == !pr->free_off || pr->disarmed_ns || pr->s->inuse == BPFOBJ_INUSE_OFF)
		return 0;
	if (pr->otel) {
		snprintf(err, errlen, "pid %d: its otel_memory:free probes stay", (int)pr->pid);
		return -EOPNOTSUPP;
	}
	if (!on) {
		if (pr->alloc_on) {
			snprintf(err, errlen,
				 "pid %d: free probes off while allocation probes are on",
				 (int)pr->pid);
			return -EBUSY;
		}
		/* through the reaper, as the allocation probes' (bpfobj_proc__set_alloc()) */
		release_set(pr, pr->free_probes);
		pr->free_probes = NULL;
		pr->free_off = true;
		return 0;
	}
	ret = switched_off_gone(pr, "free", err, errlen);
	for (i = 0; i < pr->n_plans && !ret; i++) {
		pr->plan = pr->plans[i];
		ret = attach_plan(pr, false, err, errlen);
	}
	if (ret) {
		uprobe_set__free(pr->free_probes);
		pr->free_probes = NULL;
		return ret;
	}
	pr->free_off = false;
	forget_keys(pr, pr->s->skel->maps.live_allocs);
	pr->heap_since_ns = clock_ns(CLOCK_MONOTONIC);
	return 0;
}

uint64_t bpfobj_proc__heap_since(const struct bpfobj_proc *pr)
{
	return pr->heap_since_ns;
}

bool bpfobj_proc__free_on(const struct bpfobj_proc *pr)
{
	return !pr->free_off && pr->s->inuse != BPFOBJ_INUSE_OFF;
}

int bpfobj_proc__extend(struct bpfobj_proc *pr, const struct alloc_plan *more, char *err,
			 size_t errlen)
{
	int ret;

	if (pr->n_plans >= CULPERT_MAX_ALLOC_OBJS ||
	    pr->n_objects + more->n_objects > CULPERT_MAX_ALLOC_OBJS) {
		snprintf(err, errlen, "more than %d allocator objects", CULPERT_MAX_ALLOC_OBJS);
		return -E2BIG;
	}
	if (pr->disarmed_ns)
		return -ESRCH;
	/* the in-process sampler sees every call of the allocator under it: no uprobe beside it */
	if (pr->otel) {
		snprintf(err, errlen, "pid %d is profiled through its otel_memory probes",
			 (int)pr->pid);
		return -EINVAL;
	}
	ret = set_text(pr, more, err, errlen);
	pr->plan = more;
	/* frees first, as at the start; each side only while it is on */
	if (!ret && !pr->free_off)
		ret = attach_plan(pr, false, err, errlen);
	if (!ret && pr->alloc_on)
		ret = attach_plan(pr, true, err, errlen);
	if (!ret)
		pr->plans[pr->n_plans++] = more;
	return ret;
}

uint64_t bpfobj_proc__add_ns(const struct bpfobj_proc *pr)
{
	return pr->add_ns;
}

uint64_t bpfobj_proc__observed_ns(const struct bpfobj_proc *pr)
{
	uint64_t end = pr->disarmed_ns ?: clock_ns(CLOCK_MONOTONIC);

	return pr->observed_ns + (pr->alloc_on && end > pr->on_since_ns ? end - pr->on_since_ns : 0);
}

int bpfobj__new(const struct bpfobj_opts *o, struct bpfobj **out, char *err, size_t errlen)
{
	struct bpfobj_proc_opts po = {
		.pid = o->pid, .plan = o->plan, .usdt_objects = o->usdt_objects,
		.n_usdt_objects = o->n_usdt_objects, .span_fns = o->span_fns,
		.stack_rate = o->stack_rate, .unwind_dwarf = o->unwind_dwarf, .otel = o->otel,
	};
	struct bpfobj *s;
	uint64_t t0;
	int ret;

	ret = bpfobj__open(o, &s, err, errlen);
	if (ret)
		return ret;
	/*
	 * Optional: without it, an exec is still found in /proc if it lasts
	 * until a poll, so a failure is a warning, not an error.
	 */
	s->exec_link = bpf_program__attach(s->skel->progs.target_exec);
	if (!s->exec_link)
		pr_warn("cannot watch for an exec of the target (%s); an exec may be reported as an exit\n",
			strerror(errno));
	t0 = clock_ns(CLOCK_MONOTONIC);
	ret = bpfobj__add_proc(s, &po, &s->only, err, errlen);
	if (ret) {
		bpfobj__free(s);
		return ret;
	}
	s->attach_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	*out = s;
	return 0;
}

struct bpfobj_proc *bpfobj__proc(const struct bpfobj *s)
{
	return s->only;
}

int bpfobj__fd(const struct bpfobj *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

/*
 * The BPF side wakes the reader only once the ring is a quarter full (a
 * wakeup per sample would cost the target an irq_work and a task wakeup
 * each), so a poll that times out still reads what has come in.
 */
int bpfobj__poll(struct bpfobj *s, int timeout_ms)
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
int bpfobj__drain(struct bpfobj *s)
{
	return ring_buffer__consume(s->rb);
}

bool bpfobj_proc__in_window(const struct bpfobj_proc *pr, uint64_t ts_ns)
{
	return ts_ns >= pr->armed_ns && (!pr->disarmed_ns || ts_ns < pr->disarmed_ns);
}

void bpfobj_proc__window(const struct bpfobj_proc *pr, uint64_t *start_ns, uint64_t *end_ns)
{
	*start_ns = pr->armed_ns;
	*end_ns = pr->disarmed_ns;
}

bool bpfobj_proc__execed(const struct bpfobj_proc *pr)
{
	struct culpert_proc p;
	__u32 key = (__u32)pr->pid;

	return !bpf_map_lookup_elem(bpf_map__fd(pr->s->skel->maps.procs), &key, &p) && p.execed;
}

/*
 * A leaving process's links, through the object's reaper when it has one
 * (the caller does not wait for the kernel's grace periods), else at once.
 * Its USDT spec ids go back at once all the same: the process is gone, or
 * another program runs under its pid, whose attach waits for these links to
 * be released (bpfobj__wait_released()).
 */
static void release_set(struct bpfobj_proc *pr, struct uprobe_set *set)
{
	if (!pr->s->reaper || !reaper__put_set(pr->s->reaper, pr->pid, set))
		uprobe_set__free(set);
}

static void release_usdt(struct bpfobj_proc *pr, struct usdt_links *l)
{
	release_set(pr, l->multi);
	l->multi = NULL;
	pthread_mutex_lock(&pr->s->usdt_lock);
	usdt_held__release(&l->held, &pr->s->spec_ids);
	pthread_mutex_unlock(&pr->s->usdt_lock);
	while (l->n) {
		struct bpf_link *link = l->links[--l->n];

		if (!pr->s->reaper || !reaper__put_link(pr->s->reaper, pr->pid, link))
			bpf_link__destroy(link);
	}
}

static void detach_usdt(struct bpfobj_proc *pr)
{
	release_usdt(pr, &pr->otel_alloc);
	release_usdt(pr, &pr->usdt);
}

/*
 * Spans still open once no probe fires any more: a task iterator folds
 * each thread's into the totals as open (bpf/totals.bpf.h).  Reading the
 * iterator runs it; it writes nothing.
 */
static void fold_open_spans(struct bpfobj *s)
{
	struct bpf_link *link = bpf_program__attach_iter(s->skel->progs.totals_open_spans, NULL);
	char buf[64];
	int fd, i;

	if (!link) {
		pr_warn("cannot read the spans still open (%s): they are left out of the exact totals\n",
			strerror(errno));
		return;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	/* an iterator that writes nothing ends at the first read; bounded all the same */
	for (i = 0; fd >= 0 && i < 1024 && read(fd, buf, sizeof(buf)) > 0; i++)
		;
	if (fd < 0)
		pr_warn("cannot run the iterator of open spans: %s\n", strerror(errno));
	else
		close(fd);
	bpf_link__destroy(link);
}

void bpfobj_proc__detach(struct bpfobj_proc *pr)
{
	__u32 key = (__u32)pr->pid;

	/*
	 * Spans stop counting before any probe goes: exits still probed after
	 * their enters are gone would each count as unmatched.
	 */
	if (!pr->disarmed_ns) {
		pr->disarmed_ns = clock_ns(CLOCK_MONOTONIC);
		if (pr->alloc_on)
			pr->observed_ns += pr->disarmed_ns - pr->on_since_ns;
		bpf_map_delete_elem(bpf_map__fd(pr->s->skel->maps.armed_procs), &key);
	}
	release_set(pr, pr->alloc_probes);
	pr->alloc_probes = NULL;
	release_set(pr, pr->probes);
	pr->probes = NULL;
	release_set(pr, pr->free_probes);
	pr->free_probes = NULL;
	detach_usdt(pr);
	/*
	 * attach's own object: the spans its threads still have open are
	 * folded into the totals as open (the iterator walks every task, so
	 * never for one process of the agent's shared object).
	 */
	if (pr->s->only == pr && pr->s->exit_link) {
		fold_open_spans(pr->s);
		bpf_link__destroy(pr->s->exit_link);
		pr->s->exit_link = NULL;
	}
}

/*
 * The process's entries of a map keyed by tgid first (its blocks in the
 * live table, its span paths' totals): one key after another, theirs
 * deleted, so a pid used again starts from nothing.
 */
static void forget_keys(struct bpfobj_proc *pr, const struct bpf_map *map)
{
	char key[sizeof(struct culpert_total_key)], next[sizeof(key)];
	size_t bound = bpf_map__max_entries(map) + 1, size = bpf_map__key_size(map);
	size_t n = 0, cap = 0, i;
	int fd = bpf_map__fd(map);
	bool first = true;
	char *dead = NULL;
	__u32 tgid;

	if (size < sizeof(tgid) || size > sizeof(key))
		return;
	/*
	 * The walk first, the deletes after: deleting as it goes, a process
	 * whose keys come first would restart the walk from the first bucket
	 * after each delete (seconds for a table of a million buckets).
	 */
	for (; bound-- && bpf_map_get_next_key(fd, first ? NULL : key, next) == 0; first = false) {
		memcpy(key, next, size);
		memcpy(&tgid, next, sizeof(tgid));
		if (tgid != (__u32)pr->pid || vec_reserve(&dead, &cap, n + 1, size))
			continue;
		memcpy(dead + n++ * size, next, size);
	}
	for (i = 0; i < n; i++)
		bpf_map_delete_elem(fd, dead + i * size);
	free(dead);
}

void bpfobj_proc__unregister(struct bpfobj_proc *pr)
{
	__u32 key = (__u32)pr->pid;

	bpfobj_proc__detach(pr);
	if (!pr->registered)
		return;
	bpfobj_proc__state(pr, &pr->final);
	pr->registered = false;
	if (pr->s->closing)
		return;
	bpf_map_delete_elem(bpf_map__fd(pr->s->skel->maps.procs), &key);
	bpf_map_delete_elem(bpf_map__fd(pr->s->skel->maps.alloc_text), &key);
	/*
	 * The live table is --max-live entries shared by every target: swept
	 * on the reaper's thread, only blocks sampled before now (a program
	 * exec'd under the pid samples newer ids).
	 */
	if (!pr->s->reaper ||
	    !reaper__sweep(pr->s->reaper, pr->pid,
			   __atomic_load_n(&pr->s->skel->bss->next_sample_id, __ATOMIC_RELAXED)))
		forget_keys(pr, pr->s->skel->maps.live_allocs);
	forget_keys(pr, pr->s->skel->maps.span_totals);
}

void bpfobj_proc__free(struct bpfobj_proc *pr)
{
	size_t i;

	if (!pr)
		return;
	bpfobj_proc__unregister(pr);
	if (pr->s->only == pr)
		pr->s->only = NULL;
	free(pr->usdt.links);
	free(pr->usdt.held.ids);
	free(pr->otel_alloc.links);
	free(pr->otel_alloc.held.ids);
	for (i = 0; i < CULPERT_MAX_ALLOC_OBJS; i++)
		free(pr->site_class[i]);
	free(pr);
}

int bpfobj__span_names(const struct bpfobj *s,
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
static int live_ids_batch(int fd, __u32 tgid, int (*cb)(void *ctx, uint64_t id), void *ctx,
			  bool *unsupported)
{
	enum { BATCH = 2048 };
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	static __thread struct culpert_live_key keys[BATCH];
	struct culpert_live_key in = { 0 }, out = { 0 };
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
			if (keys[i].tgid != tgid)
				continue;
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

int bpfobj_proc__live_ids(const struct bpfobj_proc *pr, int (*cb)(void *ctx, uint64_t id),
			   void *ctx)
{
	int fd = bpf_map__fd(pr->s->skel->maps.live_allocs), ret;
	struct culpert_live_key key, next, *prev = NULL;
	__u32 tgid = (__u32)pr->pid;
	bool unsupported = false;
	__u64 id;

	ret = live_ids_batch(fd, tgid, cb, ctx, &unsupported);
	if (!unsupported)
		return ret;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (next.tgid == tgid && bpf_map_lookup_elem(fd, &next, &id) == 0 &&
		    (ret = cb(ctx, id)))
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

void bpfobj__misses(const struct bpfobj *s, uint64_t *all, uint64_t *frees)
{
	struct bpf_program *p;

	*all = 0;
	bpf_object__for_each_program(p, s->skel->obj)
		*all += prog_misses(p);
	/*
	 * Frees are also seen at realloc's entry, which shares its program
	 * with every allocating entry: a miss there may have been a free;
	 * otel_memory:free for the contract.
	 */
	*frees = prog_misses(s->skel->progs.free_enter) + prog_misses(s->skel->progs.alloc_enter) +
		 prog_misses(s->skel->progs.otel_free);
}

int bpfobj_proc__throttled(const struct bpfobj_proc *pr,
			    int (*cb)(void *ctx, uint64_t size, uint32_t keep,
				      const struct culpert_throttle_path *path, uint64_t count),
			    void *ctx, uint64_t *over_samples, uint64_t *over_bytes)
{
	const struct bpfobj *s = pr->s;
	int fd = bpf_map__fd(s->skel->maps.throttled);
	int paths = bpf_map__fd(s->skel->maps.throttle_paths);
	struct culpert_throttle_key key, next, *prev = NULL;
	struct culpert_throttle_path path;
	struct culpert_proc p;
	__u32 tgid = (__u32)pr->pid;
	__u64 n;
	int ret;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (next.tgid != tgid || bpf_map_lookup_elem(fd, &next, &n))
			continue;
		/* a path the map could not spell out is counted outside spans */
		if (!next.path || bpf_map_lookup_elem(paths, &next.path, &path))
			ret = cb(ctx, next.size, next.keep, NULL, n);
		else
			ret = cb(ctx, next.size, next.keep, &path, n);
		if (ret)
			return ret;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.procs), &tgid, &p))
		return -errno;
	*over_samples = p.over_samples;
	*over_bytes = p.over_bytes;
	return 0;
}

/* the process's entry in the procs map; zeroes once it is gone */
void bpfobj_proc__state(const struct bpfobj_proc *pr, struct culpert_proc *out)
{
	__u32 key = (__u32)pr->pid;

	if (!pr->registered)
		*out = pr->final;
	else if (bpf_map_lookup_elem(bpf_map__fd(pr->s->skel->maps.procs), &key, out))
		memset(out, 0, sizeof(*out));
}

int bpfobj_proc__span_totals(const struct bpfobj_proc *pr,
			      int (*cb)(void *ctx, const struct culpert_total_key *key,
					const struct culpert_span_total *total),
			      void *ctx, struct culpert_proc *proc)
{
	int fd = bpf_map__fd(pr->s->skel->maps.span_totals);
	struct culpert_total_key key, next, *prev = NULL;
	struct culpert_span_total v;
	__u32 tgid = (__u32)pr->pid;
	int ret;

	/* bounded: the map holds at most CULPERT_MAX_TOTALS keys */
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (next.tgid != tgid || bpf_map_lookup_elem(fd, &next, &v))
			continue;
		ret = cb(ctx, &next, &v);
		if (ret)
			return ret;
	}
	bpfobj_proc__state(pr, proc);
	return 0;
}

void bpfobj_proc__counters(const struct bpfobj_proc *pr, uint64_t out[CULPERT_CNT__MAX])
{
	struct culpert_proc p;

	bpfobj_proc__state(pr, &p);
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
		out->failed += c.failed;
	}
}

/*
 * One batch read of the whole array where the kernel has it (5.6+); a
 * lookup per slot otherwise.  Read once, after detaching.
 */
int bpfobj__calls_seen(const struct bpfobj *s, struct culpert_calls_seen *out)
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

void bpfobj__timing(const struct bpfobj *s, uint64_t *load_ns, uint64_t *attach_ns)
{
	*load_ns = s->load_ns;
	*attach_ns = s->attach_ns;
}

size_t bpfobj_proc__n_sites(const struct bpfobj_proc *pr)
{
	return uprobe_set__count(pr->probes) + uprobe_set__count(pr->alloc_probes) +
	       uprobe_set__count(pr->free_probes) + pr->n_otel_alloc + pr->n_otel_free;
}

enum bpfobj_inuse bpfobj_proc__inuse(const struct bpfobj_proc *pr)
{
	return pr->otel && pr->s->inuse != BPFOBJ_INUSE_OFF ? BPFOBJ_INUSE_OTEL : pr->s->inuse;
}

bool bpfobj__otel_loaded(const struct bpfobj *s)
{
	return s->otel_loaded;
}

const char *bpfobj_inuse__name(enum bpfobj_inuse m)
{
	switch (m) {
	case BPFOBJ_INUSE_SESSION:
		return "uprobe sessions: return probes for sampled calls only (operator new & co.: uprobes where they return, no return probe)";
	case BPFOBJ_INUSE_EVERY_RETURN:
		return "a return probe on every call (operator new & co.: uprobes where they return, no return probe)";
	case BPFOBJ_INUSE_OTEL:
		return "otel_memory probes: the pointer at alloc, free fired for sampled blocks only";
	default:
		return "off";
	}
}

/* a loaded program's CPU time in its runs so far (BPF run-time stats on), else 0 */
static uint64_t prog_run_ns(const struct bpf_program *prog)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(prog);

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.run_time_ns;
}

void bpfobj__prog_run_ns(const struct bpfobj *s, uint64_t *alloc_ns, uint64_t *free_ns)
{
	const struct culpert_bpf *k = s->skel;

	*alloc_ns = prog_run_ns(k->progs.alloc_enter) + prog_run_ns(k->progs.alloc_exit) +
		    prog_run_ns(k->progs.alloc_exit_point) +
		    prog_run_ns(k->progs.alloc_exit_hoist) +
		    prog_run_ns(k->progs.alloc_session) + prog_run_ns(k->progs.otel_alloc);
	*free_ns = prog_run_ns(k->progs.free_enter) + prog_run_ns(k->progs.otel_free);
}

bool bpfobj_sessions(bool no_multi, bool no_session)
{
	const struct kfeatures *f = features__get();

	return !no_multi && !no_session && f->uprobe_multi && f->uprobe_session;
}

enum uprobe_mode bpfobj_uprobe_mode(bool no_multi)
{
	return !no_multi && features__get()->uprobe_multi ? UPROBE_MODE_MULTI : UPROBE_MODE_PERF;
}

enum bpfobj_inuse bpfobj_inuse_mode(bool no_multi, bool no_session)
{
	return bpfobj_sessions(no_multi, no_session) ? BPFOBJ_INUSE_SESSION :
							 BPFOBJ_INUSE_EVERY_RETURN;
}

void bpfobj__free(struct bpfobj *s)
{
	if (!s)
		return;
	bpfobj_proc__free(s->only);
	/* every link handed over released (in parallel) before the programs go */
	reaper__free(s->reaper);
	bpf_link__destroy(s->exec_link);
	bpf_link__destroy(s->exit_link);
	ring_buffer__free(s->rb);
	culpert_bpf__destroy(s->skel);
	free(s);
}

/* the tgid a record belongs to; 0 for a record too short to say */
uint32_t bpfobj_record_tgid(const void *data, size_t size)
{
	const __u32 *kind = data;

	if (size < sizeof(*kind))
		return 0;
	switch (*kind) {
	case CULPERT_EV_ALLOC:
		return size >= sizeof(struct culpert_alloc_event) ?
			       ((const struct culpert_alloc_event *)data)->tgid : 0;
	case CULPERT_EV_ALLOC_RET:
		return size >= sizeof(struct culpert_ret_event) ?
			       ((const struct culpert_ret_event *)data)->tgid : 0;
	case CULPERT_EV_FREE:
		return size >= sizeof(struct culpert_free_event) ?
			       ((const struct culpert_free_event *)data)->tgid : 0;
	case CULPERT_EV_SPAN_NAME:
		return size >= sizeof(struct culpert_name_event) ?
			       ((const struct culpert_name_event *)data)->tgid : 0;
	default:
		return 0;
	}
}

void bpfobj__closing(struct bpfobj *s)
{
	s->closing = true;
}

bool bpfobj__wait_released(struct bpfobj *s, pid_t pid, uint64_t timeout_ns)
{
	return reaper__wait(s->reaper, pid, timeout_ns);
}

bool bpfobj__releasing(struct bpfobj *s, pid_t pid)
{
	return reaper__pending(s->reaper, pid);
}
