// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Bench tool: attach an empty BPF program to every probe point culpert-bpf
 * would use in a process, through the same plan and attach code, and hold
 * it until the process exits or SIGINT.  What that costs the target is the
 * floor culpert-bpf's own overhead is measured against.
 *
 *   floor_attach PID [--no-multi] [--at-zero] [--usdt] [--entry SYM]...
 *
 * --entry adds an entry point the plan holds but attach probes only with
 * --inuse (free), or one it does not hold, at its chosen offset like the
 * others; --at-zero puts every probe at its symbol's +0 instead, to
 * measure what the choice saves; --usdt adds an empty USDT program on the
 * executable's culpert:span_* sites.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>

#include "culpert.h"
#include "allocator.h"
#include "elfobj.h"
#include "floor.skel.h"
#include "kfeatures.h"
#include "objcache.h"
#include "probe_offset.h"
#include "procmaps.h"
#include "target.h"
#include "uprobe.h"

#define MAX_EXTRA 8

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static bool planned(const struct alloc_plan *plan, uint64_t sym_offset)
{
	size_t i;

	for (i = 0; i < plan->n_points; i++)
		if (plan->points[i].object == 0 && plan->points[i].sym_offset == sym_offset)
			return true;
	return false;
}

/*
 * File offset of `name` in the allocator's object at its chosen offset
 * (at_zero: at +0).  0, 1 when the plan probes it already, or -errno.
 */
static int extra_entry(const struct alloc_plan *plan, const char *name, bool at_zero,
		       uint64_t *off)
{
	struct elfobj *obj = elfobj__open(plan->objects[0].open_path);
	const struct elf_symbol *sym;
	struct probe_offset po;
	int err = -ENOENT;

	if (!obj)
		return -errno;
	sym = elfobj__sym_by_name(obj, name);
	if (sym && !elfobj__vaddr_to_offset(obj, sym->value, off))
		/* the entries --entry adds are frees: what free_enter() reads */
		err = planned(plan, *off) ? 1 :
		      probe_offset__for_symbol(obj, sym, CULPERT_FN_FREE, &po);
	if (!err) {
		if (!at_zero)
			*off += po.offset;
		fprintf(stderr, "floor: %-22s symbol %s\n", name,
			at_zero ? "+0 (--at-zero)" : po.reason);
	}
	elfobj__free(obj);
	return err;
}

