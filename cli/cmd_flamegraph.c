// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * culpert flamegraph FILE: the stacks of a profile, under their spans, as
 * folded lines (`span;root;...;leaf weight`, what flamegraph.pl, inferno and
 * speedscope read) or as a self-contained interactive SVG.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "flame_svg.h"
#include "flame_tree.h"
#include "log.h"
#include "outfile.h"
#include "view.h"

#define CMD "flamegraph"

static const struct opt_spec flamegraph_specs[] = {
	OPT_LARG("format", 'f', "FMT",
		 "folded (default) or svg"),
	OPT_LARG("span", 's', "NAME",
		 "only the stacks inside span NAME (or a ';'-joined span path)"),
	OPT_LFLAG("inuse", 'i',
		 "live heap (inuse_space) instead of allocated bytes"),
	OPT_LARG("skip", 'S', "GLOB",
		 "leave out frames of functions matching GLOB, their bytes\n"
		 "going to the caller (repeatable); by default every frame\n"
		 "is kept, allocation wrappers included"),
	OPT_ARG("output", 'o', "F",
		 "write to F instead of stdout"),
	OPT_FLAG("help", 'h',
		 "this help"),
	OPT_END,
};

static const struct opt_spec *const flamegraph_tables[] = { flamegraph_specs, NULL };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert flamegraph FILE [OPTIONS]\n"
		"\n"
		"Stacks under their spans, weighted by bytes: folded lines\n"
		"(span;root;...;leaf bytes) for flamegraph.pl, inferno or speedscope, or a\n"
		"self-contained interactive SVG\n"
		"(click to zoom, Ctrl-F or the Search button to highlight).\n"
		"\n"
		"Options:\n");
	opt_spec_help(f, flamegraph_tables, 2, 18);
	fprintf(f,
		"\n"
		"EXAMPLES:\n"
		"  culpert flamegraph prof.pb.gz --format svg -o prof.svg\n"
		"  culpert flamegraph prof.pb.gz --span handle_request > handler.folded\n"
		"  culpert flamegraph prof.pb.gz --skip zmalloc --skip 'ztry*'\n");
}

struct fg_args {
	const char *file, *out, *span;
	bool svg, inuse;
	char **skip;
	size_t n_skip;
};

static int parse_args(struct fg_args *a, int argc, char **argv)
{
	static const char *const formats[] = { "folded", "svg", NULL };
	int c;

	while ((c = opt_spec_next(argc, argv, flamegraph_tables)) != -1) {
		switch (c) {
		case 'f':
			if ((c = opt_choice("--format", optarg, formats)) < 0)
				return CMD_ERROR;
			a->svg = c == 1;
			break;
		case 's': a->span = optarg; break;
		case 'i': a->inuse = true; break;
		case 'o': a->out = optarg; break;
		case 'S':
			if (opt_append(&a->skip, &a->n_skip, optarg))
				return CMD_ERROR;
			break;
		case 'h':
			usage(stdout);
			return CMD_HELP;
		default:
			return CMD_ERROR;
		}
	}
	return cli_one_file(argc, argv, &a->file);
}

int cmd_flamegraph(int argc, char **argv)
{
	struct fg_args a = { 0 };
	struct view_opts vo = { .value = VIEW_ALLOC, .stacks = true };
	struct flame_tree *t = NULL;
	struct outfile *of = NULL;
	char err[PATH_MAX + 256];
	struct view *v;
	FILE *f;
	int ret;

	ret = parse_args(&a, argc, argv);
	if (ret) {
		free(a.skip);
		return ret == CMD_HELP ? CMD_OK : CMD_ERROR;
	}
	if (!a.out)
		a.out = "-";
	if (outfile_check(a.out, err, sizeof(err))) {
		pr_error("cannot write %s: %s\n", *a.out ? a.out : "\"\"", err);
		free(a.skip);
		return CMD_ERROR;
	}
	if (a.inuse)
		vo.value = VIEW_INUSE;
	vo.skip = (const char *const *)a.skip;
	vo.n_skip = a.n_skip;
	v = cli_load(a.file, &vo);
	if (!v) {
		free(a.skip);
		return CMD_ERROR;
	}
	t = flame_tree__new(v, a.span, err, sizeof(err));
	if (!t) {
		pr_error("%s: %s\n", a.file, err);
		ret = CMD_ERROR;
		goto out;
	}
	if (a.span && !view__has_span(v, a.span)) {
		pr_error("%s: no span named '%s'; 'culpert report %s --flat' lists the spans\n",
			 a.file, a.span, a.file);
		ret = CMD_ERROR;
		goto out;
	}
	of = outfile__open(a.out, err, sizeof(err));
	if (!of) {
		pr_error("cannot write %s: %s\n", a.out, err);
		ret = CMD_ERROR;
		goto out;
	}
	f = outfile__stream(of);
	if (a.svg)
		ret = flame_svg__write(t, f, a.file, a.span);
	else
		ret = flame_tree__folded(t, f);
	if (ret) {
		/* nothing half-written is put in place */
		outfile__abort(of);
		pr_error("out of memory writing the flame graph\n");
		ret = CMD_ERROR;
	} else if (outfile__commit(of, err, sizeof(err))) {
		pr_error("cannot write %s: %s\n", strcmp(a.out, "-") ? a.out : "standard output",
			 err);
		ret = CMD_ERROR;
	}
out:
	flame_tree__free(t);
	view__free(v);
	free(a.skip);
	return ret;
}
