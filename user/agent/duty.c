// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Duty cycles of the agent's targets (duty.h).  Only the profiling thread
 * writes the entries; at the end of each turn it publishes their views
 * under the lock, which /metrics takes only to copy them.  The calibration
 * runs on its own thread so that start-up does not wait for it; until it
 * is done, every target's probes stay on (what the collector attached),
 * and the first decision waits for it.  One that fails is kept with its
 * reason for the agent, which stops on it when there is a budget.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "clock.h"
#include "duty.h"
#include "log.h"

#define CALIB_ROUNDS 7
#define CALIB_CALLS 20000
/* the collector's programs' cost per hit is measured over at least this long and this many */
#define PROG_MEASURE_NS (1000ULL * 1000000ULL)
#define PROG_MEASURE_HITS 1000
/* the longest a period stretches to keep a window (BUDGET_MIN_ON_NS) */
#define MAX_PERIOD_FACTOR 10
/*
 * The bounds of what the target's own CPU may say a hit costs over the
 * site costs.  No tighter above: a libc probe shared with many other
 * consumers (every agent's link on the same malloc) read 70 times the
 * calibration here, all of it system CPU (docs/agent.md).
 */
#define SCALE_MIN 0.5
#define SCALE_MAX 1000
/* each pair's weight in the scale: the latest counts half, so it follows within a period */
#define SCALE_KEEP 0.5
/*
 * what switching the allocation probes alone is predicted to change, at
 * least, as a share of what all the probes cost while on, for the change
 * measured to say what a hit costs
 */
#define SCALE_MIN_SWITCHED 0.25

struct duty_entry {
	pid_t pid;
	uint64_t start;
	bool used, seen, on, free_on, failed;
	/* its free probes cannot be switched (an in-process sampler's): only allocation ones */
	bool free_fixed;
	bool costs_set;			/* bt.costs from the calibration and its mode */
	struct budget_counts last;	/* the counters at its last step */
	/* its own CPU (schedstat, every thread) at the last switch, for checking the costs */
	uint64_t mark_ns, mark_run, mark_wait, mark_sys, mark_calls, mark_free;
	bool marked, have_on, on_busy;
	/* a check with the free probes kept could not tell: the next one has them off too */
	bool check_both;
	/* the last on window: CPU and system CPU shares, length, the costs' prediction */
	double on_cpu, on_sys, on_dt, on_pred_alloc, on_pred_free;
	double on_calls;		/* its read and write system calls per second then */
	/* the probes' cost measured and predicted, over the pairs */
	double extra_ns, pred_ns;
	/*
	 * its system CPU share with the allocation probes off, the free
	 * probes on (alloc_off) and off too (both_off), as the last such off
	 * window measured it (-1: not yet); the watch of a target on all the
	 * time (watch_sys)
	 */
	double base_alloc_off, base_both_off;
	uint64_t w_ns, w_sys;
	bool w_marked;
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
	char calib_err[256];		/* why it failed */
	struct budget_calibration used_cal;	/* the profiling thread's copy */
	int stats_fd;			/* BPF run-time stats on while held; -1: off */
	/* the collector's programs' run time and the hits they ran for, since prog_t0 */
	uint64_t prog_t0, prog_alloc0, prog_free0, hits_alloc, hits_free;
	bool prog_measured;
	volatile int stopping;		/* duty__free(): the calibration stops at its next run */
};

