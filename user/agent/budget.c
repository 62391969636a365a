// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The overhead budget: calibration of the per-hit cost, the duty choice,
 * one target's duty cycle (budget.h).  The cost model, in shares of one
 * CPU:
 *
 *	estimate = duty * alloc_per_s * ns_per_hit / 1e9	(allocation probes, while on)
 *		 + free_per_s * ns_per_hit / 1e9		(free probes: always on with in-use)
 *		 + switch_ns / period_ns			(one detach + attach a period)
 *
 * A uprobe's cost is its trap and its program, paid by the calling thread
 * on every call whatever is sampled, so calls times the calibrated cost of
 * one hit is what the target loses.  The free probes stay attached as
 * long as in-use tracking is on (a block freed while they were off would
 * stay live for ever); when they alone exceed the budget, in-use is
 * dropped for that target for good, and its heap profile says so.
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

#include "budget.h"
#include "calib.skel.h"
#include "procmaps.h"

#define NS 1e9

double budget_estimate_pct(const struct budget_model *m, const struct budget_rates *r,
			   double duty, uint64_t period_ns)
{
	double share = duty * r->alloc_per_s * m->ns_per_hit / NS;

	if (r->inuse)
		share += r->free_per_s * m->ns_per_hit / NS;
	if (duty < 1 && period_ns)
		share += m->switch_ns / (double)period_ns;
	return share * 100;
}

/*
 * Below the budget with the probes on all the time: duty 1.  Else the
 * duty that spends what the free probes and the switches leave; if its
 * window is shorter than min_on_ns, the period stretches so that the
 * window is min_on_ns and the estimate still the budget:
 *	((b - f) * P - s) / a = min_on  =>  P = (min_on * a + s) / (b - f)
 */
static void choose_duty(const struct budget_model *m, const struct budget_rates *r,
			struct budget_choice *out)
{
	double b = m->max_pct / 100, a = r->alloc_per_s * m->ns_per_hit / NS;
	double f = r->inuse ? r->free_per_s * m->ns_per_hit / NS : 0, p = (double)m->period_ns;
	double on;

	out->duty = 1;
	out->period_ns = m->period_ns;
	if (m->max_pct <= 0 || a + f <= b)
		return;
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
	double f;

	memset(out, 0, sizeof(*out));
	f = kept.inuse ? kept.free_per_s * m->ns_per_hit / NS : 0;
	if (m->max_pct > 0 && f > m->max_pct / 100 && m->can_drop_inuse)
		kept.inuse = false;
	out->inuse = kept.inuse;
	choose_duty(m, &kept, out);
	out->on_ns = (uint64_t)(out->duty * (double)out->period_ns);
	out->est_pct = budget_estimate_pct(m, &kept, out->duty, out->period_ns);
	out->free_pct = kept.inuse ? kept.free_per_s * m->ns_per_hit / NS * 100 : 0;
	if (m->max_pct > 0 && out->est_pct > m->max_pct * (1 + 1e-9))
		out->over = true;
}

void budget_target_init(struct budget_target *bt, uint64_t now_ns, bool inuse,
			uint64_t alloc_hits, uint64_t free_hits)
{
	memset(bt, 0, sizeof(*bt));
	bt->phase = BUDGET_ON;
	bt->phase_end_ns = now_ns + BUDGET_FIRST_ON_NS;
	bt->on_start_ns = now_ns;
	bt->alloc_at_on = alloc_hits;
	bt->decided_ns = now_ns;
	bt->free_at_decided = free_hits;
	bt->rates.inuse = inuse;
	bt->choice.duty = 1;
	bt->choice.inuse = inuse;
}

static double per_s(uint64_t hits, uint64_t ns)
{
	return ns ? (double)hits * NS / (double)ns : 0;
}

