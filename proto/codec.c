// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof_profile -> gzip'd protobuf, the wire format of profile.proto written
 * directly.  Decoding is decode.c's: it reads the wire format directly too.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "log.h"
#include "outfile.h"
#include "pprof.h"

/* --- encoding ----------------------------------------------------------------------- */

/*
 * The protobuf goes into deflate as it is written, through a staging
 * buffer: the packed profile (about as large as the profile's tables) is
 * never whole in memory, only the gzip'd output is (docs/agent.md,
 * "Memory").  The wire format is written here from the flat model, field
 * by field in field-number order, zero scalars left out (proto3): the
 * bytes protobuf-c's packing of profile.proto gives, without its message
 * structures, one per sample, label, location, line and function.
 */
#define STAGE_SIZE (64 << 10)
/* the longest varint */
#define VARINT_MAX 10

struct gz_sink {
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

static void put_bytes(struct gz_sink *g, const void *data, size_t len)
{
	const unsigned char *d = data;
	size_t n;

	while (len && !g->err) {
		n = STAGE_SIZE - g->staged < len ? STAGE_SIZE - g->staged : len;
		memcpy(g->stage + g->staged, d, n);
		g->staged += n;
		d += n;
		len -= n;
		if (g->staged == STAGE_SIZE)
			gz_push(g, Z_NO_FLUSH);
	}
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(struct gz_sink *g, uint64_t v)
{
	unsigned char *p;

	if (STAGE_SIZE - g->staged < VARINT_MAX)
		gz_push(g, Z_NO_FLUSH);
	if (g->err)
		return;
	p = g->stage + g->staged;
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	g->staged = (size_t)(p - g->stage);
}

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* field numbers of profile.proto are below 16: a tag is one byte */
static void put_tag(struct gz_sink *g, unsigned int field, unsigned int wire)
{
	put_varint(g, field << 3 | wire);
}

/* a varint field (int64 as its two's complement, bool as 0 or 1): left out when 0 */
static size_t field_len(uint64_t v)
{
	return v ? 1 + varint_len(v) : 0;
}

static void put_field(struct gz_sink *g, unsigned int field, uint64_t v)
{
	if (!v)
		return;
	put_tag(g, field, WIRE_VARINT);
	put_varint(g, v);
}

/* a length-delimited field of len bytes: its tag and length */
static size_t len_field_len(size_t len)
{
	return 1 + varint_len(len) + len;
}

static void put_len(struct gz_sink *g, unsigned int field, size_t len)
{
	put_tag(g, field, WIRE_LEN);
	put_varint(g, len);
}

/* packed repeated varints (int64 and uint64 alike), left out when empty */
static size_t packed_body(const uint64_t *v, size_t n)
{
	size_t i, len = 0;

	for (i = 0; i < n; i++)
		len += varint_len(v[i]);
	return len;
}

static size_t packed_len(const uint64_t *v, size_t n)
{
	return n ? len_field_len(packed_body(v, n)) : 0;
}

static void put_packed(struct gz_sink *g, unsigned int field, const uint64_t *v, size_t n)
{
	size_t i;

	if (!n)
		return;
	put_len(g, field, packed_body(v, n));
	for (i = 0; i < n; i++)
		put_varint(g, v[i]);
}

static size_t label_len(const struct pprof_label *l)
{
	return field_len((uint64_t)l->key) + field_len((uint64_t)l->str) +
	       field_len((uint64_t)l->num) + field_len((uint64_t)l->num_unit);
}

static void put_sample(struct gz_sink *g, const struct pprof_profile *p, size_t i)
{
	const struct pprof_sample *s = &p->samples[i];
	const uint64_t *locs = &p->loc_ids[s->loc_off];
	const uint64_t *vals = (const uint64_t *)&p->values[i * p->n_sample_types];
	const struct pprof_label *l = &p->labels[s->label_off];
	size_t len, k;

	len = packed_len(locs, s->n_locs) + packed_len(vals, p->n_sample_types);
	for (k = 0; k < s->n_labels; k++)
		len += len_field_len(label_len(&l[k]));
	put_len(g, 2, len);
	put_packed(g, 1, locs, s->n_locs);
	put_packed(g, 2, vals, p->n_sample_types);
	for (k = 0; k < s->n_labels; k++) {
		put_len(g, 3, label_len(&l[k]));
		put_field(g, 1, (uint64_t)l[k].key);
		put_field(g, 2, (uint64_t)l[k].str);
		put_field(g, 3, (uint64_t)l[k].num);
		put_field(g, 4, (uint64_t)l[k].num_unit);
	}
}

static void put_mapping(struct gz_sink *g, const struct pprof_mapping *m)
{
	put_len(g, 3, field_len(m->id) + field_len(m->memory_start) +
		      field_len(m->memory_limit) + field_len(m->file_offset) +
		      field_len((uint64_t)m->filename) + field_len((uint64_t)m->build_id) +
		      field_len(m->has_functions) + field_len(m->has_filenames) +
		      field_len(m->has_line_numbers) + field_len(m->has_inline_frames));
	put_field(g, 1, m->id);
	put_field(g, 2, m->memory_start);
	put_field(g, 3, m->memory_limit);
	put_field(g, 4, m->file_offset);
	put_field(g, 5, (uint64_t)m->filename);
	put_field(g, 6, (uint64_t)m->build_id);
	put_field(g, 7, m->has_functions);
	put_field(g, 8, m->has_filenames);
	put_field(g, 9, m->has_line_numbers);
	put_field(g, 10, m->has_inline_frames);
}

static size_t line_len(const struct pprof_line *l)
{
	return field_len(l->function_id) + field_len((uint64_t)l->line) +
	       field_len((uint64_t)l->column);
}

static void put_location(struct gz_sink *g, const struct pprof_profile *p,
			 const struct pprof_location *l)
{
	const struct pprof_line *lines = &p->lines[l->line_off];
	size_t len = field_len(l->id) + field_len(l->mapping_id) + field_len(l->address) +
		     field_len(l->is_folded);
	uint32_t k;

	for (k = 0; k < l->n_lines; k++)
		len += len_field_len(line_len(&lines[k]));
	put_len(g, 4, len);
	put_field(g, 1, l->id);
	put_field(g, 2, l->mapping_id);
	put_field(g, 3, l->address);
	for (k = 0; k < l->n_lines; k++) {
		put_len(g, 4, line_len(&lines[k]));
		put_field(g, 1, lines[k].function_id);
		put_field(g, 2, (uint64_t)lines[k].line);
		put_field(g, 3, (uint64_t)lines[k].column);
	}
	put_field(g, 5, l->is_folded);
}

static void put_function(struct gz_sink *g, const struct pprof_function *f)
{
	put_len(g, 5, field_len(f->id) + field_len((uint64_t)f->name) +
		      field_len((uint64_t)f->system_name) + field_len((uint64_t)f->filename) +
		      field_len((uint64_t)f->start_line));
	put_field(g, 1, f->id);
	put_field(g, 2, (uint64_t)f->name);
	put_field(g, 3, (uint64_t)f->system_name);
	put_field(g, 4, (uint64_t)f->filename);
	put_field(g, 5, (uint64_t)f->start_line);
}

static void put_value_type(struct gz_sink *g, unsigned int field, const struct pprof_value_type *v)
{
	put_len(g, field, field_len((uint64_t)v->type) + field_len((uint64_t)v->unit));
	put_field(g, 1, (uint64_t)v->type);
	put_field(g, 2, (uint64_t)v->unit);
}

static void put_profile(struct gz_sink *g, const struct pprof_profile *p)
{
	size_t i, len;

	for (i = 0; i < p->n_sample_types; i++)
		put_value_type(g, 1, &p->sample_types[i]);
	for (i = 0; i < p->n_samples && !g->err; i++)
		put_sample(g, p, i);
	for (i = 0; i < p->n_mappings; i++)
		put_mapping(g, &p->mappings[i]);
	for (i = 0; i < p->n_locations && !g->err; i++)
		put_location(g, p, &p->locations[i]);
	for (i = 0; i < p->n_functions && !g->err; i++)
		put_function(g, &p->functions[i]);
	for (i = 0; i < p->n_strings && !g->err; i++) {
		len = p->strings[i] ? strlen(p->strings[i]) : 0;
		put_len(g, 6, len);
		put_bytes(g, p->strings[i], len);
	}
	put_field(g, 7, (uint64_t)p->drop_frames);
	put_field(g, 8, (uint64_t)p->keep_frames);
	put_field(g, 9, (uint64_t)p->time_nanos);
	put_field(g, 10, (uint64_t)p->duration_nanos);
	if (p->period_type.type || p->period_type.unit)
		put_value_type(g, 11, &p->period_type);
	put_field(g, 12, (uint64_t)p->period);
	put_packed(g, 13, (const uint64_t *)p->comments, p->n_comments);
	put_field(g, 14, (uint64_t)p->default_sample_type);
	put_field(g, 15, (uint64_t)p->doc_url);
}

/* windowBits 15 + 16: gzip wrapper; zlib writes mtime 0, so output is reproducible */
int pprof_encode_gzip(const struct pprof_profile *p, void **out, size_t *out_len)
{
	struct gz_sink *g = calloc(1, sizeof(*g));
	int ret;

	if (!g)
		return -ENOMEM;
	if (deflateInit2(&g->zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	put_profile(g, p);
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
