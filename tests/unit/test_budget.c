// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The overhead budget's arithmetic (user/agent/budget.c) against hand
 * computations: the duty choice, the period stretched to keep the shortest
 * window, in-use dropped when the free probes alone exceed the budget, no
 * limit, and one target's duty cycle with its observed time.  The model
 * throughout: 1% of one CPU, 500 ns a hit, 2 ms a detach + attach, a 60 s
 * period, windows of 0.2 s at least, periods of 600 s at most.
 */
#include <errno.h>

#include "test.h"

#include "budget.h"
#include "duty.h"

#define S 1000000000ULL

static const struct budget_model model = {
	.max_pct = 1,
	.ns_per_hit = 500,
	.switch_ns = 2e6,
	.period_ns = 60 * S,
	.min_on_ns = S / 5,
	.max_period_ns = 600 * S,
	.can_drop_inuse = true,
};

static void choose(double alloc, double free_, bool inuse, struct budget_choice *c)
{
	struct budget_rates r = { .alloc_per_s = alloc, .free_per_s = free_, .inuse = inuse };

	budget_choose(&model, &r, c);
}

/* 10k allocs/s = 0.5% of a CPU, 5k frees/s = 0.25%: 0.75% fits, the probes stay on */
static void test_within_budget(void)
{
	struct budget_choice c;

	choose(10000, 5000, true, &c);
	ASSERT_NEAR(c.duty, 1, 0, "duty");
	ASSERT_EQ(c.on_ns, c.period_ns, "on all the period");
	ASSERT_EQ(c.period_ns, 60 * S, "period");
	ASSERT_NEAR(c.est_pct, 0.75, 1e-9, "estimate");
	ASSERT_NEAR(c.free_pct, 0.25, 1e-9, "free part");
	ASSERT_TRUE(c.inuse && !c.over, "in-use kept, not over");
}

/*
 * 100k allocs/s = 5%, 10k frees/s = 0.5%: the window is
 * ((1% - 0.5%) * 60 s - 2 ms) / 5% = 5.96 s, duty 5.96 / 60 = 0.099333...,
 * estimate 0.0993 * 5% + 0.5% + 2 ms / 60 s = 1%
 */
static void test_duty(void)
{
	struct budget_choice c;

	choose(100000, 10000, true, &c);
	ASSERT_NEAR(c.duty, 5.96 / 60, 1e-9, "duty");
	ASSERT_EQ(c.period_ns, 60 * S, "period");
	ASSERT_NEAR((double)c.on_ns, 5.96e9, 1, "window");
	ASSERT_NEAR(c.est_pct, 1, 1e-9, "estimate at the budget");
	ASSERT_NEAR(c.free_pct, 0.5, 1e-9, "free part");
	ASSERT_NEAR(budget_estimate_pct(&model, &(struct budget_rates){ .alloc_per_s = 100000,
					.free_per_s = 10000, .inuse = true },
					0.5, 60 * S), 2.5 + 0.5 + 2e6 / 60e9 * 100, 1e-9,
		    "estimate at duty 0.5");
	ASSERT_TRUE(c.inuse && !c.over, "in-use kept, not over");
}

/*
 * 4M allocs/s = 200%: at 60 s the window would be 0.149 s < 0.2 s, so the
 * period stretches to (0.2 s * 2 + 2 ms) / (1% - 0.5%) = 80.4 s; duty
 * 0.2 / 80.4, estimate 0.2/80.4 * 200% + 0.5% + 2 ms / 80.4 s = 1%
 */
static void test_stretch(void)
{
	struct budget_choice c;

	choose(4e6, 10000, true, &c);
	ASSERT_NEAR((double)c.period_ns, 80.4e9, 1, "stretched period");
	ASSERT_NEAR((double)c.on_ns, 0.2e9, 1, "shortest window");
	ASSERT_NEAR(c.duty, 0.2 / 80.4, 1e-9, "duty");
	ASSERT_NEAR(c.est_pct, 1, 1e-9, "estimate at the budget");
	ASSERT_TRUE(!c.over, "not over");
}

