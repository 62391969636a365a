// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert-bpf attach: sample a running process, write one pprof profile. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>

#include "cmd_common.h"
#include "collect_opts.h"
#include "commands.h"
#include "culpert.h"
#include "decompose.h"
#include "empty.h"
#include "family.h"
#include "heapgap.h"
#include "kfeatures.h"
#include "log.h"
#include "memsnap.h"
#include "memstats.h"
#include "otel.h"
#include "outfile.h"
#include "session.h"
#include "summary.h"
#include "units.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

enum { OPT_CHILDREN = 256, OPT_MAXST, OPT_STACKRATE, OPT_NOEXACT, OPT_STATS };

static const struct opt_spec attach_target_specs[] = {
	OPT_ARG("pid", 'p', "PID",
		 "process to profile (any of its thread ids works)"),
	OPT_FLAG("children", OPT_CHILDREN,
		 "also its descendants, those there and those it forks while\n"
		 "profiled (workers, backends): one profile, a pid and comm\n"
		 "label on each sample ('culpert report --by-process')"),
	OPT_ARG("duration", 'd', "D",
		 "stop after D (30s, 2m, 1h); default: until Ctrl-C"),
	OPT_ARG("output", 'o', "FILE",
		 "profile path, '-' for stdout;\ndefault culpert-COMM-PID-TIMESTAMP.pb.gz"),
	OPT_END,
};

static const struct opt_spec attach_more_specs[] = {
	OPT_NUM("max-stacks", OPT_MAXST, "N", 1, 1 << 24,
		 "distinct stacks kept (default 65536); beyond, stacks keep their leaf"),
	OPT_NUM("max-stack-rate", OPT_STACKRATE, "N", 0, 100000000,
		 "stacks captured per second (default 10000 at the default rate,\n"
		 "more in proportion for a smaller --rate, none with --rate 1;\n"
		 "0 = no limit); past it, a random subset keeps its stacks,\n"
		 "each weighed by 1/p: every function stays unbiased"),
	OPT_FLAG("no-exact", OPT_NOEXACT,
		 "no exact span totals: span enters and exits skip their\n"
		 "bookkeeping (docs/spans.md, \"Exact totals\")"),
	OPT_FLAG("stats", OPT_STATS,
		 "embed the memory picture (as 'culpert-bpf stats') at start\n"
		 "and end as mem.start.* / mem.end.* comments"),
	OPT_FLAG("verbose", 'v',
		 "more diagnostics (repeat for more)"),
	OPT_FLAG("help", 'h',
		 "this help"),
	OPT_END,
};

/* the target, the collection options all commands share, then attach's own */
static const struct opt_spec *const attach_specs[] = {
	attach_target_specs, collect_opt_specs, attach_more_specs, NULL,
};

#define HELP_WIDTH	27

static void usage(FILE *f, bool capture)
{
	if (capture) {
		fprintf(f,
			"Usage: culpert-bpf capture --pid PID [--duration 30s] [-o FILE] [OPTIONS]\n"
			"\n"
			"One-shot incident capture: attach --inuse --stats for --duration (default 30s),\n"
			"then one profile with allocations, the live heap with ages, and the process's\n"
			"memory picture (mem.* comments, the heap-vs-RSS gap, the RSS decomposed), and a\n"
			"summary on stderr: top spans, top live callsites, lost events, the gap, the\n"
			"anonymous RSS split into live heap, older blocks, free memory the allocator\n"
			"holds, its overhead and other memory (docs/memory-picture.md).\n"
			"\n"
			"Options (attach's; --inuse and --stats are always on):\n");
		opt_spec_help(f, attach_specs, 6, HELP_WIDTH);
		fprintf(f,
			"\n"
			"EXAMPLES:\n"
			"  sudo culpert-bpf capture --pid 1234\n"
			"  sudo culpert-bpf capture --pid 1234 --duration 2m -o incident.pb.gz\n");
		return;
	}
	fprintf(f,
		"Usage: culpert-bpf attach --pid PID [OPTIONS]\n"
		"\n"
		"Sample the allocations of a running process until --duration passes, the\n"
		"process exits, or SIGINT/SIGTERM arrives; then write a pprof profile.\n"
		"\n"
		"Options:\n");
	opt_spec_help(f, attach_specs, 6, HELP_WIDTH);
	fprintf(f,
		"\n"
		"EXAMPLES:\n"
		"  sudo culpert-bpf attach --pid 1234 -o prof.pb.gz      # Ctrl-C to stop\n"
		"  sudo culpert-bpf attach -p 1234 -d 30s --rate 64KiB\n"
		"  sudo culpert-bpf attach -p 1234 -d 10s -o - | culpert report -\n"
		"  sudo culpert-bpf attach -p $(cat /run/nginx.pid) --children -d 30s\n");
}

