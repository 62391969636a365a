// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "argfile.h"
#include "cmd.h"
#include "log.h"
#include "opt.h"

static void usage(const struct cmd_table *t, FILE *f)
{
	const struct cmd *c;
	int w = 0;

	for (c = t->cmds; c->name; c++)
		if ((int)strlen(c->name) > w)
			w = (int)strlen(c->name);
	fprintf(f, "Usage: %s COMMAND [OPTIONS]\n\nCommands:\n", t->prog);
	for (c = t->cmds; c->name; c++)
		fprintf(f, "  %-*s  %s\n", w, c->name, c->help);
	fprintf(f, "\n'%s COMMAND --help' describes each command.\n%s", t->prog, t->epilog);
}

int cmd_main(const struct cmd_table *t, int argc, char **argv)
{
	const struct cmd *c;

	opt_set_command(t->prog, "");
	if (argfile_expand(&argc, &argv))
		return CMD_ERROR;
	if (argc < 2) {
		pr_error("no command given; '%s --help' lists the commands\n", t->prog);
		return CMD_ERROR;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(t, stdout);
		return CMD_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("%s %s\n", t->prog, CULPERT_VERSION);
		return CMD_OK;
	}
	for (c = t->cmds; c->name; c++) {
		if (strcmp(argv[1], c->name))
			continue;
		opt_set_command(t->prog, c->name);
		optind = 1;
		return c->fn(argc - 1, argv + 1);
	}
	pr_error("unknown command '%s'; '%s --help' lists the commands\n", argv[1], t->prog);
	return CMD_ERROR;
}
