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

#define DEFAULT_RATE		SESSION_DEFAULT_RATE
#define DEFAULT_DEPTH		64
#define MAX_DEPTH		127
#define DEFAULT_MAX_STACKS	65536
#define DEFAULT_MAX_LIVE	(1 << 20)

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

static const char attach_options[] =
	"  -p, --pid PID            process to profile (any of its thread ids works)\n"
	"      --children           also its descendants, those there and those it forks while\n"
	"                           profiled (workers, backends): one profile, a pid and comm\n"
	"                           label on each sample ('culpert report --by-process')\n"
	"  -d, --duration D         stop after D (30s, 2m, 1h); default: until Ctrl-C\n"
	"  -o, --output FILE        profile path, '-' for stdout;\n"
	"                           default culpert-COMM-PID-TIMESTAMP.pb.gz\n"
	"      --rate BYTES         mean bytes between samples (default 512KiB; 1 = every allocation)\n"
	"      --max-depth N        stack frames kept per sample, 1..127 (default 64)\n"
	"      --inuse              also track frees: live heap (inuse_*) and ages of live blocks\n"
	"      --max-live N         live sampled blocks tracked with --inuse (default 1048576)\n"
	"      --unwind MODE        fp (frame pointers), dwarf (copy the stack, unwind with CFI),\n"
	"                           auto (default: fp where the code that allocates keeps frame\n"
	"                           pointers, dwarf otherwise)\n"
	"      --stack-size BYTES   stack copied per sample with dwarf (default 16KiB, max 32KiB)\n"
	"      --allocator NAME     auto, glibc, musl, jemalloc, mimalloc, tcmalloc, or a symbol prefix\n"
	"      --span-fn PATTERN    each call of a function matching PATTERN is a span (repeatable;\n"
	"                           globs over demangled names, e.g. 'app::handler::*')\n"
	"      --max-span-fns N     refuse patterns matching more functions (default 64)\n"
	"      --symbolize          resolve function names at capture (default)\n"
	"      --no-symbolize       keep raw addresses; 'culpert symbolize' can resolve them later\n"
	"      --ringbuf-size BYTES kernel-to-user buffer (default 2MiB, 8MiB unless --unwind fp)\n"
	"      --max-stacks N       distinct stacks kept (default 65536); beyond, stacks keep their leaf\n"
	"      --max-stack-rate N   stacks captured per second (default 10000 at the default rate,\n"
	"                           more in proportion for a smaller --rate, none with --rate 1;\n"
	"                           0 = no limit); past it, a random subset keeps its stacks,\n"
	"                           each weighed by 1/p: every function stays unbiased\n"
	"      --sampler MODE       how allocations are seen: auto (default: the otel_memory probes\n"
	"                           of an in-process sampler such as libculpert-sampler.so when a\n"
	"                           mapped object has them, else uprobes), usdt, uprobes\n"
	"      --no-multi           one perf-event uprobe per site instead of uprobe_multi links\n"
	"      --no-session         entry + return probes even where uprobe sessions exist\n"
	"      --no-exact           no exact span totals: span enters and exits skip their\n"
	"                           bookkeeping (docs/spans.md, \"Exact totals\")\n"
	"      --stats              embed the memory picture (as 'culpert-bpf stats') at start\n"
	"                           and end as mem.start.* / mem.end.* comments\n"
	"  -v, --verbose            more diagnostics (repeat for more)\n"
	"  -h, --help               this help\n";

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
			"Options (attach's; --inuse and --stats are always on):\n"
			"%s"
			"\n"
			"EXAMPLES:\n"
			"  sudo culpert-bpf capture --pid 1234\n"
			"  sudo culpert-bpf capture --pid 1234 --duration 2m -o incident.pb.gz\n",
			attach_options);
		return;
	}
	fprintf(f,
		"Usage: culpert-bpf attach --pid PID [OPTIONS]\n"
		"\n"
		"Sample the allocations of a running process until --duration passes, the\n"
		"process exits, or SIGINT/SIGTERM arrives; then write a pprof profile.\n"
		"\n"
		"Options:\n"
		"%s"
		"\n"
		"EXAMPLES:\n"
		"  sudo culpert-bpf attach --pid 1234 -o prof.pb.gz      # Ctrl-C to stop\n"
		"  sudo culpert-bpf attach -p 1234 -d 30s --rate 64KiB\n"
		"  sudo culpert-bpf attach -p 1234 -d 10s -o - | culpert report -\n"
		"  sudo culpert-bpf attach -p $(cat /run/nginx.pid) --children -d 30s\n",
		attach_options);
}

struct attach_args {
	struct session_opts so;
	uint64_t duration_ns;
	const char *output;
	char **span_fns;
	bool stats;
	bool children;		/* --children: the descendants too (family.h) */
};

