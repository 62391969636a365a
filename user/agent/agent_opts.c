// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The options of `culpert-bpf agent`. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "agent.h"
#include "cmd.h"
#include "culpert.h"
#include "http.h"
#include "opt.h"
#include "otel.h"

#define NS_PER_SEC 1000000000ULL

static const char agent_usage[] =
	"Usage: culpert-bpf agent --select SEL [--select SEL]... [OPTIONS]\n"
	"\n"
	"Profile the selected processes continuously: pick them up as they start or exec\n"
	"(kernel events, plus a /proc rescan), drop them after they exit, and serve\n"
	"/debug/pprof/allocs, /debug/pprof/heap, /metrics, /targets and /healthz over HTTP\n"
	"(docs/agent.md).\n"
	"\n"
	"Selection (OR'ed, repeatable):\n"
	"      --select comm=REGEX      the whole comm matches the extended regex\n"
	"      --select exe=GLOB        /proc/PID/exe matches the glob ('*' crosses '/')\n"
	"      --select cgroup=PREFIX   a cgroup path (v2 or v1) is PREFIX or under it\n"
	"      --select container=ID    the container id from the cgroup path starts with ID\n"
	"      --select pid=N           that process\n"
	"      --select usdt            a mapped object has culpert or otel_memory USDT probes\n"
	"      --select pod=NS/NAME | namespace=NS | container-name=NAME   Kubernetes names\n"
	"      --max-targets N          processes kept at once, live and exited (default 64)\n"
	"      --keep-exited D          keep an exited target's data for D (default 5m)\n"
	"      --rescan D               walk /proc every D for what events missed (default 10s)\n"
	"      --hold-start             stop a program a comm= or exe= selector names at exec,\n"
	"                               and a target's forked child, until its probes are in:\n"
	"                               every allocation from the first (SIGSTOP: a parent\n"
	"                               waiting with WUNTRACED sees it; docs/agent.md)\n"
	"Serving:\n"
	"      --listen ADDR:PORT       (default 127.0.0.1:7790; [ADDR6]:PORT for IPv6)\n"
	"      --token-file FILE        clients must send 'Authorization: Bearer <its content>';\n"
	"                               required to listen on a non-loopback address\n"
	"      --labels span|all        labels of served profiles: span_name and span_path, or\n"
	"                               also span ids and thread ids (default span)\n"
	"      --snapshot-dir DIR       also write each target's profile to DIR every --interval\n"
	"      --interval D             (default 60s), keeping the newest --keep N (10) a target\n"
	"Attribution:\n"
	"      --pods-log-dir DIR       the kubelet's pod log directories (default /var/log/pods)\n"
	"      --kube-api[=URL]         pod names and annotations from the Kubernetes API\n"
	"                               (default https://$KUBERNETES_SERVICE_HOST:\n"
	"                               $KUBERNETES_SERVICE_PORT),\n"
	"                               pods of $NODE_NAME only\n"
	"      --kube-sa-dir DIR        its token and ca.crt (default\n"
	"                               /var/run/secrets/kubernetes.io/serviceaccount)\n"
	"Collection (attach's, for every target):\n"
	"      --max-overhead PCT       budget per target, % of one CPU (default 1; 0: no limit)\n"
	"      --duty-period D          over budget, allocation probes are on for a share of\n"
	"                               every D (default 60s, at least 1s)\n"
	"      --rate BYTES             mean bytes between samples (default 512KiB)\n"
	"      --inuse, --no-inuse      follow frees for the live heap (default on)\n"
	"      --unwind fp|dwarf|auto   (default auto)   --max-depth N (default 64)\n"
	"      --stack-size BYTES       --ringbuf-size BYTES   --max-live N   --max-stacks N (per\n"
	"                               target, default 16384)   --allocator NAME\n"
	"      --span-fn PATTERN        (repeatable)   --max-span-fns N   --no-symbolize\n"
	"      --no-multi, --no-session the older kernels' probe paths\n"
	"      --sampler auto|usdt|uprobes  per target: its otel_memory USDT probes (an\n"
	"                               in-process sampler, LD_PRELOAD=libculpert-sampler.so)\n"
	"                               when its objects carry them, else the allocator's\n"
	"                               uprobes (auto, default); usdt: those probes or the\n"
	"                               target fails; uprobes: always the allocator's\n"
	"  -v, --verbose                more diagnostics: -v logs pick-up and drop of targets\n"
	"  -h, --help                   this help\n"
	"\n"
	"EXAMPLES:\n"
	"  sudo culpert-bpf agent --select comm=nginx --select 'exe=/opt/app/*'\n"
	"  sudo culpert-bpf agent --select namespace=shop --listen 0.0.0.0:7790 \\\n"
	"        --token-file /etc/culpert/token\n"
	"  curl -s http://127.0.0.1:7790/targets\n";

