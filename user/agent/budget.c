// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The overhead budget: calibration of the per-hit cost, the duty choice,
 * one target's duty cycle (budget.h).  The cost model, in shares of one
 * CPU:
 *
 *	estimate = duty * (alloc_per_s + free_per_s) * ns_per_hit / 1e9	(while on)
 *		 + (1 - duty) * free_off_per_s * ns_per_hit / 1e9	(free probes kept, off)
 *		 + switch_ns / period_ns			(one detach + attach a period)
 *
 * A uprobe's cost is its trap and its program, paid by the calling thread
 * on every call whatever is sampled, so calls times the calibrated cost of
 * one hit is what the target loses.  The free probes stay attached as
 * long as in-use tracking is on (a block freed while they were off would
 * stay live for ever); when they alone exceed the budget, they are cycled
 * with the allocation probes (or in-use is dropped for that target for
 * good, and its heap profile says so).  Rates are those of the windows
 * they are paid in: a process that runs flat out makes as many calls as
 * its probes let it, so its free probes alone see more hits/s than with
 * the allocation probes on too (free_off_ratio, measured in off windows).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfobj.h"
#include "budget.h"
#include "calib.skel.h"
#include "clock.h"
#include "procmaps.h"
#include "uprobe.h"

#define NS 1e9

static double alloc_cost(const struct budget_model *m, const struct budget_rates *r)
{
	return r->alloc_per_s * (r->alloc_ns > 0 ? r->alloc_ns : m->ns_per_hit) / NS;
}

static double free_cost(const struct budget_model *m, const struct budget_rates *r)
{
	return r->inuse ? r->free_per_s * (r->free_ns > 0 ? r->free_ns : m->ns_per_hit) / NS : 0;
}

/* what the free probes cost while the allocation probes are off (they are on alone) */
static double free_off_cost(const struct budget_model *m, const struct budget_rates *r)
{
	return free_cost(m, r) * (r->free_off_ratio > 0 ? r->free_off_ratio : 1);
}

/* the free probes cycled with the allocation probes: both are paid only while on */
static double estimate(const struct budget_model *m, const struct budget_rates *r, double duty,
		       uint64_t period_ns, bool free_cycled)
{
	double share = duty * (alloc_cost(m, r) + free_cost(m, r)) +
		       (free_cycled ? 0 : (1 - duty) * free_off_cost(m, r));

	if (duty < 1 && period_ns)
		share += m->switch_ns / (double)period_ns;
	return share * 100;
}

double budget_estimate_pct(const struct budget_model *m, const struct budget_rates *r,
			   double duty, uint64_t period_ns)
{
	return estimate(m, r, duty, period_ns, false);
}

/*
 * Below the budget with the probes on all the time: duty 1.  Else the
 * duty that spends what the free probes and the switches leave; if its
 * window is shorter than min_on_ns, the period stretches so that the
 * window is min_on_ns and the estimate still the budget:
 *	((b - f) * P - s) / a = min_on  =>  P = (min_on * a + s) / (b - f)
 * a: what switching costs on top of what stays on (the free probes too
 * when f alone is over the budget and they can be switched), f: what stays.
 */
static void choose_duty(const struct budget_model *m, double a, double f,
			struct budget_choice *out)
{
	double b = m->max_pct / 100, p = (double)m->period_ns;
	double on;

	out->duty = 1;
	out->period_ns = m->period_ns;
	if (m->max_pct <= 0 || a + f <= b)
		return;
	/* what stays costs as much as all on (and over the budget): no duty helps */
	if (!(a > 0)) {
		out->over = true;
		return;
	}
	/* a short period: the next measurement is never far off */
	if (m->window_ns && p > (double)m->window_ns)
		p = (double)m->window_ns;
	on = ((b - f) * p - m->switch_ns) / a;
	if (on < (double)m->min_on_ns) {
		p = b > f ? ((double)m->min_on_ns * a + m->switch_ns) / (b - f) : 0;
		if (!(b > f) || p > (double)m->max_period_ns) {
			p = (double)m->max_period_ns;
			out->over = true;
		}
		on = (double)m->min_on_ns;
	}
	out->period_ns = (uint64_t)p;
	out->duty = on / p < 1 ? on / p : 1;
}

