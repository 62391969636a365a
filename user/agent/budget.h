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
/*
 * The oldest a measurement gets: a target within budget is measured again
 * this often, and a duty cycle's period is no longer (unless its shortest
 * window needs it), so the estimate follows the load within it.
 */
#define BUDGET_WINDOW_NS (4000ULL * 1000000ULL)
/*
 * A target within budget but near it has its allocation probes off this
 * long, a few times, so that its own CPU time can check the costs
 */
#define BUDGET_CHECK_OFF_NS (1000ULL * 1000000ULL)
#define BUDGET_CHECK_TRIES 3
/* an off window's free hits at least, for their rate to say what they cost alone */
#define BUDGET_RATIO_MIN_HITS 100

/* what the choice is made from, the same for every target */
struct budget_model {
	double max_pct;		/* --max-overhead: % of one CPU per target; 0: no limit */
	double ns_per_hit;	/* calibrated cost of one hit on an emulated probe */
	double switch_ns;	/* one detach + re-attach of a target's allocation probes */
	uint64_t period_ns;	/* the duty period */
	uint64_t min_on_ns;	/* the shortest on window (the period stretches to keep it) */
	uint64_t max_period_ns;	/* the longest a period may stretch to */
	/*
	 * the oldest a measurement gets (BUDGET_WINDOW_NS): a period no longer
	 * unless its shortest window needs it, a target on all the time
	 * measured again this often; 0: the period
	 */
	uint64_t window_ns;
	bool can_drop_inuse;	/* the collector can detach the free probes for good */
	bool can_cycle_free;	/* the collector can switch the free probes off and on */
	/*
	 * the collector's programs' own CPU per allocator and per free hit, as
	 * the BPF run-time stats measure them on the targets; 0: in the
	 * site costs already (the calibration's program stands in)
	 */
	double alloc_prog_ns, free_prog_ns;
};

/* a target's measured rates, probe hits per second of the time the probes were on */
struct budget_rates {
	double alloc_per_s;
	double free_per_s;
	/* this target's mean cost of an allocator / a deallocator hit; 0: the model's ns_per_hit */
	double alloc_ns, free_ns;
	/*
	 * the free probes' hits/s in an off window that kept them (the
	 * allocation probes off) over free_per_s, as last measured; 0: not
	 * yet (1).  A process that runs flat out frees faster once the
	 * allocation probes stop slowing it (docs/agent.md, "Overhead budget")
	 */
	double free_off_ratio;
	bool inuse;		/* in-use tracking still on: the free probes stay attached */
};

struct budget_choice {
	double duty;		/* share of the period the allocation probes are on, 0..1 */
	uint64_t period_ns;
	uint64_t on_ns;		/* duty * period_ns */
	bool inuse;		/* false: the free probes alone exceed the budget, in-use dropped */
	/*
	 * the free probes alone exceed it: they go off with the allocation probes, the heap is
	 * partial
	 */
	bool free_cycled;
	bool over;		/* even the shortest window at the longest period exceeds it */
	double est_pct;		/* estimated CPU the target pays, % of one CPU */
	double free_pct;	/* the free probes' part of it */
	double free_off_pct;	/* what they alone cost, with the allocation probes off */
};

/* the estimate, % of one CPU, of allocation probes on `duty` of a period_ns period */
double budget_estimate_pct(const struct budget_model *m, const struct budget_rates *r,
			   double duty, uint64_t period_ns);
/* the duty for the next period; fills *out */
void budget_choose(const struct budget_model *m, const struct budget_rates *r,
		   struct budget_choice *out);

/* one target's duty cycle */
enum budget_phase { BUDGET_ON, BUDGET_OFF };

/* a target's cumulative probe hits, and of them those on single-stepped probes */
struct budget_counts {
	uint64_t alloc, free;
	uint64_t alloc_stepped, free_stepped;
};

/* what one hit costs this target, by the class of the probe it hits (ns) */
struct budget_site_costs {
	/* allocator entries (with their return probes, if any) */
	double alloc, alloc_stepped;
	double free, free_stepped;	/* deallocator entries */
};

