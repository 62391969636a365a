// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test tool: everything symbolization decides, as text, one item a line,
 * in the file's own order (so equal outputs mean equal ids too):
 *   mapping ID START-LIMIT OFFSET FILE BUILD_ID functions=0|1 filenames=.. lines=.. inline=..
 *   location ID ADDRESS MAPPING_ID
 *   frame LOC_ID DEPTH NAME<TAB>SYSTEM_NAME<TAB>FILE<TAB>LINE<TAB>COLUMN<TAB>START_LINE
 *   sample VALUES<TAB>LOCATION_IDS<TAB>LABELS
 * plus the sample types, period and comments.  Times are left out: two
 * captures of one run differ only there.
 */
#include <inttypes.h>
#include <stdio.h>

#include "pprof.h"

static void print_mappings(const struct pprof_profile *p)
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

static void print_locations(const struct pprof_profile *p)
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

static void print_samples(const struct pprof_profile *p)
{
	size_t i, j;

	for (i = 0; i < p->n_samples; i++) {
		const struct pprof_sample *s = &p->samples[i];

		printf("sample ");
		for (j = 0; j < p->n_sample_types; j++)
			printf("%s%" PRId64, j ? " " : "", p->values[i * p->n_sample_types + j]);
		printf("\t");
		for (j = 0; j < s->n_locs; j++)
			printf("%s%" PRIu64, j ? "," : "", p->loc_ids[s->loc_off + j]);
		printf("\t");
		for (j = 0; j < s->n_labels; j++) {
			const struct pprof_label *l = &p->labels[s->label_off + j];

			printf("%s%s=", j ? "," : "", pprof_profile__str(p, l->key));
			if (l->str)
				printf("%s", pprof_profile__str(p, l->str));
			else
				printf("%" PRId64 "%s", l->num, pprof_profile__str(p, l->num_unit));
		}
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	struct pprof_profile *p;
	char err[256];
	size_t i;

	if (argc != 2) {
		fprintf(stderr, "usage: symdump FILE.pb.gz\n");
		return 2;
	}
	p = pprof_read_file(argv[1], err, sizeof(err));
	if (!p) {
		fprintf(stderr, "symdump: %s: %s\n", argv[1], err);
		return 2;
	}
	for (i = 0; i < p->n_sample_types; i++)
		printf("sample_type %s/%s\n", pprof_profile__str(p, p->sample_types[i].type),
		       pprof_profile__str(p, p->sample_types[i].unit));
	printf("period %" PRId64 "\n", p->period);
	for (i = 0; i < p->n_comments; i++)
		printf("comment %s\n", pprof_profile__str(p, p->comments[i]));
	print_mappings(p);
	print_locations(p);
	print_samples(p);
	pprof_profile__free(p);
	return 0;
}
