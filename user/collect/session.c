// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aggregate.h"
#include "allocator.h"
#include "demangle.h"
#include "elfobj.h"
#include "exe_kind.h"
#include "export.h"
#include "fpchain.h"
#include "fpcheck.h"
#include "kfeatures.h"
#include "live.h"
#include "log.h"
#include "mapview.h"
#include "objcache.h"
#include "injection.h"
#include "otel.h"
#include "procmaps.h"
#include "bpfobj.h"
#include "session.h"
#include "spanfn.h"
#include "spanname.h"
#include "span_totals.h"
#include "spans.h"
#include "stack.h"
#include "target.h"
#include "totals.h"
#include "units.h"
#include "unwind.h"
#include "usdt.h"
#include "vec.h"

struct session {
	struct session_opts o;
	struct target t;
	struct mapview *view;		/* its mappings, kept current */
	struct objcache *objs;
	struct alloc_plan plan;
	struct alloc_plan *more[ALLOC_MAX_OBJECTS];	/* objects mapped after the start (dlopen) */
	size_t n_more;
	uint64_t plan_gen;		/* the mappings' generation the plans are of */
	struct otel_plan otel;		/* the otel_memory contract, used when otel.use */
	const char *rate_from;		/* where the rate came from with otel.use */
	struct span_fn_plan fns;
	struct bpfobj *sampler;	/* its own (attach), or shared (the agent) */
	struct bpfobj_proc *proc;	/* this process's part of it */
	bool shared;			/* the sampler is the caller's */
	bool injected;			/* --sampler inject took over: release at detach */
	struct aggregate *agg;
	struct spans *spans;
	enum session_unwind unwind;	/* fp or dwarf, after auto */
	struct unwinder *unwinder;	/* dwarf */
	struct fpchain *fpchain;	/* fp: stacks checked against the CFI */
	uint64_t fp_broken;		/* fp stacks through code without a frame pointer */
	uint64_t fp_broken_at;		/* the first such return address */
	uint64_t unwind_stops[UNWIND_STOP__MAX];
	uint64_t stack_copied;		/* bytes of stack the DWARF samples carried */
	struct live *live;		/* --inuse */
	uint64_t live_full;		/* blocks this side could not hold, even after a sync */
	uint64_t live_syncs;		/* reconciliations with the kernel's table while running */
	uint64_t kernel_only;		/* live in the kernel, unknown here: untracked */
	uint64_t first_id, last_id;	/* sample ids seen within the capture's window */
	uint64_t misses, free_misses;	/* probe hits the kernel skipped (bpfobj__misses()) */
	int mem_fd;			/* /proc/PID/mem: span names the kernel could not read */
	uint64_t names_late;		/* such names read here */
	uint64_t names_unresolved;	/* such names that could not be read at all */
	uint64_t throttled, throttled_over;	/* samples past the stack rate; of those, in the overflow */
	uint64_t kept_scaled;			/* samples kept past the stack rate, weighed by 1 / p */
	/* the kernel's census of the samples past the stack rate: by size and span path */
	struct census_entry *census;
	size_t n_census, cap_census;
	bool live_settled;
	char **usdt_objects;		/* paths of objects with culpert span probes */
	size_t n_usdt_objects, cap_usdt_objects;
	size_t n_usdt_sites;
	uint64_t samples;
	uint64_t outside_window;	/* records of the attach and detach moments, dropped */
	double est_bytes;		/* running estimate, for the status line */
	uint64_t counters[CULPERT_CNT__MAX];
	struct culpert_calls_seen seen;	/* allocator calls the probes saw, once detached */
	bool have_seen;
	bool go;			/* a Go program: its heap is not malloc's */
	bool pymalloc;			/* CPython: its small objects are not malloc's */
	size_t n_sites;
	uint64_t heap_since_ns;		/* live blocks allocated before this are dropped */
	char **comments;		/* extra "key=value" comments */
	size_t n_comments, cap_comments;
	bool run_comments;		/* add_run_comments() done */
	int64_t start_wall_ns;
	uint64_t start_ns, end_ns;
	bool detached;
};

/*
 * Stack captures per second and process at the default rate: a few % of a
 * core at ~5 us each (DWARF).  A smaller rate asks for proportionally more
 * samples and gets a proportionally higher bound, up to MAX_STACK_RATE.
 */
#define DEFAULT_STACK_RATE	10000
#define MAX_STACK_RATE		1000000

