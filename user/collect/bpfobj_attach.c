// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One process's probes over the object: registered, attached, armed,
 * switched off and on (duty cycling), detached and forgotten.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocator.h"
#include "bpfobj_internal.h"
#include "clock.h"
#include "culpert.skel.h"
#include "log.h"
#include "otel.h"
#include "reaper.h"
#include "spanfn.h"
#include "usdt_link.h"
#include "vec.h"
#if defined(__x86_64__)
#include "probe_offset.h"
#include "x86dec.h"
#endif

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

/* attach: frees first, then allocations, span probes and --span-fn's */
static int proc_attach(struct bpfobj_proc *pr, const struct bpfobj_proc_opts *o, char *err,
		       size_t errlen)
{
	int ret;

	/* frees first: a block sampled before its free probe was in would look live for good */
	if (pr->otel)
		ret = attach_otel(pr, err, errlen);
	else
		ret = attach_plan(pr, false, err, errlen);
	if (!ret && !pr->otel)
		ret = attach_plan(pr, true, err, errlen);
	if (!ret)
		ret = attach_usdt(pr, o, err, errlen);
	if (!ret)
		ret = attach_span_fns(pr, o, err, errlen);
	return ret;
}

/* a process added: registered, its probes attached, then armed (spans followed from there) */
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
	if (!ret)
		ret = proc_attach(pr, o, err, errlen);
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

size_t bpfobj_proc__n_sites(const struct bpfobj_proc *pr)
{
	return uprobe_set__count(pr->probes) + uprobe_set__count(pr->alloc_probes) +
	       uprobe_set__count(pr->free_probes) + pr->n_otel_alloc + pr->n_otel_free;
}

enum bpfobj_inuse bpfobj_proc__inuse(const struct bpfobj_proc *pr)
{
	return pr->otel && pr->s->inuse != BPFOBJ_INUSE_OFF ? BPFOBJ_INUSE_OTEL : pr->s->inuse;
}