static void *calibrate(void *arg)
{
	struct duty *d = arg;
	struct budget_calibration cal = { 0 };
	const char *fail = getenv("CULPERT_TEST_CALIBRATION_FAIL");
	char err[256] = "";
	int ret;

	/* the tests' way to a failure: the real ones (no uprobe, no fork) are not theirs to cause */
	if (fail && fail[0]) {
		snprintf(err, sizeof(err), "%s", fail);
		ret = -EIO;
	} else {
		ret = budget_calibrate(CALIB_ROUNDS, CALIB_CALLS, &d->stopping, &cal, err,
				       sizeof(err));
	}
	/* cut short by a stop: nothing to say; with a budget the agent says it (an error) */
	if (ret && ret != -ECANCELED && !d->o.max_pct)
		pr_info("culpert-bpf: cannot calibrate the cost of a probe hit: %s; there is no "
			"budget (--max-overhead 0): the culpert_agent_calibration_* metrics are "
			"absent\n", err);
	else if (!ret)
		pr_info("culpert-bpf: a probe hit costs %.0f ns on this kernel on an emulated "
			"instruction, %.0f ns single-stepped, a return probe %.0f ns more, a "
			"session's entry %.0f ns (a call %.1f ns without; median of %u rounds of "
			"%llu calls); a detach + attach %.0f us of CPU\n", cal.ns_per_hit,
			cal.step_ns, cal.ret_ns, cal.session_ns, cal.bare_ns, cal.rounds,
			(unsigned long long)cal.calls, cal.switch_ns / 1e3);
	pthread_mutex_lock(&d->lock);
	d->calib_state = ret ? ret : 1;
	d->cal = cal;
	snprintf(d->calib_err, sizeof(d->calib_err), "%s", err);
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

struct duty *duty__new(const struct duty_opts *o, const struct duty_ops *ops, void *ctx)
{
	struct duty *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->stats_fd = -1;
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
	d->model.window_ns = o->window_ns ? o->window_ns : BUDGET_WINDOW_NS;
	d->model.can_drop_inuse = ops->drop_inuse != NULL;
	d->model.can_cycle_free = ops->set_free != NULL;
	pthread_mutex_init(&d->lock, NULL);
	/*
	 * Run-time stats: what the collector's programs cost a hit is measured
	 * on the targets themselves (and the calibration's own program, to be
	 * left out of the traps' cost).  On for every BPF program while held.
	 */
	d->stats_fd = o->calibrate ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	if (o->calibrate && d->stats_fd < 0)
		pr_info("culpert-bpf: no BPF run-time stats (%s): the calibration's program stands "
			"in for the collector's in the cost of a hit\n", strerror(errno));
	if (!o->calibrate) {
		d->calib_state = 1;
		d->cal = o->given;
	} else if (pthread_create(&d->calib_thread, NULL, calibrate, d)) {
		d->calib_state = -EAGAIN;
		snprintf(d->calib_err, sizeof(d->calib_err), "cannot start its thread: %s",
			 strerror(EAGAIN));
	} else {
		d->calib_started = true;
	}
	return d;
}

void duty__free(struct duty *d)
{
	if (!d)
		return;
	/* the calibration polls stopping: it ends within one of its steps */
	d->stopping = 1;
	if (d->calib_started)
		pthread_join(d->calib_thread, NULL);
	if (d->stats_fd >= 0)
		close(d->stats_fd);
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

int duty__calibration_failed(struct duty *d, char *err, size_t errlen)
{
	int ret;

	pthread_mutex_lock(&d->lock);
	ret = d->calib_state < 0 && d->calib_state != -ECANCELED ? d->calib_state : 0;
	if (ret)
		snprintf(err, errlen, "%s", d->calib_err);
	pthread_mutex_unlock(&d->lock);
	return ret;
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

static void check_costs(struct duty *d, struct duty_entry *e);
static void watch_sys(struct duty *d, struct duty_entry *e, uint64_t now);

/*
 * Switch the allocation probes (and the free probes when the budget
 * cycles them too: off after the allocation probes, on before them, so no
 * block is sampled while its free would go unseen); what it cost in CPU
 * (twice: a period has a detach and an attach) goes into the model's
 * switch cost, a moving average over the agent's switches that replaces
 * the calibration's.
 */
/*
 * The free probes on or off.  An in-process sampler's (otel_memory:free,
 * docs/agent.md) stay: said once, and the target's budget counts them
 * paid in full from then on (step()).
 */
static int set_free(struct duty *d, struct duty_entry *e, bool on)
{
	int ret = d->ops.set_free(d->ctx, e->pid, e->start, on);

	if (ret == -EOPNOTSUPP) {
		e->free_fixed = true;
		pr_info("culpert-bpf: pid %d: its free probes are an in-process sampler's and stay "
			"on: only its allocation probes are cycled\n", (int)e->pid);
		return 0;
	}
	if (!ret)
		e->free_on = on;
	return ret;
}

static void switch_alloc(struct duty *d, struct duty_entry *e, bool on, bool with_free)
{
	struct budget_counts c;
	uint64_t cpu;
	int ret = 0;

	check_costs(d, e);
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	with_free = with_free && d->ops.set_free && !e->free_fixed && e->bt.rates.inuse &&
		    e->free_on != on;
	if (with_free && on)
		ret = set_free(d, e, true);
	if (!ret)
		ret = d->ops.set_alloc(d->ctx, e->pid, e->start, on);
	if (!ret && with_free && !on)
		ret = set_free(d, e, false);
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	d->model.switch_ns = 0.8 * d->model.switch_ns + 0.2 * 2 * (double)cpu;
	if (ret) {
		/* the collector keeps the reason in the target's state ("failed") */
		e->failed = true;
		pr_warn("pid %d: cannot %s its %s probes: %s; its duty cycle stops\n",
			(int)e->pid, on ? "re-attach" : "detach",
			with_free ? "allocation and free" : "allocation", strerror(-ret));
		return;
	}
	e->on = on;
	/* the window starts once the probes are in: attaching takes time */
	if (on) {
		e->bt.on_start_ns = d->ops.now ? d->ops.now(d->ctx) : clock_ns(CLOCK_MONOTONIC);
		/*
		 * and its counts from here: the hits made while a slow attach
		 * went on (the free probes first, then site by site) are not
		 * in its time (here 117M frees/s read off a 0.2 s window)
		 */
		if (!d->ops.counters(d->ctx, e->pid, e->start, &c))
			e->bt.at_on = c;
		e->w_marked = false;
		watch_sys(d, e, e->bt.on_start_ns);
	}
}

static void log_decision(const struct duty *d, const struct duty_entry *e)
{
	const struct budget_choice *c = &e->bt.choice;

	pr_info("culpert-bpf: pid %d: %.0f allocator calls/s and %.0f frees/s while probed, "
		"%.0f and %.0f ns a hit: duty %.4g (allocation probes%s on %.2f s of every "
		"%.1f s), "
		"estimated %.3g%% of a CPU (budget %g%%%s)%s\n", (int)e->pid,
		e->bt.rates.alloc_per_s, e->bt.rates.free_per_s,
		e->bt.rates.alloc_ns > 0 ? e->bt.rates.alloc_ns : d->model.ns_per_hit,
		e->bt.rates.free_ns > 0 ? e->bt.rates.free_ns : d->model.ns_per_hit, c->duty,
		c->free_cycled ? " and free probes" : "", (double)c->on_ns / 1e9,
		(double)c->period_ns / 1e9, c->est_pct, d->o.max_pct,
		d->o.max_pct > 0 ? "" : ": no limit", c->over ? "; over the budget even so" : "");
	if (c->free_cycled)
		pr_info("culpert-bpf: pid %d: its free probes alone would cost %.3g%% of a "
			"CPU (%.3g times their rate with both on): they go off with the "
			"allocation probes, its heap holds only the blocks allocated since they "
			"were last re-attached\n", (int)e->pid, c->free_off_pct,
			e->bt.rates.free_off_ratio > 0 ? e->bt.rates.free_off_ratio : 1);
}

/*
 * The process's CPU time, its system part and its run-queue wait so far,
 * every thread: /proc/PID/task/N/schedstat (ns) and /proc/PID/stat's
 * stime (clock ticks)
 */
static int proc_sched(pid_t pid, uint64_t *run, uint64_t *wait, uint64_t *sys)
{
	unsigned long long r, w, st;
	static long hz;
	struct dirent *de;
	char path[64];
	DIR *dir;
	FILE *f;
	int n;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	*run = *wait = *sys = 0;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/schedstat", (int)pid, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%llu %llu", &r, &w) == 2) {
			*run += r;
			*wait += w;
		}
		fclose(f);
	}
	closedir(dir);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* past "(comm)", which may hold spaces: the 13th field after is stime */
	n = fscanf(f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %llu", &st);
	fclose(f);
	if (n != 1)
		return -EINVAL;
	*sys = st * 1000000000ULL / (unsigned long long)hz;
	return 0;
}

/* a window's system calls at least, for its CPU per call to be a measure of work */
#define WORK_MIN_CALLS 1000

/*
 * The read and write system calls of the process so far (/proc/PID/io
 * syscr + syscw): for a server, a count of its work that needs no probe
 */
static int proc_calls(pid_t pid, uint64_t *out)
{
	unsigned long long r = 0, w = 0;
	char path[40], line[64];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		n += sscanf(line, "syscr: %llu", &r) + sscanf(line, "syscw: %llu", &w);
	fclose(f);
	*out = r + w;
	return n == 2 ? 0 : -EINVAL;
}

/*
 * The costs checked against the target's own CPU time: over an on window
 * and the off window after it, the CPU share it ran with the probes on
 * less the share with them off is what the probes switched cost it.  A
 * process that would run all the time (its CPU plus its run-queue wait
 * over 90% of the time) pays the probes in work it does not do rather
 * than in more CPU: there the system part of its CPU, where the traps and
 * the programs are, says it instead.  Summed over the pairs (older ones
 * fading), against what the site costs predicted for the rates of each
 * window: the ratio (within SCALE_MIN-SCALE_MAX) scales the target's
 * costs from then on.  It catches what no calibration in a child can see:
 * the traps of a site shared with other consumers, the caches a real
 * program loses.  A server that makes system calls (WORK_MIN_CALLS in
 * each window) has its work counted by them: the CPU it ran with the
 * probes on less what its calls would have cost at the off window's CPU
 * per call, what a loaded machine's busy process pays in user time too,
 * and a change of its load between the windows cancels out.
 */
static void check_costs(struct duty *d, struct duty_entry *e)
{
	uint64_t now = d->ops.now ? d->ops.now(d->ctx) : clock_ns(CLOCK_MONOTONIC);
	uint64_t run = 0, wait = 0, sys = 0;
	const struct budget_rates *r = &e->bt.rates;
	double dt, cpu, sysr, pred, k, calls = 0, extra;
	uint64_t nc = 0;
	const char *by;
	bool busy, work;

	if (!d->o.calibrate || proc_sched(e->pid, &run, &wait, &sys))
		return;
	if (proc_calls(e->pid, &nc))
		nc = 0;
	dt = (double)(now - e->mark_ns);
	if (e->marked && dt > 0 && run >= e->mark_run && wait >= e->mark_wait &&
	    sys >= e->mark_sys) {
		cpu = (double)(run - e->mark_run) / dt;
		sysr = (double)(sys - e->mark_sys) / dt;
		busy = (double)(run - e->mark_run + wait - e->mark_wait) > 0.9 * dt;
		calls = nc >= e->mark_calls ? (double)(nc - e->mark_calls) / dt : 0;
		if (e->on) {
			/* the window ending now was on: what the costs say each side cost, raw */
			k = e->bt.cost_scale > 0 ? e->bt.cost_scale : 1;
			e->on_pred_alloc = r->alloc_per_s * r->alloc_ns / 1e9 / k;
			e->on_pred_free = r->inuse ? r->free_per_s * r->free_ns / 1e9 / k : 0;
			e->on_cpu = cpu;
			e->on_sys = sysr;
			e->on_busy = busy;
			e->on_calls = calls;
			e->on_dt = dt;
			e->have_on = true;
		} else if (e->have_on) {
			/*
			 * the off window ending now had the free probes off too, or
			 * not: then they cost it what its own free rate says
			 */
			k = e->bt.cost_scale > 0 ? e->bt.cost_scale : 1;
			pred = e->on_pred_alloc + e->on_pred_free;
			if (e->free_on && e->last.free >= e->mark_free)
				pred -= (double)(e->last.free - e->mark_free) / dt * r->free_ns / k;
			busy = busy || e->on_busy;
			work = e->on_calls * e->on_dt >= WORK_MIN_CALLS && calls * dt >= WORK_MIN_CALLS;
			if (work) {
				extra = e->on_cpu - e->on_calls * cpu / calls;
				by = "CPU per system call";
			} else if (busy) {
				extra = e->on_sys - sysr;
				by = "system CPU";
			} else {
				extra = e->on_cpu - cpu;
				by = "CPU";
			}
			e->have_on = false;
			*(e->free_on ? &e->base_alloc_off : &e->base_both_off) = sysr;
			/*
			 * A process that runs flat out pays the free probes alone
			 * nearly all it pays with both on (the frees run as fast as
			 * their traps let them): the difference of the two windows
			 * is then noise, no measure of a hit's cost
			 */
			if (!(pred > SCALE_MIN_SWITCHED * (e->on_pred_alloc + e->on_pred_free))) {
				pr_debug("culpert-bpf: pid %d: the allocation probes switched "
					 "alone predict %.3g%% of a CPU: no check of the costs\n",
					 (int)e->pid, pred * 100);
				e->check_both = true;
				goto mark;
			}
			e->check_both = false;
			e->extra_ns = SCALE_KEEP * e->extra_ns + extra * e->on_dt;
			e->pred_ns = SCALE_KEEP * e->pred_ns + pred * e->on_dt;
			/* 10 ms of predicted cost at least: a few clock ticks of stime */
			if (e->pred_ns >= 1e7) {
				k = e->extra_ns / e->pred_ns;
				budget_target_rescale(&e->bt, &d->model, k < SCALE_MIN ? SCALE_MIN :
						      k > SCALE_MAX ? SCALE_MAX : k, now);
				e->bt.scale_checked = true;
				pr_info("culpert-bpf: pid %d: by its %s, the probes cost it %.3g%% "
					"of a CPU while on (its CPU %.3g%% on, %.3g%% off, system "
					"CPU %.3g%% and %.3g%%): the costs of a hit scaled by "
					"%.3g\n", (int)e->pid, by, extra * 100, e->on_cpu * 100,
					cpu * 100, e->on_sys * 100, sysr * 100,
					e->bt.cost_scale);
			}
		}
	}
mark:
	e->mark_ns = now;
	e->mark_run = run;
	e->mark_wait = wait;
	e->mark_sys = sys;
	e->mark_calls = nc;
	e->mark_free = e->last.free;
	e->marked = true;
}

/*
 * A target on all the time is checked only when something says its costs
 * are off: over each on window that ends in a decision, its system CPU
 * share less its share with the probes off is an upper bound of what the
 * traps and programs cost it, its own system calls aside.  Far above what
 * its costs predict (twice, and by a quarter of the budget: ten clock
 * ticks of stime over a 4 s window at 10%), the window ends in an off
 * window that measures them (budget_target.want_check): a site cost the
 * load or other consumers raised is seen within a window, not never.  The
 * share with both kinds of probes off is the base once known; before, the
 * share with the allocation probes off (the free probes' cost is in it),
 * and a system CPU over the budget by itself has the free probes go off
 * in the check too, once: that restarts the heap, but the heap of a
 * target over its budget is partial anyway.
 */
static void watch_sys(struct duty *d, struct duty_entry *e, uint64_t now)
{
	const struct budget_rates *r = &e->bt.rates;
	double dt, sysr, extra, pred, b = d->o.max_pct / 100;
	bool both = e->base_both_off >= 0 || !r->inuse;
	uint64_t run, wait, sys;

	if (!d->o.calibrate || !e->on || proc_sched(e->pid, &run, &wait, &sys))
		return;
	dt = (double)(now - e->w_ns);
	if (e->w_marked && dt > 0 && sys >= e->w_sys && e->bt.decisions &&
	    e->bt.choice.duty >= 1 && b > 0) {
		sysr = (double)(sys - e->w_sys) / dt;
		/* the costs as scaled now: what the estimate stands on */
		pred = r->alloc_per_s * r->alloc_ns / 1e9 +
		       (r->inuse && both ? r->free_per_s * r->free_ns / 1e9 : 0);
		extra = sysr - (both ? (e->base_both_off > 0 ? e->base_both_off : 0) :
				(e->base_alloc_off > 0 ? e->base_alloc_off : 0));
		e->bt.want_check_free = e->check_both || (!both && sysr - pred > b);
		if (e->bt.want_check_free || (extra > 2 * pred && extra - pred > b / 4)) {
			e->bt.want_check = true;
			pr_info("culpert-bpf: pid %d: its system CPU %.3g%% of a CPU, %.3g%% over "
				"its share with the %s probes off, its costs predict %.3g%%: "
				"checking them%s\n", (int)e->pid, sysr * 100, extra * 100,
				both ? "allocation and free" : "allocation", pred * 100,
				e->bt.want_check_free ? " with the free probes off too" : "");
		}
	}
	e->w_ns = now;
	e->w_sys = sys;
	e->w_marked = true;
}

/* in-use tracking cannot stay within the budget: the free probes go, live blocks with them */
static void drop_inuse(struct duty *d, struct duty_entry *e)
{
	double free_per_s = e->bt.rates.free_per_s;
	int ret = d->ops.drop_inuse(d->ctx, e->pid, e->start);

	pr_warn("pid %d: its free probes alone would cost %.3g%% of a CPU (%.0f frees/s), over "
		"--max-overhead %g%%: in-use (heap) tracking %s\n", (int)e->pid,
		e->bt.choice.free_off_pct, free_per_s, d->o.max_pct,
		ret ? "could not be dropped: the free probes stay and the target is over budget" :
		"is dropped for this target, its heap profile says so");
	if (ret) {
		/* counted again from now on, and never offered to drop again */
		e->bt.rates.inuse = true;
		d->model.can_drop_inuse = false;
	}
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
	/* the calibration's program until the collector's are measured (the traps are without) */
	d->model.alloc_prog_ns = d->model.free_prog_ns = cal.prog_ns;
	d->used_cal = cal;
	return true;
}

/*
 * The target's costs by site class: its return mode from the collector,
 * the classes' costs from the calibration (the BPF side counts the hits on
 * single-stepped sites apart, so the mix is measured, not assumed).
 */
static void set_costs(struct duty *d, struct duty_entry *e)
{
	bool session = false, every_return = false;

	if (d->ops.returns && d->ops.returns(d->ctx, e->pid, e->start, &session, &every_return))
		return;
	budget_site_costs(&d->used_cal, session, every_return, &e->bt.costs);
	if (!(e->bt.costs.alloc > 0))
		e->bt.costs = (struct budget_site_costs){ 0 };
	e->costs_set = true;
}

static void step(struct duty *d, struct duty_entry *e, uint64_t now_ns)
{
	struct budget_model model;
	struct budget_action act;
	struct budget_counts c;

	if (e->failed || d->ops.counters(d->ctx, e->pid, e->start, &c))
		return;
	d->hits_alloc += c.alloc - e->last.alloc;
	d->hits_free += c.free - e->last.free;
	e->last = c;
	if (!e->costs_set)
		set_costs(d, e);
	/* an on window about to end in a decision */
	if (e->bt.phase == BUDGET_ON && now_ns >= e->bt.phase_end_ns)
		watch_sys(d, e, now_ns);
	model = d->model;
	/* free probes that cannot be switched are paid in full, as when they are kept */
	if (e->free_fixed)
		model.can_cycle_free = model.can_drop_inuse = false;
	budget_target_step(&e->bt, &model, now_ns, &c, &act);
	if (act.drop_inuse)
		drop_inuse(d, e);
	if (act.decided)
		log_decision(d, e);
	if (act.switch_alloc)
		switch_alloc(d, e, act.alloc_on, act.switch_free);
}

/* a target new to the duty cycle: its probes are on (the collector attached them) */
static void start_entry(struct duty *d, struct duty_entry *e, pid_t pid, uint64_t start,
			uint64_t now_ns)
{
	struct budget_counts c;

	if (d->ops.counters(d->ctx, pid, start, &c))
		return;
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->start = start;
	e->used = e->seen = e->on = true;
	e->free_on = d->o.inuse;
	e->last = c;
	e->base_alloc_off = e->base_both_off = -1;
	budget_target_init(&e->bt, now_ns, d->o.inuse, &c);
	check_costs(d, e);
	watch_sys(d, e, now_ns);
}

/* blend a new measurement into a figure: the first replaces the stand-in */
static void blend(double *into, double v, bool first)
{
	*into = first ? v : 0.5 * *into + 0.5 * v;
}

/*
 * The collector's programs' CPU per allocator hit and per free hit, all
 * targets together, over a second at least: what they cost on top of the
 * trap (a program that samples, follows returns and tracks blocks costs
 * several times the calibration's).
 */
static void measure_progs(struct duty *d, uint64_t now_ns)
{
	uint64_t a, f;

	if (!d->ops.prog_run_ns || d->stats_fd < 0)
		return;
	d->ops.prog_run_ns(d->ctx, &a, &f);
	if (!d->prog_t0) {
		d->prog_t0 = now_ns;
		d->prog_alloc0 = a;
		d->prog_free0 = f;
		d->hits_alloc = d->hits_free = 0;
		return;
	}
	if (now_ns - d->prog_t0 < PROG_MEASURE_NS)
		return;
	if (d->hits_alloc >= PROG_MEASURE_HITS && a >= d->prog_alloc0)
		blend(&d->model.alloc_prog_ns, (double)(a - d->prog_alloc0) / (double)d->hits_alloc,
		      !d->prog_measured);
	if (d->hits_free >= PROG_MEASURE_HITS && f >= d->prog_free0)
		blend(&d->model.free_prog_ns, (double)(f - d->prog_free0) / (double)d->hits_free,
		      !d->prog_measured);
	if (d->hits_alloc >= PROG_MEASURE_HITS)
		d->prog_measured = true;
	d->prog_t0 = now_ns;
	d->prog_alloc0 = a;
	d->prog_free0 = f;
	d->hits_alloc = d->hits_free = 0;
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
	v->free_on = e->free_on;
	v->free_cycled = e->bt.choice.free_cycled;
	v->alloc_ns = e->bt.rates.alloc_ns > 0 ? e->bt.rates.alloc_ns : d->model.ns_per_hit;
	v->free_ns = e->bt.rates.free_ns > 0 ? e->bt.rates.free_ns : d->model.ns_per_hit;
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
	if (n && d->ops.read_all)
		d->ops.read_all(d->ctx);
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
	if (ready)
		measure_progs(d, now_ns);
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
