// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test tool: the DWARF unwinder on a real process, without BPF.  Stops the
 * process with ptrace SAMPLES times, takes the registers and a copy of the
 * top of its stack (what the BPF side puts in a sample record), lets it go
 * on, then unwinds every snapshot and prints one line per sample:
 *   stop (tab) frames, innermost first, ';'-joined
 * A frame is its function name, or object+0xoffset when the object has no
 * symbol for it.  Lines starting with '#' summarize: stop reasons, and the
 * unwind time per sample once the objects are loaded (first sample apart).
 *
 *   unwindpid PID [SAMPLES [STACK_BYTES]]     defaults: 200 samples, 16 KiB
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/types.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bsearch.h"
#include "culpert.h"
#include "frame_name.h"
#include "target.h"
#include "unwind.h"

#define MAX_FRAMES 128

struct snapshot {
	struct culpert_regs regs;
	size_t len;
	unsigned char *stack;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* up to `want` bytes from sp, stopping at the first unreadable page like a BPF probe read */
static size_t copy_stack(pid_t pid, uint64_t sp, unsigned char *buf, size_t want)
{
	struct iovec local = { buf, want }, remote[64];
	uint64_t addr = sp, end = sp + want;
	int n = 0;
	ssize_t got;

	while (addr < end && n < 64) {
		uint64_t next = (addr | 4095) + 1;

		remote[n].iov_base = (void *)addr;
		remote[n++].iov_len = (next < end ? next : end) - addr;
		addr = next;
	}
	got = process_vm_readv(pid, &local, 1, remote, n, 0);
	return got > 0 ? (size_t)got : 0;
}

static int snap(pid_t pid, struct snapshot *s, size_t want)
{
	struct user_regs_struct r;
	int status;

	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) || waitpid(pid, &status, __WALL) != pid)
		return -errno;
	if (!WIFSTOPPED(status))
		return -ESRCH;
	if (ptrace(PTRACE_GETREGS, pid, 0, &r))
		return -errno;
	s->regs = (struct culpert_regs){
		.ip = r.rip, .sp = r.rsp, .bp = r.rbp, .bx = r.rbx,
		.r12 = r.r12, .r13 = r.r13, .r14 = r.r14, .r15 = r.r15,
	};
	s->stack = malloc(want);
	s->len = s->stack ? copy_stack(pid, r.rsp, s->stack, want) : 0;
	/* a signal that stopped it is passed on, anything else swallowed */
	return ptrace(PTRACE_CONT, pid, 0, 0) ? -errno : 0;
}