/*
 * 30k frees/s = 1.5% > 1%: in-use dropped, the free probes' cost with it;
 * 100k allocs/s: window (1% * 60 s - 2 ms) / 5% = 11.96 s, duty 0.199333
 */
static void test_drop_inuse(void)
{
	struct budget_choice c;

	choose(100000, 30000, true, &c);
	ASSERT_TRUE(!c.inuse, "in-use dropped");
	ASSERT_NEAR(c.duty, 11.96 / 60, 1e-9, "duty");
	ASSERT_NEAR(c.est_pct, 1, 1e-9, "estimate");
	ASSERT_NEAR(c.free_pct, 0, 0, "no free part");
	/*
	 * a collector that cannot drop in-use: the free probes' 1.5% stays, no
	 * window fits, the longest period (600 s) with the shortest window, over
	 */
	{
		struct budget_model m = model;
		struct budget_rates r = { .alloc_per_s = 100000, .free_per_s = 30000,
					  .inuse = true };

		m.can_drop_inuse = false;
		budget_choose(&m, &r, &c);
		ASSERT_TRUE(c.inuse && c.over, "in-use kept, over");
		ASSERT_NEAR(c.duty, 0.2 / 600, 1e-12, "shortest duty");
		ASSERT_NEAR(c.est_pct, 0.2 / 600 * 5 + 1.5 + 2e6 / 600e9 * 100, 1e-9, "estimate");
	}
	/* without in-use asked for, the free rate costs nothing */
	choose(100000, 30000, false, &c);
	ASSERT_NEAR(c.duty, 11.96 / 60, 1e-9, "duty without in-use");
}

/*
 * 19.8k frees/s = 0.99% leaves 0.01%; 4M allocs/s would need a period of
 * (0.2 s * 2 + 2 ms) / 0.0001 = 4020 s > 600 s: 600 s, a 0.2 s window,
 * duty 1/3000, estimate 1/3000 * 200% + 0.99% + 2 ms / 600 s = 1.05700%,
 * over the budget and said so
 */
static void test_over(void)
{
	struct budget_choice c;

	choose(4e6, 19800, true, &c);
	ASSERT_EQ(c.period_ns, 600 * S, "longest period");
	ASSERT_NEAR(c.duty, 1.0 / 3000, 1e-12, "duty");
	ASSERT_NEAR(c.est_pct, 200.0 / 3000 + 0.99 + 2e6 / 600e9 * 100, 1e-9, "estimate");
	ASSERT_TRUE(c.over && c.inuse, "over, in-use kept");
}

/* --max-overhead 0: duty 1 whatever the rates, the estimate still reported (5% + 0.5%) */
static void test_no_limit(void)
{
	struct budget_model m = model;
	struct budget_rates r = { .alloc_per_s = 100000, .free_per_s = 10000, .inuse = true };
	struct budget_choice c;

	m.max_pct = 0;
	budget_choose(&m, &r, &c);
	ASSERT_NEAR(c.duty, 1, 0, "duty");
	ASSERT_NEAR(c.est_pct, 5.5, 1e-9, "estimate");
	ASSERT_TRUE(c.inuse && !c.over, "in-use kept, never over");
}

/*
 * The cycle of test_duty's target: on for the first second (100k allocs,
 * 10k frees), off for 60 - 5.96 = 54.04 s, on for 5.96 s, and so on; the
 * observed time is the sum of the on windows.
 */
