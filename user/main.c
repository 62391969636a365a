// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert-bpf: collection.  Needs root, or CAP_BPF + CAP_PERFMON (README: Privileges). */
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>

#include "caps.h"
#include "cmd.h"
#include "commands.h"
#include "log.h"

static const struct cmd commands[] = {
	{ "attach", cmd_attach, "sample a running process's allocations, write a pprof profile" },
	{ "capture", cmd_capture, "one-shot incident capture: live heap, memory picture, summary" },
	{ "probes", cmd_probes, "dry run: what attach would probe in a process, and what blocks it" },
	{ "stats", cmd_stats, "memory picture of a process: RSS by kind, smaps, cgroup v2 memory" },
	{ NULL, NULL, NULL },
};

static const struct cmd_table culpert_bpf = {
	.prog = "culpert-bpf",
	.cmds = commands,
	.epilog = "Exit status: 0 success, 1 the collection failed, 2 bad usage.\n"
		  "\nEXAMPLES:\n"
		  "  sudo culpert-bpf attach --pid 1234 -o prof.pb.gz   # Ctrl-C to stop\n"
		  "  sudo culpert-bpf attach --pid 1234 --duration 30s --rate 64KiB\n"
		  "  sudo culpert-bpf probes --pid 1234\n"
		  "  culpert-bpf stats --pid 1234 --format prometheus\n",
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's messages sit one level below ours: its warnings show at -v */
	int ours = level == LIBBPF_WARN ? LOG_INFO : level == LIBBPF_INFO ? LOG_DEBUG : LOG_LIBBPF;

	if (ours > log_level)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	libbpf_set_print(libbpf_print);
	/* before anything checks them: file capabilities arrive permitted, not effective */
	caps__raise_permitted();
	return cmd_main(&culpert_bpf, argc, argv);
}
