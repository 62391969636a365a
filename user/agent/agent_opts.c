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
#include "collect_opts.h"
#include "http.h"
#include "opt.h"
#include "otel.h"

#define NS_PER_SEC 1000000000ULL

enum {
	O_SELECT = 256, O_LISTEN, O_TOKEN, O_OVERHEAD, O_DUTY_PERIOD, O_KEEP_EXITED, O_RESCAN, O_SNAPDIR,
	O_INTERVAL, O_KEEP, O_LABELS, O_MAX_TARGETS, O_MAX_STACKS, O_PODS, O_KUBE, O_KUBE_SA,
	O_NO_INUSE, O_HOLD, O_MAX_MEMORY, O_INJECT,
};

static const struct opt_spec select_specs[] = {
	OPT_ARG("select", O_SELECT, "comm=REGEX",
		 "the whole comm matches the extended regex"),
	OPT_MORE("select", "exe=GLOB",
		 "/proc/PID/exe matches the glob ('*' crosses '/')"),
	OPT_MORE("select", "cgroup=PREFIX",
		 "a cgroup path (v2 or v1) is PREFIX or under it"),
	OPT_MORE("select", "container=ID",
		 "the container id from the cgroup path starts with ID"),
	OPT_MORE("select", "pid=N",
		 "that process"),
	OPT_MORE("select", "usdt",
		 "a mapped object has culpert or otel_memory USDT probes"),
	/* past the help column: the help follows after three spaces, not one */
	OPT_MORE("select", "pod=NS/NAME | namespace=NS | container-name=NAME",
		 "  Kubernetes names"),
	OPT_ARG("inject", O_INJECT, "SEL",
		 "as --select, and profiled through libculpert-sampler.so\n"
		 "loaded into the process (ptrace), released at the end;\n"
		 "one that refuses it is on uprobes (docs/agent.md)"),
	/* the table is allocated whole at start, about 6 KiB a target */
	OPT_NUM("max-targets", O_MAX_TARGETS, "N", 1, 4096,
		 "processes kept at once, live and exited (default 64)"),
	/* below 16 MiB the fixed part alone (ring buffer, libraries) would be over it */
	OPT_NUM("max-memory", O_MAX_MEMORY, "BYTES", 16 << 20, 1ULL << 50,
		 "the agent's RSS bound (default: its memory cgroup's\n"
		 "limit): near it new stacks are folded, then the\n"
		 "coldest targets dropped"),
	OPT_NUM("keep-exited", O_KEEP_EXITED, "D", 0, 0,
		 "keep an exited target's data for D (default 5m)"),
	OPT_NUM("rescan", O_RESCAN, "D", NS_PER_SEC / 10, 0,
		 "walk /proc every D for what events missed (default 10s)"),
	OPT_FLAG("hold-start", O_HOLD,
		 "stop a program a comm= or exe= selector names at exec,\n"
		 "and a target's forked child, until its probes are in:\n"
		 "every allocation from the first (SIGSTOP: a parent\n"
		 "waiting with WUNTRACED sees it; docs/agent.md)"),
	OPT_END,
};

static const struct opt_spec serving_specs[] = {
	OPT_ARG("listen", O_LISTEN, "ADDR:PORT",
		 "(default 127.0.0.1:7790; [ADDR6]:PORT for IPv6)"),
	OPT_ARG("token-file", O_TOKEN, "FILE",
		 "clients must send 'Authorization: Bearer <its content>';\n"
		 "required to listen on a non-loopback address"),
	OPT_ARG("labels", O_LABELS, "span|all",
		 "labels of served profiles: span_name and span_path, or\n"
		 "also span ids and thread ids (default span)"),
	OPT_ARG("snapshot-dir", O_SNAPDIR, "DIR",
		 "also write each target's profile to DIR every --interval"),
	OPT_NUM("interval", O_INTERVAL, "D", NS_PER_SEC, 0,
		 "(default 60s), keeping the newest --keep N (10) a target"),
	OPT_NUM("keep", O_KEEP, "N", 1, 100000, NULL),
	OPT_END,
};