struct attach_args {
	struct session_opts so;
	uint64_t duration_ns;
	const char *output;
	bool stats;
	bool children;		/* --children: the descendants too (family.h) */
};

/* capture: attach with --inuse and --stats, for 30 s unless told otherwise */
static int parse_args(int argc, char **argv, struct attach_args *a, bool capture)
{
	bool stack_rate_set = false;
	uint64_t v;
	int c, ret;

	collect_opts__defaults(&a->so);
	if (capture) {
		a->so.inuse = true;
		a->stats = true;
		a->duration_ns = 30ULL * 1000000000ULL;
	}
	while ((c = opt_spec_next(argc, argv, attach_specs)) != -1) {
		ret = collect_opts__parse(c, optarg, &a->so);
		if (ret <= 0) {
			if (ret)
				return ret;
			continue;
		}
		switch (c) {
		case 'p':
			if (opt_pid("--pid", optarg, &a->so.pid))
				return -EINVAL;
			break;
		case 'd':
			if (opt_duration("--duration", optarg, 1, &a->duration_ns))
				return -EINVAL;
			break;
		case 'o':
			a->output = optarg;
			break;
		case OPT_MAXST:
			if (opt_spec_count(opt_spec_find(attach_specs, c), optarg, &v))
				return -EINVAL;
			a->so.max_entries = (size_t)v;
			break;
		case OPT_STACKRATE:
			if (opt_spec_count(opt_spec_find(attach_specs, c), optarg, &a->so.stack_rate))
				return -EINVAL;
			stack_rate_set = true;
			break;
		case OPT_NOEXACT:
			a->so.no_exact = true;
			break;
		case OPT_STATS:
			a->stats = true;
			break;
		case OPT_CHILDREN:
			a->children = true;
			break;
		case 'h':
			usage(stdout, capture);
			return CMD_HELP;
		default:
			return -EINVAL;
		}
	}
	if (opt_need_pid(argc, argv, a->so.pid,
		       "the process to profile"))
		return -EINVAL;
	/* the names of --span-fn are the BPF object's, set when it is loaded for one process */
	if (a->children && a->so.n_span_fns)
		return opt_error("--span-fn and --children do not go together yet: profile one "
				 "process with --span-fn, or the tree without it");
	/* the rate may be the in-process sampler's: the session scales the bound to it */
	a->so.stack_rate_auto = !stack_rate_set;
	return 0;
}

static void default_output(char *buf, size_t len, const char *comm, pid_t pid)
{
	time_t now = time(NULL);
	struct tm tm;
	char ts[32];
	size_t i;
	char c[32];

	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm);
	/* comm may hold '/' or spaces: keep the file name one word */
	snprintf(c, sizeof(c), "%s", comm);
	for (i = 0; c[i]; i++)
		if (c[i] == '/' || c[i] == ' ')
			c[i] = '_';
	snprintf(buf, len, "culpert-%s-%d-%s.pb.gz", c, (int)pid, ts);
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	/* no SA_RESTART: the poll in the sampling loop must return on a signal */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* a profile without a sample: why, with the numbers that say so */
static void explain_empty(struct session *s, const struct family *fam, const char *children)
{
	struct empty_facts f = {
		.samples = fam ? family__samples(fam) : session__samples(s),
		.rate = session__rate(s),
		.duration_ns = session__duration_ns(s),
		.go = session__is_go(s),
		.pid = session__pid(s),
		.children = children,
	};
	char why[2048];

	f.have_calls = fam ? family__calls_seen(fam, &f.calls, &f.bytes) :
			     session__calls_seen(s, &f.calls, &f.bytes);
	if (empty__explain(&f, why, sizeof(why)))
		fprintf(stderr, "culpert-bpf: the profile is empty: %s\n", why);
}

