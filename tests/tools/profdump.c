// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test tool: one line per sample of a pprof file, for the shell tests.
 *   values (tab) stack, leaf first, ';'-joined (tab) labels key=value,...
 * A location with inline frames is its functions innermost first, '|'-joined.
 * Header lines start with '#': sample types, period, comments, mappings.
 */
#include <inttypes.h>
#include <stdio.h>

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

int main(int argc, char **argv)
{
	struct pprof_profile *p;
	char err[256];
	size_t i, j;

	if (argc != 2) {
		fprintf(stderr, "usage: profdump FILE.pb.gz\n");
		return 2;
	}
	p = pprof_read_file(argv[1], err, sizeof(err));
	if (!p) {
		fprintf(stderr, "profdump: %s: %s\n", argv[1], err);
		return 2;
	}
	print_header(p);
	for (i = 0; i < p->n_samples; i++) {
		const struct pprof_sample *s = &p->samples[i];

		for (j = 0; j < p->n_sample_types; j++)
			printf("%s%" PRId64, j ? " " : "", p->values[i * p->n_sample_types + j]);
		printf("\t");
		for (j = 0; j < s->n_locs; j++) {
			if (j)
				printf(";");
			print_frame(p, p->loc_ids[s->loc_off + j]);
		}
		printf("\t");
		for (j = 0; j < s->n_labels; j++) {
			const struct pprof_label *l = &p->labels[s->label_off + j];

			printf("%s%s=", j ? "," : "", pprof_profile__str(p, l->key));
			if (l->str)
				printf("%s", pprof_profile__str(p, l->str));
			else
				printf("%" PRId64, l->num);
		}
		printf("\n");
	}
	pprof_profile__free(p);
	return 0;
}