uint64_t session_default_stack_rate(uint64_t rate)
{
	double r;

	if (rate <= 1)
		return 0;
	r = (double)DEFAULT_STACK_RATE * (double)SESSION_DEFAULT_RATE / (double)rate;
	return r > MAX_STACK_RATE ? MAX_STACK_RATE : r < DEFAULT_STACK_RATE ? DEFAULT_STACK_RATE :
									(uint64_t)r;
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const struct procmap *exe_mapping(const struct target *t, const struct procmaps *maps)
{
	size_t i;

	for (i = 0; i < maps->n; i++)
		if (maps->v[i].executable && !strcmp(maps->v[i].path, t->exe))
			return &maps->v[i];
	return NULL;
}

int session_unwind__choose(const struct target *t, const struct procmaps *maps,
			   struct objcache *objs, enum session_unwind want, enum session_unwind *out,
			   char *why, size_t len)
{
	const struct procmap *m = exe_mapping(t, maps);
	struct elfobj *exe = m ? objcache__get(objs, m) : NULL;
	struct fp_evidence ev;

	if (want != SESSION_UNWIND_AUTO) {
		*out = want;
		snprintf(why, len, "as asked");
		return 0;
	}
	if (!exe || fpcheck(exe, &ev)) {
		/* without evidence, the walk that works without frame pointers */
		*out = SESSION_UNWIND_DWARF;
		snprintf(why, len, "auto: no function symbols in %s to judge frame pointers by",
			 t->exe);
		return 0;
	}
	if (!fp_evidence__has_fp(&ev)) {
		*out = SESSION_UNWIND_DWARF;
		snprintf(why, len, "auto: %s is built without frame pointers (%zu of %zu functions "
			 "examined set up %s)", t->exe, ev.with_fp, ev.functions, ev.fp_reg);
		return 0;
	}
	/* the walk from the allocator goes through what calls it, in every object */
	len = len > 6 ? len - 6 : len;
	*out = fp_path_judge(maps, objs, m, why + 6, len) ? SESSION_UNWIND_FP : SESSION_UNWIND_DWARF;
	memcpy(why, "auto: ", 6);
	return 0;
}

/* load the sampler into the process and see its mappings again, with it */
static int session_inject(struct session *s, char *err, size_t errlen)
{
	int ret = injection__start(&s->t, mapview__maps(s->view), s->objs,
				   s->o.rate_set ? s->o.rate : 0, err, errlen);

	if (ret)
		return ret;
	s->injected = true;
	mapview__refresh(s->view);
	return 0;
}

static void session_release(struct session *s)
{
	if (!s->injected)
		return;
	s->injected = false;
	injection__stop(&s->t, s->objs);
}

/* a Go program allocates without malloc: an empty profile is explained by it */
static bool target_is_go(struct session *s)
{
	const struct procmap *exe = exe_kind__exe_mapping(&s->t, mapview__maps(s->view));

	return exe && exe_kind__is_go(objcache__get(s->objs, exe));
}

/*
 * The frames of a DWARF sample: unwound from the copied registers and
 * stack, the allocator's own frame dropped, a truncated copy marked.
 */
static size_t dwarf_stack(struct session *s, const struct culpert_alloc_event *e, uint64_t *out,
			  size_t max)
{
	uint64_t frames[CULPERT_MAX_FRAMES + 1];
	const __u8 *stack = event_stack(e);
	enum unwind_stop stop;
	size_t n = 0;
	int got, i;

	got = unwinder__unwind(s->unwinder, mapview__maps(s->view), &e->regs, stack,
			       e->stack_len, frames, max + 1, &stop);
	if (got == -EFAULT) {
		/* a new mapping the snapshot lacks: once more with fresh maps */
		mapview__refresh(s->view);
		got = unwinder__unwind(s->unwinder, mapview__maps(s->view), &e->regs, stack,
				       e->stack_len, frames, max + 1, &stop);
	}
	if (got < 0) {
		s->unwind_stops[UNWIND_STOP_ERROR]++;
		return 0;
	}
	s->unwind_stops[stop]++;
	for (i = 1; i < got && n < max; i++)
		out[n++] = frames[i];
	if (stop == UNWIND_STOP_TRUNCATED && n < max)
		out[n++] = CULPERT_FRAME_TRUNCATED;
	return n;
}

/* a frame-pointer stack whose walk went through code without a frame pointer: counted */
static void check_fp_chain(struct session *s, const uint64_t *frames, size_t n)
{
	int at = s->fpchain ? fpchain__check(s->fpchain, mapview__maps(s->view), frames, n) : -1;

	if (at < 0)
		return;
	if (!s->fp_broken++)
		s->fp_broken_at = frames[at];
}

/*
 * The allocations an otel_memory sample stands for: the contract's weight
 * estimates its bytes (nsamples x rate, docs/sampler.md), so weight / size
 * estimates its calls.  A 0-byte block has no sampling point: reported at
 * all, it is one call (rate 1).
 */
static double otel_objects(const struct culpert_alloc_event *e)
{
	return e->size ? (double)e->weight / (double)e->size : 1;
}

/*
 * How many samples one stands for: past the stack rate, a sample keeps
 * its stack with probability keep / CULPERT_KEEP_ONE (bpf/throttle.bpf.h),
 * and the inverse of that weighs it (docs/profile-format.md, "Throttling").
 */
static double keep_scale(uint32_t keep)
{
	return keep && keep < CULPERT_KEEP_ONE ? (double)CULPERT_KEEP_ONE / keep : 1;
}

/*
 * The variance a sample kept with probability p adds to the bytes it stands
 * for, estimated from it (Horvitz-Thompson): (1 - p) W^2, W its bytes with
 * the 1 / p weight in
 */
static double thin_var(uint32_t keep, double bytes)
{
	double p = keep && keep < CULPERT_KEEP_ONE ? (double)keep / CULPERT_KEEP_ONE : 1;

	return (1 - p) * bytes * bytes;
}

/* the allocations a sample stands for, however it was sampled */
static double sample_objects(const struct session *s, const struct culpert_alloc_event *e)
{
	return (e->fn == CULPERT_FN_OTEL ? otel_objects(e) : sample_weight(e->size, s->o.rate)) *
	       keep_scale(e->keep);
}

/*
 * The finest key is (stack, thread, span chain with ids); the aggregate
 * coarsens what does not fit (aggregate.h), keeping the stack as long as
 * distinct stacks fit in --max-stacks and the totals per span path always.
 */
static int add_sample(struct session *s, const struct culpert_alloc_event *e)
{
	bool fp = !s->unwinder || !e->stack_len;
	uint64_t frames[CULPERT_MAX_FRAMES];
	struct agg_sample a = { .frames = frames, .tid = e->tid, .size = e->size };

	/* every mapping made before this sample is known before its frames are looked up */
	mapview__update(s->view);
	if (!fp) {
		s->stack_copied += e->stack_len;
		a.n_frames = dwarf_stack(s, e, frames, s->o.max_depth);
	} else {
		a.n_frames = stack_from_event(e, frames, s->o.max_depth);
	}
	/* at an otel_memory site the walk starts in the sampler: its frames are not the program's */
	if (e->fn == CULPERT_FN_OTEL)
		a.n_frames = otel_plan__trim(&s->otel, frames, a.n_frames);
	if (e->fn == CULPERT_FN_OTEL || keep_scale(e->keep) != 1) {
		a.weighted = true;
		a.objects = sample_objects(s, e);
		a.thinned = keep_scale(e->keep) != 1;
		a.thin_var = thin_var(e->keep, a.objects * (double)e->size);
	}
	s->kept_scaled += keep_scale(e->keep) != 1;
	if (fp)
		check_fp_chain(s, frames, a.n_frames);
	/*
	 * A frame-pointer stack is taken as the BPF side found it, so its
	 * frames are checked against the view; DWARF stacks need no check: the
	 * unwinder keeps only frames in executable mappings of the view,
	 * refreshed on -EFAULT.
	 */
	mapview__frames(s->view, frames, a.n_frames, e->ts_ns, fp);
	a.chain = spans__chain(s->spans, event_spans(e), e->span_depth, true);
	a.path = spans__chain(s->spans, event_spans(e), e->span_depth, false);
	s->samples++;
	s->est_bytes += sample_objects(s, e) * (double)e->size;
	return aggregate__add_sample(s->agg, &a, s->o.rate);
}

struct mark_ctx {
	struct session *s;
	uint64_t unknown;
};

static int mark_live(void *ctx, uint64_t id)
{
	struct mark_ctx *m = ctx;

	/* ids outside the window's are blocks allocated while probes went in or out */
	if (!live__mark(m->s->live, id) && id >= m->s->first_id && id <= m->s->last_id)
		m->unknown++;
	return 0;
}

/*
 * The kernel's live table is the truth (a free that reached the BPF side
 * is never lost; its record in the ring buffer may be): keep the blocks it
 * holds, drop the others.  Returns the ids it holds that this side does
 * not know, or -errno.
 */
static int64_t reconcile_live(struct session *s)
{
	struct mark_ctx m = { .s = s };
	int err;

	live__mark_begin(s->live);
	err = bpfobj_proc__live_ids(s->proc, mark_live, &m);
	if (err) {
		pr_warn("cannot read the kernel's live table: %s; the live heap keeps the blocks the "
			"ring buffer did not say were freed\n", strerror(-err));
		return err;
	}
	live__sweep(s->live);
	return (int64_t)m.unknown;
}

static void sync_live(struct session *s)
{
	s->live_syncs++;
	reconcile_live(s);
}

/* once, after the capture: only what the kernel still tracks is live */
static void settle_live(struct session *s)
{
	int64_t unknown;

	if (s->live_settled)
		return;
	s->live_settled = true;
	unknown = reconcile_live(s);
	if (unknown > 0)
		s->kernel_only = (uint64_t)unknown;
}

static int on_alloc(struct session *s, const struct culpert_alloc_event *e)
{
	struct live_block b = { .id = e->id, .size = e->size, .ts_ns = e->ts_ns };
	int entry;

	/* before every probe was live or after the first went: its spans are not known */
	if (!bpfobj_proc__in_window(s->proc, e->ts_ns)) {
		s->outside_window++;
		return 0;
	}
	entry = add_sample(s, e);

	if (entry < 0)
		return entry;
	/* allocated before the free probes came back: its free may have gone unseen */
	if (!s->live || e->ts_ns < s->heap_since_ns)
		return 0;
	b.entry = (uint32_t)entry;
	b.weight = sample_objects(s, e);
	if (!s->first_id || e->id < s->first_id)
		s->first_id = e->id;
	if (e->id > s->last_id)
		s->last_id = e->id;
	/* full of blocks whose free records were lost: the kernel's table says which */
	if (live__full(s->live))
		sync_live(s);
	/* still full: if the kernel tracks it, it is counted at the end (kernel_only) */
	if (live__alloc(s->live, &b) == -ENOSPC)
		s->live_full++;
	return 0;
}

/* an object that carries culpert:span_* probes: its path for the sampler, and its sites */
static int add_usdt_object(void *ctx, const struct procmap *m, struct elfobj *obj,
			   const struct usdt_site *sites, int n)
{
	struct session *s = ctx;
	char path[PATH_MAX];

	if (target__object_path(&s->t, m, path, sizeof(path)))
		return 0;
	if (vec_reserve(&s->usdt_objects, &s->cap_usdt_objects, s->n_usdt_objects + 1,
			sizeof(char *)) ||
	    !(s->usdt_objects[s->n_usdt_objects] = strdup(path)))
		return -ENOMEM;
	s->n_usdt_objects++;
	s->n_usdt_sites += (size_t)n;
	pr_info("%d culpert span probe sites in %s\n", n, m->path);
	return 0;
}

/* a name the kernel could not read, read here; 0 or -errno (counted at the end) */
static int read_late_name(struct session *s, uint32_t id, uint64_t addr, uint32_t len)
{
	char buf[CULPERT_SPAN_NAME_MAX + 1];
	int err;

	if (spans__name(s->spans, id))
		return 0;
	err = span_name__read(s->mem_fd, mapview__maps(s->view), s->objs, addr, len, buf);
	if (!err)
		err = spans__set_name(s->spans, id, buf, len);
	if (!err)
		s->names_late++;
	return err;
}

int session__on_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const __u32 *kind = data;

	if (size < sizeof(*kind))
		return 0;
	switch (*kind) {
	case CULPERT_EV_ALLOC:
		if (!event_complete(data, size))
			return 0;
		/* out of memory ends the capture; what was aggregated is still written */
		return on_alloc(s, data);
	case CULPERT_EV_ALLOC_RET:
		if (s->live && size >= sizeof(struct culpert_ret_event)) {
			const struct culpert_ret_event *r = data;

			live__ret(s->live, r->id, r->tracked);
		}
		return 0;
	case CULPERT_EV_FREE:
		if (s->live && size >= sizeof(struct culpert_free_event))
			live__release(s->live, ((const struct culpert_free_event *)data)->id);
		return 0;
	case CULPERT_EV_SPAN_NAME:
		if (size >= sizeof(struct culpert_name_event)) {
			const struct culpert_name_event *n = data;

			/* now: a name in writable memory may change; failing, the end tries again */
			read_late_name(s, n->id, n->addr, n->len);
		}
		return 0;
	default:
		return 0;
	}
}