/* the end of an on window: the rates it measured, the choice for the next period */
static void decide(struct budget_target *bt, const struct budget_model *m, uint64_t now_ns,
		   uint64_t alloc_hits, uint64_t free_hits, struct budget_action *act)
{
	double old_duty = bt->choice.duty;

	bt->rates.alloc_per_s = per_s(alloc_hits - bt->alloc_at_on, now_ns - bt->on_start_ns);
	if (bt->rates.inuse)
		bt->rates.free_per_s = per_s(free_hits - bt->free_at_decided,
					     now_ns - bt->decided_ns);
	bt->decided_ns = now_ns;
	bt->free_at_decided = free_hits;
	budget_choose(m, &bt->rates, &bt->choice);
	bt->decisions++;
	act->decided = bt->decisions == 1 || bt->choice.duty != old_duty;
	if (bt->rates.inuse && !bt->choice.inuse) {
		act->drop_inuse = true;
		bt->rates.inuse = false;
	}
	bt->observed_ns += now_ns - bt->on_start_ns;
	if (bt->choice.duty >= 1) {
		/* stays on: the next measurement is a period from now */
		bt->on_start_ns = now_ns;
		bt->alloc_at_on = alloc_hits;
		bt->phase_end_ns = now_ns + bt->choice.period_ns;
		return;
	}
	bt->phase = BUDGET_OFF;
	bt->phase_end_ns = now_ns + (bt->choice.period_ns - bt->choice.on_ns);
	act->switch_alloc = true;
	act->alloc_on = false;
}

void budget_target_step(struct budget_target *bt, const struct budget_model *m, uint64_t now_ns,
			uint64_t alloc_hits, uint64_t free_hits, struct budget_action *act)
{
	memset(act, 0, sizeof(*act));
	if (now_ns < bt->phase_end_ns)
		return;
	if (bt->phase == BUDGET_ON) {
		decide(bt, m, now_ns, alloc_hits, free_hits, act);
		return;
	}
	bt->phase = BUDGET_ON;
	bt->on_start_ns = now_ns;
	bt->alloc_at_on = alloc_hits;
	bt->phase_end_ns = now_ns + bt->choice.on_ns;
	act->switch_alloc = true;
	act->alloc_on = true;
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
 * What the child calls: one jump to the next instruction and a return, in
 * assembly so that the probed instruction is one the kernel emulates (a
 * direct jump, on x86-64 as on arm64), as the collector places its
 * allocation probes (docs/probe-offsets.md): a single-stepped one costs
 * ten times more, and a compiler would choose the first instruction.
 */
#if defined(__x86_64__)
#define CALIB_BODY "\tjmp 1f\n1:\tret\n"
#elif defined(__aarch64__)
#define CALIB_BODY "\tb 1f\n1:\tret\n"
#else
#error "budget.c: the calibration function needs this architecture's two instructions"
#endif
__asm__(".pushsection .text\n"
	".globl budget_calib_fn\n"
	".type budget_calib_fn, %function\n"
	"budget_calib_fn:\n" CALIB_BODY
	".size budget_calib_fn, . - budget_calib_fn\n"
	".popsection\n");
void budget_calib_fn(uint64_t i);

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * The child: for every count read, that many calls, and their CPU ns per
 * call back (0 ends it).  CPU time, not wall time: the trap and the
 * program run in the calling thread and are its CPU time, and a machine
 * shared with others preempts the child without changing that.
 */
static void __attribute__((noreturn)) calib_child(int in, int out)
{
	uint64_t n, i, t0;
	double ns;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (read(in, &n, sizeof(n)) == sizeof(n) && n) {
		t0 = thread_cpu_ns();
		for (i = 0; i < n; i++)
			budget_calib_fn(i);
		ns = (double)(thread_cpu_ns() - t0) / (double)n;
		if (write(out, &ns, sizeof(ns)) != sizeof(ns))
			break;
	}
	_exit(0);
}

struct calib {
	struct calib_bpf *skel;
	pid_t child;
	int to_child, from_child;
	char path[64];
	uint64_t offset;
};

/* the file offset of budget_calib_fn in the executable mapped here (and in the child) */
static int calib_offset(struct calib *c, char *err, size_t errlen)
{
	uint64_t addr = (uint64_t)(uintptr_t)&budget_calib_fn;
	struct procmaps maps = { 0 };
	const struct procmap *m;
	int ret = procmaps__read(getpid(), &maps);

	/* the executable as the child sees it, even if replaced on disk since */
	snprintf(c->path, sizeof(c->path), "/proc/%d/exe", (int)getpid());
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/self/maps: %s", strerror(-ret));
		return ret;
	}
	m = procmaps__find(&maps, addr);
	ret = m && procmap__is_file(m) ? 0 : -ENOENT;
	if (!ret)
		c->offset = addr - m->start + m->offset;
	else
		snprintf(err, errlen, "the calibration function is in no file mapping");
	procmaps__free(&maps);
	return ret;
}

