// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof_profile -> gzip'd protobuf, through the protoc-c generated code for
 * profile.proto.  Decoding is decode.c's: it reads the wire format directly.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "log.h"
#include "outfile.h"
#include "profile.pb-c.h"
#include "pprof.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__ValueType PbValueType;

/* --- encoding ----------------------------------------------------------------------- */

/* protoc-c wants arrays of pointers to messages; build them over the flat model */
struct pb_build {
	PbProfile prof;
	PbValueType *vts, period_type, **vt_ptrs;
	PbSample *samples, **sample_ptrs;
	PbLabel *labels, **label_ptrs;
	PbMapping *maps, **map_ptrs;
	PbLocation *locs, **loc_ptrs;
	PbLine *lines, **line_ptrs;
	PbFunction *funcs, **func_ptrs;
};

static void pb_build_free(struct pb_build *b)
{
	free(b->vts);
	free(b->vt_ptrs);
	free(b->samples);
	free(b->sample_ptrs);
	free(b->labels);
	free(b->label_ptrs);
	free(b->maps);
	free(b->map_ptrs);
	free(b->locs);
	free(b->loc_ptrs);
	free(b->lines);
	free(b->line_ptrs);
	free(b->funcs);
	free(b->func_ptrs);
}

#define ALLOC_N(ptr, n) ((ptr) = calloc((n) ?: 1, sizeof(*(ptr))))

static int pb_build_samples(struct pb_build *b, const struct pprof_profile *p)
{
	size_t i;

	if (!ALLOC_N(b->samples, p->n_samples) || !ALLOC_N(b->sample_ptrs, p->n_samples) ||
	    !ALLOC_N(b->labels, p->n_labels) || !ALLOC_N(b->label_ptrs, p->n_labels))
		return -ENOMEM;
	for (i = 0; i < p->n_labels; i++) {
		PbLabel *l = &b->labels[i];

		perftools__profiles__label__init(l);
		l->key = p->labels[i].key;
		l->str = p->labels[i].str;
		l->num = p->labels[i].num;
		l->num_unit = p->labels[i].num_unit;
		b->label_ptrs[i] = l;
	}
	for (i = 0; i < p->n_samples; i++) {
		const struct pprof_sample *s = &p->samples[i];
		PbSample *d = &b->samples[i];

		perftools__profiles__sample__init(d);
		d->n_location_id = s->n_locs;
		d->location_id = &p->loc_ids[s->loc_off];
		d->n_value = p->n_sample_types;
		d->value = &p->values[i * p->n_sample_types];
		d->n_label = s->n_labels;
		d->label = &b->label_ptrs[s->label_off];
		b->sample_ptrs[i] = d;
	}
	b->prof.n_sample = p->n_samples;
	b->prof.sample = b->sample_ptrs;
	return 0;
}

static int pb_build_tables(struct pb_build *b, const struct pprof_profile *p)
{
	size_t i;

	if (!ALLOC_N(b->maps, p->n_mappings) || !ALLOC_N(b->map_ptrs, p->n_mappings) ||
	    !ALLOC_N(b->locs, p->n_locations) || !ALLOC_N(b->loc_ptrs, p->n_locations) ||
	    !ALLOC_N(b->lines, p->n_lines) || !ALLOC_N(b->line_ptrs, p->n_lines) ||
	    !ALLOC_N(b->funcs, p->n_functions) || !ALLOC_N(b->func_ptrs, p->n_functions))
		return -ENOMEM;
	for (i = 0; i < p->n_mappings; i++) {
		const struct pprof_mapping *s = &p->mappings[i];
		PbMapping *d = &b->maps[i];

		perftools__profiles__mapping__init(d);
		d->id = s->id;
		d->memory_start = s->memory_start;
		d->memory_limit = s->memory_limit;
		d->file_offset = s->file_offset;
		d->filename = s->filename;
		d->build_id = s->build_id;
		d->has_functions = s->has_functions;
		d->has_filenames = s->has_filenames;
		d->has_line_numbers = s->has_line_numbers;
		d->has_inline_frames = s->has_inline_frames;
		b->map_ptrs[i] = d;
	}
	for (i = 0; i < p->n_lines; i++) {
		perftools__profiles__line__init(&b->lines[i]);
		b->lines[i].function_id = p->lines[i].function_id;
		b->lines[i].line = p->lines[i].line;
		b->lines[i].column = p->lines[i].column;
		b->line_ptrs[i] = &b->lines[i];
	}
	for (i = 0; i < p->n_locations; i++) {
		const struct pprof_location *s = &p->locations[i];
		PbLocation *d = &b->locs[i];

		perftools__profiles__location__init(d);
		d->id = s->id;
		d->mapping_id = s->mapping_id;
		d->address = s->address;
		d->is_folded = s->is_folded;
		d->n_line = s->n_lines;
		d->line = &b->line_ptrs[s->line_off];
		b->loc_ptrs[i] = d;
	}
	for (i = 0; i < p->n_functions; i++) {
		const struct pprof_function *s = &p->functions[i];
		PbFunction *d = &b->funcs[i];

		perftools__profiles__function__init(d);
		d->id = s->id;
		d->name = s->name;
		d->system_name = s->system_name;
		d->filename = s->filename;
		d->start_line = s->start_line;
		b->func_ptrs[i] = d;
	}
	b->prof.n_mapping = p->n_mappings;
	b->prof.mapping = b->map_ptrs;
	b->prof.n_location = p->n_locations;
	b->prof.location = b->loc_ptrs;
	b->prof.n_function = p->n_functions;
	b->prof.function = b->func_ptrs;
	return 0;
}

