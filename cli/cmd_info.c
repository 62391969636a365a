// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert info FILE: what a profile holds, before reading it any further. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "empty.h"
#include "escape.h"
#include "log.h"
#include "table.h"
#include "units.h"
#include "view.h"

#define CMD "info"

static const struct opt_spec info_specs[] = {
	OPT_FLAG("help", 'h',
		 "this help"),
	OPT_END,
};

static const struct opt_spec *const info_tables[] = { info_specs, NULL };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert info FILE\n"
		"\n"
		"What a profile holds: target, sample rate, records and sampled allocations,\n"
		"estimated totals, spans, duration, unwind mode, lost samples, mappings (build\n"
		"IDs, symbolization), the allocator's state of the memory picture\n"
		"(mem.*.allocator.*) and every metadata comment (mem.* included).\n"
		"\n"
		"Options:\n");
	opt_spec_help(f, info_tables, 2, 16);
	fprintf(f,
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

/* argv0, when it names another file than target.exe (a symlink: redis-server -> redis-check-rdb) */
static void print_started_as(const struct pprof_profile *p, const char *exe)
{
	const char *argv0 = pprof_profile__comment(p, "target.argv0");
	const char *link = pprof_profile__comment(p, "target.argv0_link");
	const char *a, *e;

	if (!argv0 || !argv0[0] || !exe)
		return;
	a = strrchr(argv0, '/');
	e = strrchr(exe, '/');
	if (!(link && link[0]) && !strcmp(a ? a + 1 : argv0, e ? e + 1 : exe))
		return;
	printf("Started as:    ");
	esc_text_fputs(argv0, stdout);
	if (link && link[0]) {
		printf(", a symlink to ");
		esc_text_fputs(link, stdout);
	}
	printf("\n");
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
	print_started_as(p, exe);
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

/* a profile without one record: why (empty.h) */
static void print_empty(const struct view *v)
{
	struct empty_facts f;
	char why[1024];

	if (v->n_samples)
		return;
	empty_facts__from_profile(v->p, 0, &f);
	if (empty__explain(&f, why, sizeof(why))) {
		printf("Empty:         ");
		esc_text_fputs(why, stdout);
		printf("\n");
	}
}

static void print_totals(const struct view *v)
{
	const struct pprof_profile *p = v->p;
	char b[32], n[32], rate[48];
	size_t i, spans = 0, roots = 0;

	printf("Rate:          %s\n", format_rate(rate, sizeof(rate), v->rate));
	/* a record aggregates the sampled allocations of one stack, span and labels */
	printf("Records:       %" PRIu64 "\n", v->n_samples);
	if (v->has_sampled)
		printf("Sampled:       %" PRIu64 " allocations\n", v->n_sampled);
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
	printf(" in %s objects\n", format_count(n, sizeof(n), v->total_objects));
	if (v->has_inuse)
		printf("In use:        %s in %s objects at the end of the capture\n",
		       format_bytes(b, sizeof(b), v->inuse_bytes),
		       format_count(n, sizeof(n), v->inuse_objects));
	for (i = 0; i < v->n_spans; i++) {
		spans += !v->spans[i].no_span;
		roots += !v->spans[i].no_span && v->spans[i].parent == VIEW_NONE;
	}
	if (spans)
		printf("Spans:         %zu (%zu root%s)\n", spans, roots, roots == 1 ? "" : "s");
	else
		printf("Spans:         none (no span labels)\n");
	print_empty(v);
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

/* --- the allocator's state, from the mem.end (else mem.start) picture ---------------- */

/* the comment PHASE.allocator.KEY, or NULL */
static const char *alloc_comment(const struct pprof_profile *p, const char *phase, const char *key)
{
	char k[160];

	snprintf(k, sizeof(k), "%s.allocator%s", phase, key);
	return pprof_profile__comment(p, k);
}

/* PHASE.allocator.KEY as printed, under the text rule of escape.h; def when absent */
static const char *alloc_text(const struct pprof_profile *p, const char *phase, const char *key,
			      const char *def, char *buf, size_t len)
{
	const char *v = alloc_comment(p, phase, key);

	return v ? esc_text(buf, len, v) : def;
}

/* the bytes of PHASE.allocator.KEY for people, "?" when absent */
static const char *alloc_bytes(const struct pprof_profile *p, const char *phase, const char *key,
			       char *buf, size_t len)
{
	const char *v = alloc_comment(p, phase, key);

	if (!v)
		return "?";
	return format_bytes(buf, len, strtod(v, NULL));
}

static void print_glibc(const struct pprof_profile *p, const char *phase)
{
	const char *absent = alloc_comment(p, phase, ".glibc_absent");
	const char *tc = alloc_comment(p, phase, ".glibc.tcache.free_bytes");
	const char *approx = alloc_comment(p, phase, ".glibc.approximate");
	char b[7][32], t[1024];

	if (absent) {
		printf("               arenas not read: %s\n", esc_text(t, sizeof(t), absent));
		return;
	}
	printf("               %s arenas, %s from the system; free in them %s (top %s, bins %s, "
	       "fastbins %s)%s\n", alloc_text(p, phase, ".glibc.arena_count", "?", t, sizeof(t)),
	       alloc_bytes(p, phase, ".glibc.system_bytes", b[0], sizeof(b[0])),
	       alloc_bytes(p, phase, ".glibc.free_bytes", b[1], sizeof(b[1])),
	       alloc_bytes(p, phase, ".glibc.top_bytes", b[2], sizeof(b[2])),
	       alloc_bytes(p, phase, ".glibc.bin_free_bytes", b[3], sizeof(b[3])),
	       alloc_bytes(p, phase, ".glibc.fastbin_free_bytes", b[4], sizeof(b[4])),
	       approx && strcmp(approx, "0") ? ", approximate" : "");
	printf("               %s mmapped blocks, %s",
	       alloc_text(p, phase, ".glibc.mmapped_chunks", "?", t, sizeof(t)),
	       alloc_bytes(p, phase, ".glibc.mmapped_bytes", b[5], sizeof(b[5])));
	if (tc)
		printf("; %s free in the threads' tcaches",
		       alloc_bytes(p, phase, ".glibc.tcache.free_bytes", b[6], sizeof(b[6])));
	printf("\n");
}

static void print_sampler(const struct pprof_profile *p, const char *phase)
{
	static const char *const figs[] = { "allocated", "active", "metadata", "resident", "mapped",
					    "retained", "free" };
	const char *absent = alloc_comment(p, phase, ".sampler_absent");
	const char *age = alloc_comment(p, phase, ".sampler.age_us");
	const char *sep = ": ";
	char key[64], b[32], t[1024];
	size_t i;

	if (absent) {
		printf("               allocator figures absent: %s\n",
		       esc_text(t, sizeof(t), absent));
		return;
	}
	if (!alloc_comment(p, phase, ".sampler.library"))
		return;
	printf("               from libculpert-sampler.so");
	if (age)
		printf(" (%.1f s old)", strtod(age, NULL) / 1e6);
	for (i = 0; i < sizeof(figs) / sizeof(figs[0]); i++) {
		snprintf(key, sizeof(key), ".sampler.%s_bytes", figs[i]);
		if (!alloc_comment(p, phase, key))
			continue;
		printf("%s%s %s", sep, figs[i], alloc_bytes(p, phase, key, b, sizeof(b)));
		sep = ", ";
	}
	printf("\n");
}

static void print_allocator(const struct pprof_profile *p)
{
	const char *phase = alloc_comment(p, "mem.end", ".family") ? "mem.end" : "mem.start";
	const char *family = alloc_comment(p, phase, ".family");
	const char *absent = alloc_comment(p, phase, "_absent");
	const char *version = alloc_comment(p, phase, ".glibc.version");
	char t[1024];

	if (absent) {
		printf("Allocator:     absent (%s): %s\n", phase, esc_text(t, sizeof(t), absent));
		return;
	}
	if (!family)
		return;
	/* the family and version are the file's words */
	printf("Allocator:     ");
	esc_text_fputs(family, stdout);
	if (version) {
		printf(" ");
		esc_text_fputs(version, stdout);
	}
	printf(" (%s)\n", phase);
	if (!strcmp(family, "glibc"))
		print_glibc(p, phase);
	print_sampler(p, phase);
}

int cmd_info(int argc, char **argv)
{
	struct view_opts vo = { .value = VIEW_ALLOC };
	struct view *v;
	const struct pprof_profile *p;
	const char *file;
	size_t i;
	int c, ret;

	while ((c = opt_spec_next(argc, argv, info_tables)) != -1) {
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
	/* calls no allocator can satisfy: counted apart, in no total */
	if (pprof_profile__comment(p, "alloc_failed")) {
		printf("Failed calls:  ");
		esc_text_fputs(comment_or(p, "alloc_failed", "unknown"), stdout);
		printf(" (asked for more than can ever be allocated; in no total)\n");
	}
	ret = print_mappings(p);
	print_allocator(p);
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