enum {
	O_SELECT = 256, O_LISTEN, O_TOKEN, O_OVERHEAD, O_DUTY_PERIOD, O_KEEP_EXITED, O_RESCAN, O_SNAPDIR,
	O_INTERVAL, O_KEEP, O_LABELS, O_MAX_TARGETS, O_MAX_STACKS, O_PODS, O_KUBE, O_KUBE_SA,
	O_RATE, O_INUSE, O_NO_INUSE, O_UNWIND, O_DEPTH, O_STACK_SIZE, O_RINGBUF, O_MAX_LIVE,
	O_MAX_FNS, O_ALLOCATOR, O_SPANFN, O_SYM, O_NOSYM, O_NOMULTI, O_NOSESSION, O_SAMPLER, O_HOLD,
};

static const struct option longopts[] = {
	{ "select", required_argument, NULL, O_SELECT },
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "token-file", required_argument, NULL, O_TOKEN },
	{ "max-overhead", required_argument, NULL, O_OVERHEAD },
	{ "duty-period", required_argument, NULL, O_DUTY_PERIOD },
	{ "keep-exited", required_argument, NULL, O_KEEP_EXITED },
	{ "rescan", required_argument, NULL, O_RESCAN },
	{ "snapshot-dir", required_argument, NULL, O_SNAPDIR },
	{ "interval", required_argument, NULL, O_INTERVAL },
	{ "keep", required_argument, NULL, O_KEEP },
	{ "labels", required_argument, NULL, O_LABELS },
	{ "max-targets", required_argument, NULL, O_MAX_TARGETS },
	{ "max-stacks", required_argument, NULL, O_MAX_STACKS },
	{ "pods-log-dir", required_argument, NULL, O_PODS },
	{ "kube-api", optional_argument, NULL, O_KUBE },
	{ "kube-sa-dir", required_argument, NULL, O_KUBE_SA },
	{ "rate", required_argument, NULL, O_RATE },
	{ "inuse", no_argument, NULL, O_INUSE },
	{ "no-inuse", no_argument, NULL, O_NO_INUSE },
	{ "unwind", required_argument, NULL, O_UNWIND },
	{ "max-depth", required_argument, NULL, O_DEPTH },
	{ "stack-size", required_argument, NULL, O_STACK_SIZE },
	{ "ringbuf-size", required_argument, NULL, O_RINGBUF },
	{ "max-live", required_argument, NULL, O_MAX_LIVE },
	{ "max-span-fns", required_argument, NULL, O_MAX_FNS },
	{ "allocator", required_argument, NULL, O_ALLOCATOR },
	{ "span-fn", required_argument, NULL, O_SPANFN },
	{ "symbolize", no_argument, NULL, O_SYM },
	{ "no-symbolize", no_argument, NULL, O_NOSYM },
	{ "no-multi", no_argument, NULL, O_NOMULTI },
	{ "no-session", no_argument, NULL, O_NOSESSION },
	{ "sampler", required_argument, NULL, O_SAMPLER },
	{ "hold-start", no_argument, NULL, O_HOLD },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* the options that take a number, with attach's ranges where attach has the option */