static void report_end(struct session *s, const struct family *fam, enum session_end why,
		       const char *path, const char *children)
{
	if (why == SESSION_END_TARGET_EXIT)
		fprintf(stderr, "culpert-bpf: pid %d (%s) exited; writing what was collected\n",
			(int)session__pid(s), session__comm(s));
	if (why == SESSION_END_TARGET_EXEC)
		fprintf(stderr, "culpert-bpf: pid %d (%s) exec'd another program; writing what was "
			"collected before\n", (int)session__pid(s), session__comm(s));
	if (fam) {
		family__warn_losses(fam);
		fprintf(stderr, "culpert-bpf: wrote %s (%zu processes, %llu samples, %llu lost)\n",
			strcmp(path, "-") ? path : "profile to stdout", family__processes(fam),
			(unsigned long long)family__samples(fam),
			(unsigned long long)family__lost(fam));
	} else {
		session__warn_losses(s);
		fprintf(stderr, "culpert-bpf: wrote %s (%llu samples, %llu lost)\n",
			strcmp(path, "-") ? path : "profile to stdout",
			(unsigned long long)session__samples(s),
			(unsigned long long)session__lost(s));
	}
	if (session__failed_calls(s))
		fprintf(stderr, "culpert-bpf: %llu allocator calls asked for more than can ever be "
			"allocated and failed: counted apart, in no total\n",
			(unsigned long long)session__failed_calls(s));
	explain_empty(s, fam, children);
}

/* what capture says about the memory: the gap, the decomposition of the RSS */
struct mem_report {
	struct heap_gap gap;
	struct mem_decomp decomp;
	bool have_gap, have_decomp;
};

/*
 * capture: the memory picture at the end, the live heap against the growth
 * since the picture at attach (start, NULL when it could not be read) and
 * the anonymous RSS decomposed, as comments and for the summary
 */
static void add_gap(struct memsnap *ms, struct session *s, const struct memstats *start,
		    struct mem_report *r)
{
	struct memstats *m = calloc(1, sizeof(*m));
	struct mem_live lv;

	if (!m)
		return;
	if (memsnap__add(ms, s, "mem.end", m))
		goto cleanup;
	mem_live__init(&lv, m);
	lv.untracked = session__untracked(s);
	if (session__live_each(s, mem_live__add_cb, &lv))
		goto cleanup;
	if (!heap_gap__compute(start, m, lv.bytes, sqrt(lv.var), &r->gap)) {
		heap_gap__comments(&r->gap, "mem.gap", session__add_comment_cb, s);
		r->have_gap = true;
	}
	if (!mem_decomp__compute(start, m, &lv, &r->decomp)) {
		mem_decomp__comments(&r->decomp, "mem.decomp", session__add_comment_cb, s);
		r->have_decomp = true;
	}
cleanup:
	free(m);
}

/*
 * The capture is over and cannot be had again: a profile that cannot go
 * where -o said goes to $TMPDIR (or /tmp) under its default name, and the
 * one error line says where.
 */
static int write_profile(struct session *s, struct family *fam, const char *path)
{
	return fam ? family__write(fam, path) : session__write(s, path);
}

static void write_fallback(struct session *s, struct family *fam, const char *out, int why)
{
	const char *dir = getenv("TMPDIR");
	char path[PATH_MAX], name[128];

	if (!dir || !*dir)
		dir = "/tmp";
	default_output(name, sizeof(name), session__comm(s), session__pid(s));
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    write_profile(s, fam, path)) {
		pr_error("cannot write the profile to %s: %s, nor to %s: the capture is lost\n",
			 out, strerror(-why), path);
		return;
	}
	pr_error("cannot write the profile to %s: %s; wrote it to %s instead\n", out,
		 strerror(-why), path);
}

static void close_capture(struct session *s, struct family *fam)
{
	if (fam)
		family__close(fam);
	else
		session__close(s);
}

/*
 * Without --children: a process whose descendants are not profiled says so
 * at the start (a master or postmaster allocates little itself), and the
 * profile carries them (target.children=) for the explanation of an empty one.
 */
static void note_children(struct session *s, char *kids, size_t len, bool at_end)
{
	char now[640], c[700];

	if (family_describe(session__pid(s), now, sizeof(now)))
		snprintf(kids, len, "%s", now);
	if (!kids[0])
		return;
	snprintf(c, sizeof(c), "target.children=%s", kids);
	/* without it the profile says nothing of them: the line at the end still does */
	if (at_end && session__add_comment(s, c))
		pr_warn("out of memory: the profile does not name the child processes\n");
	else if (!at_end)
		fprintf(stderr, "culpert-bpf: pid %d (%s) has child processes, not profiled: %s; "
			"--children follows them too\n", (int)session__pid(s), session__comm(s), kids);
}