static const struct opt_spec attribution_specs[] = {
	OPT_ARG("pods-log-dir", O_PODS, "DIR",
		 "the kubelet's pod log directories (default /var/log/pods)"),
	OPT_OPTIONAL("kube-api", O_KUBE, "URL",
		 "pod names and annotations from the Kubernetes API\n"
		 "(default https://$KUBERNETES_SERVICE_HOST:\n"
		 "$KUBERNETES_SERVICE_PORT),\n"
		 "pods of $NODE_NAME only"),
	OPT_ARG("kube-sa-dir", O_KUBE_SA, "DIR",
		 "its token and ca.crt (default\n"
		 "/var/run/secrets/kubernetes.io/serviceaccount)"),
	OPT_END,
};

static const struct opt_spec budget_specs[] = {
	OPT_ARG("max-overhead", O_OVERHEAD, "PCT",
		 "budget per target, % of one CPU (default 1; 0: no limit)"),
	OPT_NUM("duty-period", O_DUTY_PERIOD, "D", NS_PER_SEC, 0,
		 "over budget, allocation probes are on for a share of\n"
		 "every D (default 60s, at least 1s)"),
	OPT_END,
};

/* after attach's: what the agent adds or sets otherwise */
static const struct opt_spec collect_more_specs[] = {
	OPT_FLAG("no-inuse", O_NO_INUSE,
		 "frees not followed, no live heap (the default is --inuse)"),
	OPT_NUM("max-stacks", O_MAX_STACKS, "N", 1, 1 << 24,
		 "distinct stacks kept per target (default 16384)"),
	OPT_FLAG("verbose", 'v',
		 "more diagnostics: -v logs pick-up and drop of targets"),
	OPT_FLAG("help", 'h',
		 "this help"),
	OPT_END,
};

static const struct opt_spec *const agent_specs[] = {
	select_specs, serving_specs, attribution_specs, budget_specs, collect_opt_specs,
	collect_more_specs, NULL,
};

#define HELP_WIDTH	31

static void section(FILE *f, const char *title, const struct opt_spec *specs)
{
	const struct opt_spec *const one[] = { specs, NULL };

	fprintf(f, "%s\n", title);
	opt_spec_help(f, one, 6, HELP_WIDTH);
}

static void usage(FILE *f)
{
	const struct opt_spec *const collect[] = { budget_specs, collect_opt_specs,
						   collect_more_specs, NULL };

	fprintf(f,
		"Usage: culpert-bpf agent --select SEL [--select SEL]... [--inject SEL]... [OPTIONS]\n"
		"\n"
		"Profile the selected processes continuously: pick them up as they start or exec\n"
		"(kernel events, plus a /proc rescan), drop them after they exit, and serve\n"
		"/debug/pprof/allocs, /debug/pprof/heap, /metrics, /targets and /healthz over HTTP\n"
		"(docs/agent.md).\n"
		"\n");
	section(f, "Selection (OR'ed, repeatable):", select_specs);
	section(f, "Serving:", serving_specs);
	section(f, "Attribution:", attribution_specs);
	fprintf(f, "Collection (attach's, for every target):\n");
	opt_spec_help(f, collect, 6, HELP_WIDTH);
	fprintf(f,
		"\n"
		"EXAMPLES:\n"
		"  sudo culpert-bpf agent --select comm=nginx --select 'exe=/opt/app/*'\n"
		"  sudo culpert-bpf agent --select namespace=shop --listen 0.0.0.0:7790 \\\n"
		"        --token-file /etc/culpert/token\n"
		"  sudo culpert-bpf agent --inject comm=redis-server --rate 256KiB\n"
		"  curl -s http://127.0.0.1:7790/targets\n");
}