enum num_kind { NUM_SIZE, NUM_COUNT, NUM_DURATION };
static const struct num_opt {
	int id;
	enum num_kind kind;
	uint64_t min, max;
	size_t off;
} num_opts[] = {
	{ O_KEEP_EXITED, NUM_DURATION, 0, 0, offsetof(struct agent_opts, keep_exited_ns) },
	{ O_RESCAN, NUM_DURATION, NS_PER_SEC / 10, 0, offsetof(struct agent_opts, rescan_ns) },
	{ O_DUTY_PERIOD, NUM_DURATION, NS_PER_SEC, 0,
	  offsetof(struct agent_opts, duty_period_ns) },
	{ O_INTERVAL, NUM_DURATION, NS_PER_SEC, 0, offsetof(struct agent_opts, interval_ns) },
	{ O_KEEP, NUM_COUNT, 1, 100000, offsetof(struct agent_opts, keep) },
	/* the table is allocated whole at start, about 6 KiB a target */
	{ O_MAX_TARGETS, NUM_COUNT, 1, 4096, offsetof(struct agent_opts, max_targets) },
	{ O_MAX_STACKS, NUM_COUNT, 1, 1 << 24, offsetof(struct agent_opts, max_stacks) },
	{ O_RATE, NUM_SIZE, 1, 1ULL << 40, offsetof(struct agent_opts, collect.rate) },
	{ O_DEPTH, NUM_COUNT, 1, CULPERT_MAX_FRAMES - 1,
	  offsetof(struct agent_opts, collect.max_depth) },
	{ O_STACK_SIZE, NUM_SIZE, 1024, CULPERT_MAX_STACK_COPY,
	  offsetof(struct agent_opts, collect.stack_size) },
	{ O_RINGBUF, NUM_SIZE, 4096, 1ULL << 30,
	  offsetof(struct agent_opts, collect.ringbuf_size) },
	{ O_MAX_LIVE, NUM_COUNT, 1, 1 << 26, offsetof(struct agent_opts, collect.max_live) },
	{ O_MAX_FNS, NUM_COUNT, 1, 100000, offsetof(struct agent_opts, collect.max_span_fns) },
};

static const char *long_name(int id)
{
	const struct option *o;

	for (o = longopts; o->name; o++)
		if (o->val == id)
			return o->name;
	return "?";
}

/* a numeric option: 1 if id is one (parsed into o, 0 or -EINVAL in *ret), else 0 */
static int parse_num(int id, const char *arg, struct agent_opts *o, int *ret)
{
	char name[40];
	uint64_t *dst;
	size_t i;

	for (i = 0; i < sizeof(num_opts) / sizeof(num_opts[0]); i++) {
		const struct num_opt *n = &num_opts[i];

		if (n->id != id)
			continue;
		snprintf(name, sizeof(name), "--%s", long_name(id));
		dst = (uint64_t *)((char *)o + n->off);
		if (n->kind == NUM_DURATION && !strcmp(arg, "0") && !n->min)
			*dst = 0, *ret = 0;
		else if (n->kind == NUM_DURATION)
			*ret = opt_duration(name, arg, n->min, dst);
		else if (n->kind == NUM_SIZE)
			*ret = opt_size(name, arg, n->min, n->max, dst);
		else
			*ret = opt_count(name, arg, n->min, n->max, dst);
		return 1;
	}
	return 0;
}

static void defaults(struct agent_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->listen = "127.0.0.1:7790";
	o->max_overhead_pct = 1;
	o->duty_period_ns = 60 * NS_PER_SEC;
	o->keep_exited_ns = 300 * NS_PER_SEC;
	o->rescan_ns = 10 * NS_PER_SEC;
	o->interval_ns = 60 * NS_PER_SEC;
	o->keep = 10;
	o->max_targets = 64;
	o->max_stacks = 16384;
	o->pods_log_dir = "/var/log/pods";
	o->kube_sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
	o->collect.rate = 512 * 1024;
	o->collect.inuse = true;
	o->collect.unwind = 2;
	o->collect.max_depth = 64;
	o->collect.max_live = 1 << 20;
	o->collect.max_span_fns = 64;
	o->collect.allocator = "auto";
	o->collect.symbolize = true;
}