void budget_choose(const struct budget_model *m, const struct budget_rates *r,
		   struct budget_choice *out)
{
	struct budget_rates kept = *r;
	double a, f, f_off, b = m->max_pct / 100;

	memset(out, 0, sizeof(*out));
	/* the free probes alone: with the allocation probes off */
	f_off = free_off_cost(m, &kept);
	out->free_off_pct = f_off * 100;
	if (m->max_pct > 0 && f_off > b && m->can_cycle_free)
		out->free_cycled = true;
	else if (m->max_pct > 0 && f_off > b && m->can_drop_inuse)
		kept.inuse = false;
	out->inuse = kept.inuse;
	a = alloc_cost(m, &kept);
	f = free_cost(m, &kept);
	f_off = free_off_cost(m, &kept);
	if (out->free_cycled)
		choose_duty(m, a + f, 0, out);
	else
		choose_duty(m, a + f - f_off, f_off, out);
	if (out->duty >= 1)
		out->free_cycled = false;
	out->on_ns = (uint64_t)(out->duty * (double)out->period_ns);
	out->est_pct = estimate(m, &kept, out->duty, out->period_ns, out->free_cycled);
	out->free_pct = (out->duty * f + (out->free_cycled ? 0 : (1 - out->duty) * f_off)) * 100;
	if (m->max_pct > 0 && out->est_pct > m->max_pct * (1 + 1e-9))
		out->over = true;
}

void budget_target_init(struct budget_target *bt, uint64_t now_ns, bool inuse,
			const struct budget_counts *c)
{
	memset(bt, 0, sizeof(*bt));
	bt->phase = BUDGET_ON;
	bt->phase_end_ns = now_ns + BUDGET_FIRST_ON_NS;
	bt->on_start_ns = now_ns;
	bt->at_on = *c;
	bt->decided_ns = now_ns;
	bt->rates.inuse = inuse;
	bt->choice.duty = 1;
	bt->choice.inuse = inuse;
	bt->cost_scale = 1;
}

static double per_s(uint64_t hits, uint64_t ns)
{
	return ns ? (double)hits * NS / (double)ns : 0;
}

/* the mean cost of the hits between two counts, by their classes; 0 when not known */
static double mean_cost(uint64_t hits, uint64_t stepped, double emulated_ns, double stepped_ns)
{
	if (emulated_ns <= 0)
		return 0;
	if (!hits)
		return stepped_ns > emulated_ns && stepped ? stepped_ns : emulated_ns;
	if (stepped > hits)
		stepped = hits;
	return ((double)(hits - stepped) * emulated_ns + (double)stepped * stepped_ns) /
	       (double)hits;
}

/*
 * The end of an on window: the rates it measured (allocation and free
 * probes were both on all of it), the choice for the next period.
 */