static int open_mem(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		pr_debug("cannot open %s: %s; unread span names come from files only\n", path,
			 strerror(errno));
	return fd;
}

/* where attaching spent its time: one -v line (tests/bench/bench_attach.sh measures it) */
enum attach_phase { PHASE_MAPS, PHASE_UNWIND, PHASE_PLAN, PHASE__MAX };

static void log_attach_time(const struct session *s, uint64_t t0, const uint64_t *lap)
{
	uint64_t load, attach, total = now_ns(CLOCK_MONOTONIC) - t0;

	bpfobj__timing(s->sampler, &load, &attach);
	pr_info("attach took %.0f ms: target and mappings %.0f, unwinding set-up %.0f, planning "
		"%.0f, BPF load and verification %.0f, probes %.0f\n", (double)total / 1e6,
		(double)(lap[PHASE_MAPS] - t0) / 1e6,
		(double)(lap[PHASE_UNWIND] - lap[PHASE_MAPS]) / 1e6,
		(double)(lap[PHASE_PLAN] - lap[PHASE_UNWIND]) / 1e6, (double)load / 1e6,
		(double)attach / 1e6);
}

/*
 * --sampler: the otel_memory probes of an in-process sampler, or the
 * allocator's entry points; with the former the rate is the sampler's
 * (its page says it), not --rate.  0 or -errno with the reason in err.
 */
static int plan_sampler(struct session *s, char *err, size_t errlen)
{
	uint64_t rate;
	int ret;

	ret = otel__plan(&s->t, mapview__maps(s->view), s->objs, (enum otel_mode)s->o.sampler,
			 s->o.inuse, &s->otel);
	if (ret) {
		snprintf(err, errlen, "%s%s", s->otel.why, ret != -ENOENT ? "" :
			 "; start the program with LD_PRELOAD=libculpert-sampler.so "
			 "(docs/sampler.md), or use --sampler auto or uprobes");
		return ret;
	}
	pr_info("sampler: %s\n", s->otel.why);
	if (!s->otel.use)
		return 0;
	ret = otel_plan__rate(&s->otel, s->t.pid, &rate);
	if (!ret) {
		if (s->o.rate_set && rate != s->o.rate)
			pr_warn("--rate %llu is not used: pid %d samples its allocations itself, every "
				"%llu bytes on average (its sampler's CULPERT_SAMPLER_RATE); that is the "
				"profile's rate\n", (unsigned long long)s->o.rate, (int)s->t.pid,
				(unsigned long long)rate);
		s->o.rate = rate;
		s->rate_from = "sampler_page";
	} else {
		s->rate_from = "--rate";
		pr_warn("the otel_memory sampler of pid %d publishes no rate (no readable "
			"culpert_sampler_page): the profile's period is --rate %llu; give the "
			"sampler's own with --rate\n", (int)s->t.pid, (unsigned long long)s->o.rate);
	}
	return 0;
}

void session_opts__bpfobj(const struct session_opts *o, bool dwarf, struct bpfobj_opts *out)
{
	out->rate = o->rate;
	out->max_depth = o->max_depth;
	out->ringbuf_bytes = o->ringbuf_bytes ?: dwarf ? SESSION_RINGBUF_DWARF : SESSION_RINGBUF_FP;
	out->no_multi = o->no_multi;
	out->no_session = o->no_session;
	out->track_inuse = o->inuse;
	out->unwind_dwarf = dwarf;
	out->stack_copy_bytes = o->stack_size;
	out->max_live = o->max_live;
}