static void test_cycle(void)
{
	struct budget_target bt;
	struct budget_action a;

	budget_target_init(&bt, 0, true, &(struct budget_counts){ .alloc = 0, .free = 0 });
	budget_target_step(&bt, &model, S / 2,
			   &(struct budget_counts){ .alloc = 50000, .free = 5000 }, &a);
	ASSERT_TRUE(!a.switch_alloc && !a.decided, "nothing before the first second");
	budget_target_step(&bt, &model, S,
			   &(struct budget_counts){ .alloc = 100000, .free = 10000 }, &a);
	ASSERT_TRUE(a.decided && a.switch_alloc && !a.alloc_on && !a.drop_inuse, "off");
	ASSERT_NEAR(bt.rates.alloc_per_s, 100000, 1e-6, "alloc rate");
	ASSERT_NEAR(bt.rates.free_per_s, 10000, 1e-6, "free rate");
	ASSERT_NEAR(bt.choice.duty, 5.96 / 60, 1e-9, "duty");
	ASSERT_NEAR((double)bt.phase_end_ns, 55.04e9, 1, "off until 55.04 s");
	ASSERT_EQ(budget_target_observed(&bt, 30 * S), S, "observed while off");
	budget_target_step(&bt, &model, 55040000000ULL,
			   &(struct budget_counts){ .alloc = 100000, .free = 550400 }, &a);
	ASSERT_TRUE(a.switch_alloc && a.alloc_on && !a.decided, "on again");
	ASSERT_NEAR((double)budget_target_observed(&bt, 58 * S), 3.96e9, 1, "observed while on");
	budget_target_step(&bt, &model, 61 * S,
			   &(struct budget_counts){ .alloc = 100000 + 596000, .free = 610000 }, &a);
	ASSERT_TRUE(a.switch_alloc && !a.alloc_on && !a.decided, "off, same duty");
	ASSERT_NEAR(bt.rates.alloc_per_s, 100000, 1e-6, "alloc rate of the window");
	ASSERT_NEAR(bt.rates.free_per_s, 10000, 1e-6, "free rate over the period");
	ASSERT_NEAR((double)budget_target_observed(&bt, 62 * S), 6.96e9, 1, "observed");
}

/* a quiet target stays on and is measured again a period later; a noisy free side is dropped */
static void test_cycle_on_and_drop(void)
{
	struct budget_target bt;
	struct budget_action a;

	budget_target_init(&bt, 10 * S, true, &(struct budget_counts){ .alloc = 7, .free = 7 });
	budget_target_step(&bt, &model, 11 * S,
			   &(struct budget_counts){ .alloc = 1007, .free = 507 }, &a);
	ASSERT_TRUE(a.decided && !a.switch_alloc, "stays on");
	ASSERT_EQ(bt.phase_end_ns, 71 * S, "next decision a period later");
	ASSERT_EQ(budget_target_observed(&bt, 41 * S), 31 * S, "observed all along");

	budget_target_init(&bt, 0, true, &(struct budget_counts){ .alloc = 0, .free = 0 });
	budget_target_step(&bt, &model, S,
			   &(struct budget_counts){ .alloc = 100000, .free = 30000 }, &a);
	ASSERT_TRUE(a.decided && a.drop_inuse && a.switch_alloc && !a.alloc_on, "dropped, off");
	ASSERT_TRUE(!bt.rates.inuse && !bt.choice.inuse, "in-use off for good");
	ASSERT_NEAR(bt.choice.duty, 11.96 / 60, 1e-9, "duty");
}

/*
 * 30k frees/s = 1.5% alone over 1%, with a collector that can switch the
 * free probes: both go off and on together, a + f = 6.5%, the window is
 * (1% * 60 s - 2 ms) / 6.5% = 9.2 s; the estimate is the budget
 */
static void test_free_cycled(void)
{
	struct budget_model m = model;
	struct budget_rates r = { .alloc_per_s = 100000, .free_per_s = 30000, .inuse = true };
	struct budget_choice c;

	m.can_cycle_free = true;
	budget_choose(&m, &r, &c);
	ASSERT_TRUE(c.inuse && c.free_cycled && !c.over, "in-use kept, free probes cycled");
	ASSERT_NEAR((double)c.on_ns, 9.2e9, 1, "window");
	ASSERT_NEAR(c.est_pct, 1, 1e-9, "estimate at the budget");
	ASSERT_NEAR(c.free_pct, 1.5 * 9.2 / 60, 1e-9, "free part, paid while on");
	/* the free probes within the budget: they stay, only the allocation probes cycle */
	r.free_per_s = 10000;
	budget_choose(&m, &r, &c);
	ASSERT_TRUE(!c.free_cycled, "free probes stay on");
	ASSERT_NEAR(c.duty, 5.96 / 60, 1e-9, "duty as without cycling");
}