static void decide(struct budget_target *bt, const struct budget_model *m, uint64_t now_ns,
		   const struct budget_counts *c, struct budget_action *act)
{
	double old_duty = bt->choice.duty;
	bool was_cycled = bt->choice.free_cycled;
	uint64_t on = now_ns - bt->on_start_ns, off, late = 0;
	uint64_t da = c->alloc - bt->at_on.alloc, df = c->free - bt->at_on.free;

	bt->rates.alloc_per_s = per_s(da, on);
	bt->rates.alloc_ns = mean_cost(da, c->alloc_stepped - bt->at_on.alloc_stepped,
				       bt->costs.alloc, bt->costs.alloc_stepped);
	if (bt->rates.alloc_ns > 0)
		bt->rates.alloc_ns = (bt->rates.alloc_ns + m->alloc_prog_ns) * bt->cost_scale;
	if (bt->rates.inuse) {
		bt->rates.free_per_s = per_s(df, on);
		bt->rates.free_ns = mean_cost(df, c->free_stepped - bt->at_on.free_stepped,
					      bt->costs.free, bt->costs.free_stepped);
		if (bt->rates.free_ns > 0)
			bt->rates.free_ns = (bt->rates.free_ns + m->free_prog_ns) * bt->cost_scale;
	}
	bt->decided_ns = now_ns;
	budget_choose(m, &bt->rates, &bt->choice);
	bt->decisions++;
	act->decided = bt->decisions == 1 || bt->choice.duty != old_duty ||
		       bt->choice.free_cycled != was_cycled;
	if (bt->rates.inuse && !bt->choice.inuse) {
		act->drop_inuse = true;
		bt->rates.inuse = false;
	}
	bt->observed_ns += on;
	if (bt->cycled_on && now_ns > bt->phase_end_ns)
		late = now_ns - bt->phase_end_ns;
	bt->cycled_on = false;
	/*
	 * Within budget but near it, costs never checked, or its system CPU
	 * saying they are far off: off for a moment, for the target's own CPU
	 * time to say what the probes cost
	 */
	if (bt->choice.duty >= 1 && m->max_pct > 0 &&
	    (bt->want_check || (!bt->scale_checked && bt->check_tries < BUDGET_CHECK_TRIES &&
				bt->choice.est_pct > m->max_pct / 10))) {
		bt->check_tries++;
		/*
		 * the allocation probes only: the free probes going off would
		 * restart the heap of a target that is within its budget; unless
		 * its system CPU alone says it is over it
		 */
		bt->check_free = bt->want_check && bt->want_check_free && bt->rates.inuse;
		bt->want_check = bt->want_check_free = false;
		bt->phase = BUDGET_OFF;
		bt->phase_end_ns = now_ns + BUDGET_CHECK_OFF_NS;
		/* the next on window measures again, as long as a short window */
		bt->choice.on_ns = m->window_ns ? m->window_ns : bt->choice.period_ns;
		act->switch_alloc = true;
		act->alloc_on = false;
		act->switch_free = bt->check_free;
		return;
	}
	if (bt->choice.duty >= 1) {
		/* stays on: measured again a short window from now */
		bt->on_start_ns = now_ns;
		bt->at_on = *c;
		bt->phase_end_ns = now_ns + (m->window_ns && m->window_ns < bt->choice.period_ns ?
					     m->window_ns : bt->choice.period_ns);
		return;
	}
	/*
	 * Off for the rest of the period, and for what a window of the cycle
	 * that ended late (a loaded machine's late turn of the agent) needs at
	 * this duty on top: the share of time on stays the duty.
	 */
	off = bt->choice.period_ns - bt->choice.on_ns +
	      (uint64_t)((double)late * (1 - bt->choice.duty) / bt->choice.duty);
	if (off > m->max_period_ns)
		off = m->max_period_ns;
	bt->phase = BUDGET_OFF;
	bt->phase_end_ns = now_ns + off;
	act->switch_alloc = true;
	act->alloc_on = false;
	act->switch_free = bt->choice.free_cycled;
}

/*
 * The end of an off window that kept the free probes on: their hits/s in
 * it against the last on window's, for what they cost alone.  Over one
 * period of a process that runs flat out it read 2.1-2.4 here (its
 * frees as fast as their traps let them, no allocator trap between).
 */
static void measure_free_off(struct budget_target *bt, uint64_t now_ns,
			     const struct budget_counts *c)
{
	uint64_t df = c->free - bt->at_off.free;

	bt->off_free_per_s = 0;
	if (!bt->rates.inuse || bt->choice.free_cycled || bt->check_free ||
	    now_ns <= bt->off_start_ns || df < BUDGET_RATIO_MIN_HITS)
		return;
	bt->off_free_per_s = per_s(df, now_ns - bt->off_start_ns);
	if (bt->rates.free_per_s > 0)
		bt->rates.free_off_ratio = bt->off_free_per_s / bt->rates.free_per_s;
}

void budget_target_step(struct budget_target *bt, const struct budget_model *m, uint64_t now_ns,
			const struct budget_counts *c, struct budget_action *act)
{
	memset(act, 0, sizeof(*act));
	if (now_ns < bt->phase_end_ns)
		return;
	if (bt->phase == BUDGET_ON) {
		decide(bt, m, now_ns, c, act);
		if (act->switch_alloc && !act->alloc_on) {
			bt->off_start_ns = now_ns;
			bt->at_off = *c;
		}
		return;
	}
	measure_free_off(bt, now_ns, c);
	bt->phase = BUDGET_ON;
	bt->cycled_on = true;
	bt->on_start_ns = now_ns;
	bt->at_on = *c;
	bt->phase_end_ns = now_ns + bt->choice.on_ns;
	act->switch_alloc = true;
	act->alloc_on = true;
	act->switch_free = bt->choice.free_cycled || bt->check_free;
	bt->check_free = false;
}

