// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The session's lifecycle in stages: new, map, unwind, plan, attach,
 * start, run, detach and close.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggregate.h"
#include "clock.h"
#include "exe_kind.h"
#include "fpchain.h"
#include "fpcheck.h"
#include "live.h"
#include "log.h"
#include "mapview.h"
#include "objcache.h"
#include "inject.h"
#include "injection.h"
#include "procmaps.h"
#include "session_internal.h"
#include "spans.h"
#include "symbolize.h"
#include "units.h"
#include "unwind_choice.h"
#include "usdt.h"
#include "vec.h"

/*
 * Stack captures per second and process at the default rate: a few % of a
 * core at ~5 us each (DWARF).  A smaller rate asks for proportionally more
 * samples and gets a proportionally higher bound, up to MAX_STACK_RATE.
 */
#define DEFAULT_STACK_RATE	10000
#define MAX_STACK_RATE		1000000

/*
 * The bound on stack captures unless told: scaled with the sampling rate
 * (none at rate 1, which asks for every allocation with its stack)
 */
static uint64_t session_default_stack_rate(uint64_t rate)
{
	double r;

	if (rate <= 1)
		return 0;
	r = (double)DEFAULT_STACK_RATE * (double)SESSION_DEFAULT_RATE / (double)rate;
	return r > MAX_STACK_RATE ? MAX_STACK_RATE : r < DEFAULT_STACK_RATE ? DEFAULT_STACK_RATE :
									(uint64_t)r;
}