struct budget_target {
	enum budget_phase phase;
	uint64_t phase_end_ns;		/* when the current window ends */
	uint64_t on_start_ns;		/* the current (or last) on window's start */
	struct budget_counts at_on;	/* the counters then */
	uint64_t off_start_ns;		/* the current (or last) off window's start */
	struct budget_counts at_off;	/* the counters then */
	/* the last off window's free hits/s, the free probes on in it; 0: none such yet */
	double off_free_per_s;
	uint64_t decided_ns;		/* the last decision (or pick-up) */
	struct budget_site_costs costs;	/* all 0: the model's ns_per_hit for every hit */
	uint64_t observed_ns;		/* total time the allocation probes were on */
	struct budget_rates rates;	/* as last measured */
	struct budget_choice choice;	/* the last decision (duty 1 until the first) */
	unsigned int decisions;
	/* the current on window is a cycle's (not a measurement) */
	bool cycled_on;
	/*
	 * what the target's own CPU time said the probes cost it, over what
	 * the site costs predicted (1 until measured): scales its costs
	 */
	double cost_scale;
	bool scale_checked;		/* cost_scale measured at least once */
	unsigned int check_tries;	/* off windows taken only to check the costs */
	bool check_free;		/* the current check has the free probes off too */
	/*
	 * the target's system CPU says its hits cost far more than the costs
	 * predict: the end of this on window takes an off window to check them
	 */
	bool want_check;
	/* and the free probes go off with the allocation probes in it (the heap restarts) */
	bool want_check_free;
};

/* what the profiling thread must do after budget_target_step() */
struct budget_action {
	bool switch_alloc;	/* attach (alloc_on) or detach the allocation probes now */
	bool alloc_on;
	bool drop_inuse;	/* detach the free probes and discard the live blocks, for good */
	/* the free probes too: off after the allocation probes, on before */
	bool switch_free;
	bool decided;		/* a new choice was made (-v logs it when the duty changed) */
};

/* the probes were just attached at now_ns with these counter values */
void budget_target_init(struct budget_target *bt, uint64_t now_ns, bool inuse,
			const struct budget_counts *c);
/*
 * Advance to now_ns with the target's cumulative probe hits; fills *act.
 * Counters must not go backwards.  The off window that follows an on
 * window is as long as the on window actually lasted needs for the duty
 * (a loaded machine that ends it late lengthens the off window too).
 */
void budget_target_step(struct budget_target *bt, const struct budget_model *m, uint64_t now_ns,
			const struct budget_counts *c, struct budget_action *act);
/*
 * The target's own CPU time says a hit costs `scale` times its site costs:
 * its rates' costs follow now, and an on window that the last rates at
 * these costs say is too long for the budget ends sooner (a cost found 100
 * times the calibration's is not paid for a whole window more)
 */
void budget_target_rescale(struct budget_target *bt, const struct budget_model *m, double scale,
			   uint64_t now_ns);
/* the time the allocation probes have been on, up to now_ns */
uint64_t budget_target_observed(const struct budget_target *bt, uint64_t now_ns);

/* the median of v[0..n) (sorted in place); 0 for n == 0 */
double budget_median(double *v, unsigned int n);

struct budget_calibration {
	/* median over rounds of (probed - bare) per call: an emulated probe */
	double ns_per_hit;
	double step_ns;		/* the same on a single-stepped instruction */
	double ret_ns;		/* a return probe's part of an entry + return probe pair */
	/* a uprobe session's entry that asks for no return; 0: no sessions */
	double session_ns;
	double bare_ns;		/* median ns per call without the probe */
	/* of each hit, what the calibration's program ran (BPF run-time stats); 0: not known */
	double prog_ns;
	double switch_ns;	/* median CPU of one attach + detach */
	unsigned int rounds;
	uint64_t calls;		/* per run */
};

/*
 * Calibrate: a child process calls a function `calls` times per run, with
 * a uprobe (the calib program) attached and without, interleaved over
 * `rounds` rounds; every probed run's hits are checked against the calls.
 * Each class of probe site its own way: an emulated instruction, a
 * single-stepped one, an entry with a return probe, a session (where the
 * kernel has them).  Cut short (-ECANCELED) between two runs once *stop
 * (may be NULL) is set: an agent stopping does not wait for a calibration
 * of several seconds.  0, or -errno with the reason in err.
 */
int budget_calibrate(unsigned int rounds, uint64_t calls, const volatile int *stop,
		     struct budget_calibration *out, char *err, size_t errlen);

/* a target's costs by site class from the calibration, for its inuse mode */
void budget_site_costs(const struct budget_calibration *cal, bool session, bool every_return,
		       struct budget_site_costs *out);

#endif /* CULPERT_BUDGET_H */
