// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert-bpf stats: the memory picture of a process, read from outside it (SPEC §6). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd_common.h"
#include "commands.h"
#include "log.h"
#include "memfmt.h"
#include "memstats.h"
#include "units.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert-bpf stats --pid PID [OPTIONS]\n"
		"\n"
		"The memory picture of a running process, read from /proc/PID/smaps_rollup,\n"
		"/proc/PID/status, /proc/PID/smaps (grouped by kind of mapping) and the\n"
		"memory files of its cgroup v2.  Needs no BPF: reading another user's process\n"
		"needs root or CAP_SYS_PTRACE.  Values the kernel does not give (cgroup v1, a\n"
		"cgroup without the memory controller) are reported absent, never as 0.\n"
		"\n"
		"Options:\n"
		"  -p, --pid PID          process to read\n"
		"  -f, --format FORMAT    text (default), json (one object per line) or prometheus\n"
		"  -w, --watch INTERVAL   print a new picture every INTERVAL (1s, 500ms) until\n"
		"                         Ctrl-C or the process exits\n"
		"  -n, --count N          with --watch: stop after N pictures\n"
		"  -v, --verbose          more diagnostics\n"
		"  -h, --help             this help\n"
		"\n"
		"EXAMPLES:\n"
		"  culpert-bpf stats --pid 1234\n"
		"  culpert-bpf stats -p 1234 --format json | jq .cgroup.memory\n"
		"  culpert-bpf stats -p 1234 --format prometheus > /var/lib/node_exporter/app.prom\n"
		"  culpert-bpf stats -p 1234 --watch 2s --format json > memory.jsonl\n");
}

enum stats_format { FMT_TEXT, FMT_JSON, FMT_PROMETHEUS };

struct stats_args {
	pid_t pid;
	enum stats_format format;
	uint64_t watch_ns;
	uint64_t count;
};

static int parse_args(int argc, char **argv, struct stats_args *a)
{
	/* in the order of enum stats_format */
	static const char *const formats[] = { "text", "json", "prometheus", NULL };
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "format", required_argument, NULL, 'f' },
		{ "watch", required_argument, NULL, 'w' },
		{ "count", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = opt_next(argc, argv, "p:f:w:n:vh", opts)) != -1) {
		switch (c) {
		case 'p':
			if (opt_pid("--pid", optarg, &a->pid))
				return -EINVAL;
			break;
		case 'f':
			if ((c = opt_choice("--format", optarg, formats)) < 0)
				return -EINVAL;
			a->format = (enum stats_format)c;
			break;
		case 'w':
			if (opt_duration("--watch", optarg, 10000000ULL, &a->watch_ns))
				return -EINVAL;
			break;
		case 'n':
			if (opt_count("--count", optarg, 1, UINT32_MAX, &a->count))
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (opt_need_pid(argc, argv, a->pid, "the process to read"))
		return -EINVAL;
	if (a->count && !a->watch_ns)
		return opt_error("--count needs --watch: without it there is one picture");
	return 0;
}

static int print_one(const struct memstats *m, enum stats_format format)
{
	int err;

	switch (format) {
	case FMT_JSON:
		err = memfmt_json(stdout, m);
		break;
	case FMT_PROMETHEUS:
		err = memfmt_prometheus(stdout, m);
		break;
	default:
		err = memfmt_text(stdout, m);
		break;
	}
	if (fflush(stdout) && !err)
		err = -errno;
	return err;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ULL),
			       .tv_nsec = (long)(ns % 1000000000ULL) };

	/* a signal ends the wait early: stop_requested says whether to go on */
	nanosleep(&ts, NULL);
}

int cmd_stats(int argc, char **argv)
{
	struct stats_args a = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct memstats *m;
	uint64_t n = 0;
	char err[512];
	int ret = 0;

	if (parse_args(argc, argv, &a))
		return 2;
	m = malloc(sizeof(*m));
	if (!m) {
		pr_error("out of memory\n");
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stop_requested) {
		ret = memstats__read(a.pid, m, err, sizeof(err));
		if (ret == -ESRCH && n) {
			/* the usual end of a --watch: say so, but it is not an error */
			fprintf(stderr, "culpert-bpf: pid %d exited\n", (int)a.pid);
			ret = 0;
			break;
		}
		if (ret) {
			pr_error("%s\n", err);
			break;
		}
		if (n && a.format == FMT_TEXT)
			putchar('\n');
		ret = print_one(m, a.format);
		if (ret) {
			pr_error("cannot write to stdout: %s\n", strerror(-ret));
			break;
		}
		if (!a.watch_ns || ++n == a.count)
			break;
		sleep_ns(a.watch_ns);
	}
	free(m);
	return ret ? 1 : 0;
}
