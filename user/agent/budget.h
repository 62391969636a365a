/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's overhead budget (docs/agent.md "Overhead
 * budget"): what one probe hit costs a process on this kernel (calibrated
 * once at start-up), each target's allocator call rate from the BPF
 * counters, and per period the share of time its allocation probes are
 * attached so that the target's estimated added CPU stays within
 * --max-overhead.
 *
 * budget_choose() and the budget_target state machine are pure (no clock,
 * no I/O): the profiling thread feeds them the time and the counters and
 * carries out what they say through the collector.
 */
#ifndef CULPERT_BUDGET_H
#define CULPERT_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUDGET_PERIOD_NS (60ULL * 1000000000ULL)	/* default --duty-period */
#define BUDGET_MIN_ON_NS (200ULL * 1000000ULL)		/* two turns of the agent's loop */
#define BUDGET_FIRST_ON_NS (1000ULL * 1000000ULL)	/* first measurement after pick-up */

/* what the choice is made from, the same for every target */
struct budget_model {
	double max_pct;		/* --max-overhead: % of one CPU per target; 0: no limit */
	double ns_per_hit;	/* calibrated cost of one probe hit to the target */
	double switch_ns;	/* one detach + re-attach of a target's allocation probes */
	uint64_t period_ns;	/* the duty period */
	uint64_t min_on_ns;	/* the shortest on window (the period stretches to keep it) */
	uint64_t max_period_ns;	/* the longest a period may stretch to */
	bool can_drop_inuse;	/* the collector can detach the free probes for good */
};

/* a target's measured rates, probe hits per second of the time the probes were on */
struct budget_rates {
	double alloc_per_s;
	double free_per_s;
	bool inuse;		/* in-use tracking still on: the free probes stay attached */
};

struct budget_choice {
	double duty;		/* share of the period the allocation probes are on, 0..1 */
	uint64_t period_ns;
	uint64_t on_ns;		/* duty * period_ns */
	bool inuse;		/* false: the free probes alone exceed the budget, in-use dropped */
	bool over;		/* even the shortest window at the longest period exceeds it */
	double est_pct;		/* estimated CPU the target pays, % of one CPU */
	double free_pct;	/* the free probes' part of it */
};

/* the estimate, % of one CPU, of allocation probes on `duty` of a period_ns period */
double budget_estimate_pct(const struct budget_model *m, const struct budget_rates *r,
			   double duty, uint64_t period_ns);
/* the duty for the next period; fills *out */
void budget_choose(const struct budget_model *m, const struct budget_rates *r,
		   struct budget_choice *out);

/* one target's duty cycle */
enum budget_phase { BUDGET_ON, BUDGET_OFF };

struct budget_target {
	enum budget_phase phase;
	uint64_t phase_end_ns;		/* when the current window ends */
	uint64_t on_start_ns;		/* the current (or last) on window's start */
	uint64_t alloc_at_on;		/* the alloc counter then */
	uint64_t decided_ns;		/* the last decision (or pick-up) */
	uint64_t free_at_decided;	/* the free counter then */
	uint64_t observed_ns;		/* total time the allocation probes were on */
	struct budget_rates rates;	/* as last measured */
	struct budget_choice choice;	/* the last decision (duty 1 until the first) */
	unsigned int decisions;
};

/* what the profiling thread must do after budget_target_step() */
struct budget_action {
	bool switch_alloc;	/* attach (alloc_on) or detach the allocation probes now */
	bool alloc_on;
	bool drop_inuse;	/* detach the free probes and discard the live blocks, for good */
	bool decided;		/* a new choice was made (-v logs it when the duty changed) */
};

/* the probes were just attached at now_ns with these counter values */
void budget_target_init(struct budget_target *bt, uint64_t now_ns, bool inuse,
			uint64_t alloc_hits, uint64_t free_hits);
/*
 * Advance to now_ns with the target's cumulative alloc and free probe
 * hits; fills *act.  Counters must not go backwards.
 */
void budget_target_step(struct budget_target *bt, const struct budget_model *m, uint64_t now_ns,
			uint64_t alloc_hits, uint64_t free_hits, struct budget_action *act);
/* the time the allocation probes have been on, up to now_ns */
uint64_t budget_target_observed(const struct budget_target *bt, uint64_t now_ns);

/* the median of v[0..n) (sorted in place); 0 for n == 0 */
double budget_median(double *v, unsigned int n);

struct budget_calibration {
	double ns_per_hit;	/* median over rounds of (probed - bare) per call */
	double bare_ns;		/* median ns per call without the probe */
	double switch_ns;	/* median wall time of one attach + detach */
	unsigned int rounds;
	uint64_t calls;		/* per run */
};

/*
 * Calibrate: a child process calls a function `calls` times per run, with
 * a uprobe (the calib program) attached and without, interleaved over
 * `rounds` rounds; every probed run's hits are checked against the calls.
 * 0, or -errno with the reason in err.
 */
int budget_calibrate(unsigned int rounds, uint64_t calls, struct budget_calibration *out,
		     char *err, size_t errlen);

#endif /* CULPERT_BUDGET_H */
