// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * culpert: per-span reports and CI diffs of pprof profiles; needs no privilege.
 * Exit codes: 0 success, 1 a diff found a regression, 2 any error.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "report", cmd_report, "where the bytes went: span tree, flat spans, callsites, leaks" },
	{ "diff", cmd_diff, "compare two profiles span by span; exit 1 on a regression (CI gate)" },
	{ "info", cmd_info, "what a profile holds: target, rate, totals, mappings, metadata" },
	{ "flamegraph", cmd_flamegraph, "folded stacks or an interactive SVG flame graph" },
	{ "symbolize", cmd_symbolize, "resolve functions, file:line and inline frames by build ID" },
	{ NULL, NULL, NULL },	/* commands register here, one line each */
};

static void usage(FILE *f)
{
	const struct command *c;

	fprintf(f, "Usage: culpert COMMAND [OPTIONS]\n\nCommands:\n");
	for (c = commands; c->name; c++)
		fprintf(f, "  %-11s %s\n", c->name, c->help);
	fprintf(f, "\n'culpert COMMAND --help' describes each command.\n"
		   "Exit status: 0 success, 1 a diff found a regression or a new span,\n"
		   "2 an error.\n"
		   "\nEXAMPLES:\n"
		   "  culpert report prof.pb.gz\n"
		   "  culpert diff base.pb.gz new.pb.gz --format markdown\n"
		   "  culpert flamegraph prof.pb.gz --format svg -o prof.svg\n");
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		pr_error("no command given; 'culpert --help' lists the commands\n");
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("culpert %s\n", CULPERT_VERSION);
		return 0;
	}
	for (c = commands; c->name; c++)
		if (!strcmp(argv[1], c->name))
			return c->fn(argc - 1, argv + 1);
	pr_error("unknown command '%s'; 'culpert --help' lists the commands\n", argv[1]);
	return 2;
}