int session_unwind__choose(const struct target *t, const struct procmaps *maps,
			   struct objcache *objs, enum session_unwind want, enum session_unwind *out,
			   char *why, size_t len)
{
	const struct procmap *m = exe_kind__exe_mapping(t, maps);
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

/*
 * Load the sampler into the process and see its mappings again, with it.
 * With inject_fallback a refusal is not the session's end: it goes on
 * on uprobes, the refusal kept for session__sampler_why().
 */
static int session_inject(struct session *s, char *err, size_t errlen)
{
	const char *lib = inject__mapped(mapview__maps(s->view));
	int ret;

	/* preloaded, interposing from its start: its probes serve as they are, nothing to load */
	if (s->o.inject_fallback && lib && strncmp(lib, "/memfd:", 7)) {
		s->o.sampler = OTEL_MODE_USDT;
		return 0;
	}
	/* caught at its exec: libc comes with the loader's next mappings (a retry) */
	if (s->o.inject_fallback && inject__loader_busy(mapview__maps(s->view))) {
		snprintf(err, errlen, "its loader has not mapped libc yet: the sampler is injected "
			 "once it has");
		return -EAGAIN;
	}
	ret = injection__start(&s->t, mapview__maps(s->view), s->objs,
			       s->o.rate_set ? s->o.rate : 0, err, errlen);
	if (ret && s->o.inject_fallback && !target__exiting(&s->t)) {
		s->inject_refused = strdup(err);
		if (!s->inject_refused)
			return -ENOMEM;
		s->o.sampler = OTEL_MODE_UPROBES;
		return 0;
	}
	if (ret)
		return ret;
	s->injected = true;
	mapview__refresh(s->view);
	return 0;
}

void session__release(struct session *s, uint64_t deadline_ns)
{
	if (!s->injected)
		return;
	s->injected = false;
	/* gone, or another program: nothing of ours left in it */
	if (!target__alive(&s->t) || target__execed(&s->t))
		return;
	if (deadline_ns && clock_ns(CLOCK_MONOTONIC) >= deadline_ns)
		pr_warn("pid %d keeps libculpert-sampler.so sampling: no time was left to release "
			"it (docs/inject.md)\n", (int)s->t.pid);
	else
		injection__stop(&s->t, s->objs, deadline_ns);
}

bool session__injected(const struct session *s)
{
	return s->injected;
}

const char *session__inject_refused(const struct session *s)
{
	return s->inject_refused;
}

const char *session__sampler_why(const struct session *s)
{
	return s->inject_refused ?: s->otel.why;
}

/* a Go program allocates without malloc: an empty profile is explained by it */
static bool target_is_go(struct session *s)
{
	const struct procmap *exe = exe_kind__exe_mapping(&s->t, mapview__maps(s->view));

	return exe && exe_kind__is_go(objcache__get(s->objs, exe));
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
	uint64_t load, attach, total = clock_ns(CLOCK_MONOTONIC) - t0;

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

/*
 * new: the session's own state and the target, opened.  A target that is
 * not there ends it here, before the exit check of session_fail().
 */
static int session_new(const struct session_opts *o, struct session **out, char *err,
		       size_t errlen)
{
	struct session *s;
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
	*out = s;
	return 0;
}

/* the target's mappings and objects, and the tables samples go into */
static int session_map(struct session *s, char *err, size_t errlen)
{
	const struct session_opts *o = &s->o;
	int ret;

	s->objs = o->objs ?: objcache__new(&s->t);
	if (!s->objs) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	} else {
		ret = mapview__new(&s->t, s->objs, o->maps_watch, &s->view, err, errlen);
	}
	if (!ret && o->sampler == OTEL_MODE_INJECT)
		ret = session_inject(s, err, errlen);
	if (ret)
		return ret;
	/* optional: names can still be read from their files without it */
	s->mem_fd = open_mem(s->t.pid);
	s->agg = aggregate__new(o->max_entries);
	s->spans = spans__new(o->max_entries);
	if (o->inuse)
		s->live = live__new(o->max_live);
	if (!s->objs || !s->agg || !s->spans || (o->inuse && !s->live)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* how stacks are walked: --unwind, or auto from the target's code (docs/unwind.md) */
static int session_unwind(struct session *s, char *err, size_t errlen)
{
	char why[PATH_MAX + 128];
	int ret;

	ret = unwind_choices__choose(s->o.unwind_choices, &s->t, mapview__maps(s->view), s->objs,
				     s->o.unwind, &s->unwind, why, sizeof(why));
	if (!ret && s->unwind == SESSION_UNWIND_DWARF) {
		s->unwinder = unwinder__new(s->t.pid, s->objs);
		if (!s->unwinder) {
			ret = -errno;
			snprintf(err, errlen, "cannot set up DWARF unwinding: %s", strerror(-ret));
			return ret;
		}
	}
	if (!ret && s->unwind == SESSION_UNWIND_FP)
		s->fpchain = fpchain__new(s->objs);
	pr_info("unwinding: %s (%s)\n", s->unwind == SESSION_UNWIND_DWARF ? "dwarf" : "fp", why);
	return 0;
}

/* plan: what to probe (sampler, allocator, --span-fn, span probes) and at which rates */
static int session_plan(struct session *s, const struct bpfobj *shared, char *err, size_t errlen)
{
	const struct session_opts *o = &s->o;
	int ret;

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
		return ret;
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
		return ret;
	/* the patterns belong to the caller and are not needed past planning */
	s->o.span_fns = NULL;
	s->o.n_span_fns = 0;
	ret = usdt_objects(mapview__maps(s->view), s->objs, "culpert", add_usdt_object, s);
	if (ret)
		snprintf(err, errlen, "out of memory");
	return ret;
}

/*
 * load and attach: a BPF object of its own, loaded with the plan and
 * attached (bpfobj__new()), or the process added to the caller's.
 */
static int session_attach(struct session *s, struct bpfobj *shared, char *err, size_t errlen)
{
	struct bpfobj_opts so = { 0 };
	int ret;

	session_opts__bpfobj(&s->o, s->unwind == SESSION_UNWIND_DWARF, &so);
	so.pid = s->t.pid;
	so.no_exact = s->o.no_exact;
	so.stack_rate = s->o.stack_rate;
	so.otel = &s->otel;
	so.span_fns = &s->fns;
	so.plan = &s->plan;
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
		return bpfobj__add_proc(shared, &po, &s->proc, err, errlen);
	}
	ret = bpfobj__new(&so, &s->sampler, err, errlen);
	if (!ret)
		s->proc = bpfobj__proc(s->sampler);
	return ret;
}

/* run starts: every probe is in; the capture's window opens */
static void session_start(struct session *s)
{
	char why[PATH_MAX + 128];
	size_t i;

	s->n_sites = bpfobj_proc__n_sites(s->proc);
	if (s->o.inuse)
		pr_info("in-use tracking through %s\n", bpfobj_inuse__name(bpfobj_proc__inuse(s->proc)));
	for (i = 0; i < s->fns.n_fns; i++)
		pr_info("--span-fn %s in %s: %s\n", s->fns.fns[i].name,
			s->fns.display[s->fns.fns[i].object],
			span_fn__how(&s->fns.fns[i], why, sizeof(why)));
	s->start_wall_ns = (int64_t)clock_ns(CLOCK_REALTIME);
	bpfobj_proc__window(s->proc, &s->start_ns, &s->end_ns);
}

/* whatever stage met it first, the cause is the exit: one line that says so */
static int session_fail(struct session *s, int ret, char *err, size_t errlen)
{
	if (target__exiting(&s->t)) {
		pr_info("attaching ended in: %s\n", err);
		snprintf(err, errlen, "pid %d (%s) exited while culpert-bpf was attaching to it: "
			 "nothing was collected", (int)s->t.pid, s->t.comm);
		ret = -ESRCH;
	}
	session__close(s);
	return ret;
}

/*
 * The stages in order (retsnoop's mass_attacher is the model): new, map
 * and unwind set the session up, plan decides the probes, attach loads
 * and attaches them, start opens the window; session__run() is the run,
 * session__detach() and session__close() the end.
 */
static int session_open(const struct session_opts *o, struct bpfobj *shared, struct session **out,
			char *err, size_t errlen)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), lap[PHASE__MAX] = { 0 };
	struct session *s;
	int ret;

	ret = session_new(o, &s, err, errlen);
	if (ret)
		return ret;
	ret = session_map(s, err, errlen);
	lap[PHASE_MAPS] = clock_ns(CLOCK_MONOTONIC);
	if (!ret)
		ret = session_unwind(s, err, errlen);
	lap[PHASE_UNWIND] = clock_ns(CLOCK_MONOTONIC);
	if (!ret)
		ret = session_plan(s, shared, err, errlen);
	lap[PHASE_PLAN] = clock_ns(CLOCK_MONOTONIC);
	if (!ret)
		ret = session_attach(s, shared, err, errlen);
	if (ret)
		return session_fail(s, ret, err, errlen);
	if (!shared)
		log_attach_time(s, t0, lap);
	session_start(s);
	/*
	 * One of the agent's many targets, idle until it allocates: nothing
	 * planning read from its files is needed before then (docs/agent.md,
	 * "Many targets").  A cache shared with another session stays whole.
	 */
	if (shared && !o->objs)
		objcache__trim(s->objs);
	*out = s;
	return 0;
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
	double secs = (double)(clock_ns(CLOCK_MONOTONIC) - s->start_ns) / 1e9;

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
		now = clock_ns(CLOCK_MONOTONIC);
		if (*stop) {
			*why = SESSION_END_SIGNAL;
			break;
		}
		/*
		 * Before the duration: a target that exited (or exec'd) during this
		 * poll ended that way even if the duration ran out in it too; its
		 * memory can no longer be read, and the user is told why it ended.
		 */
		if (session__ended(s, why))
			break;
		if (duration_ns && now - s->start_ns >= duration_ns) {
			*why = SESSION_END_DURATION;
			break;
		}
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

void session__detach(struct session *s)
{
	if (s->detached || !s->sampler)
		return;
	/* detach first: the target stops paying for probes while we finish */
	bpfobj_proc__detach(s->proc);
	session__release(s, 0);
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

void session__close(struct session *s)
{
	size_t i;

	if (!s)
		return;
	/* a session that failed after injecting, or was never detached */
	session__release(s, 0);
	free(s->inject_refused);
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
	/* before the objects: it borrows those the target maps */
	symbolizer__free(s->sym);
	if (!s->o.objs)
		objcache__free(s->objs);
	if (s->mem_fd >= 0)
		close(s->mem_fd);
	target__close(&s->t);
	free(s);
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
	session_settle_live(s);
	b = live__blocks(s->live, &n);
	for (i = 0; i < n; i++)
		fn(ctx, b[i].size, b[i].weight);
	return 0;
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
