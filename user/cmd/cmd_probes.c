// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert-bpf probes: what attach would do to a process, and what would stop it. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocator.h"
#include "cmd_common.h"
#include "collect_opts.h"
#include "commands.h"
#include "elfobj.h"
#include "exe_kind.h"
#include "family.h"
#include "kfeatures.h"
#include "log.h"
#include "objcache.h"
#include "inject.h"
#include "injection.h"
#include "otel.h"
#include "probe_offset.h"
#include "procmaps.h"
#include "bpfobj.h"
#include "session.h"
#include "spanfn.h"
#include "target.h"
#include "units.h"
#include "usdt.h"

enum { OPT_PID = 'p' };

/* attach's options, their keys and ranges (collect_opts.h), with what probes does with them */
static const struct opt_spec probes_specs[] = {
	OPT_ARG("pid", OPT_PID, "PID",
		 "process to inspect"),
	OPT_ARG("allocator", COLLECT_OPT_ALLOCATOR, "NAME",
		 "auto, a family, or a symbol prefix"),
	OPT_ARG("unwind", COLLECT_OPT_UNWIND, "MODE",
		 "fp, dwarf or auto (default): which, and why"),
	OPT_ARG("span-fn", COLLECT_OPT_SPAN_FN, "PATTERN",
		 "list the functions it matches (repeatable)"),
	OPT_ARG("max-span-fns", COLLECT_OPT_MAX_SPAN_FNS, "N",
		 "the limit on matches (default 64)"),
	OPT_FLAG("no-session", COLLECT_OPT_NO_SESSION,
		 "the paths used without uprobe sessions"),
	OPT_FLAG("no-multi", COLLECT_OPT_NO_MULTI,
		 "the paths used without uprobe_multi links"),
	OPT_ARG("sampler", COLLECT_OPT_SAMPLER, "MODE",
		 "auto (default), usdt, uprobes or inject: which path attach\n"
		 "takes (inject: whether loading the sampler would work)"),
	OPT_FLAG("inuse", COLLECT_OPT_INUSE,
		 "... with --inuse (otel_memory:free needed too)"),
	OPT_FLAG("verbose", 'v',
		 "also list the absent optional entry points, and why\n"
		 "each probe sits at its symbol's +0"),
	OPT_FLAG("help", 'h',
		 "this help"),
	OPT_END,
};

static const struct opt_spec *const probes_tables[] = { probes_specs, NULL };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert-bpf probes --pid PID [OPTIONS]\n"
		"\n"
		"Dry run of attach: the allocator found (object, symbols, offsets, whether the\n"
		"kernel emulates or single-steps each probed instruction and what a hit costs),\n"
		"how probes would be attached, the stack unwinding chosen, and anything that\n"
		"would make attach fail.  Exits 1 when attaching would fail.\n"
		"\n"
		"Options (as for attach):\n");
	opt_spec_help(f, probes_tables, 6, 25);
	fprintf(f,
		"\n"
		"EXAMPLES:\n"
		"  sudo culpert-bpf probes --pid 1234\n"
		"  sudo culpert-bpf probes --pid 1234 --allocator je_\n");
}

/* the attach line follows --no-multi, as bpfobj__new() would */
static void print_kernel(const struct session_opts *a)
{
	const struct kfeatures *f = features__get();
	bool multi = bpfobj_uprobe_mode(a->no_multi) == UPROBE_MODE_MULTI;

	printf("kernel:     %s (BTF %s, ring buffer %s, uprobe_multi %s, uprobe sessions %s)\n",
	       f->release, f->btf ? "yes" : "NO", f->ringbuf ? "yes" : "NO",
	       f->uprobe_multi ? "yes" : "no", f->uprobe_session ? "yes" : "no");
	printf("attach:     %s, per pid (other processes mapping the same objects are not probed)\n",
	       multi ? "uprobe_multi links" : "one perf-event uprobe per site");
}

/* operator new & co.: how --inuse sees their returns without a return probe */
static void print_exits(const struct probe_point *p)
{
	if (!(p->flags & CULPERT_PROBE_F_EXITS))
		return;
	if (p->flags & CULPERT_PROBE_F_DELEGATE)
		printf("  %-22s   may throw; --inuse: what its malloc returned, no return probe on it\n", "");
	else if (p->flags & CULPERT_PROBE_F_NO_RETURN)
		printf("  %-22s   may throw; --inuse cannot track its blocks: %s\n", "", p->exits_missed);
	else
		printf("  %-22s   may throw; --inuse: uprobes on %zu return instructions and on %zu "
		       "branches before others, no return probe\n", "", p->n_exits, p->n_hoists);
}