void budget_target_rescale(struct budget_target *bt, const struct budget_model *m, double scale,
			   uint64_t now_ns)
{
	double k = scale / (bt->cost_scale > 0 ? bt->cost_scale : 1);
	struct budget_choice c;

	bt->cost_scale = scale;
	bt->rates.alloc_ns *= k;
	bt->rates.free_ns *= k;
	if (bt->phase != BUDGET_ON || !bt->decisions)
		return;
	/* the last rates at the new costs: an on window they say is too long ends sooner */
	budget_choose(m, &bt->rates, &c);
	if (c.duty < 1 && now_ns + c.on_ns < bt->phase_end_ns) {
		bt->phase_end_ns = now_ns + c.on_ns;
		bt->cycled_on = true;
	}
}

uint64_t budget_target_observed(const struct budget_target *bt, uint64_t now_ns)
{
	uint64_t on = bt->phase == BUDGET_ON && now_ns > bt->on_start_ns ?
		      now_ns - bt->on_start_ns : 0;

	return bt->observed_ns + on;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double budget_median(double *v, unsigned int n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --- calibration ---------------------------------------------------------- */

/*
 * What the child calls: budget_calib_fn is one jump to the next
 * instruction and a return, in assembly so that the probed instruction is
 * one the kernel emulates (a direct jump, on x86-64 as on arm64);
 * budget_calib_step starts with a register move, which the kernel
 * single-steps out of line (docs/probe-offsets.md).  A compiler would
 * choose the first instruction.
 */
#if defined(__x86_64__)
#define CALIB_BODY "\tjmp 1f\n1:\tret\n"
#define CALIB_STEP_BODY "\tmov %rdi, %rax\n\tret\n"
#elif defined(__aarch64__)
#define CALIB_BODY "\tb 1f\n1:\tret\n"
#define CALIB_STEP_BODY "\tmov x1, x0\n\tret\n"
#else
#error "budget.c: the calibration functions need this architecture's instructions"
#endif
__asm__(".pushsection .text\n"
	".globl budget_calib_fn\n"
	".type budget_calib_fn, %function\n"
	"budget_calib_fn:\n" CALIB_BODY
	".size budget_calib_fn, . - budget_calib_fn\n"
	".globl budget_calib_step\n"
	".type budget_calib_step, %function\n"
	"budget_calib_step:\n" CALIB_STEP_BODY
	".size budget_calib_step, . - budget_calib_step\n"
	".popsection\n");
void budget_calib_fn(uint64_t i);
void budget_calib_step(uint64_t i);

/* a run's count with this bit set calls budget_calib_step */
#define CALIB_STEP (1ULL << 63)

/*
 * The child: for every count read, that many calls, and their CPU ns per
 * call back (0 ends it).  CPU time, not wall time: the trap and the
 * program run in the calling thread and are its CPU time, and a machine
 * shared with others preempts the child without changing that.
 */
static void __attribute__((noreturn)) calib_child(int in, int out)
{
	uint64_t n, i, t0;
	void (*fn)(uint64_t);
	double ns;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (read(in, &n, sizeof(n)) == sizeof(n) && n) {
		fn = n & CALIB_STEP ? budget_calib_step : budget_calib_fn;
		n &= ~CALIB_STEP;
		t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (i = 0; i < n; i++)
			fn(i);
		ns = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)(n ? n : 1);
		if (write(out, &ns, sizeof(ns)) != sizeof(ns))
			break;
	}
	_exit(0);
}

/* the classes of probe site calibrated, each its own program, function and link kind */
enum calib_class { CALIB_EMULATED, CALIB_STEPPED, CALIB_RETURN, CALIB_SESSION, CALIB_CLASSES };

static const char *const calib_class_names[CALIB_CLASSES] = {
	"an emulated probe", "a single-stepped probe", "an entry and return probe", "a session",
};

struct calib {
	struct calib_bpf *skel;
	/* the programs' run time in probed runs, and their hits */
	uint64_t prog_ns, prog_hits;
	pid_t child;
	int to_child, from_child;
	char path[64];
	uint64_t offset, step_offset;	/* of budget_calib_fn, budget_calib_step */
	enum uprobe_mode mode;		/* the collector's, for entries */
	bool sessions;
	const volatile int *stop;	/* set: cut the calibration short */
};

/* the file offset of fn in the executable mapped here (and in the child) */
static int calib_offset(const struct procmaps *maps, void (*fn)(uint64_t), uint64_t *off)
{
	uint64_t addr = (uint64_t)(uintptr_t)fn;
	const struct procmap *m = procmaps__find(maps, addr);

	if (!m || !procmap__is_file(m))
		return -ENOENT;
	*off = addr - m->start + m->offset;
	return 0;
}

static int calib_offsets(struct calib *c, char *err, size_t errlen)
{
	struct procmaps maps = { 0 };
	int ret = procmaps__read(getpid(), &maps);

	/* the executable as the child sees it, even if replaced on disk since */
	snprintf(c->path, sizeof(c->path), "/proc/%d/exe", (int)getpid());
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/self/maps: %s", strerror(-ret));
		return ret;
	}
	ret = calib_offset(&maps, budget_calib_fn, &c->offset);
	if (!ret)
		ret = calib_offset(&maps, budget_calib_step, &c->step_offset);
	if (ret)
		snprintf(err, errlen, "the calibration functions are in no file mapping");
	procmaps__free(&maps);
	return ret;
}