static void print_frame(struct objcache *objs, const struct procmaps *maps, uint64_t pc)
{
	const struct procmap *m;
	const char *name = frame_name(objs, maps, pc, &m);
	const char *base = m ? strrchr(m->path, '/') : NULL;

	if (*name)
		printf("%s", name);
	else
		printf("%s+%#" PRIx64, base ? base + 1 : "?", m ? pc - m->start + m->offset : pc);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* median and 90th percentile of v[0..n) (sorts v) */
static void print_times(const char *what, double *v, int n)
{
	if (n < 1)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	printf("# %s median %.2f p90 %.2f (us, %d samples)\n", what, v[n / 2], v[n * 9 / 10], n);
}

struct run {
	struct objcache *objs;
	struct procmaps maps;
	struct snapshot *snaps;
	int n;
};

static int unwind_one(struct unwinder *u, const struct run *r, int i, size_t len,
		      uint64_t *frames, enum unwind_stop *stop)
{
	const struct snapshot *s = &r->snaps[i];

	return unwinder__unwind(u, &r->maps, &s->regs, s->stack, len, frames, MAX_FRAMES, stop);
}

/* every sample, printed; with one unwinder, as a capture does */
static int print_pass(struct unwinder *u, const struct run *r, double *us)
{
	int i, j, n, counts[UNWIND_STOP__MAX] = { 0 };
	uint64_t frames[MAX_FRAMES];
	enum unwind_stop stop;
	size_t total = 0;

	for (i = 0; i < r->n; i++) {
		double t0 = now_us();

		n = unwind_one(u, r, i, r->snaps[i].len, frames, &stop);
		us[i] = now_us() - t0;
		if (n < 0) {
			printf("failed: %s\n", strerror(-n));
			continue;
		}
		counts[stop]++;
		total += n;
		printf("%s\t", unwind_stop_name(stop));
		for (j = 0; j < n; j++) {
			printf(j ? ";" : "");
			print_frame(r->objs, &r->maps, frames[j] - (j > 0));
		}
		printf("\n");
	}
	printf("# samples %d end %d truncated %d depth %d error %d frames/sample %.1f\n", r->n,
	       counts[UNWIND_STOP_END], counts[UNWIND_STOP_TRUNCATED], counts[UNWIND_STOP_DEPTH],
	       counts[UNWIND_STOP_ERROR], (double)total / r->n);
	return 0;
}

/* without the per-object cache: a new unwinder for every sample */
static void cold_pass(pid_t pid, const struct run *r, double *us)
{
	uint64_t frames[MAX_FRAMES];
	enum unwind_stop stop;
	int i;

	for (i = 0; i < r->n; i++) {
		double t0 = now_us();
		struct unwinder *u = unwinder__new(pid, r->objs);

		unwind_one(u, r, i, r->snaps[i].len, frames, &stop);
		unwinder__free(u);
		us[i] = now_us() - t0;
	}
}

struct copy_len {
	struct unwinder *u;
	const struct run *r;
	int i;
};

/* a copy of len bytes of sample i's stack is too short to reach the outermost frame */
static bool short_of_end(size_t len, void *ctx)
{
	const struct copy_len *c = ctx;
	uint64_t frames[MAX_FRAMES];
	enum unwind_stop stop;

	return !(unwind_one(c->u, c->r, c->i, len, frames, &stop) > 0 && stop == UNWIND_STOP_END);
}

/* the shortest copy that still reaches the outermost frame, per sample that reached it */
static void bytes_pass(struct unwinder *u, const struct run *r, double *bytes, int *n_out)
{
	struct copy_len c = { u, r, 0 };
	uint64_t frames[MAX_FRAMES];
	enum unwind_stop stop;

	*n_out = 0;
	for (c.i = 0; c.i < r->n; c.i++) {
		size_t len = r->snaps[c.i].len;

		if (unwind_one(u, r, c.i, len, frames, &stop) < 0 || stop != UNWIND_STOP_END)
			continue;
		bytes[(*n_out)++] = (double)lower_bound_at(len, short_of_end, &c);
	}
}

static int take_snapshots(pid_t pid, struct run *r, size_t want)
{
	int i;

	if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
		fprintf(stderr, "error: ptrace pid %d: %s\n", pid, strerror(errno));
		return -1;
	}
	for (i = 0; i < r->n; i++) {
		if (snap(pid, &r->snaps[i], want)) {
			fprintf(stderr, "error: pid %d gone after %d samples\n", pid, i);
			return -1;
		}
		usleep(2000);
	}
	ptrace(PTRACE_INTERRUPT, pid, 0, 0);
	waitpid(pid, NULL, __WALL);
	return ptrace(PTRACE_DETACH, pid, 0, 0);
}

int main(int argc, char **argv)
{
	size_t want = argc > 3 ? strtoul(argv[3], NULL, 0) : 16384;
	pid_t pid = argc > 1 ? atoi(argv[1]) : 0;
	struct run r = { .n = argc > 2 ? atoi(argv[2]) : 200 };
	struct unwinder *u;
	struct target t;
	double *v;
	char err[256];
	int i, n;

	if (pid <= 0 || r.n <= 1 || !want) {
		fprintf(stderr, "usage: unwindpid PID [SAMPLES (>1) [STACK_BYTES]]\n");
		return 2;
	}
	r.snaps = calloc(r.n, sizeof(*r.snaps));
	v = calloc(r.n, sizeof(*v));
	if (!r.snaps || !v) {
		fprintf(stderr, "error: out of memory\n");
		return 1;
	}
	if (target__open(pid, &t, err, sizeof(err)) || procmaps__read(pid, &r.maps)) {
		fprintf(stderr, "error: %s\n", err);
		return 1;
	}
	/* objects opened while the process is there, as a capture does at attach */
	r.objs = objcache__new(&t);
	for (i = 0; i < (int)r.maps.n; i++)
		if (r.maps.v[i].executable && procmap__is_file(&r.maps.v[i]))
			objcache__get(r.objs, &r.maps.v[i]);
	if (take_snapshots(pid, &r, want))
		return 1;
	u = unwinder__new(pid, r.objs);
	if (!u) {
		fprintf(stderr, "error: unwinder: %s\n", strerror(errno));
		return 1;
	}
	print_pass(u, &r, v);
	/* the first sample loads the objects it runs through; the rest find them loaded */
	printf("# unwind_first_us %.1f\n", v[0]);
	print_times("unwind_us", v + 1, r.n - 1);
	cold_pass(pid, &r, v);
	print_times("unwind_uncached_us", v, r.n);
	bytes_pass(u, &r, v, &n);
	if (n) {
		qsort(v, n, sizeof(*v), cmp_double);
		printf("# stack_bytes_needed median %.0f max %.0f (%d samples)\n", v[n / 2],
		       v[n - 1], n);
	}
	unwinder__free(u);
	objcache__free(r.objs);
	procmaps__free(&r.maps);
	target__close(&t);
	return 0;
}
