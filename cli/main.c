// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * culpert: per-span reports and CI diffs of pprof profiles; needs no privilege.
 * Exit codes: 0 success, 1 a diff found a regression, 2 any error.
 */
#include <stddef.h>

#include "cmd.h"
#include "commands.h"

static const struct cmd commands[] = {
	{ "report", cmd_report, "where the bytes went: span tree, flat spans, callsites, leaks" },
	{ "diff", cmd_diff, "compare two profiles span by span; exit 1 on a regression (CI gate)" },
	{ "info", cmd_info, "what a profile holds: target, rate, totals, mappings, metadata" },
	{ "flamegraph", cmd_flamegraph, "folded stacks or an interactive SVG flame graph" },
	{ "symbolize", cmd_symbolize, "resolve functions, file:line and inline frames by build ID" },
	{ "upload", cmd_upload, "send a profile to the archive under its commit (CI baselines)" },
	{ "pull", cmd_pull, "fetch a profile from the archive: by commit, or a branch's latest" },
	{ NULL, NULL, NULL },	/* commands register here, one line each */
};

static const struct cmd_table culpert = {
	.prog = "culpert",
	.cmds = commands,
	.epilog = "Exit status: 0 success, 1 a diff found a regression or a new span,\n"
		  "2 an error.\n"
		  "\nEXAMPLES:\n"
		  "  culpert report prof.pb.gz\n"
		  "  culpert diff base.pb.gz new.pb.gz --format markdown\n"
		  "  culpert flamegraph prof.pb.gz --format svg -o prof.svg\n",
};

int main(int argc, char **argv)
{
	return cmd_main(&culpert, argc, argv);
}