/* the programs loaded for the link kinds the collector uses on this kernel */
static int calib_load(struct calib *c, char *err, size_t errlen)
{
	unsigned int type = uprobe_mode__attach_type(c->mode);
	int ret;

	c->skel = calib_bpf__open();
	if (!c->skel) {
		snprintf(err, errlen, "cannot open the calibration BPF program: %s",
			 strerror(errno));
		return -errno ? -errno : -EINVAL;
	}
	ret = bpf_program__set_expected_attach_type(c->skel->progs.calib_hit, type);
	if (!ret)
		ret = bpf_program__set_expected_attach_type(c->skel->progs.calib_ret, type);
	if (!ret && c->sessions)
		ret = bpf_program__set_expected_attach_type(c->skel->progs.calib_session,
				uprobe_mode__attach_type(UPROBE_MODE_SESSION));
	if (!ret)
		ret = bpf_program__set_autoload(c->skel->progs.calib_session, c->sessions);
	if (!ret)
		ret = calib_bpf__load(c->skel);
	if (ret)
		snprintf(err, errlen, "cannot load the calibration BPF programs: %s",
			 strerror(-ret));
	return ret;
}

static int calib_start(struct calib *c, char *err, size_t errlen)
{
	int down[2], up[2], ret;
	uint64_t zero = 0;
	__u32 key;

	c->mode = bpfobj_uprobe_mode(false);
	c->sessions = bpfobj_sessions(false, false);
	ret = calib_load(c, err, errlen);
	if (ret)
		return ret;
	if (pipe2(down, O_CLOEXEC) || pipe2(up, O_CLOEXEC)) {
		snprintf(err, errlen, "cannot create a pipe: %s", strerror(errno));
		return -errno;
	}
	c->child = fork();
	if (c->child == 0) {
		close(down[1]);
		close(up[0]);
		calib_child(down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);
	c->to_child = down[1];
	c->from_child = up[0];
	if (c->child < 0) {
		snprintf(err, errlen, "cannot fork the calibration process: %s", strerror(errno));
		return -errno;
	}
	key = (__u32)c->child;
	return bpf_map__update_elem(c->skel->maps.calib_hits, &key, sizeof(key), &zero,
				    sizeof(zero), BPF_ANY);
}

static uint64_t calib_hits(const struct calib *c)
{
	__u32 key = (__u32)c->child;
	uint64_t n = 0;

	bpf_map__lookup_elem(c->skel->maps.calib_hits, &key, sizeof(key), &n, sizeof(n), 0);
	return n;
}

/* one run of n calls in the child (n | CALIB_STEP: the stepped function): ns per call or < 0 */
static double calib_run(const struct calib *c, uint64_t n)
{
	double ns = -1;

	if (write(c->to_child, &n, sizeof(n)) != sizeof(n) ||
	    read(c->from_child, &ns, sizeof(ns)) != sizeof(ns))
		return -1;
	return ns;
}

/* the calibration programs' run time so far (BPF run-time stats on), else 0 */
static uint64_t calib_prog_ns(const struct calib *c)
{
	const struct bpf_program *progs[] = { c->skel->progs.calib_hit, c->skel->progs.calib_ret,
					      c->skel->progs.calib_session };
	struct bpf_prog_info info;
	uint64_t sum = 0;
	__u32 len;
	size_t i;
	int fd;

	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		fd = bpf_program__fd(progs[i]);
		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			sum += info.run_time_ns;
	}
	return sum;
}

