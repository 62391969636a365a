// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert-bpf stats: the memory picture of a process, read from outside it (docs/memory-picture.md). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocstate.h"
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

enum { OPT_DEBUG_DIR = 256, OPT_NO_DEBUGINFOD, OPT_NO_ALLOCATOR, OPT_SAMPLER_WAIT };

static const struct opt_spec stats_specs[] = {
	OPT_ARG("pid", 'p', "PID",
		 "process to read"),
	OPT_ARG("format", 'f', "FORMAT",
		 "text (default), json (one object per line) or prometheus"),
	OPT_NUM("watch", 'w', "INTERVAL", 10000000ULL, 0,
		 "print a new picture every INTERVAL (1s, 500ms) until\n"
		 "Ctrl-C or the process exits"),
	OPT_NUM("count", 'n', "N", 1, UINT32_MAX,
		 "with --watch: stop after N pictures"),
	OPT_ARG("debug-dir", OPT_DEBUG_DIR, "DIR",
		 "look for libc's debug file (.build-id/xx/...debug) in DIR\n"
		 "before /usr/lib/debug (repeatable)"),
	OPT_FLAG("no-debuginfod", OPT_NO_DEBUGINFOD,
		 "do not ask debuginfod servers even if DEBUGINFOD_URLS is set"),
	OPT_FLAG("no-allocator", OPT_NO_ALLOCATOR,
		 "leave the allocator's state out"),
	OPT_NUM("sampler-wait", OPT_SAMPLER_WAIT, "D", 0, 0,
		 "how long to wait for libculpert-sampler.so to refresh its\n"
		 "allocator figures once asked to (default 1.5s; 0: read\n"
		 "them as they are, with their age)"),
	OPT_FLAG("verbose", 'v',
		 "more diagnostics"),
	OPT_FLAG("help", 'h',
		 "this help"),
	OPT_END,
};

static const struct opt_spec *const stats_tables[] = { stats_specs, NULL };

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
		"And the allocator's own state: glibc's arenas (system memory, top chunk, free\n"
		"chunks in fastbins and bins, mmapped blocks, thresholds) read from the target's\n"
		"memory with the DWARF of its libc (Debian: apt install libc6-dbg; found by build\n"
		"ID as 'culpert symbolize' finds debug files), never writing it or stopping it;\n"
		"jemalloc's and mimalloc's figures from libculpert-sampler.so when it is loaded\n"
		"(docs/memory-picture.md).\n"
		"\n"
		"Options:\n");
	opt_spec_help(f, stats_tables, 6, 25);
	fprintf(f,
		"\n"
		"EXAMPLES:\n"
		"  culpert-bpf stats --pid 1234\n"
		"  culpert-bpf stats -p 1234 --format json | jq .cgroup.memory\n"
		"  culpert-bpf stats -p 1234 --format prometheus > /var/lib/node_exporter/app.prom\n"
		"  culpert-bpf stats -p 1234 --watch 2s --format json > memory.jsonl\n"
		"  culpert-bpf stats -p 1234 -f json | jq .allocator.glibc.free_bytes\n");
}

enum stats_format { FMT_TEXT, FMT_JSON, FMT_PROMETHEUS };

/* --debug-dir given at most this many times */
#define MAX_DEBUG_DIRS 16

struct stats_args {
	pid_t pid;
	enum stats_format format;
	uint64_t watch_ns;
	uint64_t count;
	const char *debug_dirs[MAX_DEBUG_DIRS];
	size_t n_debug_dirs;
	bool no_debuginfod;
	bool no_allocator;
	uint64_t sampler_wait_ns;
};

static int parse_args(int argc, char **argv, struct stats_args *a)
{
	/* in the order of enum stats_format */
	static const char *const formats[] = { "text", "json", "prometheus", NULL };
	int c;

	while ((c = opt_spec_next(argc, argv, stats_tables)) != -1) {
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
			if (opt_duration("--watch", optarg, opt_spec_find(stats_tables, c)->min,
					 &a->watch_ns))
				return -EINVAL;
			break;
		case 'n':
			if (opt_spec_count(opt_spec_find(stats_tables, c), optarg, &a->count))
				return -EINVAL;
			break;
		case OPT_DEBUG_DIR:
			if (a->n_debug_dirs == MAX_DEBUG_DIRS)
				return opt_error("--debug-dir given more than %d times", MAX_DEBUG_DIRS);
			a->debug_dirs[a->n_debug_dirs++] = optarg;
			break;
		case OPT_NO_DEBUGINFOD:
			a->no_debuginfod = true;
			break;
		case OPT_NO_ALLOCATOR:
			a->no_allocator = true;
			break;
		case OPT_SAMPLER_WAIT:
			if (opt_duration("--sampler-wait", optarg, 0, &a->sampler_wait_ns))
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			return CMD_HELP;
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

/* the allocator state of the target, unless --no-allocator; NULL when left out */
static struct alloc_reader *new_reader(const struct stats_args *a)
{
	struct alloc_reader_opts o = {
		.sz = sizeof(o),
		.debug_dirs = a->debug_dirs,
		.n_debug_dirs = a->n_debug_dirs,
		.no_debuginfod = a->no_debuginfod,
		.wait_ns = a->sampler_wait_ns,
	};

	return a->no_allocator ? NULL : alloc_reader__new(&o);
}

/* one picture: the process and its cgroup, then its allocator; 0 or -errno with err set */
static int read_one(const struct stats_args *a, struct alloc_reader *ar, struct memstats *m,
		    char *err, size_t errlen)
{
	int ret = memstats__read(a->pid, m, err, errlen);

	if (ret || !ar)
		return ret;
	ret = alloc_reader__read(ar, a->pid, &m->alloc);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory reading the allocator state");
	/* a process that exits meanwhile: its picture was read, its allocator says why not */
	return ret == -ENOMEM ? ret : 0;
}

int cmd_stats(int argc, char **argv)
{
	struct stats_args a = { .sampler_wait_ns = 1500000000ULL };
	struct sigaction sa = { .sa_handler = on_signal };
	struct alloc_reader *ar = NULL;
	struct memstats *m;
	uint64_t n = 0;
	char err[512];
	int ret = 0;

	ret = parse_args(argc, argv, &a);
	if (ret)
		return ret == CMD_HELP ? CMD_OK : CMD_ERROR;
	m = malloc(sizeof(*m));
	if (!m || (!a.no_allocator && !(ar = new_reader(&a)))) {
		pr_error("out of memory\n");
		free(m);
		return CMD_FAIL;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stop_requested) {
		ret = read_one(&a, ar, m, err, sizeof(err));
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
	alloc_reader__free(ar);
	free(m);
	return ret ? CMD_FAIL : CMD_OK;
}
