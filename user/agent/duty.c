// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Duty cycles of the agent's targets (duty.h).  Only the profiling thread
 * writes the entries; at the end of each turn it publishes their views
 * under the lock, which /metrics takes only to copy them.  The calibration
 * runs on its own thread so that start-up does not wait for it; until it
 * is done, every target's probes stay on (what the collector attached),
 * and the first decision waits for it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duty.h"
#include "log.h"

#define CALIB_ROUNDS 7
#define CALIB_CALLS 50000
/* the longest a period stretches to keep a window (BUDGET_MIN_ON_NS) */
#define MAX_PERIOD_FACTOR 10

struct duty_entry {
	pid_t pid;
	uint64_t start;
	bool used, seen, on, failed;
	struct budget_target bt;
};

struct duty {
	struct duty_opts o;
	struct duty_ops ops;
	void *ctx;
	struct budget_model model;
	struct duty_entry *e;
	pthread_t calib_thread;
	bool calib_started;
	pthread_mutex_t lock;		/* views, n_views and the calibration's result */
	struct duty_view *views;
	size_t n_views;
	int calib_state;		/* 0 running, 1 done, -errno failed */
	struct budget_calibration cal;
};

static void *calibrate(void *arg)
{
	struct duty *d = arg;
	struct budget_calibration cal;
	char err[256] = "";
	int ret = budget_calibrate(CALIB_ROUNDS, CALIB_CALLS, &cal, err, sizeof(err));

	if (ret)
		pr_warn("cannot calibrate the cost of a probe hit: %s; --max-overhead is not "
			"enforced, the allocation probes stay on\n", err);
	else
		pr_info("culpert-bpf: a probe hit costs %.0f ns on this kernel (a call %.1f ns "
			"without; median of %u rounds of %llu calls); a detach + attach %.0f us "
			"of CPU\n", cal.ns_per_hit, cal.bare_ns, cal.rounds,
			(unsigned long long)cal.calls, cal.switch_ns / 1e3);
	pthread_mutex_lock(&d->lock);
	d->calib_state = ret ? ret : 1;
	d->cal = cal;
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

struct duty *duty__new(const struct duty_opts *o, const struct duty_ops *ops, void *ctx)
{
	struct duty *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->e = calloc(o->max_targets, sizeof(*d->e));
	d->views = calloc(o->max_targets, sizeof(*d->views));
	if (!d->e || !d->views) {
		duty__free(d);
		return NULL;
	}
	d->o = *o;
	d->ops = *ops;
	d->ctx = ctx;
	d->model.max_pct = o->max_pct;
	d->model.period_ns = o->period_ns;
	d->model.min_on_ns = BUDGET_MIN_ON_NS;
	d->model.max_period_ns = o->period_ns * MAX_PERIOD_FACTOR;
	d->model.can_drop_inuse = ops->drop_inuse != NULL;
	pthread_mutex_init(&d->lock, NULL);
	if (!o->calibrate) {
		d->calib_state = 1;
		d->cal = o->given;
	} else if (pthread_create(&d->calib_thread, NULL, calibrate, d)) {
		d->calib_state = -EAGAIN;
		pr_warn("cannot start the calibration thread: --max-overhead is not enforced\n");
	} else {
		d->calib_started = true;
	}
	return d;
}

void duty__free(struct duty *d)
{
	bool running;

	if (!d)
		return;
	if (d->calib_started) {
		pthread_mutex_lock(&d->lock);
		running = d->calib_state == 0;
		pthread_mutex_unlock(&d->lock);
		/*
		 * The agent is stopping: no waiting for the rest of the
		 * calibration's 1.5 s.  Its thread writes its result to d, which
		 * is left for it; the process's end ends both (the child dies
		 * with the thread, PR_SET_PDEATHSIG).
		 */
		if (running) {
			pthread_detach(d->calib_thread);
			return;
		}
		pthread_join(d->calib_thread, NULL);
	}
	if (d->views)
		pthread_mutex_destroy(&d->lock);
	free(d->e);
	free(d->views);
	free(d);
}

bool duty__calibration(struct duty *d, struct budget_calibration *out)
{
	bool done;

	pthread_mutex_lock(&d->lock);
	done = d->calib_state == 1;
	if (done)
		*out = d->cal;
	pthread_mutex_unlock(&d->lock);
	return done;
}

static struct duty_entry *entry(struct duty *d, pid_t pid, uint64_t start)
{
	struct duty_entry *free_slot = NULL;
	size_t i;

	for (i = 0; i < d->o.max_targets; i++) {
		if (d->e[i].used && d->e[i].pid == pid && d->e[i].start == start)
			return &d->e[i];
		if (!d->e[i].used && !free_slot)
			free_slot = &d->e[i];
	}
	return free_slot;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Switch the allocation probes; what it cost in CPU (twice: a period has a
 * detach and an attach) goes into the model's switch cost, a moving
 * average over the agent's switches that replaces the calibration's.
 */
static void switch_alloc(struct duty *d, struct duty_entry *e, bool on)
{
	uint64_t cpu = thread_cpu_ns();
	int ret = d->ops.set_alloc(d->ctx, e->pid, e->start, on);

	cpu = thread_cpu_ns() - cpu;
	d->model.switch_ns = 0.8 * d->model.switch_ns + 0.2 * 2 * (double)cpu;
	if (ret) {
		/* the collector keeps the reason in the target's state ("failed") */
		e->failed = true;
		pr_warn("pid %d: cannot %s its allocation probes: %s; its duty cycle stops\n",
			(int)e->pid, on ? "re-attach" : "detach", strerror(-ret));
		return;
	}
	e->on = on;
	/* the window starts once the probes are in: attaching takes time */
	if (on)
		e->bt.on_start_ns = d->ops.now ? d->ops.now(d->ctx) : mono_ns();
}

static void log_decision(const struct duty *d, const struct duty_entry *e)
{
	const struct budget_choice *c = &e->bt.choice;

	pr_info("culpert-bpf: pid %d: %.0f allocator calls/s and %.0f frees/s while probed, "
		"%.0f ns a hit: duty %.4g (allocation probes on %.2f s of every %.1f s), "
		"estimated %.3g%% of a CPU (budget %g%%%s)%s\n", (int)e->pid,
		e->bt.rates.alloc_per_s, e->bt.rates.free_per_s, d->model.ns_per_hit, c->duty,
		(double)c->on_ns / 1e9, (double)c->period_ns / 1e9, c->est_pct, d->o.max_pct,
		d->o.max_pct > 0 ? "" : ": no limit", c->over ? "; over the budget even so" : "");
}

/* in-use tracking cannot stay within the budget: the free probes go, live blocks with them */
static void drop_inuse(struct duty *d, struct duty_entry *e)
{
	double free_per_s = e->bt.rates.free_per_s;
	int ret = d->ops.drop_inuse(d->ctx, e->pid, e->start);

	pr_warn("pid %d: its free probes alone would cost %.3g%% of a CPU (%.0f frees/s), over "
		"--max-overhead %g%%: in-use (heap) tracking %s\n", (int)e->pid,
		free_per_s * d->model.ns_per_hit / 1e7, free_per_s, d->o.max_pct,
		ret ? "could not be dropped: the free probes stay and the target is over budget" :
		"is dropped for this target, its heap profile says so");
	if (ret) {
		/* counted again from now on, and never offered to drop again */
		e->bt.rates.inuse = true;
		d->model.can_drop_inuse = false;
	}
}

static void step(struct duty *d, struct duty_entry *e, uint64_t now_ns)
{
	struct budget_action act;
	uint64_t alloc, freed;

	if (e->failed || d->ops.counters(d->ctx, e->pid, e->start, &alloc, &freed))
		return;
	budget_target_step(&e->bt, &d->model, now_ns, alloc, freed, &act);
	if (act.drop_inuse)
		drop_inuse(d, e);
	if (act.decided)
		log_decision(d, e);
	if (act.switch_alloc)
		switch_alloc(d, e, act.alloc_on);
}

/* a target new to the duty cycle: its probes are on (the collector attached them) */
static void start_entry(struct duty *d, struct duty_entry *e, pid_t pid, uint64_t start,
			uint64_t now_ns)
{
	uint64_t alloc, freed;

	if (d->ops.counters(d->ctx, pid, start, &alloc, &freed))
		return;
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->start = start;
	e->used = e->seen = e->on = true;
	budget_target_init(&e->bt, now_ns, d->o.inuse, alloc, freed);
}

/* the calibration's figures in the model once it is done; false until then (or if it failed) */
static bool calibrated(struct duty *d)
{
	struct budget_calibration cal;

	if (d->model.ns_per_hit > 0)
		return true;
	if (!duty__calibration(d, &cal))
		return false;
	d->model.ns_per_hit = cal.ns_per_hit > 0 ? cal.ns_per_hit : 1;
	d->model.switch_ns = cal.switch_ns;
	return true;
}

static void view_of(const struct duty *d, const struct duty_entry *e, uint64_t now_ns,
		    struct duty_view *v)
{
	v->pid = e->pid;
	v->start = e->start;
	v->on = e->on;
	v->inuse = e->bt.rates.inuse;
	v->over = e->bt.choice.over;
	v->decided = e->bt.decisions > 0;
	v->duty = e->bt.choice.duty;
	v->est_pct = e->bt.choice.est_pct;
	v->alloc_per_s = e->bt.rates.alloc_per_s;
	v->free_per_s = e->bt.rates.free_per_s;
	v->observed_ns = budget_target_observed(&e->bt, now_ns);
	v->period_ns = e->bt.choice.period_ns;
}

static void publish(struct duty *d, uint64_t now_ns)
{
	size_t i, n = 0;

	pthread_mutex_lock(&d->lock);
	for (i = 0; i < d->o.max_targets; i++)
		if (d->e[i].used)
			view_of(d, &d->e[i], now_ns, &d->views[n++]);
	d->n_views = n;
	pthread_mutex_unlock(&d->lock);
}

void duty__tick(struct duty *d, const pid_t *pids, const uint64_t *starts, size_t n,
		uint64_t now_ns)
{
	bool ready = calibrated(d);
	struct duty_entry *e;
	size_t i;

	/* no collector: nothing to cycle, the calibration is still reported */
	if (!d->ops.counters || !d->ops.set_alloc)
		n = 0;
	for (i = 0; i < d->o.max_targets; i++)
		d->e[i].seen = false;
	for (i = 0; i < n; i++) {
		e = entry(d, pids[i], starts[i]);
		if (!e)
			continue;
		if (!e->used)
			start_entry(d, e, pids[i], starts[i], now_ns);
		else if (ready)
			step(d, e, now_ns);
		e->seen = e->used;
	}
	/* exited: the collector detached everything */
	for (i = 0; i < d->o.max_targets; i++)
		if (d->e[i].used && !d->e[i].seen)
			d->e[i].used = false;
	publish(d, now_ns);
}

int duty__views(struct duty *d, struct duty_view **v, size_t *n)
{
	pthread_mutex_lock(&d->lock);
	*n = d->n_views;
	*v = malloc((*n ? *n : 1) * sizeof(**v));
	if (*v)
		memcpy(*v, d->views, *n * sizeof(**v));
	pthread_mutex_unlock(&d->lock);
	return *v ? 0 : -ENOMEM;
}