/* the probes of a class on the child; 0 or -errno */
static int calib_attach(const struct calib *c, enum calib_class cls, struct uprobe_set *set)
{
	uint64_t off = cls == CALIB_STEPPED ? c->step_offset : c->offset;
	int ret;

	switch (cls) {
	case CALIB_SESSION:
		return uprobe_set__attach(set, UPROBE_MODE_SESSION, c->skel->progs.calib_session,
					  c->path, &off, NULL, 1, c->child, 0);
	case CALIB_RETURN:
		ret = uprobe_set__attach(set, c->mode, c->skel->progs.calib_hit, c->path, &off,
					 NULL, 1, c->child, 0);
		return ret ?: uprobe_set__attach(set, c->mode, c->skel->progs.calib_ret, c->path,
						 &off, NULL, 1, c->child, 1);
	default:
		return uprobe_set__attach(set, c->mode, c->skel->progs.calib_hit, c->path, &off,
					  NULL, 1, c->child, 0);
	}
}

/*
 * A run with the class's probes attached: its ns per call, and the CPU
 * time of the attach and the detach (the kernel's work of putting the
 * breakpoint into the process and taking it out, done in this thread; the
 * detach's wait for the probe's last runs is time, not CPU).  0 or -errno.
 */
static int calib_probed(struct calib *c, enum calib_class cls, uint64_t n, double *ns,
			double *switch_ns, char *err, size_t errlen)
{
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID), before, hits, run0;
	uint64_t want = cls == CALIB_RETURN ? 2 * n : n;
	struct uprobe_set *set = uprobe_set__new();
	int ret = set ? calib_attach(c, cls, set) : -ENOMEM;

	if (ret) {
		uprobe_set__free(set);
		snprintf(err, errlen, "cannot attach the calibration uprobe (%s) to %s: %s",
			 calib_class_names[cls], c->path, strerror(-ret));
		return ret;
	}
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	before = calib_hits(c);
	run0 = calib_prog_ns(c);
	*ns = calib_run(c, n | (cls == CALIB_STEPPED ? CALIB_STEP : 0));
	hits = calib_hits(c) - before;
	c->prog_ns += calib_prog_ns(c) - run0;
	c->prog_hits += hits;
	cpu -= clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uprobe_set__free(set);
	*switch_ns = (double)(cpu + clock_ns(CLOCK_THREAD_CPUTIME_ID));
	if (hits != want) {
		snprintf(err, errlen, "the calibration uprobe (%s) was hit %llu times for %llu "
			 "calls", calib_class_names[cls], (unsigned long long)hits,
			 (unsigned long long)n);
		return -EPROTO;
	}
	return *ns < 0 ? -EPIPE : 0;
}

static void calib_stop(struct calib *c)
{
	uint64_t zero = 0;

	if (c->child > 0) {
		if (write(c->to_child, &zero, sizeof(zero)) != sizeof(zero))
			kill(c->child, SIGKILL);
		waitpid(c->child, NULL, 0);
	}
	if (c->to_child >= 0)
		close(c->to_child);
	if (c->from_child >= 0)
		close(c->from_child);
	calib_bpf__destroy(c->skel);
}

struct calib_result {
	double hit_ns, bare_ns, switch_ns;
};

/* rounds of a bare and a probed run, their order alternating so that a drift cancels out */
static int calib_rounds(struct calib *c, enum calib_class cls, unsigned int rounds,
			uint64_t n, struct calib_result *out, char *err, size_t errlen)
{
	double diff[rounds], bare[rounds], sw[rounds], probed = 0;
	uint64_t bare_n = n | (cls == CALIB_STEPPED ? CALIB_STEP : 0);
	unsigned int r;
	int ret = 0;

	for (r = 0; r < rounds && !ret; r++) {
		if (c->stop && *c->stop) {
			snprintf(err, errlen, "the agent is stopping");
			return -ECANCELED;
		}
		if (r % 2)
			ret = calib_probed(c, cls, n, &probed, &sw[r], err, errlen);
		bare[r] = calib_run(c, bare_n);
		if (!ret && r % 2 == 0)
			ret = calib_probed(c, cls, n, &probed, &sw[r], err, errlen);
		if (!ret && bare[r] < 0)
			ret = -EPIPE;
		diff[r] = probed - bare[r];
	}
	if (ret == -EPIPE)
		snprintf(err, errlen, "the calibration process died");
	if (ret)
		return ret;
	out->hit_ns = budget_median(diff, rounds);
	out->bare_ns = budget_median(bare, rounds);
	out->switch_ns = budget_median(sw, rounds);
	return 0;
}