/* the agent's own options that take a number: where each goes */
enum num_kind { NUM_COUNT, NUM_DURATION, NUM_SIZE };
static const struct num_opt {
	int id;
	enum num_kind kind;
	size_t off;
} num_opts[] = {
	{ O_KEEP_EXITED, NUM_DURATION, offsetof(struct agent_opts, keep_exited_ns) },
	{ O_RESCAN, NUM_DURATION, offsetof(struct agent_opts, rescan_ns) },
	{ O_DUTY_PERIOD, NUM_DURATION, offsetof(struct agent_opts, duty_period_ns) },
	{ O_INTERVAL, NUM_DURATION, offsetof(struct agent_opts, interval_ns) },
	{ O_KEEP, NUM_COUNT, offsetof(struct agent_opts, keep) },
	{ O_MAX_TARGETS, NUM_COUNT, offsetof(struct agent_opts, max_targets) },
	{ O_MAX_STACKS, NUM_COUNT, offsetof(struct agent_opts, max_stacks) },
	{ O_MAX_MEMORY, NUM_SIZE, offsetof(struct agent_opts, max_memory) },
};

/* a numeric option: 1 if id is one (parsed into o, 0 or -EINVAL in *ret), else 0 */
static int parse_num(int id, const char *arg, struct agent_opts *o, int *ret)
{
	const struct opt_spec *s = opt_spec_find(agent_specs, id);
	char name[40];
	uint64_t *dst;
	size_t i;

	for (i = 0; i < sizeof(num_opts) / sizeof(num_opts[0]); i++) {
		const struct num_opt *n = &num_opts[i];

		if (n->id != id)
			continue;
		snprintf(name, sizeof(name), "--%s", s->name);
		dst = (uint64_t *)((char *)o + n->off);
		if (n->kind == NUM_DURATION && !strcmp(arg, "0") && !s->min)
			*dst = 0, *ret = 0;
		else if (n->kind == NUM_DURATION)
			*ret = opt_duration(name, arg, s->min, dst);
		else if (n->kind == NUM_SIZE)
			*ret = opt_spec_size(s, arg, dst);
		else
			*ret = opt_spec_count(s, arg, dst);
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
	collect_opts__defaults(&o->collect);
	o->collect.inuse = true;
}

static int parse_other(int c, const char *arg, struct agent_opts *o)
{
	static const char *const labels[] = { "span", "all", NULL };
	static const char *const pct[] = { "%", NULL };
	int i;

	switch (c) {
	case O_SELECT:
		return opt_append(&o->selects, &o->n_selects, arg);
	case O_INJECT:
		return opt_append(&o->injects, &o->n_injects, arg);
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
	case O_NO_INUSE:
		o->collect.inuse = false;
		return 0;
	case O_HOLD:
		o->hold_start = true;
		return 0;
	}
	return -EINVAL;
}

/* what can be checked before anything is loaded: one error line for each mistake */
static int check(struct agent_opts *o, bool interval_given)
{
	struct http_listen l;
	struct stat st;
	const char *why = NULL;

	/* injection stops a thread of the target: only for the processes --inject names */
	if (o->collect.sampler == OTEL_MODE_INJECT)
		return opt_error("--sampler inject is not for every selected process: the agent "
				 "injects only into those --inject SEL selects; use --inject SEL, "
				 "and --sampler auto, usdt or uprobes for the others");
	if (!o->n_selects && !o->n_injects)
		return opt_error("no --select or --inject given: say which processes to profile, e.g. "
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
	while (!ret && (c = opt_spec_next(argc, argv, agent_specs)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CMD_HELP;
		}
		if (c == '?')
			return -EINVAL;
		interval_given |= c == O_INTERVAL;
		ret = collect_opts__parse(c, optarg, &o->collect);
		if (ret == 1 && !parse_num(c, optarg, o, &ret))
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
	free(o->injects);
	free(o->collect.span_fns);
	o->selects = NULL;
	o->injects = NULL;
	o->collect.span_fns = NULL;
}