/* capture: attach with --inuse and --stats, for 30 s unless told otherwise */
static int parse_args(int argc, char **argv, struct attach_args *a, bool capture)
{
	enum { OPT_RATE = 256, OPT_DEPTH, OPT_ALLOC, OPT_SYM, OPT_NOSYM, OPT_RB, OPT_MAXST,
	       OPT_NOMULTI, OPT_NOSESSION, OPT_NOEXACT, OPT_SPANFN, OPT_MAXFNS, OPT_STATS, OPT_INUSE,
	       OPT_MAXLIVE, OPT_UNWIND, OPT_STACKSIZE, OPT_STACKRATE, OPT_SAMPLER, OPT_CHILDREN };
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "max-depth", required_argument, NULL, OPT_DEPTH },
		{ "allocator", required_argument, NULL, OPT_ALLOC },
		{ "span-fn", required_argument, NULL, OPT_SPANFN },
		{ "max-span-fns", required_argument, NULL, OPT_MAXFNS },
		{ "symbolize", no_argument, NULL, OPT_SYM },
		{ "no-symbolize", no_argument, NULL, OPT_NOSYM },
		{ "ringbuf-size", required_argument, NULL, OPT_RB },
		{ "max-stacks", required_argument, NULL, OPT_MAXST },
		{ "no-multi", no_argument, NULL, OPT_NOMULTI },
		{ "no-session", no_argument, NULL, OPT_NOSESSION },
		{ "no-exact", no_argument, NULL, OPT_NOEXACT },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "inuse", no_argument, NULL, OPT_INUSE },
		{ "max-live", required_argument, NULL, OPT_MAXLIVE },
		{ "unwind", required_argument, NULL, OPT_UNWIND },
		{ "stack-size", required_argument, NULL, OPT_STACKSIZE },
		{ "max-stack-rate", required_argument, NULL, OPT_STACKRATE },
		{ "sampler", required_argument, NULL, OPT_SAMPLER },
		{ "children", no_argument, NULL, OPT_CHILDREN },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool stack_rate_set = false;
	uint64_t v;
	int c;

	a->so.rate = DEFAULT_RATE;
	a->so.max_depth = DEFAULT_DEPTH;
	a->so.allocator = "auto";
	a->so.symbolize = true;
	a->so.max_entries = DEFAULT_MAX_STACKS;
	a->so.max_span_fns = DEFAULT_MAX_SPAN_FNS;
	a->so.max_live = DEFAULT_MAX_LIVE;
	if (capture) {
		a->so.inuse = true;
		a->stats = true;
		a->duration_ns = 30ULL * 1000000000ULL;
	}
	while ((c = opt_next(argc, argv, "p:d:o:vh", opts)) != -1) {
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
		case OPT_RATE:
			if (opt_size("--rate", optarg, 1, 1ULL << 40, &a->so.rate))
				return -EINVAL;
			a->so.rate_set = true;
			break;
		case OPT_DEPTH:
			if (opt_count("--max-depth", optarg, 1, MAX_DEPTH, &v))
				return -EINVAL;
			a->so.max_depth = (unsigned int)v;
			break;
		case OPT_ALLOC:
			a->so.allocator = optarg;
			break;
		case OPT_SPANFN:
			if (opt_append(&a->span_fns, &a->so.n_span_fns, optarg))
				return -ENOMEM;
			a->so.span_fns = a->span_fns;
			break;
		case OPT_MAXFNS:
			if (opt_count("--max-span-fns", optarg, 1, 100000, &v))
				return -EINVAL;
			a->so.max_span_fns = (size_t)v;
			break;
		case OPT_SYM:
			a->so.symbolize = true;
			break;
		case OPT_NOSYM:
			a->so.symbolize = false;
			break;
		case OPT_RB:
			if (opt_size("--ringbuf-size", optarg, 4096, 1ULL << 30, &v))
				return -EINVAL;
			a->so.ringbuf_bytes = (size_t)v;
			break;
		case OPT_MAXST:
			if (opt_count("--max-stacks", optarg, 1, 1 << 24, &v))
				return -EINVAL;
			a->so.max_entries = (size_t)v;
			break;
		case OPT_NOMULTI:
			a->so.no_multi = true;
			break;
		case OPT_NOSESSION:
			a->so.no_session = true;
			break;
		case OPT_NOEXACT:
			a->so.no_exact = true;
			break;
		case OPT_STATS:
			a->stats = true;
			break;
		case OPT_INUSE:
			a->so.inuse = true;
			break;
		case OPT_UNWIND:
			if (opt_unwind(optarg, &a->so.unwind))
				return -EINVAL;
			break;
		case OPT_STACKSIZE:
			if (opt_size("--stack-size", optarg, 1024, CULPERT_MAX_STACK_COPY, &v))
				return -EINVAL;
			a->so.stack_size = (unsigned int)v;
			break;
		case OPT_STACKRATE:
			if (opt_count("--max-stack-rate", optarg, 0, 100000000, &a->so.stack_rate))
				return -EINVAL;
			stack_rate_set = true;
			break;
		case OPT_SAMPLER:
			a->so.sampler = opt_choice("--sampler", optarg, otel_mode_names);
			if (a->so.sampler < 0)
				return -EINVAL;
			break;
		case OPT_CHILDREN:
			a->children = true;
			break;
		case OPT_MAXLIVE:
			if (opt_count("--max-live", optarg, 1, 1 << 26, &v))
				return -EINVAL;
			a->so.max_live = (size_t)v;
			break;
		case 'h':
			usage(stdout, capture);
			exit(0);
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
		return 1;
	}
	if (a->children) {
		ret = family__open(&a->so, &fam, err, sizeof(err));
		s = ret ? NULL : family__root(fam);
	} else {
		ret = session__open(&a->so, &s, err, sizeof(err));
	}
	if (ret) {
		pr_error("%s\n", err);
		return 1;
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
		return 1;
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
		return 1;
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
	return 0;
}

static int attach_or_capture(int argc, char **argv, bool capture)
{
	struct attach_args a = { 0 };
	int ret = parse_args(argc, argv, &a, capture) ? 2 : run(&a, capture);

	free(a.span_fns);
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