static int calib_start(struct calib *c, char *err, size_t errlen)
{
	int down[2], up[2];
	uint64_t zero = 0;
	__u32 key;

	c->skel = calib_bpf__open_and_load();
	if (!c->skel) {
		snprintf(err, errlen, "cannot load the calibration BPF program: %s",
			 strerror(errno));
		return -errno ? -errno : -EINVAL;
	}
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

/* one run of n calls in the child: its ns per call, or a negative value */
static double calib_run(const struct calib *c, uint64_t n)
{
	double ns = -1;

	if (write(c->to_child, &n, sizeof(n)) != sizeof(n) ||
	    read(c->from_child, &ns, sizeof(ns)) != sizeof(ns))
		return -1;
	return ns;
}

/*
 * A run with the probe attached: its ns per call, and the CPU time of the
 * attach and the detach (the kernel's work of putting the breakpoint into
 * the process and taking it out, done in this thread; the detach's wait
 * for the probe's last runs is time, not CPU).  0 or -errno.
 */
static int calib_probed(const struct calib *c, uint64_t n, double *ns, double *switch_ns,
			char *err, size_t errlen)
{
	uint64_t cpu = thread_cpu_ns(), before, hits;
	struct bpf_link *link;

	link = bpf_program__attach_uprobe(c->skel->progs.calib_hit, false, c->child, c->path,
					  c->offset);
	if (!link) {
		snprintf(err, errlen, "cannot attach the calibration uprobe to %s+%#llx: %s",
			 c->path, (unsigned long long)c->offset, strerror(errno));
		return -errno ? -errno : -EINVAL;
	}
	cpu = thread_cpu_ns() - cpu;
	before = calib_hits(c);
	*ns = calib_run(c, n);
	hits = calib_hits(c) - before;
	cpu -= thread_cpu_ns();
	bpf_link__destroy(link);
	*switch_ns = (double)(cpu + thread_cpu_ns());
	if (hits != n) {
		snprintf(err, errlen, "the calibration uprobe was hit %llu times for %llu calls",
			 (unsigned long long)hits, (unsigned long long)n);
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

/* rounds of a bare and a probed run, their order alternating so that a drift cancels out */
static int calib_rounds(const struct calib *c, unsigned int rounds, uint64_t n,
			struct budget_calibration *out, char *err, size_t errlen)
{
	double diff[rounds], bare[rounds], sw[rounds], probed = 0;
	unsigned int r;
	int ret = 0;

	for (r = 0; r < rounds && !ret; r++) {
		if (r % 2)
			ret = calib_probed(c, n, &probed, &sw[r], err, errlen);
		bare[r] = calib_run(c, n);
		if (!ret && r % 2 == 0)
			ret = calib_probed(c, n, &probed, &sw[r], err, errlen);
		if (!ret && bare[r] < 0)
			ret = -EPIPE;
		diff[r] = probed - bare[r];
	}
	if (ret == -EPIPE)
		snprintf(err, errlen, "the calibration process died");
	if (ret)
		return ret;
	out->ns_per_hit = budget_median(diff, rounds);
	out->bare_ns = budget_median(bare, rounds);
	out->switch_ns = budget_median(sw, rounds);
	out->rounds = rounds;
	out->calls = n;
	return 0;
}

int budget_calibrate(unsigned int rounds, uint64_t calls, struct budget_calibration *out,
		     char *err, size_t errlen)
{
	struct calib c = { .to_child = -1, .from_child = -1 };
	int ret;

	memset(out, 0, sizeof(*out));
	if (!rounds || rounds > 64 || !calls)
		return -EINVAL;
	ret = calib_offset(&c, err, errlen);
	if (!ret)
		ret = calib_start(&c, err, errlen);
	/* a warm-up run: page faults, the CPU's clock */
	if (!ret && calib_run(&c, calls) < 0) {
		snprintf(err, errlen, "the calibration process died");
		ret = -EPIPE;
	}
	if (!ret)
		ret = calib_rounds(&c, rounds, calls, out, err, errlen);
	calib_stop(&c);
	return ret;
}
