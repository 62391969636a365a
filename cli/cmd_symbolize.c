// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert symbolize: fill in functions, file:line and inline frames offline, by build ID. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "log.h"
#include "outfile.h"
#include "pprof.h"
#include "profsym.h"
#include "symbolize.h"
#include "units.h"

/* --debug-dir and --binary-dir given more often than this are refused */
#define MAX_DIRS 64

#define CMD "symbolize"

enum { OPT_DEBUG_DIR = 256, OPT_BINARY_DIR, OPT_NO_DEBUGINFOD };

static const struct opt_spec symbolize_specs[] = {
	OPT_ARG("output", 'o', "FILE",
		 "write here ('-' for stdout); default: replace IN"),
	OPT_ARG("debug-dir", OPT_DEBUG_DIR, "DIR",
		 "a debug directory with a .build-id tree (repeatable)"),
	OPT_ARG("binary-dir", OPT_BINARY_DIR, "DIR",
		 "a directory searched for binaries by build ID (repeatable)"),
	OPT_FLAG("no-debuginfod", OPT_NO_DEBUGINFOD,
		 "do not ask debuginfod servers, even with DEBUGINFOD_URLS set"),
	OPT_FLAG("verbose", 'v',
		 "report every mapping, and more diagnostics"),
	OPT_FLAG("help", 'h',
		 "this help"),
	OPT_END,
};

static const struct opt_spec *const symbolize_tables[] = { symbolize_specs, NULL };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert symbolize IN [-o OUT] [--debug-dir DIR]... [--binary-dir DIR]...\n"
		"\n"
		"Resolve the addresses of a profile to functions, file:line and inline frames,\n"
		"matching every mapped object by its GNU build ID (never by its path alone).\n"
		"Looks in DIR/.build-id/xx/rest.debug of each --debug-dir and of /usr/lib/debug,\n"
		"at the path the profile names, in the files of each --binary-dir, at\n"
		".gnu_debuglink files, and on the debuginfod servers of DEBUGINFOD_URLS.\n"
		"Reports on stderr what stayed unsymbolized and why.  Symbolizing again\n"
		"changes nothing.\n"
		"\n"
		"Options:\n");
	opt_spec_help(f, symbolize_tables, 6, 24);
	fprintf(f,
		"\n"
		"EXAMPLES:\n"
		"  culpert symbolize prof.pb.gz --debug-dir ./debug\n"
		"  culpert symbolize raw.pb.gz -o prof.pb.gz --binary-dir /srv/builds/1234\n"
		"  DEBUGINFOD_URLS=https://debuginfod.debian.net culpert symbolize prof.pb.gz\n");
}

struct symbolize_args {
	const char *in, *out;
	const char *debug_dirs[MAX_DIRS], *binary_dirs[MAX_DIRS];
	size_t n_debug_dirs, n_binary_dirs;
	bool no_debuginfod;
};

static int add_dir(const char *opt, const char *dir, const char **v, size_t *n)
{
	struct stat st;

	if (stat(dir, &st)) {
		pr_error("%s %s: %s\n", opt, dir, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		pr_error("%s %s: not a directory\n", opt, dir);
		return -EINVAL;
	}
	if (*n == MAX_DIRS) {
		pr_error("%s given more than %d times\n", opt, MAX_DIRS);
		return -E2BIG;
	}
	v[(*n)++] = dir;
	return 0;
}

static int parse_args(int argc, char **argv, struct symbolize_args *a)
{
	int c;

	while ((c = opt_spec_next(argc, argv, symbolize_tables)) != -1) {
		switch (c) {
		case 'o':
			a->out = optarg;
			break;
		case OPT_DEBUG_DIR:
			if (add_dir("--debug-dir", optarg, a->debug_dirs, &a->n_debug_dirs))
				return -EINVAL;
			break;
		case OPT_BINARY_DIR:
			if (add_dir("--binary-dir", optarg, a->binary_dirs, &a->n_binary_dirs))
				return -EINVAL;
			break;
		case OPT_NO_DEBUGINFOD:
			a->no_debuginfod = true;
			break;
		case 'h':
			usage(stdout);
			return CMD_HELP;
		default:
			return -EINVAL;
		}
	}
	if (cli_one_file(argc, argv, &a->in))
		return -EINVAL;
	/* a profile read from stdin has nowhere to be replaced: it goes back to stdout */
	if (!a->out)
		a->out = a->in;
	return 0;
}

int cmd_symbolize(int argc, char **argv)
{
	struct symbolize_args a = { 0 };
	struct symbolizer_opts so = { .sz = sizeof(so) };
	struct profsym_opts po = { .sz = sizeof(po) };
	struct pprof_writer *out = NULL;
	struct pprof_profile *in = NULL;
	struct profsym *ps = NULL;
	/* one budget for reading, symbolizing and rebuilding: docs/cli.md, "Memory" */
	struct pprof_budget budget = { 0 };
	struct pprof_read_opts ro = { .sz = sizeof(ro), .budget = &budget };
	char err[PATH_MAX + 256];
	int ret = CMD_ERROR, e;

	e = parse_args(argc, argv, &a);
	if (e)
		return e == CMD_HELP ? CMD_OK : CMD_ERROR;
	if (cli_max_memory(&budget.max))
		return CMD_ERROR;
	/* before the work: symbolizing a large profile takes a while */
	if (outfile_check(a.out, err, sizeof(err))) {
		pr_error("cannot write %s: %s\n", *a.out ? a.out : "\"\"", err);
		return CMD_ERROR;
	}
	in = pprof_read_file_opts(a.in, &ro, err, sizeof(err));
	if (!in) {
		pr_error("cannot read %s: %s\n", a.in, err);
		return CMD_ERROR;
	}
	so.debug_dirs = a.debug_dirs;
	so.n_debug_dirs = a.n_debug_dirs;
	so.binary_dirs = a.binary_dirs;
	so.n_binary_dirs = a.n_binary_dirs;
	so.no_debuginfod = a.no_debuginfod;
	po.sym = symbolizer__new(&so);
	po.budget = &budget;
	ps = po.sym ? profsym__new(&po) : NULL;
	e = ps ? profsym__run(ps, in, &out) : -ENOMEM;
	if (e == -E2BIG && budget.exceeded) {
		pprof_budget__explain(&budget, "symbolizing", err, sizeof(err));
		pr_error("cannot symbolize %s: %s\n", a.in, err);
		goto out;
	} else if (e) {
		pr_error("cannot symbolize %s: %s\n", a.in, strerror(-e));
		goto out;
	}
	profsym__print(ps, stderr, log_level >= LOG_INFO);
	/* the report was the last user of the input and the objects: freed before encoding */
	profsym__free(ps);
	symbolizer__free(po.sym);
	pprof_profile__free(in);
	ps = NULL;
	po.sym = NULL;
	in = NULL;
	e = pprof_writer__write(out, a.out);
	if (e) {
		pr_error("cannot write %s: %s\n", a.out, strerror(-e));
		goto out;
	}
	ret = CMD_OK;
out:
	pprof_writer__free(out);
	profsym__free(ps);
	symbolizer__free(po.sym);
	pprof_profile__free(in);
	return ret;
}