/* which of the capabilities that matter we have (README, Privileges) */
static void print_privileges(void)
{
	static const struct { int cap; const char *name; } caps[] = {
		{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN" }, { CAP_BPF, "CAP_BPF" },
		{ CAP_PERFMON, "CAP_PERFMON" }, { CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
	};
	size_t i, n = 0;

	printf("privileges:");
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		if (features__has_cap(caps[i].cap))
			printf("%s%s", n++ ? ", " : " ", caps[i].name);
	printf("%s%s\n", n ? "" : " none of CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE",
	       features__perf_uprobes_need_admin() ?
	       " (perf-event uprobes, for --no-multi, need CAP_SYS_ADMIN on this kernel)" : "");
}

static void print_plan(const struct alloc_plan *plan)
{
	size_t i, o;

	for (o = 0; o < plan->n_objects; o++) {
		const struct alloc_object *obj = &plan->objects[o];

		printf("allocator:  %s in %s (build id %s%s%s%s)\n", obj->family, obj->path,
		       obj->build_id[0] ? obj->build_id : "none", *obj->prefix ? ", names " : "",
		       obj->prefix, *obj->prefix ? "*" : "");
		for (i = 0; i < plan->n_points; i++) {
			const struct probe_point *p = &plan->points[i];

			if (p->object != (int)o)
				continue;
			printf("  %-22s offset 0x%llx %s (%s)", p->symbol,
			       (unsigned long long)p->offset,
			       probe_offset__class_name(p->at.insn_class),
			       probe_offset__cost_text(p->at.insn_class));
			/* the reason starts with the distance: "(symbol +3: past testq ...)" */
			if (p->offset != p->sym_offset || log_level >= LOG_INFO)
				printf(" (symbol %s)", p->at.reason);
			printf("\n");
			print_exits(p);
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

/*
 * What the probes would see: nothing of a Go program's heap, nothing but the
 * C library's own use when no object calls the allocator.  The count of
 * warnings.
 */
static int print_reach(const struct target *t, const struct procmaps *maps,
		       struct objcache *objs, const struct alloc_plan *plan)
{
	const struct procmap *exe = exe_kind__exe_mapping(t, maps);
	int n = 0;

	if (exe && exe_kind__is_go(objcache__get(objs, exe))) {
		printf("warning:    %s is a Go program: Go's runtime allocates its heap without "
		       "malloc, so attach sees only C allocations (cgo, C libraries); profile Go's "
		       "heap with runtime/pprof\n", t->exe);
		n++;
	} else if (exe_kind__pymalloc(t->pid, maps, objs)) {
		printf("warning:    pid %d runs CPython: its objects of 512 bytes or less come from "
		       "pymalloc's arenas, not malloc, and are not seen; start it with "
		       "PYTHONMALLOC=malloc to see them\n", (int)t->pid);
		n++;
	} else if (!exe_kind__calls_allocator(maps, objs, plan)) {
		printf("warning:    no object of pid %d calls the probed entry points (none imports "
		       "%s or its siblings): attach would see only the allocator library's own "
		       "use of them\n", (int)t->pid, plan->n_points ? plan->points[0].symbol : "malloc");
		n++;
	}
	return n;
}

static void print_unwind(const struct target *t, const struct procmaps *maps,
			 struct objcache *objs, enum session_unwind want)
{
	enum session_unwind got;
	char why[PATH_MAX + 128];

	session_unwind__choose(t, maps, objs, want, &got, why, sizeof(why));
	printf("unwind:     %s (%s)\n", got == SESSION_UNWIND_DWARF ? "dwarf" : "fp", why);
}

/* culpert:span_* USDT sites of one object, each site at -v */
static int print_usdt_object(void *ctx, const struct procmap *m, struct elfobj *obj,
			     const struct usdt_site *sites, int n)
{
	size_t *total = ctx;
	int i;

	printf("spans:      %d culpert:span_* USDT sites in %s\n", n, m->path);
	for (i = 0; log_level >= LOG_INFO && i < n; i++)
		printf("  %-22s pc 0x%llx semaphore 0x%llx\n", sites[i].name,
		       (unsigned long long)sites[i].pc, (unsigned long long)sites[i].semaphore);
	*total += (size_t)n;
	return 0;
}

static void print_usdt(const struct procmaps *maps, struct objcache *objs)
{
	size_t total = 0;

	if (usdt_objects(maps, objs, "culpert", print_usdt_object, &total))
		printf("spans:      cannot list the USDT probes: %s\n", strerror(ENOMEM));
	else if (!total)
		printf("spans:      no culpert:span_* USDT probes (include/culpert/span.h); --span-fn works without\n");
}

static int print_span_fns(const struct target *t, const struct procmaps *maps,
			  struct objcache *objs, const struct session_opts *a)
{
	struct span_fn_plan p;
	char err[4096], how[256];
	size_t i;

	if (!a->n_span_fns)
		return 0;
	if (span_fn__plan(t, maps, objs, a->span_fns, a->n_span_fns, a->max_span_fns, &p, err,
			  sizeof(err))) {
		printf("span-fn:    REFUSED\n");
		pr_error("%s\n", err);
		return -EINVAL;
	}
	printf("span-fn:    %zu functions match\n", p.n_fns);
	for (i = 0; i < p.n_fns; i++)
		printf("  %-30s %s offset 0x%llx, %s\n", p.fns[i].name, p.display[p.fns[i].object],
		       (unsigned long long)p.fns[i].offset,
		       span_fn__how(&p.fns[i], how, sizeof(how)));
	span_fn_plan__free(&p);
	return 0;
}

static void print_inuse(const struct session_opts *a, bool otel)
{
	printf("inuse:      with --inuse, returns through %s\n",
	       bpfobj_inuse__name(otel ? BPFOBJ_INUSE_OTEL :
			       bpfobj_inuse_mode(a->no_multi, a->no_session)));
}

/* the objects carrying the otel_memory contract, and the rate a sampler's page says */
static void print_otel_objects(const struct otel_plan *p, pid_t pid)
{
	char rate[32];
	uint64_t r;
	size_t i;

	for (i = 0; i < p->n; i++) {
		const struct otel_object *o = &p->objects[i];

		printf("  %s: %zu otel_memory:alloc site%s%s, %zu otel_memory:free site%s%s%s\n",
		       o->path, o->n_alloc, o->n_alloc == 1 ? "" : "s",
		       o->alloc_sem ? " (semaphore)" : "", o->n_free, o->n_free == 1 ? "" : "s",
		       o->free_sem ? " (semaphore)" : "", o->page ? ", culpert_sampler_page" : "");
	}
	if (p->use && !otel_plan__rate(p, pid, &r))
		printf("  rate %s (the sampler's page; --rate is not used)\n",
		       format_bytes(rate, sizeof(rate), (double)r));
	else if (p->use)
		printf("  no rate published: the profile's period would be --rate\n");
}

/*
 * --sampler inject: would loading the sampler work, and what would it not
 * see (docs/inject.md).  Nothing is stopped or written here.
 */
static int print_inject(const struct target *t, const struct procmaps *maps,
			struct objcache *objs, bool *otel)
{
	char why[512];
	int ret = injection__check(t, maps, objs, why, sizeof(why));

	if (ret) {
		printf("sampler:    injection would not work: %s\n", why);
		pr_error("%s; --sampler uprobes still works\n", why);
		return ret;
	}
	printf("sampler:    injection would work: libculpert-sampler.so %s, its otel_memory "
	       "probes attached, released at the end\n", inject__mapped(maps) ?
	       "is mapped already and would be reused" : "loaded with ptrace at a safe point");
	printf("  unseen:   allocations made before the injection; calls through a pointer to "
	       "malloc taken before it; calls inside an object that defines its own allocator "
	       "(a static jemalloc or tcmalloc)\n");
	*otel = true;
	return 0;
}

/*
 * Which path attach takes (--sampler): the otel_memory probes or the
 * allocator's entry points.  -ENOENT when --sampler usdt cannot be had.
 */
static int print_sampler(const struct target *t, const struct procmaps *maps,
			 struct objcache *objs, const struct session_opts *a, bool *otel)
{
	struct otel_plan p;
	int ret;

	if (a->sampler == OTEL_MODE_INJECT)
		return print_inject(t, maps, objs, otel);
	ret = otel__plan(t, maps, objs, (enum otel_mode)a->sampler, a->inuse, &p);

	printf("sampler:    %s\n", p.why);
	if (ret == -ENOMEM)
		return ret;
	print_otel_objects(&p, t->pid);
	*otel = p.use;
	otel_plan__free(&p);
	if (ret)
		pr_error("%s: start the program with LD_PRELOAD=libculpert-sampler.so "
			 "(docs/sampler.md), or use --sampler auto or uprobes\n", p.why);
	return ret;
}

/* user + system CPU time of a process, in clock ticks (/proc/PID/stat fields 14, 15); 0 unknown */
static uint64_t cpu_ticks(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char path[64], buf[1024], *p;
	size_t n = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	/* comm may hold blanks and ')': the fields start after the last ')' */
	p = strrchr(buf, ')');
	for (i = 2; p && i < 14; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu %llu", &ut, &st) != 2)
		return 0;
	return ut + st;
}

/*
 * A master or postmaster allocates little itself; its workers or backends
 * do, and attach without --children sees none of them: named, with the CPU
 * each side has used, which says who does the work.  1 when there are some.
 */
static int print_children(const struct target *t)
{
	char names[640];
	size_t n = family_describe(t->pid, names, sizeof(names)), i;
	pid_t *v;
	uint64_t kids = 0;
	double hz = (double)sysconf(_SC_CLK_TCK);

	if (!n) {
		printf("children:   none\n");
		return 0;
	}
	v = family_descendants(t->pid, &n);
	for (i = 0; v && i < n; i++)
		kids += cpu_ticks(v[i]);
	free(v);
	printf("children:   %zu descendant process%s: %s\n", n, n == 1 ? "" : "es", names);
	printf("            CPU used so far: %.2f s by pid %d itself, %.2f s by its descendants\n",
	       (double)cpu_ticks(t->pid) / (hz > 0 ? hz : 100), (int)t->pid,
	       (double)kids / (hz > 0 ? hz : 100));
	printf("            attach profiles pid %d alone: its descendants allocate on their own "
	       "(a server's workers, a database's backends); 'culpert-bpf attach --pid %d "
	       "--children' follows them too, and those forked while profiled\n", (int)t->pid,
	       (int)t->pid);
	return 1;
}

static int parse_args(int argc, char **argv, struct session_opts *a)
{
	int c, ret;

	collect_opts__defaults(a);
	while ((c = opt_spec_next(argc, argv, probes_tables)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CMD_HELP;
		}
		if (c == OPT_PID)
			ret = opt_pid("--pid", optarg, &a->pid);
		else
			ret = collect_opts__parse(c, optarg, a);
		if (ret)
			return ret < 0 ? ret : -EINVAL;
	}
	if (opt_need_pid(argc, argv, a->pid, "the process to inspect"))
		return -EINVAL;
	return 0;
}

int cmd_probes(int argc, char **argv)
{
	struct session_opts a = { 0 };
	const char *blocker;
	struct alloc_plan plan;
	struct procmaps maps = { 0 };
	struct objcache *objs = NULL;
	struct target t;
	char err[1024];
	int ret = CMD_FAIL, warnings = 0, children;
	bool otel = false;

	ret = parse_args(argc, argv, &a);
	if (ret) {
		free(a.span_fns);
		return ret == CMD_HELP ? CMD_OK : CMD_ERROR;
	}
	ret = CMD_FAIL;
	if (target__open(a.pid, &t, err, sizeof(err))) {
		pr_error("%s\n", err);
		free(a.span_fns);
		return CMD_FAIL;
	}
	printf("target:     pid %d (%s) %s\n", (int)t.pid, t.comm, t.exe);
	if (target__started_as_other(&t))
		printf("            started as %s%s%s%s\n", t.argv0,
		       t.argv0_link[0] ? ", a symlink to " : "", t.argv0_link,
		       t.argv0_link[0] ? ": the profile names the file it leads to" : "");
	blocker = features__blocker();
	if (!blocker)
		blocker = features__perf_uprobe_blocker(a.no_multi);
	print_kernel(&a);
	print_privileges();
	if (procmaps__read(t.pid, &maps)) {
		pr_error("cannot read /proc/%d/maps: run as root or with CAP_SYS_PTRACE\n", (int)t.pid);
		goto out;
	}
	objs = objcache__new(&t);
	if (!objs)
		goto out;
	if (allocator__plan(&t, &maps, objs, a.allocator, &plan, err, sizeof(err))) {
		printf("allocator:  NOT FOUND\n");
		pr_error("%s\n", err);
		goto out;
	}
	print_plan(&plan);
	warnings = print_reach(&t, &maps, objs, &plan);
	alloc_plan__free(&plan);
	print_unwind(&t, &maps, objs, a.unwind);
	print_usdt(&maps, objs);
	if (print_span_fns(&t, &maps, objs, &a))
		goto out;
	if (print_sampler(&t, &maps, objs, &a, &otel))
		goto out;
	print_inuse(&a, otel);
	children = print_children(&t);
	if (blocker) {
		printf("status:     attach would fail\n");
		pr_error("%s\n", blocker);
		goto out;
	}
	printf("status:     ok, attach would work%s%s\n",
	       warnings ? ", but see the warning: it may sample nothing" : "",
	       children ? " (on this process alone: see children)" : "");
	ret = CMD_OK;
out:
	free(a.span_fns);
	objcache__free(objs);
	procmaps__free(&maps);
	target__close(&t);
	return ret;
}
