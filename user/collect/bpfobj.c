// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The BPF object's lifecycle: new, load and ready (bpfobj__open()), the
 * ring's records delivered (run), free; a process's probes are
 * bpfobj_attach.c's.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpfobj_internal.h"
#include "clock.h"
#include "culpert.skel.h"
#include "kfeatures.h"
#include "log.h"
#include "otel.h"
#include "reaper.h"
#include "spanfn.h"

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

/* new: the object's own state; the uprobe and in-use modes the kernel allows */
static struct bpfobj *bpfobj_alloc(const struct bpfobj_opts *o)
{
	struct bpfobj *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_init(&s->usdt_lock, NULL);
	s->mode = bpfobj_uprobe_mode(o->no_multi);
	if (o->track_inuse)
		s->inuse = otel_use(o) ? BPFOBJ_INUSE_OTEL :
					 bpfobj_inuse_mode(o->no_multi, o->no_session);
	return s;
}

/* load: the skeleton opened, set up and verified, its tables filled before any probe fires */
static int bpfobj_load(struct bpfobj *s, const struct bpfobj_opts *o, char *err, size_t errlen)
{
	uint64_t t0;
	int ret;

	s->skel = culpert_bpf__open();
	if (!s->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-ret));
		return ret;
	}
	t0 = clock_ns(CLOCK_MONOTONIC);
	ret = configure(s, o);
	if (!ret)
		ret = culpert_bpf__load(s->skel);
	s->load_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	if (ret) {
		snprintf(err, errlen, "cannot load the BPF programs: %s (run with -vvv for the verifier log)",
			 strerror(-ret));
		return ret;
	}
	/* before any probe fires: a zero table would sample every call */
	bpfobj_fill_exp_table(s->skel->bss->exp_table, o->rate);
	ret = register_fn_names(s, o->span_fns);
	if (ret)
		snprintf(err, errlen, "cannot register --span-fn names: %s", strerror(-ret));
	return ret;
}

/* ready to run: the ring's reader, the teardown thread, the object's own probes */
static int bpfobj_ready(struct bpfobj *s, const struct bpfobj_opts *o, char *err, size_t errlen)
{
	int ret;

	s->on_event = o->on_event;
	s->ctx = o->ctx;
	if (o->async_teardown) {
		s->reaper = reaper__new(bpf_map__fd(s->skel->maps.live_allocs),
					bpf_map__value_size(s->skel->maps.live_allocs));
		if (!s->reaper) {
			ret = -errno;
			snprintf(err, errlen, "cannot start the teardown thread: %s",
				 strerror(-ret));
			return ret;
		}
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), deliver, s, NULL);
	if (!s->rb) {
		snprintf(err, errlen, "cannot set up the ring buffer: %s", strerror(ENOMEM));
		return -ENOMEM;
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
	return 0;
}

/*
 * The stages in order (retsnoop's mass_attacher is the model): new, load,
 * ready; then bpfobj__add_proc() attaches each process, bpfobj__poll()
 * runs, bpfobj_proc__detach() and bpfobj__free() end it.
 */
int bpfobj__open(const struct bpfobj_opts *o, struct bpfobj **out, char *err, size_t errlen)
{
	struct bpfobj *s = bpfobj_alloc(o);
	int ret;

	if (!s)
		return -ENOMEM;
	ret = bpfobj_load(s, o, err, errlen);
	if (!ret)
		ret = bpfobj_ready(s, o, err, errlen);
	if (ret) {
		bpfobj__free(s);
		return ret;
	}
	*out = s;
	return 0;
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

void bpfobj__timing(const struct bpfobj *s, uint64_t *load_ns, uint64_t *attach_ns)
{
	*load_ns = s->load_ns;
	*attach_ns = s->attach_ns;
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