static int parse_other(int c, const char *arg, struct agent_opts *o)
{
	static const char *const labels[] = { "span", "all", NULL };
	static const char *const unwind[] = { "fp", "dwarf", "auto", NULL };
	static const char *const pct[] = { "%", NULL };
	int i;

	switch (c) {
	case O_SELECT:
		return opt_append(&o->selects, &o->n_selects, arg);
	case O_LISTEN:
		o->listen = arg;
		return 0;
	case O_TOKEN:
		o->token_file = arg;
		return 0;
	case O_OVERHEAD:
		if (opt_number("--max-overhead", arg, pct, &o->max_overhead_pct))
			return -EINVAL;
		if (o->max_overhead_pct > 100)
			return opt_error("invalid --max-overhead '%s': use a share of one CPU "
					 "from 0 (no limit) to 100", arg);
		return 0;
	case O_SNAPDIR:
		o->snapshot_dir = arg;
		return 0;
	case O_LABELS:
		i = opt_choice("--labels", arg, labels);
		o->labels = i == 1 ? AGENT_LABELS_ALL : AGENT_LABELS_SPAN;
		return i < 0 ? i : 0;
	case O_PODS:
		o->pods_log_dir = arg;
		return 0;
	case O_KUBE:
		o->kube_api = true;
		o->kube_api_url = arg;
		return 0;
	case O_KUBE_SA:
		o->kube_sa_dir = arg;
		return 0;
	case O_INUSE:
	case O_NO_INUSE:
		o->collect.inuse = c == O_INUSE;
		return 0;
	case O_UNWIND:
		i = opt_choice("--unwind", arg, unwind);
		o->collect.unwind = i;
		return i < 0 ? i : 0;
	case O_ALLOCATOR:
		o->collect.allocator = arg;
		return 0;
	case O_SPANFN:
		return opt_append(&o->collect.span_fns, &o->collect.n_span_fns, arg);
	case O_SYM:
	case O_NOSYM:
		o->collect.symbolize = c == O_SYM;
		return 0;
	case O_NOMULTI:
		o->collect.no_multi = true;
		return 0;
	case O_NOSESSION:
		o->collect.no_session = true;
		return 0;
	case O_HOLD:
		o->hold_start = true;
		return 0;
	case O_SAMPLER:
		i = opt_choice("--sampler", arg, otel_mode_names);
		o->collect.sampler = i;
		return i < 0 ? i : 0;
	}
	return -EINVAL;
}

/* what can be checked before anything is loaded: one error line for each mistake */
static int check(struct agent_opts *o, bool interval_given)
{
	struct http_listen l;
	struct stat st;
	const char *why = NULL;

	if (!o->n_selects)
		return opt_error("no --select given: say which processes to profile, e.g. "
				 "--select comm=nginx or --select namespace=shop");
	if (http_parse_listen(o->listen, &l))
		return opt_error("invalid --listen '%s': use ADDR:PORT with a numeric address, "
				 "such as 127.0.0.1:7790 or [::1]:7790", o->listen);
	if (!l.loopback && !o->token_file)
		return opt_error("--listen %s is not a loopback address: serving profiles to "
				 "the network needs --token-file FILE, a bearer token every client "
				 "must send", o->listen);
	if ((interval_given || o->keep != 10) && !o->snapshot_dir)
		return opt_error("--interval and --keep set how snapshots are written: they need "
				 "--snapshot-dir DIR");
	if (!o->snapshot_dir)
		return 0;
	if (stat(o->snapshot_dir, &st))
		why = strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		why = "not a directory";
	else if (access(o->snapshot_dir, W_OK | X_OK))
		why = strerror(errno);
	if (why)
		return opt_error("cannot write snapshots to --snapshot-dir %s: %s; create the "
				 "directory or choose another", o->snapshot_dir, why);
	return 0;
}

int agent_opts__parse(int argc, char **argv, struct agent_opts *o)
{
	bool interval_given = false;
	int c, ret = 0;

	defaults(o);
	while (!ret && (c = opt_next(argc, argv, "vh", longopts)) != -1) {
		if (c == 'h') {
			fputs(agent_usage, stdout);
			return CMD_HELP;
		}
		if (c == '?')
			return -EINVAL;
		interval_given |= c == O_INTERVAL;
		if (!parse_num(c, optarg, o, &ret))
			ret = parse_other(c, optarg, o);
	}
	if (ret)
		return ret;
	if (optind < argc)
		return opt_error("unexpected argument '%s'", argv[optind]);
	return check(o, interval_given);
}

void agent_opts__free(struct agent_opts *o)
{
	free(o->selects);
	free(o->collect.span_fns);
	o->selects = NULL;
	o->collect.span_fns = NULL;
}
