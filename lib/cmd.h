/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The command table of both binaries: `PROG COMMAND [OPTIONS]`, --help,
 * --version.  Each command parses its own options (opt.h) and returns its
 * exit status.
 */
#ifndef CULPERT_CMD_H
#define CULPERT_CMD_H

/* exit status of every command */
#define CMD_OK		0
#define CMD_FAIL	1	/* culpert: a diff found a regression; culpert-bpf: collection failed */
#define CMD_ERROR	2	/* bad usage; for culpert any error (one "error: ..." line) */
/*
 * Not an exit status: what an option parser returns once it printed
 * --help, apart from 0 and -errno; its command then exits CMD_OK.
 */
#define CMD_HELP	1000

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);	/* argv[0] is the command's name */
	const char *help;			/* one line for PROG --help */
};

struct cmd_table {
	const char *prog;		/* "culpert", "culpert-bpf" */
	const struct cmd *cmds;		/* ends with a NULL name */
	const char *epilog;		/* printed after the list: exit status, EXAMPLES */
};

/* dispatch argv[1] to its command; the exit status */
int cmd_main(const struct cmd_table *t, int argc, char **argv);

#endif /* CULPERT_CMD_H */
