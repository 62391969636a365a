// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert-bpf: collection.  Needs root (or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE). */
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "attach", cmd_attach, "sample a running process's allocations, write a pprof profile" },
	{ "capture", cmd_capture, "one-shot incident capture: live heap, memory picture, summary" },
	{ "probes", cmd_probes, "dry run: what attach would probe in a process, and what blocks it" },
	{ "stats", cmd_stats, "memory picture of a process: RSS by kind, smaps, cgroup v2 memory" },
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's messages sit one level below ours: its warnings show at -v */
	int ours = level == LIBBPF_WARN ? LOG_INFO : level == LIBBPF_INFO ? LOG_DEBUG : LOG_LIBBPF;

	if (ours > log_level)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: culpert-bpf COMMAND [OPTIONS]\n\nCommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'culpert-bpf COMMAND --help' describes each command.\n"
		   "\nEXAMPLES:\n"
		   "  sudo culpert-bpf attach --pid 1234 -o prof.pb.gz   # Ctrl-C to stop\n"
		   "  sudo culpert-bpf attach --pid 1234 --duration 30s --rate 64KiB\n"
		   "  sudo culpert-bpf probes --pid 1234\n"
		   "  culpert-bpf stats --pid 1234 --format prometheus\n");
}

int main(int argc, char **argv)
{
	size_t i;

	libbpf_set_print(libbpf_print);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("culpert-bpf %s\n", CULPERT_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	pr_error("unknown command '%s'; 'culpert-bpf --help' lists the commands\n", argv[1]);
	return 2;
}
