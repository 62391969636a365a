// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test tool: one line per sample of a pprof file, for the shell tests.
 *   values (tab) stack, leaf first, ';'-joined (tab) labels key=value,...
 * A location with inline frames is its functions innermost first, '|'-joined.
 * Header lines start with '#': sample types, period, comments, mappings.
 *
 * profdump --raw FILE: everything symbolization decides, one item a line, in
 * the file's own order (equal outputs mean equal ids too), times left out:
 *   mapping ID START-LIMIT OFFSET FILE BUILD_ID functions=0|1 filenames=.. lines=.. inline=..
 *   location ID ADDRESS MAPPING_ID
 *   frame LOC_ID DEPTH NAME<TAB>SYSTEM_NAME<TAB>FILE<TAB>LINE<TAB>COLUMN<TAB>START_LINE
 *   sample VALUES<TAB>LOCATION_IDS<TAB>LABELS
 * after the sample types, period and comments.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pprof.h"

/* a location's functions, innermost first, inline frames joined with '|' */
static void print_frame(const struct pprof_profile *p, uint64_t loc_id)
{
	const struct pprof_location *l = pprof_profile__location(p, loc_id);
	uint32_t i;

	if (!l->n_lines) {
		printf("0x%" PRIx64, l->address);
		return;
	}
	for (i = 0; i < l->n_lines; i++) {
		const struct pprof_function *f =
			pprof_profile__function(p, p->lines[l->line_off + i].function_id);

		printf("%s%s", i ? "|" : "", f ? pprof_profile__str(p, f->name) : "?");
	}
}

static void print_header(const struct pprof_profile *p)
{
	size_t i;

	for (i = 0; i < p->n_sample_types; i++)
		printf("# sample_type %s/%s\n", pprof_profile__str(p, p->sample_types[i].type),
		       pprof_profile__str(p, p->sample_types[i].unit));
	printf("# period %" PRId64 " %s/%s\n", p->period, pprof_profile__str(p, p->period_type.type),
	       pprof_profile__str(p, p->period_type.unit));
	for (i = 0; i < p->n_comments; i++)
		printf("# comment %s\n", pprof_profile__str(p, p->comments[i]));
	for (i = 0; i < p->n_mappings; i++) {
		const struct pprof_mapping *m = &p->mappings[i];

		printf("# mapping %" PRIu64 " %" PRIx64 "-%" PRIx64 " %" PRIx64 " %s %s\n", m->id,
		       m->memory_start, m->memory_limit, m->file_offset,
		       pprof_profile__str(p, m->filename), pprof_profile__str(p, m->build_id));
	}
	for (i = 0; i < p->n_locations; i++)
		printf("# location %" PRIu64 " %" PRIx64 " mapping %" PRIu64 "\n", p->locations[i].id,
		       p->locations[i].address, p->locations[i].mapping_id);
}

static void print_values(const struct pprof_profile *p, size_t i)
{
	size_t j;

	for (j = 0; j < p->n_sample_types; j++)
		printf("%s%" PRId64, j ? " " : "", p->values[i * p->n_sample_types + j]);
}

static void print_labels(const struct pprof_profile *p, const struct pprof_sample *s)
{
	size_t j;

	for (j = 0; j < s->n_labels; j++) {
		const struct pprof_label *l = &p->labels[s->label_off + j];

		printf("%s%s=", j ? "," : "", pprof_profile__str(p, l->key));
		if (l->str)
			printf("%s", pprof_profile__str(p, l->str));
		else
			printf("%" PRId64, l->num);
	}
}

static void print_samples(const struct pprof_profile *p)
{
	size_t i, j;

	for (i = 0; i < p->n_samples; i++) {
		const struct pprof_sample *s = &p->samples[i];

		print_values(p, i);
		printf("\t");
		for (j = 0; j < s->n_locs; j++) {
			if (j)
				printf(";");
			print_frame(p, p->loc_ids[s->loc_off + j]);
		}
		printf("\t");
		print_labels(p, s);
		printf("\n");
	}
}

/* --- --raw ------------------------------------------------------------------------- */

static void raw_mappings(const struct pprof_profile *p)
{
	size_t i;

	for (i = 0; i < p->n_mappings; i++) {
		const struct pprof_mapping *m = &p->mappings[i];

		printf("mapping %" PRIu64 " %" PRIx64 "-%" PRIx64 " %" PRIx64 " %s %s functions=%d "
		       "filenames=%d lines=%d inline=%d\n", m->id, m->memory_start, m->memory_limit,
		       m->file_offset, pprof_profile__str(p, m->filename),
		       pprof_profile__str(p, m->build_id), m->has_functions, m->has_filenames,
		       m->has_line_numbers, m->has_inline_frames);
	}
}

static void raw_locations(const struct pprof_profile *p)
{
	size_t i, j;

	for (i = 0; i < p->n_locations; i++) {
		const struct pprof_location *l = &p->locations[i];

		printf("location %" PRIu64 " %" PRIx64 " %" PRIu64 "\n", l->id, l->address,
		       l->mapping_id);
		for (j = 0; j < l->n_lines; j++) {
			const struct pprof_line *ln = &p->lines[l->line_off + j];
			const struct pprof_function *f = pprof_profile__function(p, ln->function_id);

			printf("frame %" PRIu64 " %zu %s\t%s\t%s\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\n",
			       l->id, j, f ? pprof_profile__str(p, f->name) : "?",
			       f ? pprof_profile__str(p, f->system_name) : "?",
			       f ? pprof_profile__str(p, f->filename) : "?", ln->line, ln->column,
			       f ? f->start_line : 0);
		}
	}
}

static void print_raw(const struct pprof_profile *p)
{
	size_t i, j;

	for (i = 0; i < p->n_sample_types; i++)
		printf("sample_type %s/%s\n", pprof_profile__str(p, p->sample_types[i].type),
		       pprof_profile__str(p, p->sample_types[i].unit));
	printf("period %" PRId64 "\n", p->period);
	for (i = 0; i < p->n_comments; i++)
		printf("comment %s\n", pprof_profile__str(p, p->comments[i]));
	raw_mappings(p);
	raw_locations(p);
	for (i = 0; i < p->n_samples; i++) {
		const struct pprof_sample *s = &p->samples[i];

		printf("sample ");
		print_values(p, i);
		printf("\t");
		for (j = 0; j < s->n_locs; j++)
			printf("%s%" PRIu64, j ? "," : "", p->loc_ids[s->loc_off + j]);
		printf("\t");
		print_labels(p, s);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	struct pprof_profile *p;
	bool raw = argc == 3 && !strcmp(argv[1], "--raw");
	char err[256];

	if (argc != 2 && !raw) {
		fprintf(stderr, "usage: profdump [--raw] FILE.pb.gz\n");
		return 2;
	}
	p = pprof_read_file(argv[argc - 1], err, sizeof(err));
	if (!p) {
		fprintf(stderr, "profdump: %s: %s\n", argv[argc - 1], err);
		return 2;
	}
	if (raw) {
		print_raw(p);
	} else {
		print_header(p);
		print_samples(p);
	}
	pprof_profile__free(p);
	return 0;
}