static int session_open(const struct session_opts *o, struct bpfobj *shared, struct session **out,
			char *err, size_t errlen)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), lap[PHASE__MAX] = { 0 };
	struct bpfobj_opts so = { 0 };
	struct session *s;
	char why[PATH_MAX + 128];
	size_t i;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->t.pidfd = -1;
	s->mem_fd = -1;
	ret = target__open(o->pid, &s->t, err, errlen);
	/* every sample it handled would allocate and make the next one */
	if (!ret && s->t.pid == getpid()) {
		snprintf(err, errlen, "pid %d is this culpert-bpf itself: it cannot profile its own "
			 "allocations (each sample it handles allocates); give the pid of another "
			 "process", (int)s->t.pid);
		ret = -EINVAL;
	}
	if (ret) {
		session__close(s);
		return ret;
	}
	s->objs = o->objs ?: objcache__new(&s->t);
	if (!s->objs) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	} else {
		ret = mapview__new(&s->t, s->objs, &s->view, err, errlen);
	}
	if (!ret && o->sampler == OTEL_MODE_INJECT)
		ret = session_inject(s, err, errlen);
	if (ret)
		goto fail;
	/* optional: names can still be read from their files without it */
	s->mem_fd = open_mem(s->t.pid);
	s->agg = aggregate__new(o->max_entries);
	s->spans = spans__new(o->max_entries);
	if (o->inuse)
		s->live = live__new(o->max_live);
	if (!s->objs || !s->agg || !s->spans || (o->inuse && !s->live)) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	lap[PHASE_MAPS] = now_ns(CLOCK_MONOTONIC);
	ret = session_unwind__choose(&s->t, mapview__maps(s->view), s->objs, o->unwind, &s->unwind, why,
				     sizeof(why));
	if (!ret && s->unwind == SESSION_UNWIND_DWARF) {
		s->unwinder = unwinder__new(s->t.pid, s->objs);
		if (!s->unwinder) {
			ret = -errno;
			snprintf(err, errlen, "cannot set up DWARF unwinding: %s", strerror(-ret));
			goto fail;
		}
	}
	if (!ret && s->unwind == SESSION_UNWIND_FP)
		s->fpchain = fpchain__new(s->objs);
	pr_info("unwinding: %s (%s)\n", s->unwind == SESSION_UNWIND_DWARF ? "dwarf" : "fp", why);
	lap[PHASE_UNWIND] = now_ns(CLOCK_MONOTONIC);
	s->go = target_is_go(s);
	s->pymalloc = exe_kind__pymalloc(s->t.pid, mapview__maps(s->view), s->objs);
	if (s->pymalloc)
		pr_warn("pid %d runs CPython: its objects of 512 bytes or less come from "
			"pymalloc's arenas, not malloc, and are not seen (PYTHONMALLOC=malloc at its "
			"start lets them through)\n", (int)s->t.pid);
	/*
	 * The agent's shared object serves both paths when loaded with the
	 * otel_memory programs (docs/agent.md); each process takes its own.
	 */
	if (shared && !bpfobj__otel_loaded(shared))
		s->o.sampler = OTEL_MODE_UPROBES;
	ret = plan_sampler(s, err, errlen);
	if (ret)
		goto fail;
	if (o->stack_rate_auto)
		s->o.stack_rate = session_default_stack_rate(s->o.rate);
	ret = allocator__plan(&s->t, mapview__maps(s->view), s->objs, o->allocator, &s->plan, err,
			      errlen);
	if (!ret) {
		alloc_plan__log(&s->plan);
		ret = span_fn__plan(&s->t, mapview__maps(s->view), s->objs, o->span_fns,
				    o->n_span_fns, o->max_span_fns, &s->fns, err, errlen);
	}
	if (ret)
		goto fail;
	/* the patterns belong to the caller and are not needed past planning */
	s->o.span_fns = NULL;
	s->o.n_span_fns = 0;
	session_opts__bpfobj(&s->o, s->unwind == SESSION_UNWIND_DWARF, &so);
	so.pid = s->t.pid;
	so.no_exact = o->no_exact;
	so.stack_rate = s->o.stack_rate;
	so.otel = &s->otel;
	so.span_fns = &s->fns;
	so.plan = &s->plan;
	ret = usdt_objects(mapview__maps(s->view), s->objs, "culpert", add_usdt_object, s);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	so.usdt_objects = s->usdt_objects;
	so.n_usdt_objects = s->n_usdt_objects;
	so.on_event = session__on_event;
	so.ctx = s;
	if (shared) {
		struct bpfobj_proc_opts po = {
			.pid = so.pid, .plan = so.plan, .usdt_objects = so.usdt_objects,
			.n_usdt_objects = so.n_usdt_objects, .stack_rate = so.stack_rate,
			.unwind_dwarf = so.unwind_dwarf, .otel = so.otel,
		};

		s->shared = true;
		s->sampler = shared;
		ret = bpfobj__add_proc(shared, &po, &s->proc, err, errlen);
	} else {
		lap[PHASE_PLAN] = now_ns(CLOCK_MONOTONIC);
		ret = bpfobj__new(&so, &s->sampler, err, errlen);
		if (!ret) {
			s->proc = bpfobj__proc(s->sampler);
			log_attach_time(s, t0, lap);
		}
	}
	if (ret)
		goto fail;
	s->n_sites = bpfobj_proc__n_sites(s->proc);
	if (o->inuse)
		pr_info("in-use tracking through %s\n", bpfobj_inuse__name(bpfobj_proc__inuse(s->proc)));
	for (i = 0; i < s->fns.n_fns; i++)
		pr_info("--span-fn %s in %s: %s\n", s->fns.fns[i].name,
			s->fns.display[s->fns.fns[i].object],
			span_fn__how(&s->fns.fns[i], why, sizeof(why)));
	s->start_wall_ns = (int64_t)now_ns(CLOCK_REALTIME);
	bpfobj_proc__window(s->proc, &s->start_ns, &s->end_ns);
	*out = s;
	return 0;
fail:
	/* whatever step met it first, the cause is the exit: one line that says so */
	if (target__exiting(&s->t)) {
		pr_info("attaching ended in: %s\n", err);
		snprintf(err, errlen, "pid %d (%s) exited while culpert-bpf was attaching to it: "
			 "nothing was collected", (int)s->t.pid, s->t.comm);
		ret = -ESRCH;
	}
	session__close(s);
	return ret;
}

int session__open(const struct session_opts *o, struct session **out, char *err, size_t errlen)
{
	return session_open(o, NULL, out, err, errlen);
}

int session__open_shared(const struct session_opts *o, struct bpfobj *shared,
			 struct session **out, char *err, size_t errlen)
{
	return session_open(o, shared, out, err, errlen);
}

static void status_line(struct session *s, bool final)
{
	char rate[32];
	double secs = (double)(now_ns(CLOCK_MONOTONIC) - s->start_ns) / 1e9;

	bpfobj_proc__counters(s->proc, s->counters);
	format_bytes(rate, sizeof(rate), secs > 0 ? s->est_bytes / secs : 0);
	fprintf(stderr, "\r\033[K  %llu samples, ~%s/s allocated, %llu lost%s",
		(unsigned long long)s->samples, rate,
		(unsigned long long)s->counters[CULPERT_CNT_LOST_RINGBUF], final ? "\n" : "");
}

int session__run(struct session *s, uint64_t duration_ns, volatile sig_atomic_t *stop,
		 enum session_end *why)
{
	bool tty = isatty(STDERR_FILENO);
	uint64_t last_status = 0, now;
	int n;