/*
 * Every class in turn; the dearer ones on a tenth of the calls (a
 * single-stepped hit costs about fifteen emulated ones), so that no class's
 * runs take much longer than the others'.
 */
static int calib_classes(struct calib *c, unsigned int rounds, uint64_t calls,
			 struct budget_calibration *out, char *err, size_t errlen)
{
	struct calib_result r[CALIB_CLASSES] = { 0 };
	int cls, ret = 0;

	for (cls = 0; cls < CALIB_CLASSES && !ret; cls++) {
		if (cls == CALIB_SESSION && !c->sessions)
			continue;
		ret = calib_rounds(c, cls, rounds, cls == CALIB_STEPPED || cls == CALIB_RETURN ?
				   (calls + 9) / 10 : calls, &r[cls], err, errlen);
	}
	if (ret)
		return ret;
	out->ns_per_hit = r[CALIB_EMULATED].hit_ns;
	out->bare_ns = r[CALIB_EMULATED].bare_ns;
	out->switch_ns = r[CALIB_EMULATED].switch_ns;
	out->step_ns = r[CALIB_STEPPED].hit_ns;
	/* the return probe's part: the pair less its entry */
	out->ret_ns = r[CALIB_RETURN].hit_ns - r[CALIB_EMULATED].hit_ns;
	if (out->ret_ns < 0)
		out->ret_ns = 0;
	out->session_ns = r[CALIB_SESSION].hit_ns;
	out->prog_ns = c->prog_hits ? (double)c->prog_ns / (double)c->prog_hits : 0;
	out->rounds = rounds;
	out->calls = calls;
	return 0;
}

int budget_calibrate(unsigned int rounds, uint64_t calls, const volatile int *stop,
		     struct budget_calibration *out, char *err, size_t errlen)
{
	struct calib c = { .to_child = -1, .from_child = -1, .stop = stop };
	int ret;

	memset(out, 0, sizeof(*out));
	if (!rounds || rounds > 64 || !calls)
		return -EINVAL;
	ret = calib_offsets(&c, err, errlen);
	if (!ret)
		ret = calib_start(&c, err, errlen);
	/* a warm-up run of each function: page faults, the CPU's clock */
	if (!ret && (calib_run(&c, calls) < 0 || calib_run(&c, calls | CALIB_STEP) < 0)) {
		snprintf(err, errlen, "the calibration process died");
		ret = -EPIPE;
	}
	if (!ret)
		ret = calib_classes(&c, rounds, calls, out, err, errlen);
	calib_stop(&c);
	return ret;
}

/*
 * What a hit costs a target of this inuse mode, by the class of the site
 * it hits.  Sessions ask for a return only on sampled calls (rare): an
 * unsampled call pays the session's entry; with a return probe on every
 * call (--no-session, or kernels before sessions) each call pays both.  A
 * single-stepped site adds what stepping costs over emulating.
 */
void budget_site_costs(const struct budget_calibration *cal, bool session, bool every_return,
		       struct budget_site_costs *out)
{
	double step_extra = cal->step_ns > cal->ns_per_hit ? cal->step_ns - cal->ns_per_hit : 0;
	double entry = session && cal->session_ns > 0 ? cal->session_ns : cal->ns_per_hit;
	/* with the programs' run time known, the traps alone: the collector's programs are added */
	double prog = cal->prog_ns > 0 && cal->prog_ns < cal->ns_per_hit ? cal->prog_ns : 0;

	out->alloc = entry - prog + (every_return ? cal->ret_ns - prog : 0);
	out->alloc_stepped = out->alloc + step_extra;
	out->free = cal->ns_per_hit - prog;
	out->free_stepped = out->free + step_extra;
}