static int pb_build_header(struct pb_build *b, const struct pprof_profile *p)
{
	size_t i;

	if (!ALLOC_N(b->vts, p->n_sample_types) || !ALLOC_N(b->vt_ptrs, p->n_sample_types))
		return -ENOMEM;
	for (i = 0; i < p->n_sample_types; i++) {
		perftools__profiles__value_type__init(&b->vts[i]);
		b->vts[i].type = p->sample_types[i].type;
		b->vts[i].unit = p->sample_types[i].unit;
		b->vt_ptrs[i] = &b->vts[i];
	}
	b->prof.n_sample_type = p->n_sample_types;
	b->prof.sample_type = b->vt_ptrs;
	perftools__profiles__value_type__init(&b->period_type);
	b->period_type.type = p->period_type.type;
	b->period_type.unit = p->period_type.unit;
	if (p->period_type.type || p->period_type.unit)
		b->prof.period_type = &b->period_type;
	b->prof.n_string_table = p->n_strings;
	b->prof.string_table = p->strings;
	b->prof.drop_frames = p->drop_frames;
	b->prof.keep_frames = p->keep_frames;
	b->prof.time_nanos = p->time_nanos;
	b->prof.duration_nanos = p->duration_nanos;
	b->prof.period = p->period;
	b->prof.n_comment = p->n_comments;
	b->prof.comment = p->comments;
	b->prof.default_sample_type = p->default_sample_type;
	b->prof.doc_url = p->doc_url;
	return 0;
}

/*
 * The protobuf goes into deflate as it is packed, through a staging
 * buffer: the packed profile (about as large as the profile's tables) is
 * never whole in memory, only the gzip'd output is (docs/agent.md,
 * "Memory").
 */
#define STAGE_SIZE (64 << 10)

struct gz_sink {
	ProtobufCBuffer base;
	z_stream zs;
	unsigned char stage[STAGE_SIZE];
	size_t staged;
	unsigned char *out;
	size_t cap;
	int err;
};

/* deflate what is staged, growing the output as needed */
static void gz_push(struct gz_sink *g, int flush)
{
	unsigned char *nb;
	int zr;

	g->zs.next_in = g->stage;
	g->zs.avail_in = (unsigned int)g->staged;
	do {
		if (g->zs.total_out == g->cap || !g->zs.avail_out) {
			size_t cap = g->cap ? g->cap * 2 : STAGE_SIZE;

			nb = realloc(g->out, cap);
			if (!nb) {
				g->err = -ENOMEM;
				return;
			}
			g->out = nb;
			g->cap = cap;
			g->zs.next_out = g->out + g->zs.total_out;
			g->zs.avail_out = (unsigned int)(g->cap - g->zs.total_out);
		}
		zr = deflate(&g->zs, flush);
		if (zr == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
	} while (g->zs.avail_in || (flush == Z_FINISH && zr != Z_STREAM_END));
	g->staged = 0;
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gz_sink *g = (struct gz_sink *)b;
	size_t n;

	while (len && !g->err) {
		n = STAGE_SIZE - g->staged < len ? STAGE_SIZE - g->staged : len;
		memcpy(g->stage + g->staged, data, n);
		g->staged += n;
		data += n;
		len -= n;
		if (g->staged == STAGE_SIZE)
			gz_push(g, Z_NO_FLUSH);
	}
}

/* windowBits 15 + 16: gzip wrapper; zlib writes mtime 0, so output is reproducible */
static int gzip_pack(const PbProfile *prof, void **out, size_t *out_len)
{
	struct gz_sink *g = calloc(1, sizeof(*g));
	int ret;

	if (!g)
		return -ENOMEM;
	g->base.append = gz_append;
	if (deflateInit2(&g->zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	perftools__profiles__profile__pack_to_buffer(prof, &g->base);
	if (!g->err)
		gz_push(g, Z_FINISH);
	deflateEnd(&g->zs);
	ret = g->err;
	if (!ret) {
		*out = g->out;
		*out_len = g->zs.total_out;
	} else {
		free(g->out);
	}
	free(g);
	return ret;
}

int pprof_encode_gzip(const struct pprof_profile *p, void **out, size_t *out_len)
{
	struct pb_build b = { 0 };
	int ret;

	perftools__profiles__profile__init(&b.prof);
	ret = pb_build_header(&b, p);
	if (!ret)
		ret = pb_build_samples(&b, p);
	if (!ret)
		ret = pb_build_tables(&b, p);
	if (!ret)
		ret = gzip_pack(&b.prof, out, out_len);
	pb_build_free(&b);
	return ret;
}

/*
 * lib/outfile: a reader never sees half a profile (a regular file is
 * written aside and renamed over), a device or FIFO is written through.
 */
int pprof_profile__write(const struct pprof_profile *p, const char *path)
{
	char err[PATH_MAX + 128];
	void *buf;
	size_t len;
	int ret;

	ret = pprof_encode_gzip(p, &buf, &len);
	if (ret)
		return ret;
	ret = outfile_write(path, buf, len, err, sizeof(err));
	if (ret)
		pr_debug("writing %s: %s\n", path, err);
	free(buf);
	return ret;
}