/* attach and capture: one flow, capture adds the memory picture and a summary */
static int run(struct attach_args *a, bool capture)
{
	char err[1024], out[PATH_MAX], rate[32], kids[640] = "", who[64] = "";
	struct family *fam = NULL;
	struct session *s = NULL;
	struct memsnap *ms = NULL;
	enum session_end why;
	struct memstats *start = NULL;
	struct mem_report *mr = NULL;
	const char *blocker;
	int ret;

	blocker = features__blocker();
	if (!blocker)
		blocker = features__perf_uprobe_blocker(a->so.no_multi);
	if (blocker) {
		pr_error("%s\n", blocker);
		return CMD_FAIL;
	}
	if (a->children) {
		ret = family__open(&a->so, &fam, err, sizeof(err));
		s = ret ? NULL : family__root(fam);
	} else {
		ret = session__open(&a->so, &s, err, sizeof(err));
	}
	if (ret) {
		pr_error("%s\n", err);
		return CMD_FAIL;
	}
	if (a->output)
		snprintf(out, sizeof(out), "%s", a->output);
	else
		default_output(out, sizeof(out), session__comm(s), session__pid(s));
	/* fail before attaching, not after a long capture */
	if (outfile_check(out, err, sizeof(err))) {
		pr_error("cannot write the profile to %s: %s; choose another path with -o\n",
			 *out ? out : "\"\"", err);
		close_capture(s, fam);
		return CMD_FAIL;
	}
	/* without it the pictures are still taken, only the allocator's state is left out */
	if (a->stats && !(ms = memsnap__new()))
		pr_warn("no allocator state in the memory pictures: out of memory\n");
	/* capture keeps the picture at attach: the gap is the growth since */
	if (capture)
		start = calloc(1, sizeof(*start));
	if (a->stats && memsnap__add(ms, s, "mem.start", start)) {
		free(start);
		start = NULL;
	}
	install_signals();
	if (fam)
		snprintf(who, sizeof(who), " and %zu descendants", family__processes(fam) - 1);
	else
		note_children(s, kids, sizeof(kids), false);
	fprintf(stderr, "culpert-bpf: profiling pid %d (%s)%s: %zu %s sites, %zu span sites, "
		"%zu span functions, 1 sample per ~%s; %s\n",
		(int)session__pid(s), session__comm(s), who, session__n_sites(s), session__sampler(s),
		session__n_span_sites(s), session__n_span_fns(s),
		format_bytes(rate, sizeof(rate), (double)session__rate(s)),
		a->duration_ns ? "stops after --duration or Ctrl-C" : "Ctrl-C to stop");
	if (fam)
		family__run(fam, a->duration_ns, &stop_requested, &why);
	else
		session__run(s, a->duration_ns, &stop_requested, &why);
	if (capture && why != SESSION_END_TARGET_EXIT && why != SESSION_END_TARGET_EXEC &&
	    (mr = calloc(1, sizeof(*mr))))
		add_gap(ms, s, start, mr);
	else if (a->stats)
		memsnap__add(ms, s, "mem.end", NULL);
	free(start);
	memsnap__free(ms);
	if (!fam)
		note_children(s, kids, sizeof(kids), true);
	ret = write_profile(s, fam, out);
	if (ret) {
		write_fallback(s, fam, out, ret);
		free(mr);
		close_capture(s, fam);
		return CMD_FAIL;
	}
	report_end(s, fam, why, out, kids);
	if (capture && strcmp(out, "-") &&
	    capture_summary__print(stderr, out, fam ? family__lost(fam) : session__lost(s),
				   session__untracked(s),
				   mr && mr->have_gap ? &mr->gap : NULL,
				   mr && mr->have_decomp ? &mr->decomp : NULL))
		pr_warn("cannot read %s back for the summary\n", out);
	if (capture && fam)
		fprintf(stderr, "culpert-bpf: the memory picture is pid %d's alone; its "
			"descendants' allocations are in the profile ('culpert report %s "
			"--by-process')\n", (int)session__pid(s), out);
	free(mr);
	close_capture(s, fam);
	return CMD_OK;
}

static int attach_or_capture(int argc, char **argv, bool capture)
{
	struct attach_args a = { 0 };
	int ret = parse_args(argc, argv, &a, capture);

	if (ret)
		ret = ret == CMD_HELP ? CMD_OK : CMD_ERROR;
	else
		ret = run(&a, capture);

	free(a.so.span_fns);
	return ret;
}

int cmd_attach(int argc, char **argv)
{
	return attach_or_capture(argc, argv, false);
}

int cmd_capture(int argc, char **argv)
{
	return attach_or_capture(argc, argv, true);
}