static bool named(char **names, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/*
 * The plan's offsets of object `o` -- free only when --entry free asks for
 * it, as culpert-bpf probes free only with --inuse -- then the extra
 * entries for the allocator's object.
 */
static size_t object_offsets(const struct alloc_plan *plan, size_t o, bool at_zero,
			     char **names, size_t n_names, const uint64_t *extra, size_t n_extra,
			     uint64_t *offs)
{
	size_t i, n = 0;

	for (i = 0; i < plan->n_points; i++) {
		const struct probe_point *p = &plan->points[i];

		if (p->object != (int)o ||
		    (p->fn == CULPERT_FN_FREE && !named(names, n_names, p->symbol)))
			continue;
		offs[n++] = at_zero ? p->sym_offset : p->offset;
		fprintf(stderr, "floor: %-22s symbol %s\n", p->symbol,
			at_zero ? "+0 (--at-zero)" : p->at.reason);
	}
	for (i = 0; o == 0 && i < n_extra; i++)
		offs[n++] = extra[i];
	return n;
}

static int attach_all(struct uprobe_set *set, enum uprobe_mode mode, struct floor_bpf *skel,
		      const struct alloc_plan *plan, pid_t pid, bool at_zero, char **names,
		      size_t n_names)
{
	uint64_t extra[MAX_EXTRA], *offs;
	size_t o, i, n, n_extra = 0;
	int err = 0;

	for (i = 0; i < n_names && err >= 0; i++) {
		err = extra_entry(plan, names[i], at_zero, &extra[n_extra]);
		if (err < 0)
			fprintf(stderr, "floor_attach: no %s in %s\n", names[i],
				plan->objects[0].path);
		/* already in the plan: a second probe on the same instruction would count twice */
		n_extra += err == 0;
	}
	if (err < 0)
		return err;
	offs = calloc(plan->n_points + n_extra, sizeof(*offs));
	if (!offs)
		return -ENOMEM;
	for (o = 0, err = 0; o < plan->n_objects && !err; o++) {
		n = object_offsets(plan, o, at_zero, names, n_names, extra, n_extra, offs);
		err = uprobe_set__attach(set, mode, skel->progs.floor_enter,
					 plan->objects[o].open_path, offs, NULL, n, pid, 0);
		if (err)
			fprintf(stderr, "floor_attach: attach failed: %s\n", strerror(-err));
	}
	free(offs);
	return err;
}

/* --usdt: the empty USDT program on the executable's culpert:span_enter/span_exit sites */
static int attach_usdt(struct floor_bpf *skel, pid_t pid, struct bpf_link **links)
{
	static const char *const probes[] = { "span_enter", "span_exit" };
	char exe[64];
	int i;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	for (i = 0; i < 2; i++) {
		links[i] = bpf_program__attach_usdt(skel->progs.floor_usdt, pid, exe, "culpert",
						    probes[i], NULL);
		if (!links[i]) {
			fprintf(stderr, "floor_attach: no culpert:%s in %s\n", probes[i], exe);
			return -errno;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "no-multi", no_argument, NULL, 'n' },
		{ "at-zero", no_argument, NULL, 'z' },
		{ "entry", required_argument, NULL, 'e' },
		{ "usdt", no_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	struct bpf_link *usdt[2] = { NULL, NULL };
	bool with_usdt = false;
	enum uprobe_mode mode = features__get()->uprobe_multi ? UPROBE_MODE_MULTI : UPROBE_MODE_PERF;
	char *names[MAX_EXTRA], err[1024];
	struct uprobe_set *set = NULL;
	struct floor_bpf *skel = NULL;
	struct objcache *objs = NULL;
	struct procmaps maps = { 0 };
	struct alloc_plan plan = { 0 };
	bool at_zero = false;
	size_t n_names = 0;
	struct target t;
	int c, ret = 1;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'n')
			mode = UPROBE_MODE_PERF;
		else if (c == 'z')
			at_zero = true;
		else if (c == 'e' && n_names < MAX_EXTRA)
			names[n_names++] = optarg;
		else if (c == 'u')
			with_usdt = true;
		else
			goto usage;
	}
	if (optind != argc - 1)
		goto usage;
	if (target__open(atoi(argv[optind]), &t, err, sizeof(err))) {
		fprintf(stderr, "floor_attach: %s\n", err);
		return 1;
	}
	objs = objcache__new(&t);
	if (procmaps__read(t.pid, &maps) || !objs ||
	    allocator__plan(&t, &maps, objs, "auto", &plan, err, sizeof(err))) {
		fprintf(stderr, "floor_attach: no probe plan for pid %d\n", (int)t.pid);
		goto out;
	}
	skel = floor_bpf__open();
	if (!skel)
		goto out;
	bpf_program__set_expected_attach_type(skel->progs.floor_enter,
					      uprobe_mode__attach_type(mode));
	set = uprobe_set__new();
	if (floor_bpf__load(skel) || !set ||
	    attach_all(set, mode, skel, &plan, t.pid, at_zero, names, n_names) ||
	    (with_usdt && attach_usdt(skel, t.pid, usdt)))
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "floor: attached %zu probe sites (%s)\n", uprobe_set__count(set),
		uprobe_mode__name(mode));
	while (!stop && target__alive(&t))
		usleep(20000);
	ret = 0;
out:
	bpf_link__destroy(usdt[0]);
	bpf_link__destroy(usdt[1]);
	uprobe_set__free(set);
	floor_bpf__destroy(skel);
	alloc_plan__free(&plan);
	objcache__free(objs);
	procmaps__free(&maps);
	target__close(&t);
	return ret;
usage:
	fprintf(stderr, "usage: floor_attach PID [--no-multi] [--at-zero] [--usdt] [--entry SYM]... (at most %d)\n",
		MAX_EXTRA);
	return 2;
}