	for (;;) {
		n = bpfobj__poll(s->sampler, 100);
		/* also while no samples come: the kernel's buffers of new mappings must not fill */
		mapview__update(s->view);
		if (n < 0) {
			pr_warn("stopped consuming samples: %s\n", strerror(-n));
			*why = SESSION_END_SIGNAL;
			break;
		}
		now = now_ns(CLOCK_MONOTONIC);
		if (*stop) {
			*why = SESSION_END_SIGNAL;
			break;
		}
		if (duration_ns && now - s->start_ns >= duration_ns) {
			*why = SESSION_END_DURATION;
			break;
		}
		if (session__ended(s, why))
			break;
		if (tty && now - last_status >= 1000000000ULL) {
			status_line(s, false);
			last_status = now;
		}
	}
	session__detach(s);
	if (tty)
		status_line(s, true);
	return 0;
}

void session__detach(struct session *s)
{
	if (s->detached || !s->sampler)
		return;
	/* detach first: the target stops paying for probes while we finish */
	bpfobj_proc__detach(s->proc);
	session_release(s);
	bpfobj_proc__window(s->proc, &s->start_ns, &s->end_ns);
	bpfobj__drain(s->sampler);
	bpfobj__misses(s->sampler, &s->misses, &s->free_misses);
	pr_info("%llu records from the moments probes went in or out dropped: their spans are unknown\n",
		(unsigned long long)s->outside_window);
	bpfobj_proc__counters(s->proc, s->counters);
	/*
	 * The hot states are every process's: only a capture of its own knows
	 * whose calls they saw.  The contract reports sampled calls only: how
	 * many calls there were is not known.
	 */
	if (!s->shared)
		s->have_seen = !s->otel.use && !bpfobj__calls_seen(s->sampler, &s->seen);
	s->detached = true;
}

void session__heap_since(struct session *s, uint64_t since_ns)
{
	s->heap_since_ns = since_ns;
	if (s->live)
		live__drop_before(s->live, since_ns);
}

int session__add_comment(struct session *s, const char *comment)
{
	char *c = strdup(comment);

	if (!c || vec_reserve(&s->comments, &s->cap_comments, s->n_comments + 1, sizeof(char *))) {
		free(c);
		return -ENOMEM;
	}
	s->comments[s->n_comments++] = c;
	return 0;
}

int session__add_comment_cb(void *session, const char *comment)
{
	return session__add_comment(session, comment);
}

struct census_entry {
	uint32_t path;
	uint64_t size;
	uint64_t count;
};

static int add_throttled_path(void *ctx, uint64_t size, uint32_t keep,
			      const struct culpert_throttle_path *path, uint64_t count)
{
	struct culpert_span_frame frames[CULPERT_MAX_SPAN_DEPTH] = { 0 };
	static const uint64_t stack[] = { CULPERT_FRAME_THROTTLED };
	struct session *s = ctx;
	/* picked to keep their stacks with probability keep: each stands for 1 / keep */
	struct agg_sample a = { .frames = stack, .n_frames = 1, .chain = UINT32_MAX,
				.size = size, .count = count, .weighted = true,
				.objects = sample_weight(size, s->o.rate) * keep_scale(keep) };

	a.thin_var = thin_var(keep, a.objects * (double)size);
	uint32_t i, depth = path ? path->depth : 0;

	if (depth > CULPERT_MAX_SPAN_DEPTH)
		depth = CULPERT_MAX_SPAN_DEPTH;
	for (i = 0; i < depth; i++)
		frames[i].name_id = path->name_ids[i];
	a.path = spans__chain(s->spans, frames, depth, false);
	if (!keep) {
		if (vec_reserve(&s->census, &s->cap_census, s->n_census + 1, sizeof(*s->census)))
			return -ENOMEM;
		s->census[s->n_census++] = (struct census_entry){ .path = a.path, .size = size,
								  .count = count };
		return 0;
	}
	a.thinned = keep < CULPERT_KEEP_ONE;
	s->throttled += count;
	return aggregate__add_sample(s->agg, &a, s->o.rate) < 0 ? -ENOMEM : 0;
}

static int census_cmp(const void *a, const void *b)
{
	const struct census_entry *x = a, *y = b;

	return x->path < y->path ? -1 : x->path > y->path;
}

/*
 * Past the stack rate, the kept samples' weights (1 / p each) make an
 * unbiased estimate of every function's bytes, but of the total too, with
 * the variance of the coin tosses.  The census counted every sample past
 * the rate by size: scaled to it, per span path, the kept ones sum to the
 * same estimate as if every one had been kept (a ratio estimator: the
 * totals as tight as without thinning, each function's share as the kept
 * samples say).  A path none of whose samples was kept cannot be
 * attributed: its census goes under [throttled].  An incomplete census
 * (its table full) scales nothing.
 */
