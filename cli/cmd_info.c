// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert info FILE: what a profile holds, before reading it any further. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "escape.h"
#include "log.h"
#include "table.h"
#include "units.h"
#include "view.h"

#define CMD "info"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert info FILE\n"
		"\n"
		"What a profile holds: target, sample rate, samples, estimated totals, spans,\n"
		"duration, unwind mode, lost samples, mappings (build IDs, symbolization) and\n"
		"every metadata comment (mem.* included).\n"
		"\n"
		"Options:\n"
		"  -h, --help    this help\n"
		"\n"
		"EXAMPLES:\n"
		"  culpert info prof.pb.gz\n"
		"  culpert info - < prof.pb.gz\n");
}

static const char *comment_or(const struct pprof_profile *p, const char *key, const char *def)
{
	const char *c = pprof_profile__comment(p, key);

	return c && c[0] ? c : def;
}

static void print_target(const struct pprof_profile *p)
{
	const char *comm = pprof_profile__comment(p, "target.comm");
	const char *pid = pprof_profile__comment(p, "target.pid");
	const char *exe = pprof_profile__comment(p, "target.exe");

	if (!comm && !pid && !exe) {
		/* another tool's profile: the main mapping names the program */
		const char *main_obj = p->n_mappings ? p->strings[p->mappings[0].filename] : "";

		printf("Target:        ");
		esc_text_fputs(main_obj[0] ? main_obj : "unknown", stdout);
		printf("\n");
		return;
	}
	/* all three are the target's own words: comm and exe are whatever it set */
	printf("Target:        ");
	esc_text_fputs(comm ? comm : "?", stdout);
	printf(" (pid ");
	esc_text_fputs(pid ? pid : "?", stdout);
	printf(")%s", exe ? " " : "");
	esc_text_fputs(exe ? exe : "", stdout);
	printf("\n");
}

static void print_time(const struct pprof_profile *p)
{
	char when[64] = "unknown", dur[32] = "unknown";
	time_t t = (time_t)(p->time_nanos / 1000000000LL);
	struct tm tm;

	if (p->time_nanos > 0 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (p->duration_nanos > 0)
		format_duration(dur, sizeof(dur), (uint64_t)p->duration_nanos);
	printf("Captured:      %s, for %s\n", when, dur);
}

static void print_totals(const struct view *v)
{
	const struct pprof_profile *p = v->p;
	char b[32], rate[48];
	size_t i, spans = 0, roots = 0;

	printf("Rate:          %s\n", format_rate(rate, sizeof(rate), v->rate));
	printf("Samples:       %" PRIu64 "\n", v->n_samples);
	printf("Sample types: ");
	for (i = 0; i < p->n_sample_types; i++) {
		printf(" ");
		esc_text_fputs(p->strings[p->sample_types[i].type], stdout);
		printf("/");
		esc_text_fputs(p->strings[p->sample_types[i].unit], stdout);
	}
	printf("\n");
	printf("Total:         %s ", format_bytes(b, sizeof(b), v->total_bytes));
	esc_text_fputs(p->strings[p->sample_types[v->bytes_idx].type], stdout);
	printf(" in %.0f objects\n", v->total_objects);
	if (v->has_inuse)
		printf("In use:        %s in %.0f objects at the end of the capture\n",
		       format_bytes(b, sizeof(b), v->inuse_bytes), v->inuse_objects);
	for (i = 0; i < v->n_spans; i++) {
		spans += !v->spans[i].no_span;
		roots += !v->spans[i].no_span && v->spans[i].parent == VIEW_NONE;
	}
	if (spans)
		printf("Spans:         %zu (%zu root%s)\n", spans, roots, roots == 1 ? "" : "s");
	else
		printf("Spans:         none (no span labels)\n");
}

static int print_mappings(const struct pprof_profile *p)
{
	struct table *t = table__new("lll",
				     (const char *const[]){ "  MAPPING", "BUILD ID", "SYMBOLS" });
	size_t i, with_id = 0, symbolized = 0;
	int ret = t ? 0 : -1;

	for (i = 0; i < p->n_mappings && !ret; i++) {
		const struct pprof_mapping *m = &p->mappings[i];
		const char *bid = p->strings[m->build_id];
		char name[4096];

		with_id += bid[0] != '\0';
		symbolized += m->has_functions;
		snprintf(name, sizeof(name), "  %s", p->strings[m->filename][0] ?
			 p->strings[m->filename] : "[anonymous]");
		ret = table__add(t, (const char *const[]){ name, bid[0] ? bid : "(none)",
			m->has_line_numbers ? "functions, lines" :
			m->has_functions ? "functions" : "no" });
	}
	printf("Mappings:      %zu, %zu with a build ID, %zu without; %zu symbolized\n",
	       p->n_mappings, with_id, p->n_mappings - with_id, symbolized);
	if (!ret && p->n_mappings)
		table__print(t, stdout);
	table__free(t);
	return ret;
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct view_opts vo = { .value = VIEW_ALLOC };
	struct view *v;
	const struct pprof_profile *p;
	const char *file;
	size_t i;
	int c, ret;

	while ((c = opt_next(argc, argv, "h", opts)) != -1) {
		if (c != 'h')
			return CMD_ERROR;
		usage(stdout);
		return CMD_OK;
	}
	if (cli_one_file(argc, argv, &file))
		return CMD_ERROR;
	v = cli_load(file, &vo);
	if (!v)
		return CMD_ERROR;
	p = v->p;
	printf("File:          ");
	esc_text_fputs(file, stdout);
	printf("\n");
	print_target(p);
	print_time(p);
	print_totals(v);
	printf("Unwind:        ");
	esc_text_fputs(comment_or(p, "unwind", "unknown"), stdout);
	printf("\nLost samples:  ");
	esc_text_fputs(comment_or(p, "lost_samples", "unknown"), stdout);
	printf("\n");
	ret = print_mappings(p);
	printf("Comments:      %zu\n", p->n_comments);
	for (i = 0; i < p->n_comments; i++) {
		printf("  ");
		esc_text_fputs(p->strings[p->comments[i]], stdout);
		printf("\n");
	}
	view__free(v);
	if (ret)
		pr_error("out of memory\n");
	return ret ? CMD_ERROR : CMD_OK;
}
