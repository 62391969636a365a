// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Bench tool: attach an empty BPF program to every probe point culpert-bpf
 * would use in a process, through the same plan and attach code, and hold
 * it until the process exits or SIGINT.  What that costs the target is the
 * floor culpert-bpf's own overhead is measured against.
 *
 *   floor_attach PID [--no-multi]
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocator.h"
#include "floor.skel.h"
#include "kfeatures.h"
#include "objcache.h"
#include "procmaps.h"
#include "target.h"
#include "uprobe.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	struct alloc_plan plan;
	struct procmaps maps;
	struct objcache *objs;
	struct floor_bpf *skel;
	struct uprobe_set *set;
	enum uprobe_mode mode;
	struct target t;
	char err[1024];
	uint64_t *offs;
	size_t o, i, n;

	if (argc < 2) {
		fprintf(stderr, "usage: floor_attach PID [--no-multi]\n");
		return 2;
	}
	mode = argc > 2 || !features__get()->uprobe_multi ? UPROBE_MODE_PERF : UPROBE_MODE_MULTI;
	if (target__open(atoi(argv[1]), &t, err, sizeof(err)) || procmaps__read(t.pid, &maps)) {
		fprintf(stderr, "floor_attach: %s\n", err);
		return 1;
	}
	objs = objcache__new(&t);
	if (allocator__plan(&t, &maps, objs, "auto", &plan, err, sizeof(err))) {
		fprintf(stderr, "floor_attach: %s\n", err);
		return 1;
	}
	skel = floor_bpf__open();
	bpf_program__set_expected_attach_type(skel->progs.floor_enter,
					      uprobe_mode__attach_type(mode));
	if (floor_bpf__load(skel))
		return 1;
	set = uprobe_set__new();
	offs = calloc(plan.n_points, sizeof(*offs));
	for (o = 0; o < plan.n_objects; o++) {
		for (n = 0, i = 0; i < plan.n_points; i++)
			if (plan.points[i].object == (int)o)
				offs[n++] = plan.points[i].offset;
		if (uprobe_set__attach(set, mode, skel->progs.floor_enter, plan.objects[o].open_path,
				       offs, NULL, n, t.pid, 0)) {
			fprintf(stderr, "floor_attach: attach failed\n");
			return 1;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "floor: attached %zu probe sites (%s)\n", uprobe_set__count(set),
		uprobe_mode__name(mode));
	while (!stop && target__alive(&t))
		usleep(20000);
	uprobe_set__free(set);
	floor_bpf__destroy(skel);
	free(offs);
	alloc_plan__free(&plan);
	objcache__free(objs);
	procmaps__free(&maps);
	target__close(&t);
	return 0;
}
