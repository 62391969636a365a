// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert-bpf probes: what attach would do to a process, and what would stop it. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "cmd_common.h"
#include "commands.h"
#include "elfobj.h"
#include "kfeatures.h"
#include "fpcheck.h"
#include "log.h"
#include "objcache.h"
#include "procmaps.h"
#include "target.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert-bpf probes --pid PID [OPTIONS]\n"
		"\n"
		"Dry run of attach: the allocator found (object, symbols, offsets), how probes\n"
		"would be attached, the stack unwinding chosen, and anything that would make\n"
		"attach fail.  Exits 1 when attaching would fail.\n"
		"\n"
		"Options:\n"
		"  -p, --pid PID          process to inspect\n"
		"      --allocator NAME   as for attach: auto, a family, or a symbol prefix\n"
		"  -v, --verbose          also list the absent optional entry points, and why\n"
		"                         each probe sits at its symbol's +0\n"
		"  -h, --help             this help\n"
		"\n"
		"EXAMPLES:\n"
		"  sudo culpert-bpf probes --pid 1234\n"
		"  sudo culpert-bpf probes --pid 1234 --allocator je_\n");
}

static void print_kernel(void)
{
	const struct kfeatures *f = features__get();

	printf("kernel:     %s (BTF %s, ring buffer %s, uprobe_multi %s, uprobe sessions %s)\n",
	       f->release, f->btf ? "yes" : "NO", f->ringbuf ? "yes" : "NO",
	       f->uprobe_multi ? "yes" : "no", f->uprobe_session ? "yes" : "no");
	printf("attach:     %s, per pid (other processes mapping the same objects are not probed)\n",
	       f->uprobe_multi ? "uprobe_multi links" : "one perf-event uprobe per site");
}

static void print_plan(const struct alloc_plan *plan)
{
	size_t i, o;

	for (o = 0; o < plan->n_objects; o++) {
		const struct alloc_object *obj = &plan->objects[o];

		printf("allocator:  %s in %s (build id %s)\n", obj->family, obj->path,
		       obj->build_id[0] ? obj->build_id : "none");
		for (i = 0; i < plan->n_points; i++) {
			const struct probe_point *p = &plan->points[i];

			if (p->object != (int)o)
				continue;
			printf("  %-22s offset 0x%llx", p->symbol, (unsigned long long)p->offset);
			/* the reason starts with the distance: "(symbol +3: past testq ...)" */
			if (p->offset != p->sym_offset || log_level >= LOG_INFO)
				printf(" (symbol %s)", p->at.reason);
			printf("\n");
		}
	}
	if (plan->n_skipped) {
		printf("  %zu optional entry points not defined%s", plan->n_skipped,
		       log_level >= LOG_INFO ? ":" : " (-v lists them)");
		for (i = 0; log_level >= LOG_INFO && i < plan->n_skipped; i++)
			printf(" %s", plan->skipped[i]);
		printf("\n");
	}
}

static void print_unwind(const struct target *t, const struct procmaps *maps,
			 struct objcache *objs)
{
	struct fp_evidence ev;
	struct elfobj *exe = NULL;
	size_t i;

	for (i = 0; i < maps->n && !exe; i++)
		if (maps->v[i].executable && !strcmp(maps->v[i].path, t->exe))
			exe = objcache__get(objs, &maps->v[i]);
	if (!exe || fpcheck(exe, &ev)) {
		printf("unwind:     fp (no function symbols in %s to judge frame pointers by)\n",
		       t->exe);
		return;
	}
	printf("unwind:     fp (%s: %zu of %zu functions examined set up a frame pointer)\n",
	       t->exe, ev.with_fp, ev.functions);
	if (!fp_evidence__has_fp(&ev))
		printf("  warning: %s is built without frame pointers: stacks past the allocating function may be wrong\n",
		       t->exe);
}

int cmd_probes(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "allocator", required_argument, NULL, 'a' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *allocator = "auto", *blocker;
	struct alloc_plan plan;
	struct procmaps maps = { 0 };
	struct objcache *objs = NULL;
	struct target t;
	char err[1024];
	pid_t pid = 0;
	int c, ret = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (opt_pid(optarg, &pid))
				return 2;
			break;
		case 'a':
			allocator = optarg;
			break;
		case 'v':
			log_level++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'culpert-bpf probes --help'.\n");
			return 2;
		}
	}
	if (!pid) {
		pr_error("--pid is required: the process to inspect\n");
		return 2;
	}
	if (target__open(pid, &t, err, sizeof(err))) {
		pr_error("%s\n", err);
		return 1;
	}
	printf("target:     pid %d (%s) %s\n", (int)t.pid, t.comm, t.exe);
	blocker = features__blocker();
	print_kernel();
	if (procmaps__read(t.pid, &maps)) {
		pr_error("cannot read /proc/%d/maps: run as root or with CAP_SYS_PTRACE\n", (int)t.pid);
		goto out;
	}
	objs = objcache__new(&t);
	if (!objs)
		goto out;
	if (allocator__plan(&t, &maps, objs, allocator, &plan, err, sizeof(err))) {
		printf("allocator:  NOT FOUND\n");
		pr_error("%s\n", err);
		goto out;
	}
	print_plan(&plan);
	alloc_plan__free(&plan);
	print_unwind(&t, &maps, objs);
	if (blocker) {
		printf("status:     attach would fail\n");
		pr_error("%s\n", blocker);
		goto out;
	}
	printf("status:     ok, attach would work\n");
	ret = 0;
out:
	objcache__free(objs);
	procmaps__free(&maps);
	target__close(&t);
	return ret;
}
