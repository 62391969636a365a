// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test tool: a sampler whose own handling makes the next sample.  It puts
 * culpert's allocator probes (--rate 1: every call sampled) on this very
 * process and allocates once per record it handles, so the ring buffer is
 * never empty while it reads it: the feedback that made `culpert-bpf
 * attach -p $$` spin.  It polls as culpert-bpf's sampling loop does until
 * it has run SECONDS of its own CPU time and prints
 *   polls N records M longest_poll_ms X longest_poll_wall_ms Y
 * X in its own CPU time too, so that neither the records nor the verdict on
 * them depend on what else the machine runs; Y, the wall time, is only said.
 * A poll that never returns (libbpf's ring_buffer__poll() consumes until
 * the ring is empty) leaves the tool running: the test's time limit fails it.
 *
 *   selffeed SECONDS
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocator.h"
#include "objcache.h"
#include "procmaps.h"
#include "bpfobj.h"
#include "target.h"

static unsigned long records;
static void *volatile sink;

static double now_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* every record handled allocates once, which --rate 1 samples: another record */
static int feed(void *ctx, void *data, size_t size)
{
	records++;
	sink = malloc(64);
	free(sink);
	return 0;
}

/* this process as a target: target__open() refuses culpert's own pid, rightly */
static int self_target(struct target *t)
{
	ssize_t n;

	memset(t, 0, sizeof(*t));
	t->pid = getpid();
	t->pidfd = -1;
	snprintf(t->comm, sizeof(t->comm), "selffeed");
	n = readlink("/proc/self/exe", t->exe, sizeof(t->exe) - 1);
	if (n < 0)
		return -errno;
	t->exe[n] = 0;
	return 0;
}

int main(int argc, char **argv)
{
	struct bpfobj_opts so = { .rate = 1, .max_depth = 8, .ringbuf_bytes = 1 << 20,
				   .on_event = feed };
	struct procmaps maps = { 0 };
	struct alloc_plan plan;
	struct bpfobj *s = NULL;
	struct objcache *objs;
	struct target t;
	double end, t0, w0, dt, longest = 0, longest_wall = 0;
	unsigned long polls = 0;
	char err[1024];
	int n;

	if (argc != 2 || atof(argv[1]) <= 0) {
		fprintf(stderr, "usage: selffeed SECONDS\n");
		return 2;
	}
	objs = self_target(&t) || procmaps__read(getpid(), &maps) ? NULL : objcache__new(&t);
	if (!objs || allocator__plan(&t, &maps, objs, "auto", &plan, err, sizeof(err))) {
		fprintf(stderr, "selffeed: no plan: %s\n", objs ? err : strerror(errno));
		return 1;
	}
	so.pid = t.pid;
	so.plan = &plan;
	if (bpfobj__new(&so, &s, err, sizeof(err))) {
		fprintf(stderr, "selffeed: %s\n", err);
		return 1;
	}
	/* the first allocation starts the chain */
	sink = malloc(64);
	free(sink);
	end = now_ms(CLOCK_THREAD_CPUTIME_ID) + atof(argv[1]) * 1e3;
	do {
		t0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
		w0 = now_ms(CLOCK_MONOTONIC);
		n = bpfobj__poll(s, 100);
		dt = now_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (now_ms(CLOCK_MONOTONIC) - w0 > longest_wall)
			longest_wall = now_ms(CLOCK_MONOTONIC) - w0;
		if (n < 0) {
			fprintf(stderr, "selffeed: poll: %s\n", strerror(-n));
			return 1;
		}
		polls++;
		if (dt > longest)
			longest = dt;
	} while (now_ms(CLOCK_THREAD_CPUTIME_ID) < end);
	bpfobj__free(s);
	printf("polls %lu records %lu longest_poll_ms %.0f longest_poll_wall_ms %.0f\n", polls,
	       records, longest, longest_wall);
	alloc_plan__free(&plan);
	objcache__free(objs);
	procmaps__free(&maps);
	return 0;
}