/* the model with 4 s windows, and a target just picked up with nothing counted */
static void windowed(struct budget_model *m, struct budget_target *bt)
{
	*m = model;
	m->window_ns = 4 * S;
	budget_target_init(bt, 0, true, &(struct budget_counts){ 0 });
}

/*
 * The free probes alone at 1.5 times their rate with both on (a process
 * that frees as fast as their traps let it): 10k frees/s = 0.5% while on,
 * 0.75% while the allocation probes are off.  The window pays what
 * switching adds, 5% + 0.5% - 0.75%: ((1% - 0.75%) * 60 s - 2 ms) /
 * 4.75%; the estimate is the budget.  At 2.5 times (1.25%, over 1%) they
 * are cycled: (1% * 60 s - 2 ms) / 5.5%.
 */
static void test_free_off_rate(void)
{
	struct budget_model m = model;
	struct budget_rates r = { .alloc_per_s = 100000, .free_per_s = 10000,
				  .free_off_ratio = 1.5, .inuse = true };
	struct budget_choice c;
	double on = ((0.01 - 0.0075) * 60 - 0.002) / 0.0475;

	m.can_cycle_free = true;
	budget_choose(&m, &r, &c);
	ASSERT_TRUE(!c.free_cycled && !c.over, "free probes stay on");
	ASSERT_NEAR((double)c.on_ns, on * 1e9, 1, "window");
	ASSERT_NEAR(c.est_pct, 1, 1e-9, "estimate at the budget");
	ASSERT_NEAR(c.free_pct, on / 60 * 0.5 + (1 - on / 60) * 0.75, 1e-9, "free part");
	ASSERT_NEAR(c.free_off_pct, 0.75, 1e-9, "free probes alone");
	r.free_off_ratio = 2.5;
	budget_choose(&m, &r, &c);
	ASSERT_TRUE(c.free_cycled && !c.over, "free probes cycled");
	ASSERT_NEAR((double)c.on_ns, (0.6 - 0.002) / 0.055 * 1e9, 1, "window");
	ASSERT_NEAR(c.est_pct, 1, 1e-9, "estimate at the budget");
}

/*
 * The ratio measured: 10k frees/s with both on in the first second, then
 * 25k/s in the 3.64 s off window that keeps the free probes: 2.5.  The
 * next decision cycles them (1.25% alone), and an off window without
 * them leaves the ratio as it was.
 */
static void test_free_off_measured(void)
{
	struct budget_model m;
	struct budget_counts c;
	struct budget_target bt;
	struct budget_action a;

	windowed(&m, &bt);
	m.can_cycle_free = true;
	c = (struct budget_counts){ .alloc = 100000, .free = 10000 };
	budget_target_step(&bt, &m, S, &c, &a);
	ASSERT_TRUE(a.switch_alloc && !a.alloc_on && !a.switch_free, "allocation probes off");
	c.free += 91000;
	budget_target_step(&bt, &m, 4640000000ULL, &c, &a);
	ASSERT_TRUE(a.switch_alloc && a.alloc_on, "on");
	ASSERT_NEAR(bt.off_free_per_s, 25000, 1e-6, "free rate off");
	ASSERT_NEAR(bt.rates.free_off_ratio, 2.5, 1e-9, "ratio");
	c.alloc += 36000;
	c.free += 3600;
	budget_target_step(&bt, &m, 5 * S, &c, &a);
	ASSERT_TRUE(a.switch_alloc && !a.alloc_on && a.switch_free, "both off");
	ASSERT_TRUE(bt.choice.free_cycled, "free probes cycled");
	ASSERT_NEAR((double)bt.choice.on_ns, (0.04 - 0.002) / 0.055 * 1e9, 1, "window");
	budget_target_step(&bt, &m, bt.phase_end_ns, &c, &a);
	ASSERT_TRUE(a.switch_alloc && a.alloc_on && a.switch_free, "both on");
	ASSERT_NEAR(bt.rates.free_off_ratio, 2.5, 1e-9, "ratio kept");
}