static int apply_census(struct session *s)
{
	static const uint64_t stack[] = { CULPERT_FRAME_THROTTLED };
	size_t i, j;

	if (s->counters[CULPERT_CNT_CENSUS_FULL] || !s->n_census)
		return 0;
	qsort(s->census, s->n_census, sizeof(*s->census), census_cmp);
	for (i = 0; i < s->n_census; i = j) {
		double bytes = 0, kept;

		for (j = i; j < s->n_census && s->census[j].path == s->census[i].path; j++)
			bytes += sample_weight(s->census[j].size, s->o.rate) *
				 (double)s->census[j].count * (double)s->census[j].size;
		kept = aggregate__rescale(s->agg, s->census[i].path, 1);
		if (kept > 0) {
			aggregate__rescale(s->agg, s->census[i].path, bytes / kept);
			continue;
		}
		for (; i < j; i++) {
			struct agg_sample a = { .frames = stack, .n_frames = 1, .chain = UINT32_MAX,
						.path = s->census[i].path, .size = s->census[i].size,
						.count = s->census[i].count };

			s->throttled += s->census[i].count;
			if (aggregate__add_sample(s->agg, &a, s->o.rate) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Samples past the stack rate, counted in the kernel by exact size and
 * span path: unbiased here like any sample, under a [throttled] frame.
 * Those the kernel's table had no room for are known by number and bytes
 * only: they are unbiased at their mean size, outside any span.
 */
static int add_throttled(struct session *s)
{
	static const uint64_t stack[] = { CULPERT_FRAME_THROTTLED };
	uint64_t over = 0, over_bytes = 0;
	int err;

	err = bpfobj_proc__throttled(s->proc, add_throttled_path, s, &over, &over_bytes);
	if (!err)
		err = apply_census(s);
	if (err || !over)
		return err;
	s->throttled += over;
	s->throttled_over = over;
	return aggregate__add_sample(s->agg, &(struct agg_sample){ .frames = stack, .n_frames = 1,
					.chain = UINT32_MAX, .size = over_bytes / over,
					.count = over }, s->o.rate) < 0 ? -ENOMEM : 0;
}

static int store_name(void *ctx, uint32_t id, const struct culpert_span_name *key)
{
	struct session *s = ctx;
	uint64_t addr;

	if (!(key->flags & CULPERT_NAME_F_ADDR))
		return spans__set_name(s->spans, id, key->name, key->len);
	/* an address in some process: only the one that sent it (its record) can read it */
	if (s->shared)
		return 0;
	memcpy(&addr, key->name, sizeof(addr));
	if (read_late_name(s, id, addr, key->len) == -ENOMEM)
		return -ENOMEM;
	s->names_unresolved += !spans__name(s->spans, id);
	return 0;
}

static int add_commentf(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int add_commentf(struct session *s, const char *fmt, ...)
{
	char buf[PATH_MAX + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return session__add_comment(s, buf);
}

/* "family:path"; comma-joined when a prefixed allocator is probed too: ",jemalloc(je_):path" */
static int add_allocator_comment(struct session *s)
{
	const struct alloc_plan *p = &s->plan;
	char buf[1024];
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < p->n_objects && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s%s%s%s:%s", i ? "," : "",
					p->objects[i].family, *p->objects[i].prefix ? "(" : "",
					p->objects[i].prefix, *p->objects[i].prefix ? ")" : "",
					p->objects[i].path);
	return add_commentf(s, "allocator=%s", buf);
}

/*
 * sampler=otel_memory (the period is then the in-process sampler's rate)
 * or sampler=uprobes, and with the former the objects whose probes fired
 */
static int add_sampler_comments(struct session *s)
{
	char buf[2048];
	size_t i, len = 0;
	int err;

	err = add_commentf(s, "sampler=%s", session__sampler(s));
	if (!s->otel.use)
		return err;
	buf[0] = '\0';
	for (i = 0; i < s->otel.n && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? "," : "",
					s->otel.objects[i].path);
	err |= add_commentf(s, "sampler.objects=%s", buf);
	err |= add_commentf(s, "sampler.rate_from=%s", s->rate_from);
	return err;
}

/* what this run did and what it could not see, for `culpert info` */
static int add_run_comments(struct session *s)
{
	const uint64_t *c = s->counters;
	int err = 0;

	err |= add_allocator_comment(s);
	err |= add_sampler_comments(s);
	err |= add_commentf(s, "probe_sites=%zu", s->n_sites);
	/* sampled allocations, where the file's samples are aggregated records */
	err |= add_commentf(s, "samples=%llu", (unsigned long long)s->samples);
	err |= add_commentf(s, "max_stacks=%zu", s->o.max_entries);
	err |= add_commentf(s, "aggregate_coarsened=%llu",
			    (unsigned long long)aggregate__coarsened(s->agg));
	err |= add_commentf(s, "aggregate_folded=%llu",
			    (unsigned long long)aggregate__folded(s->agg));
	err |= add_commentf(s, "nested_calls=%llu", (unsigned long long)c[CULPERT_CNT_NESTED]);
	err |= add_commentf(s, "probe_misses=%llu", (unsigned long long)s->misses);
	err |= add_commentf(s, "stack_rate=%llu", (unsigned long long)s->o.stack_rate);
	err |= add_commentf(s, "throttled_samples=%llu", (unsigned long long)s->throttled);
	err |= add_commentf(s, "throttled_overflow=%llu", (unsigned long long)s->throttled_over);
	err |= add_commentf(s, "thinned_samples=%llu", (unsigned long long)c[CULPERT_CNT_THINNED]);
	err |= add_commentf(s, "kept_weighted_samples=%llu", (unsigned long long)s->kept_scaled);
	err |= add_commentf(s, "census_overflow=%llu", (unsigned long long)c[CULPERT_CNT_CENSUS_FULL]);
	err |= add_commentf(s, "stack_errors=%llu", (unsigned long long)c[CULPERT_CNT_STACK_ERR]);
	err |= add_commentf(s, "span_overflow=%llu",
			    (unsigned long long)c[CULPERT_CNT_SPAN_OVERFLOW]);
	err |= add_commentf(s, "span_unmatched_exits=%llu",
			    (unsigned long long)c[CULPERT_CNT_SPAN_UNMATCHED]);
	/* names the kernel could not read (pages the program had not touched), read here */
	err |= add_commentf(s, "span_names_late=%llu", (unsigned long long)s->names_late);
	err |= add_commentf(s, "span_names_unresolved=%llu",
			    (unsigned long long)s->names_unresolved);
	if (s->fpchain)
		err |= add_commentf(s, "fp_broken_stacks=%llu", (unsigned long long)s->fp_broken);
	err |= mapview__comments(s->view, session__add_comment_cb, s);
	/* what an empty profile is explained with (proto/empty.h) */
	if (s->have_seen) {
		err |= add_commentf(s, "alloc_calls=%llu", (unsigned long long)s->seen.calls);
		err |= add_commentf(s, "alloc_bytes=%llu", (unsigned long long)s->seen.bytes);
		err |= add_commentf(s, "alloc_failed=%llu", (unsigned long long)s->seen.failed);
	}
	/* the live heap is of blocks seen allocated: what the process held before is not in it */
	if (s->o.inuse)
		err |= add_commentf(s, "inuse_covers=blocks allocated before attach are not included");
	if (s->go)
		err |= add_commentf(s, "target.runtime=go");
	if (s->pymalloc)
		err |= add_commentf(s, "target.pymalloc=objects of 512 bytes or less are not seen");
	if (s->unwinder) {
		err |= add_commentf(s, "unwind_errors=%llu",
				    (unsigned long long)s->unwind_stops[UNWIND_STOP_ERROR]);
		err |= add_commentf(s, "unwind_truncated=%llu",
				    (unsigned long long)s->unwind_stops[UNWIND_STOP_TRUNCATED]);
		err |= add_commentf(s, "stack_size=%u", s->o.stack_size ?: CULPERT_DEFAULT_STACK_COPY);
		err |= add_commentf(s, "stack_copied_bytes=%llu", (unsigned long long)s->stack_copied);
	}
	if (!s->live)
		return err ? -ENOMEM : 0;
	err |= add_commentf(s, "inuse=%s", bpfobj_inuse__name(bpfobj_proc__inuse(s->proc)));
	/* live blocks are what the kernel's table held at the end: lost free records cost nothing */
	err |= add_commentf(s, "inuse_live=kernel_table");
	err |= add_commentf(s, "inuse_untracked=%llu", (unsigned long long)session__untracked(s));
	err |= add_commentf(s, "inuse_returns_unseen=%llu",
			    (unsigned long long)c[CULPERT_CNT_RET_UNSEEN]);
	err |= add_commentf(s, "inuse_frees_missed=%llu", (unsigned long long)s->free_misses);
	/* records of frees and returns lost in the ring buffer: harmless since inuse_live=kernel_table */
	err |= add_commentf(s, "inuse_lost_frees=%llu", (unsigned long long)c[CULPERT_CNT_LOST_FREE]);
	err |= add_commentf(s, "inuse_lost_returns=%llu",
			    (unsigned long long)c[CULPERT_CNT_LOST_RET]);
	return err ? -ENOMEM : 0;
}

int session__span_totals(struct session *s, struct span_totals *out)
{
	session__detach(s);
	if (!s->have_seen || s->o.no_exact)
		return -ENODATA;
	return span_totals_collect(s->proc, s->spans, &s->seen, out);
}

int session__span_totals_now(struct session *s, struct span_totals *out)
{
	/*
	 * The calls seen are read at detach, and over a shared object they are
	 * every process's: outside any span is not known here.
	 */
	static const struct culpert_calls_seen unknown;

	if (s->o.no_exact || s->otel.use)
		return -ENODATA;
	bpfobj__span_names(s->sampler, store_name, s);
	return span_totals_collect(s->proc, s->spans, &unknown, out);
}

/* the exact span totals as the profile carries them (proto/totals.h) */
static int add_totals_comments(struct session *s)
{
	struct span_totals t;
	int err = session__span_totals(s, &t);

	if (err == -ENODATA)
		return 0;
	if (err)
		return err;
	err = span_totals__comments(&t, session__add_comment_cb, s);
	span_totals__free(&t);
	return err;
}

/* what every profile of the session is written with */
static struct export_opts export_opts_of(const struct session *s)
{
	return (struct export_opts){
		.t = &s->t,
		.maps = mapview__maps(s->view),
		.hist = mapview__hist(s->view),
		.objs = s->objs,
		.rate = s->o.rate,
		.time_nanos = s->start_wall_ns,
		.symbolize = s->o.symbolize,
		.unwind = s->unwind == SESSION_UNWIND_DWARF ? "dwarf" : "fp",
		.kernel = features__get()->release,
		.spans = s->spans,
		.live = s->live,
	};
}

/* to path, or with path NULL into *buf */
static int session_write(struct session *s, const char *path, void **buf, size_t *len)
{
	struct export_opts eo = export_opts_of(s);
	int ret;

	session__detach(s);
	if (!s->run_comments)
		bpfobj__span_names(s->sampler, store_name, s);
	if (s->live)
		settle_live(s);
	eo.duration_nanos = (int64_t)(s->end_ns - s->start_ns);
	eo.end_mono_ns = s->end_ns;
	eo.lost = s->counters[CULPERT_CNT_LOST_RINGBUF];
	/* written once: a second write of the same session has them already */
	if (!s->run_comments) {
		ret = add_throttled(s);
		if (ret)
			return ret;
		ret = add_run_comments(s);
		if (!ret)
			ret = add_totals_comments(s);
		if (ret)
			return ret;
		s->run_comments = true;
	}
	eo.extra = (const char *const *)s->comments;
	eo.n_extra = s->n_comments;
	return path ? export_profile(s->agg, &eo, path) : export_profile_buf(s->agg, &eo, buf, len);
}

int session__write(struct session *s, const char *path)
{
	return session_write(s, path, NULL, NULL);
}

int session__write_buf(struct session *s, void **buf, size_t *len)
{
	return session_write(s, NULL, buf, len);
}

bool session__ended(struct session *s, enum session_end *why)
{
	/* before the exit: a program exec'd and gone by now still ends as an exec */
	if (bpfobj_proc__execed(s->proc) || target__execed(&s->t))
		*why = SESSION_END_TARGET_EXEC;
	else if (!target__alive(&s->t))
		*why = SESSION_END_TARGET_EXIT;
	else
		return false;
	return true;
}

/*
 * While the capture goes on (the agent): the profile so far into *buf,
 * the probes left in.  Live blocks are this side's (records of frees
 * lost are counted: inuse_lost_frees); run comments are this profile's
 * only.
 */
int session__profile(struct session *s, const struct session_profile_opts *po, void **buf,
		     size_t *len)
{
	struct export_opts eo = export_opts_of(s);
	size_t keep = s->n_comments, i;
	int ret = 0;

	if (po->time_nanos)
		eo.time_nanos = po->time_nanos;
	eo.duration_nanos = po->duration_nanos;
	eo.end_mono_ns = now_ns(CLOCK_MONOTONIC);
	eo.default_sample_type = po->default_sample_type;
	eo.span_labels_only = po->span_labels_only;
	eo.base = po->base;
	eo.n_base = po->n_base;

	if (!s->detached)
		bpfobj_proc__counters(s->proc, s->counters);
	else
		eo.end_mono_ns = s->end_ns;
	bpfobj__span_names(s->sampler, store_name, s);
	eo.lost = s->counters[CULPERT_CNT_LOST_RINGBUF];
	for (i = 0; i < po->n_extra && !ret; i++)
		ret = session__add_comment(s, po->extra[i]);
	if (!ret)
		ret = add_run_comments(s);
	eo.extra = (const char *const *)s->comments;
	eo.n_extra = s->n_comments;
	if (!ret)
		ret = export_profile_buf(s->agg, &eo, buf, len);
	while (s->n_comments > keep)
		free(s->comments[--s->n_comments]);
	return ret;
}

int session__alloc_base(const struct session *s, struct export_base **out, size_t *n)
{
	const struct agg_entry *e = aggregate__entries(s->agg, n);
	struct export_base *b = malloc((*n ?: 1) * sizeof(*b));
	size_t i;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < *n; i++)
		b[i] = (struct export_base){ e[i].alloc_objects, e[i].alloc_space };
	*out = b;
	return 0;
}

void session__sync_maps(struct session *s)
{
	mapview__update(s->view);
}

/* the plans so far, the first one first */
static size_t plans_of(const struct session *s, const struct alloc_plan **out)
{
	size_t i;

	out[0] = &s->plan;
	for (i = 0; i < s->n_more; i++)
		out[i + 1] = s->more[i];
	return s->n_more + 1;
}

int session__replan(struct session *s, char *err, size_t errlen)
{
	const struct alloc_plan *known[ALLOC_MAX_OBJECTS + 1];
	uint64_t gen = mapview__generation(s->view);
	struct alloc_plan *p;
	int ret;

	/* on the otel_memory probes the in-process sampler sees the calls: no allocator to add */
	if (gen == s->plan_gen || s->n_more + 1 >= ALLOC_MAX_OBJECTS || s->detached || s->otel.use)
		return 0;
	s->plan_gen = gen;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* a plan that fails now (an object half mapped) is tried at the next change */
	if (allocator__plan(&s->t, mapview__maps(s->view), s->objs, s->o.allocator, p, err,
			    errlen) ||
	    !alloc_plan__keep_new(p, known, plans_of(s, known))) {
		alloc_plan__free(p);
		free(p);
		return 0;
	}
	alloc_plan__log(p);
	ret = bpfobj_proc__extend(s->proc, p, err, errlen);
	if (ret) {
		/* what did attach stays attached: the plan must outlive it */
		s->more[s->n_more++] = p;
		return ret;
	}
	s->more[s->n_more++] = p;
	s->n_sites = bpfobj_proc__n_sites(s->proc);
	return 1;
}

size_t session__plans(const struct session *s, const struct alloc_plan **out)
{
	return plans_of(s, out);
}

struct bpfobj_proc *session__proc(const struct session *s)
{
	return s->proc;
}

void session__freeze_stacks(struct session *s)
{
	aggregate__freeze(s->agg);
}

uint64_t session__samples(const struct session *s)
{
	return s->samples;
}

uint64_t session__rate(const struct session *s)
{
	return s->o.rate;
}

const char *session__sampler(const struct session *s)
{
	return s->otel.use ? "otel_memory" : "uprobes";
}

uint64_t session__failed_calls(const struct session *s)
{
	return s->have_seen ? s->seen.failed : 0;
}

bool session__calls_seen(const struct session *s, uint64_t *calls, uint64_t *bytes)
{
	*calls = s->seen.calls;
	*bytes = s->seen.bytes;
	return s->have_seen;
}

bool session__is_go(const struct session *s)
{
	return s->go;
}

uint64_t session__duration_ns(const struct session *s)
{
	return s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0;
}

int session__live_each(struct session *s, void (*fn)(void *ctx, uint64_t size, double weight),
			void *ctx)
{
	const struct live_block *b;
	size_t n, i;

	if (!s->live)
		return -ENODATA;
	session__detach(s);
	settle_live(s);
	b = live__blocks(s->live, &n);
	for (i = 0; i < n; i++)
		fn(ctx, b[i].size, b[i].weight);
	return 0;
}

static void warn_fp_broken(const struct session *s)
{
	const struct procmap *m = procmaps__find(mapview__maps(s->view), s->fp_broken_at - 1);
	struct elfobj *obj = m ? objcache__get(s->objs, m) : NULL;
	const struct elf_symbol *sym = NULL;
	char *name = NULL;
	uint64_t vaddr;

	if (obj && !elfobj__offset_to_vaddr(obj, s->fp_broken_at - 1 - m->start + m->offset, &vaddr))
		sym = elfobj__sym_by_addr(obj, vaddr);
	if (sym)
		name = demangle(sym->name, false);
	pr_warn("%llu of %llu frame-pointer stacks (%.1f%%) go through code without frame pointers "
		"(first: %s in %s): their frames above it are wrong or missing; --unwind dwarf "
		"follows the CFI instead\n", (unsigned long long)s->fp_broken,
		(unsigned long long)s->samples, s->samples ? 100.0 * (double)s->fp_broken / (double)s->samples : 0,
		name ? name : "?", m ? m->path : "?");
	free(name);
}

void session__warn_losses(const struct session *s)
{
	const uint64_t *c = s->counters;

	if (s->misses)
		pr_warn("the kernel skipped %llu probe hits (another BPF program was running on the CPU)%s\n",
			(unsigned long long)s->misses,
			s->free_misses ? ", frees among them: blocks still live in the profile may have been "
					 "freed" : "");
	if (s->live && c[CULPERT_CNT_RET_UNSEEN])
		pr_info("%llu sampled calls threw or returned where no probe saw it: their blocks are "
			"not in the live heap\n", (unsigned long long)c[CULPERT_CNT_RET_UNSEEN]);
	if (s->live_syncs)
		pr_info("the live table was reconciled with the kernel's %llu times (records of frees "
			"were lost)\n", (unsigned long long)s->live_syncs);
	if (session__untracked(s))
		pr_warn("%llu sampled blocks were not tracked for --inuse because the live table was full: "
			"raise --max-live\n", (unsigned long long)session__untracked(s));
	if (session__lost(s))
		pr_warn("%llu samples were lost because the ring buffer was full: "
			"raise --ringbuf-size or --rate\n", (unsigned long long)session__lost(s));
	if (aggregate__coarsened(s->agg))
		pr_warn("%llu samples lost their thread_id and span_id labels (kept: stack, span path, "
			"bytes): more (stack, thread, span) keys than --max-stacks %zu\n",
			(unsigned long long)aggregate__coarsened(s->agg), s->o.max_entries);
	if (aggregate__folded(s->agg))
		pr_warn("%llu samples kept only their leaf under [folded] (or [unknown stack]): more "
			"distinct stacks than --max-stacks %zu; raise it\n",
			(unsigned long long)aggregate__folded(s->agg), s->o.max_entries);
	if (s->fp_broken)
		warn_fp_broken(s);
	if (c[CULPERT_CNT_THINNED] || s->kept_scaled)
		pr_warn("%llu samples came past the stack rate of %llu/s: a random %llu of them kept "
			"their stacks and weigh for the rest (--max-stack-rate; each function's bytes "
			"stay unbiased, with more variance: docs/profile-format.md, \"Throttling\")\n",
			(unsigned long long)(c[CULPERT_CNT_THINNED] + s->kept_scaled + s->throttled),
			(unsigned long long)s->o.stack_rate, (unsigned long long)s->kept_scaled);
	if (s->throttled)
		pr_warn("%llu samples came past the stack rate of %llu/s: their bytes are counted under "
			"[throttled], without their stacks (--max-stack-rate)%s\n",
			(unsigned long long)s->throttled, (unsigned long long)s->o.stack_rate,
			s->live ? "; they are not in the live heap" : "");
	if (s->names_unresolved)
		pr_warn("%llu span names could not be read (not in the process's memory nor in a file): "
			"their spans are '(unnamed span)'\n", (unsigned long long)s->names_unresolved);
	if (c[CULPERT_CNT_SPAN_NAMES_FULL])
		pr_warn("%llu spans were entered once the table of %d span names was full: their spans "
			"are '(unnamed span)'\n", (unsigned long long)c[CULPERT_CNT_SPAN_NAMES_FULL],
			CULPERT_MAX_SPAN_NAMES);
	if (c[CULPERT_CNT_SPAN_OVERFLOW])
		pr_warn("%llu spans were entered deeper than %d open spans on their thread: their "
			"allocations went to the %dth, the span tree below it is incomplete (span_overflow)\n",
			(unsigned long long)c[CULPERT_CNT_SPAN_OVERFLOW], CULPERT_MAX_SPAN_DEPTH,
			CULPERT_MAX_SPAN_DEPTH);
}

uint64_t session__untracked(const struct session *s)
{
	/* disjoint: refused by the kernel's table, or held by it but not here */
	return s->counters[CULPERT_CNT_LIVE_FULL] + s->kernel_only;
}

uint64_t session__lost(const struct session *s)
{
	return s->counters[CULPERT_CNT_LOST_RINGBUF];
}

size_t session__n_sites(const struct session *s)
{
	return s->n_sites;
}

size_t session__n_span_sites(const struct session *s)
{
	return s->n_usdt_sites;
}

size_t session__n_span_fns(const struct session *s)
{
	return s->fns.n_fns;
}

const char *session__comm(const struct session *s)
{
	return s->t.comm;
}

struct objcache *session__objs(const struct session *s)
{
	return s->objs;
}

enum session_unwind session__unwind(const struct session *s)
{
	return s->unwind;
}

pid_t session__pid(const struct session *s)
{
	return s->t.pid;
}

void session__close(struct session *s)
{
	size_t i;

	if (!s)
		return;
	/* a session that failed after injecting, or was never detached */
	session_release(s);
	for (i = 0; i < s->n_comments; i++)
		free(s->comments[i]);
	free(s->comments);
	free(s->census);
	if (s->shared)
		bpfobj_proc__free(s->proc);
	else
		bpfobj__free(s->sampler);
	aggregate__free(s->agg);
	spans__free(s->spans);
	live__free(s->live);
	unwinder__free(s->unwinder);
	fpchain__free(s->fpchain);
	for (i = 0; i < s->n_usdt_objects; i++)
		free(s->usdt_objects[i]);
	free(s->usdt_objects);
	alloc_plan__free(&s->plan);
	for (i = 0; i < s->n_more; i++) {
		alloc_plan__free(s->more[i]);
		free(s->more[i]);
	}
	otel_plan__free(&s->otel);
	span_fn_plan__free(&s->fns);
	mapview__free(s->view);
	if (!s->o.objs)
		objcache__free(s->objs);
	if (s->mem_fd >= 0)
		close(s->mem_fd);
	target__close(&s->t);
	free(s);
}
