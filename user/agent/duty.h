/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's duty cycles: on the profiling thread, every live target's
 * budget_target (budget.h) advanced at each turn of the loop, and what it
 * says carried out through the collector; the per-hit calibration on a
 * thread of its own at start-up; a locked view for /metrics.  The
 * collector is reached through duty_ops so this builds and is tested
 * without it.
 */
#ifndef CULPERT_DUTY_H
#define CULPERT_DUTY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "budget.h"

struct duty_ops {
	/* a tick begins: every target's counters may be read at once now; NULL: nothing to do */
	void (*read_all)(void *ctx);
	/* cumulative allocation and free probe hits since pick-up, by class; 0 or -errno */
	int (*counters)(void *ctx, pid_t pid, uint64_t start, struct budget_counts *out);
	/* detach (false) or re-attach (true) the allocation probes; 0 or -errno */
	int (*set_alloc)(void *ctx, pid_t pid, uint64_t start, bool on);
	/*
	 * the same for the free probes (with --inuse; the heap is partial from
	 * then on); NULL: they stay attached
	 */
	int (*set_free)(void *ctx, pid_t pid, uint64_t start, bool on);
	/*
	 * how the target's allocations return: a session, a return probe on every call; NULL:
	 * neither
	 */
	int (*returns)(void *ctx, pid_t pid, uint64_t start, bool *session, bool *every_return);
	/* detach the free probes and discard the live blocks for good; NULL if impossible */
	int (*drop_inuse)(void *ctx, pid_t pid, uint64_t start);
	/*
	 * the CPU time the collector's allocation-side and free-side programs
	 * ran so far, every target together (BPF run-time stats); NULL: the
	 * calibration's program stands in for them
	 */
	void (*prog_run_ns)(void *ctx, uint64_t *alloc_ns, uint64_t *free_ns);
	/* the clock of duty__tick's now_ns, read after an attach; NULL: CLOCK_MONOTONIC */
	uint64_t (*now)(void *ctx);
};

struct duty_opts {
	double max_pct;		/* --max-overhead */
	uint64_t period_ns;	/* --duty-period */
	uint64_t window_ns;	/* the oldest a measurement gets; 0: BUDGET_WINDOW_NS */
	bool inuse;		/* --inuse: the free probes are attached */
	size_t max_targets;
	bool calibrate;		/* false: the caller gives the calibration (tests) */
	struct budget_calibration given;
};

/* what /metrics shows of one target */
struct duty_view {
	pid_t pid;
	uint64_t start;
	bool on;		/* allocation probes attached now */
	bool inuse;
	bool over;		/* even the longest period exceeds the budget */
	bool decided;		/* measured at least once */
	bool free_on;		/* free probes attached now (with inuse) */
	bool free_cycled;	/* the free probes are switched too: the heap is partial */
	double duty, est_pct, alloc_per_s, free_per_s;
	/* its mean cost of a hit, by the classes of the sites hit */
	double alloc_ns, free_ns;
	uint64_t observed_ns, period_ns;
};

struct duty;

/* starts the calibration thread (o->calibrate); NULL on -ENOMEM */
struct duty *duty__new(const struct duty_opts *o, const struct duty_ops *ops, void *ctx);
void duty__free(struct duty *d);
/*
 * One turn: the live targets (pids[i], starts[i]) at now_ns (monotonic);
 * targets new to it start with their probes on, gone ones are forgotten.
 */
void duty__tick(struct duty *d, const pid_t *pids, const uint64_t *starts, size_t n,
		uint64_t now_ns);
/* the calibration once done: true and *out; false while it runs or after it failed */
bool duty__calibration(struct duty *d, struct budget_calibration *out);
/*
 * A calibration that failed: its -errno, and why in err; 0 while it runs or
 * once it is done.  With a budget the agent stops on it (docs/agent.md).
 */
int duty__calibration_failed(struct duty *d, char *err, size_t errlen);
/* a copy of every target's view; *v freed by the caller.  0 or -ENOMEM */
int duty__views(struct duty *d, struct duty_view **v, size_t *n);

#endif /* CULPERT_DUTY_H */