/*
 * Hits by class: 90k allocator hits on emulated sites (500 ns) and 10k on
 * single-stepped ones (5 us) in the first second: 950 ns a hit, 9.5% of a
 * CPU; the free side all stepped, 1k/s: 0.5%
 */
static void test_site_classes(void)
{
	struct budget_target bt;
	struct budget_action a;
	struct budget_counts c = { 0 };

	budget_target_init(&bt, 0, true, &c);
	bt.costs = (struct budget_site_costs){ .alloc = 500, .alloc_stepped = 5000,
					       .free = 500, .free_stepped = 5000 };
	c = (struct budget_counts){ .alloc = 100000, .alloc_stepped = 10000, .free = 1000,
				    .free_stepped = 1000 };
	budget_target_step(&bt, &model, S, &c, &a);
	ASSERT_NEAR(bt.rates.alloc_ns, 950, 1e-9, "mean allocator hit");
	ASSERT_NEAR(bt.rates.free_ns, 5000, 1e-9, "mean free hit");
	/* window ((1% - 0.5%) * 60 s - 2 ms) / 9.5% */
	ASSERT_NEAR((double)bt.choice.on_ns, (0.005 * 60 - 0.002) / 0.095 * 1e9, 1, "window");
}

/*
 * window_ns 4 s: the period is 4 s, the window ((1% - 0.5%) * 4 s - 2 ms) /
 * 5% = 0.36 s; an on window the agent ended late (1.08 s, three times as
 * long) is followed by an off window three times as long, so the time on
 * stays the duty; a target on all the time is measured again 4 s later
 */
static void test_window(void)
{
	struct budget_model m;
	struct budget_target bt;
	struct budget_action a;

	windowed(&m, &bt);
	budget_target_step(&bt, &m, S, &(struct budget_counts){ .alloc = 100000, .free = 10000 },
			   &a);
	ASSERT_EQ(bt.choice.period_ns, 4 * S, "period");
	ASSERT_NEAR((double)bt.choice.on_ns, 0.36e9, 1, "window");
	ASSERT_NEAR((double)bt.phase_end_ns, 1e9 + 3.64e9, 1, "off for the period's rest");
	budget_target_step(&bt, &m, 4640000000ULL,
			   &(struct budget_counts){ .alloc = 100000, .free = 10000 }, &a);
	ASSERT_TRUE(a.switch_alloc && a.alloc_on, "on");
	budget_target_step(&bt, &m, 5720000000ULL,
			   &(struct budget_counts){ .alloc = 208000, .free = 20800 }, &a);
	ASSERT_TRUE(a.switch_alloc && !a.alloc_on, "off, late");
	ASSERT_NEAR((double)bt.phase_end_ns, 5.72e9 + 3 * 3.64e9, 1e3, "off three times as long");

	budget_target_init(&bt, 0, true, &(struct budget_counts){ 0 });
	budget_target_step(&bt, &m, S, &(struct budget_counts){ .alloc = 100, .free = 100 }, &a);
	ASSERT_TRUE(!a.switch_alloc, "stays on");
	ASSERT_EQ(bt.phase_end_ns, 5 * S, "measured again 4 s later");
}

/*
 * A target on all the time far under its budget by its costs is checked
 * (an off window for the allocation probes alone) when its system CPU
 * says they are off, at the end of that window, and measured on again
 * after; without that word it stays on.
 */
static void test_want_check(void)
{
	struct budget_model m;
	struct budget_target bt;
	struct budget_action a;

	/* 100 allocs/s: 0.005% of a CPU, under a tenth of the budget: never checked by itself */
	windowed(&m, &bt);
	budget_target_step(&bt, &m, S, &(struct budget_counts){ .alloc = 100, .free = 100 }, &a);
	ASSERT_TRUE(!a.switch_alloc, "stays on");
	budget_target_step(&bt, &m, 5 * S, &(struct budget_counts){ .alloc = 500, .free = 500 },
			   &a);
	ASSERT_TRUE(!a.switch_alloc, "still on");
	bt.want_check = true;
	budget_target_step(&bt, &m, 9 * S, &(struct budget_counts){ .alloc = 900, .free = 900 },
			   &a);
	ASSERT_TRUE(a.switch_alloc && !a.alloc_on && !a.switch_free, "allocation probes off");
	ASSERT_TRUE(!bt.want_check, "asked once");
	ASSERT_EQ(bt.phase_end_ns, 10 * S, "for the check's second");
	budget_target_step(&bt, &m, 10 * S, &(struct budget_counts){ .alloc = 900, .free = 1000 },
			   &a);
	ASSERT_TRUE(a.switch_alloc && a.alloc_on && !a.switch_free, "on again");
	ASSERT_EQ(bt.phase_end_ns, 14 * S, "a window's length");
}

/*
 * 1000 allocs/s and 1000 frees/s at 500 ns: 0.1%, on all the time, the
 * next measurement at 5 s.  At 2 s the target's CPU says a hit costs 100
 * times that: 5% + 5%, the free probes alone over 1% (in-use dropped
 * here), the window (1% * 4 s - 2 ms) / 5% = 0.76 s ends at 2.76 s, not
 * 5 s.  Twice the costs (0.2%) would not have shortened it.
 */
static void test_rescale(void)
{
	struct budget_model m;
	struct budget_target bt;
	struct budget_action a;

	windowed(&m, &bt);
	bt.costs = (struct budget_site_costs){ .alloc = 500, .free = 500 };
	budget_target_step(&bt, &m, S, &(struct budget_counts){ .alloc = 1000, .free = 1000 }, &a);
	ASSERT_TRUE(!a.switch_alloc && bt.choice.duty >= 1, "on all the time");
	ASSERT_EQ(bt.phase_end_ns, 5 * S, "measured again at 5 s");
	budget_target_rescale(&bt, &m, 2, 2 * S);
	ASSERT_NEAR(bt.rates.alloc_ns, 1000, 1e-9, "twice the cost");
	ASSERT_EQ(bt.phase_end_ns, 5 * S, "still within the budget");
	budget_target_rescale(&bt, &m, 100, 2 * S);
	ASSERT_NEAR(bt.rates.alloc_ns, 50000, 1e-9, "100 times the cost");
	ASSERT_NEAR(bt.rates.free_ns, 50000, 1e-9, "of a free too");
	ASSERT_NEAR((double)bt.phase_end_ns, 2.76e9, 1, "the window ends sooner");
}

static void test_median(void)
{
	double odd[] = { 5, 1, 9, 3, 7 }, even[] = { 4, 1, 3, 2 };

	ASSERT_NEAR(budget_median(odd, 5), 5, 0, "odd");
	ASSERT_NEAR(budget_median(even, 4), 2.5, 0, "even");
	ASSERT_NEAR(budget_median(odd, 0), 0, 0, "empty");
}

/* a simulated target: 100k allocs/s counted while its allocation probes are on, 10k frees/s */
struct sim {
	bool on;
	double alloc, freed;
	unsigned int switches;
	uint64_t last_switch_ns;
	uint64_t now_ns;
};

static int sim_counters(void *ctx, pid_t pid, uint64_t start, struct budget_counts *out)
{
	struct sim *s = ctx;

	if (pid != 42)
		return -ENOENT;
	*out = (struct budget_counts){ .alloc = (uint64_t)s->alloc, .free = (uint64_t)s->freed };
	return 0;
}

static int sim_set_alloc(void *ctx, pid_t pid, uint64_t start, bool on)
{
	struct sim *s = ctx;

	s->switches += s->on != on;
	s->on = on;
	s->last_switch_ns = s->now_ns;
	return 0;
}

static uint64_t sim_now(void *ctx)
{
	return ((struct sim *)ctx)->now_ns;
}

/*
 * The runner over test_duty's target, a turn every 100 ms: off at 1 s
 * (duty 5.96/60), on at 55.04 s, off at 61 s (a window of 5.96 s); the
 * view says so; a pid the collector does not know is left alone; an exited
 * target is forgotten.
 */
static void test_runner(void)
{
	struct duty_opts o = { .max_pct = 1, .period_ns = 60 * S, .window_ns = 60 * S,
			       .inuse = true, .max_targets = 4,
			       .given = { .ns_per_hit = 500, .switch_ns = 2e6 } };
	struct duty_ops ops = { .counters = sim_counters, .set_alloc = sim_set_alloc,
				.now = sim_now };
	struct sim sim = { .on = true };
	pid_t pids[] = { 42, 43 };
	uint64_t starts[] = { 1, 1 }, t;
	struct duty_view *v;
	struct duty *d = duty__new(&o, &ops, &sim);
	size_t n;

	if (!ASSERT_OK_PTR(d, "duty__new"))
		return;
	for (t = 0; t <= 58 * S; t += S / 10) {
		sim.now_ns = t;
		duty__tick(d, pids, starts, 2, t);
		if (t == S)
			ASSERT_TRUE(!sim.on && sim.switches == 1, "off after the first second");
		sim.alloc += sim.on ? 10000 : 0;
		sim.freed += 1000;
	}
	ASSERT_TRUE(sim.on && sim.switches == 2, "on again");
	ASSERT_NEAR((double)sim.last_switch_ns, 55.1e9, 0.1e9, "at 55.04 s, the next turn");
	if (!duty__views(d, &v, &n) && ASSERT_EQ(n, 1, "one target known")) {
		ASSERT_EQ(v[0].pid, 42, "pid");
		ASSERT_NEAR(v[0].duty, 5.96 / 60, 1e-9, "duty");
		ASSERT_NEAR(v[0].est_pct, 1, 1e-9, "estimate");
		ASSERT_NEAR(v[0].alloc_per_s, 100000, 1, "alloc rate");
		ASSERT_NEAR(v[0].free_per_s, 10000, 1, "free rate");
		ASSERT_NEAR((double)v[0].observed_ns, 1e9 + 2.9e9, 0.11e9, "observed");
		ASSERT_TRUE(v[0].on && v[0].inuse && v[0].decided, "on, in-use");
	}
	free(v);
	for (; t <= 62 * S; t += S / 10) {
		sim.now_ns = t;
		duty__tick(d, pids, starts, 2, t);
		sim.alloc += sim.on ? 10000 : 0;
		sim.freed += 1000;
	}
	ASSERT_TRUE(!sim.on && sim.switches == 3, "off after the 5.96 s window");
	ASSERT_NEAR((double)sim.last_switch_ns, 61.1e9, 0.1e9, "at 61 s, the next turn");
	duty__tick(d, pids + 1, starts + 1, 1, t);
	ASSERT_TRUE(!duty__views(d, &v, &n) && n == 0, "exited target forgotten");
	free(v);
	duty__free(d);
}

int main(void)
{
	test_group = "budget";
	RUN_TEST(test_within_budget);
	RUN_TEST(test_duty);
	RUN_TEST(test_stretch);
	RUN_TEST(test_drop_inuse);
	RUN_TEST(test_over);
	RUN_TEST(test_no_limit);
	RUN_TEST(test_cycle);
	RUN_TEST(test_cycle_on_and_drop);
	RUN_TEST(test_free_cycled);
	RUN_TEST(test_free_off_rate);
	RUN_TEST(test_free_off_measured);
	RUN_TEST(test_site_classes);
	RUN_TEST(test_window);
	RUN_TEST(test_want_check);
	RUN_TEST(test_rescale);
	RUN_TEST(test_median);
	RUN_TEST(test_runner);
	return TEST_EXIT();
}
