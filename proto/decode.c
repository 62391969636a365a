// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gzip'd protobuf -> pprof_profile, straight from the wire format into the
 * flat model.  A generic protobuf decoder builds a message object per sample,
 * label and line, several times the size of the input; profiles of a few
 * hundred thousand samples then need gigabytes.  Here the profile is walked
 * twice, each time inflated anew through a small window, never held whole:
 * first everything but the samples (strings, mappings, locations, functions,
 * header), then the samples, which either go into the model or, with
 * pprof_read_opts.on_sample, to the caller one at a time so a reader that
 * aggregates never holds them at all.  Samples come before the tables in the
 * wire order writers use, hence the two walks.
 *
 * Everything read is validated (string indices, ids, references), so the
 * rest of the code can trust every index it finds.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "pprof.h"
#include "vec.h"

/* --- state and errors ------------------------------------------------------------- */

struct dec {
	struct pprof_profile *p;
	const struct pprof_read_opts *o;
	char *err;
	size_t errlen;
	/* capacities of the growable arrays of p */
	size_t cap_types, cap_samples, cap_values, cap_loc_ids, cap_labels, cap_mappings;
	size_t cap_locations, cap_lines, cap_functions, cap_comments;
	/* scratch for one sample in callback mode */
	uint64_t *s_locs;
	int64_t *s_values;
	struct pprof_label *s_labels;
	size_t cap_s_locs, cap_s_values, cap_s_labels;
	/* strings as read: one block, and each string's offset in it */
	char *block;
	size_t *str_off;
	size_t n_strings, string_bytes, cap_block, cap_str_off;
	/* what the tables and the caller's aggregate may take: opts' or own_budget */
	struct pprof_budget *budget, own_budget;
};

static int seterr(struct dec *d, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* the first reason wins: it is the closest to the cause */
static int seterr(struct dec *d, int ret, const char *fmt, ...)
{
	va_list ap;

	if (d->err && d->errlen && !d->err[0]) {
		va_start(ap, fmt);
		vsnprintf(d->err, d->errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static int malformed(struct dec *d)
{
	return seterr(d, -EINVAL, "not a pprof profile: the protobuf data is malformed or truncated");
}

static int over_budget(struct dec *d)
{
	char why[256];

	pprof_budget__explain(d->budget, "reading", why, sizeof(why));
	return seterr(d, -E2BIG, "profile too large: %s", why);
}

/* every growable array of the decoder: vec_reserve() within the budget */
static int dec_reserve(struct dec *d, void *ptrp, size_t *cap, size_t need, size_t elem)
{
	int ret = pprof_budget__reserve(d->budget, ptrp, cap, need, elem);

	return ret == -E2BIG ? over_budget(d) : ret;
}

static int too_many(struct dec *d, size_t n, const char *what)
{
	if (n < PPROF_MAX_TABLE)
		return 0;
	return seterr(d, -E2BIG, "profile too large: more than %u %s; refusing to read it",
		      PPROF_MAX_TABLE, what);
}

/* --- wire format -------------------------------------------------------------------- */

struct pb {
	const uint8_t *p, *end;
};

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static int pb_varint(struct pb *b, uint64_t *out)
{
	uint64_t v = 0;
	int shift;

	for (shift = 0; shift < 64 && b->p < b->end; shift += 7) {
		uint8_t c = *b->p++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EINVAL;
}

static int pb_tag(struct pb *b, uint32_t *field, int *wt)
{
	uint64_t tag;

	if (pb_varint(b, &tag) || tag >> 32 || !(tag >> 3))
		return -EINVAL;
	*field = (uint32_t)(tag >> 3);
	*wt = (int)(tag & 7);
	return 0;
}

static int pb_len(struct pb *b, struct pb *sub)
{
	uint64_t n;

	if (pb_varint(b, &n) || n > (uint64_t)(b->end - b->p))
		return -EINVAL;
	sub->p = b->p;
	sub->end = b->p + n;
	b->p += n;
	return 0;
}

static int pb_skip(struct pb *b, int wt)
{
	struct pb sub;
	uint64_t v;

	switch (wt) {
	case WT_VARINT:
		return pb_varint(b, &v);
	case WT_I64:
	case WT_I32:
		if ((size_t)(b->end - b->p) < (wt == WT_I64 ? 8u : 4u))
			return -EINVAL;
		b->p += wt == WT_I64 ? 8 : 4;
		return 0;
	case WT_LEN:
		return pb_len(b, &sub);
	default:
		/* groups (3, 4) are not in proto3 and not in profile.proto */
		return -EINVAL;
	}
}

/* the values of a packed run, appended to *arr */
static int pb_packed(struct dec *d, struct pb *run, uint64_t **arr, size_t *n, size_t *cap)
{
	uint64_t v;
	int ret;

	while (run->p < run->end) {
		if (pb_varint(run, &v))
			return -EINVAL;
		/* a run of n bytes holds at most n more values: reserve once */
		ret = dec_reserve(d, arr, cap, *n + 1 + (size_t)(run->end - run->p), sizeof(v));
		if (ret)
			return ret;
		(*arr)[(*n)++] = v;
	}
	return 0;
}

/*
 * One occurrence of a repeated varint field, as pb_next() read it: a varint
 * (v) or a packed run (body), appended to *arr.  Writers may use either
 * encoding; any other wire type is malformed.
 */
static int pb_append(struct dec *d, int wt, uint64_t v, struct pb *body, uint64_t **arr,
		     size_t *n, size_t *cap)
{
	int ret;

	if (wt == WT_LEN)
		return pb_packed(d, body, arr, n, cap);
	if (wt != WT_VARINT)
		return -EINVAL;
	ret = dec_reserve(d, arr, cap, *n + 1, sizeof(v));
	if (ret)
		return ret;
	(*arr)[(*n)++] = v;
	return 0;
}

/* --- tables --------------------------------------------------------------------------- */

static bool str_ok(const struct pprof_profile *p, int64_t i)
{
	return i >= 0 && (uint64_t)i < p->n_strings;
}

/*
 * The next field of a message: 1 with its number, wire type and value (a
 * varint, or the raw bytes of a fixed-size field) or body (LEN); 0 at the end
 * of the message; -EINVAL when it is malformed.
 */
static int pb_next(struct pb *m, uint32_t *f, int *wt, uint64_t *v, struct pb *body)
{
	*v = 0;
	if (m->p >= m->end)
		return 0;
	if (pb_tag(m, f, wt))
		return -EINVAL;
	if (*wt == WT_VARINT)
		return pb_varint(m, v) ? -EINVAL : 1;
	if (*wt == WT_LEN)
		return pb_len(m, body) ? -EINVAL : 1;
	return pb_skip(m, *wt) ? -EINVAL : 1;
}

/*
 * Messages whose fields are all varints (ints, bools, string indices): each
 * known field as a uint64, by number; unknown fields are skipped, a known one
 * with another wire type makes the message malformed.
 */
static int pb_scalars(struct pb *m, uint64_t *vals, uint32_t n_fields)
{
	struct pb body;
	uint32_t f;
	uint64_t v;
	int wt, ret;

	while ((ret = pb_next(m, &f, &wt, &v, &body)) > 0) {
		if (f > n_fields)
			continue;
		if (wt != WT_VARINT)
			return -EINVAL;
		vals[f - 1] = v;
	}
	return ret;
}

static int dec_value_type(struct dec *d, struct pb *m, struct pprof_value_type *vt)
{
	uint64_t v[2] = { (uint64_t)vt->type, (uint64_t)vt->unit };

	if (pb_scalars(m, v, 2))
		return malformed(d);
	vt->type = (int64_t)v[0];
	vt->unit = (int64_t)v[1];
	return 0;
}

static int dec_mapping(struct dec *d, struct pb *m)
{
	struct pprof_profile *p = d->p;
	uint64_t v[10] = { 0 };

	int ret;

	if (pb_scalars(m, v, 10))
		return malformed(d);
	ret = too_many(d, p->n_mappings, "mappings");
	if (!ret)
		ret = dec_reserve(d, &p->mappings, &d->cap_mappings, p->n_mappings + 1,
				  sizeof(*p->mappings));
	if (ret)
		return ret;
	p->mappings[p->n_mappings++] = (struct pprof_mapping){
		.id = v[0], .memory_start = v[1], .memory_limit = v[2], .file_offset = v[3],
		.filename = (int64_t)v[4], .build_id = (int64_t)v[5],
		.has_functions = v[6] != 0, .has_filenames = v[7] != 0,
		.has_line_numbers = v[8] != 0, .has_inline_frames = v[9] != 0,
	};
	return 0;
}

static int dec_function(struct dec *d, struct pb *m)
{
	struct pprof_profile *p = d->p;
	uint64_t v[5] = { 0 };

	int ret;

	if (pb_scalars(m, v, 5))
		return malformed(d);
	ret = too_many(d, p->n_functions, "functions");
	if (!ret)
		ret = dec_reserve(d, &p->functions, &d->cap_functions, p->n_functions + 1,
				  sizeof(*p->functions));
	if (ret)
		return ret;
	p->functions[p->n_functions++] = (struct pprof_function){
		.id = v[0], .name = (int64_t)v[1], .system_name = (int64_t)v[2],
		.filename = (int64_t)v[3], .start_line = (int64_t)v[4],
	};
	return 0;
}

static int dec_location(struct dec *d, struct pb *m)
{
	struct pprof_profile *p = d->p;
	struct pprof_location l = { .line_off = (uint32_t)p->n_lines };
	struct pb body;
	uint32_t f;
	uint64_t v, ln[3];
	int wt, ret;

	ret = too_many(d, p->n_lines, "lines");
	if (!ret)
		ret = too_many(d, p->n_locations, "locations");
	if (ret)
		return ret;
	while ((ret = pb_next(m, &f, &wt, &v, &body)) > 0) {
		if (f > 5)
			continue;
		if (f == 4) {
			memset(ln, 0, sizeof(ln));
			if (wt != WT_LEN || pb_scalars(&body, ln, 3))
				return malformed(d);
			if (p->n_lines + 1 >= PPROF_MAX_TABLE)
				return too_many(d, p->n_lines + 1, "lines");
			ret = dec_reserve(d, &p->lines, &d->cap_lines, p->n_lines + 1,
					  sizeof(*p->lines));
			if (ret)
				return ret;
			p->lines[p->n_lines++] = (struct pprof_line){
				.function_id = ln[0], .line = (int64_t)ln[1], .column = (int64_t)ln[2],
			};
			l.n_lines++;
			continue;
		}
		if (wt != WT_VARINT)
			return malformed(d);
		if (f == 1)
			l.id = v;
		else if (f == 2)
			l.mapping_id = v;
		else if (f == 3)
			l.address = v;
		else
			l.is_folded = v != 0;
	}
	if (ret)
		return malformed(d);
	ret = dec_reserve(d, &p->locations, &d->cap_locations, p->n_locations + 1, sizeof(l));
	if (ret)
		return ret;
	p->locations[p->n_locations++] = l;
	return 0;
}

/*
 * Strings are copied into one block, NUL-terminated, with p->strings pointing
 * into it once every string is in: one allocation instead of one per string.
 */
static int dec_string(struct dec *d, const struct pb *s)
{
	size_t n = (size_t)(s->end - s->p);
	int ret;

	if (d->n_strings >= PPROF_MAX_STRINGS)
		return seterr(d, -E2BIG, "profile has more than %u strings; refusing to read it",
			      PPROF_MAX_STRINGS);
	ret = dec_reserve(d, &d->block, &d->cap_block, d->string_bytes + n + 1, 1);
	if (!ret)
		ret = dec_reserve(d, &d->str_off, &d->cap_str_off, d->n_strings + 1,
				  sizeof(size_t));
	if (ret)
		return ret;
	if (n)
		memcpy(d->block + d->string_bytes, s->p, n);
	d->block[d->string_bytes + n] = '\0';
	d->str_off[d->n_strings++] = d->string_bytes;
	d->string_bytes += n + 1;
	return 0;
}

/* the block is complete: hand it to the profile with a pointer per string */
static int finish_strings(struct dec *d)
{
	struct pprof_profile *p = d->p;
	size_t i;

	if (!d->n_strings)
		return seterr(d, -EINVAL, "not a pprof profile: it has no string table");
	if (pprof_budget__charge(d->budget, d->n_strings * sizeof(char *)))
		return over_budget(d);
	p->strings = calloc(d->n_strings, sizeof(char *));
	if (!p->strings)
		return -ENOMEM;
	p->string_block = d->block;
	d->block = NULL;
	for (i = 0; i < d->n_strings; i++)
		p->strings[i] = p->string_block + d->str_off[i];
	p->n_strings = d->n_strings;
	if (p->strings[0][0])
		return seterr(d, -EINVAL, "not a pprof profile: string table must start with \"\"");
	return 0;
}

/* --- input: top-level fields from memory, or straight out of inflate ----------------- */

/*
 * The decompressed profile is never held whole: top-level fields come out
 * of a window that inflate refills, and the window only grows to the largest
 * single field.  Each walk starts the decompression over.
 */
struct src {
	struct dec *d;
	bool gzip;
	const uint8_t *in;		/* raw protobuf, or gzip'd bytes */
	size_t in_len, max;
	int fd;				/* gzip'd bytes read from here instead when >= 0 */
	uint8_t *inbuf;
	bool in_eof;
	z_stream zs;
	bool zs_live, z_end;
	uint8_t *win;			/* the raw protobuf itself when !gzip */
	size_t cap, start, end, total;
};

/* one top-level field: number, wire type, and its body (LEN) or value (VARINT) */
struct field {
	uint32_t f;
	int wt;
	struct pb body;
	uint64_t v;
};

#define SRC_WINDOW	(256u << 10)
#define MAX_VARINT	10

/*
 * Parse the field at p: 0 and *used, -EINVAL when it is malformed, -EAGAIN
 * when more bytes are needed (*used then says how many, when known).
 */
static int parse_field(const uint8_t *p, size_t avail, struct field *fl, size_t *used)
{
	struct pb b = { p, p + avail };
	uint64_t n;

	*used = 0;
	if (pb_tag(&b, &fl->f, &fl->wt))
		return avail < MAX_VARINT ? -EAGAIN : -EINVAL;
	switch (fl->wt) {
	case WT_VARINT:
		if (pb_varint(&b, &fl->v))
			return (size_t)(b.end - b.p) < MAX_VARINT ? -EAGAIN : -EINVAL;
		break;
	case WT_LEN:
		if (pb_varint(&b, &n))
			return (size_t)(b.end - b.p) < MAX_VARINT ? -EAGAIN : -EINVAL;
		if (n > (size_t)(b.end - b.p)) {
			*used = n > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)(b.p - p) + (size_t)n;
			return -EAGAIN;
		}
		fl->body.p = b.p;
		fl->body.end = b.p + n;
		b.p += n;
		break;
	case WT_I64:
	case WT_I32:
		if ((size_t)(b.end - b.p) < (fl->wt == WT_I64 ? 8u : 4u))
			return -EAGAIN;
		b.p += fl->wt == WT_I64 ? 8 : 4;
		break;
	default:
		return -EINVAL;
	}
	*used = (size_t)(b.p - p);
	return 0;
}

static int src_inflate_error(struct src *s, int zr)
{
	if (zr == Z_BUF_ERROR && !s->zs.avail_in)
		return seterr(s->d, -EINVAL, "truncated gzip data: the file ends before the profile does");
	return seterr(s->d, zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL, "corrupt gzip data (%s)",
		      s->zs.msg ? s->zs.msg : "inflate failed");
}

/* gzip'd input for inflate; in_eof once there is none left */
static int src_input(struct src *s)
{
	ssize_t n;

	if (s->zs.avail_in || s->in_eof)
		return 0;
	if (s->fd < 0) {
		size_t left = s->in_len - (size_t)(s->zs.next_in - s->in);

		s->zs.avail_in = left > UINT_MAX ? UINT_MAX : (unsigned int)left;
		s->in_eof = !left;
		return 0;
	}
	if (!s->inbuf && !(s->inbuf = malloc(SRC_WINDOW)))
		return -ENOMEM;
	do
		n = read(s->fd, s->inbuf, SRC_WINDOW);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return seterr(s->d, -errno, "cannot read: %s", strerror(errno));
	s->zs.next_in = s->inbuf;
	s->zs.avail_in = (unsigned int)n;
	s->in_eof = !n;
	return 0;
}

/* the end of a gzip member: another one may follow (like gzip -d), nothing else */
static int src_member_end(struct src *s)
{
	int ret = src_input(s);

	if (ret)
		return ret;
	if (s->in_eof) {
		s->z_end = true;
		return 0;
	}
	/* a member starts with the magic; one byte of it at the end of a read is let through */
	if (s->zs.next_in[0] != 0x1f || (s->zs.avail_in > 1 && s->zs.next_in[1] != 0x8b))
		return seterr(s->d, -EINVAL, "corrupt gzip data: garbage after the compressed profile");
	inflateReset(&s->zs);
	return 0;
}

/* make room for `need` bytes from start (0: some more), and inflate into it */
static int src_fill(struct src *s, size_t need)
{
	size_t keep = s->end - s->start, before, room;
	int zr;

	if (s->start) {
		memmove(s->win, s->win + s->start, keep);
		s->start = 0;
		s->end = keep;
	}
	if (need > s->max)
		return malformed(s->d);
	zr = dec_reserve(s->d, &s->win, &s->cap,
			 need > keep + SRC_WINDOW ? need : keep + SRC_WINDOW, 1);
	if (zr)
		return zr;
	before = s->end;
	while (!s->z_end && s->end < s->cap && (s->end == before || s->end < need)) {
		int ret = src_input(s);

		if (ret)
			return ret;
		s->zs.next_out = s->win + s->end;
		room = s->cap - s->end;
		s->zs.avail_out = room > UINT_MAX ? UINT_MAX : (unsigned int)room;
		zr = inflate(&s->zs, Z_NO_FLUSH);
		s->total += (size_t)(s->zs.next_out - (s->win + s->end));
		s->end = (size_t)(s->zs.next_out - s->win);
		if (s->total > s->max)
			return seterr(s->d, -E2BIG, "profile decompresses to more than %zu MiB; refusing to read it",
				      s->max >> 20);
		if (zr == Z_STREAM_END) {
			ret = src_member_end(s);
			if (ret)
				return ret;
		} else if (zr == Z_BUF_ERROR && !s->zs.avail_in) {
			/* inflate wants more input: src_input says whether there is any */
			ret = src_input(s);
			if (ret)
				return ret;
			if (s->in_eof)
				return src_inflate_error(s, zr);
		} else if (zr != Z_OK) {
			return src_inflate_error(s, zr);
		}
	}
	return 0;
}

/* the next top-level field: 1, 0 at the end, or -errno */
static int src_next(struct src *s, struct field *fl)
{
	size_t used;
	int ret;

	for (;;) {
		if (s->start == s->end && (!s->gzip || s->z_end))
			return 0;
		used = 0;
		ret = -EAGAIN;
		if (s->end > s->start)
			ret = parse_field(s->win + s->start, s->end - s->start, fl, &used);
		if (!ret) {
			s->start += used;
			return 1;
		}
		if (ret == -EINVAL || !s->gzip || s->z_end)
			return malformed(s->d);
		ret = src_fill(s, used);
		if (ret)
			return ret;
	}
}

static int src_rewind(struct src *s)
{
	s->start = 0;
	if (!s->gzip)
		return 0;
	if (s->zs_live)
		inflateEnd(&s->zs);
	memset(&s->zs, 0, sizeof(s->zs));
	if (inflateInit2(&s->zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	s->zs_live = true;
	s->zs.next_in = (unsigned char *)s->in;
	s->zs.avail_in = 0;
	s->in_eof = false;
	if (s->fd >= 0 && lseek(s->fd, 0, SEEK_SET) < 0)
		return seterr(s->d, -errno, "cannot read: %s", strerror(errno));
	s->z_end = false;
	s->end = s->total = 0;
	return 0;
}

static void src_close(struct src *s)
{
	if (s->zs_live)
		inflateEnd(&s->zs);
	if (s->gzip)
		free(s->win);
	free(s->inbuf);
}

/* --- header ------------------------------------------------------------------------ */

static int dec_header_field(struct dec *d, struct field *fl)
{
	struct pprof_profile *p = d->p;
	uint64_t v = fl->v;

	if (fl->f == 13) {
		/* comments: packed (one LEN run) or one varint each */
		struct pb b = fl->body;
		int ret;

		ret = pb_append(d, fl->wt, v, &b, (uint64_t **)&p->comments, &p->n_comments,
				&d->cap_comments);
		return ret == -EINVAL ? malformed(d) : ret;
	}
	if (fl->f < 7 || fl->f > 15)
		return 0;
	if (fl->wt != WT_VARINT)
		return malformed(d);
	switch (fl->f) {
	case 7: p->drop_frames = (int64_t)v; break;
	case 8: p->keep_frames = (int64_t)v; break;
	case 9: p->time_nanos = (int64_t)v; break;
	case 10: p->duration_nanos = (int64_t)v; break;
	case 12: p->period = (int64_t)v; break;
	case 14: p->default_sample_type = (int64_t)v; break;
	case 15: p->doc_url = (int64_t)v; break;
	}
	return 0;
}

static int dec_table_field(struct dec *d, uint32_t f, struct pb *m)
{
	struct pprof_profile *p = d->p;
	int ret;

	switch (f) {
	case 1:
		ret = dec_reserve(d, &p->sample_types, &d->cap_types, p->n_sample_types + 1,
				  sizeof(*p->sample_types));
		if (ret)
			return ret;
		memset(&p->sample_types[p->n_sample_types], 0, sizeof(*p->sample_types));
		return dec_value_type(d, m, &p->sample_types[p->n_sample_types++]);
	case 3:
		return dec_mapping(d, m);
	case 4:
		return dec_location(d, m);
	case 5:
		return dec_function(d, m);
	case 6:
		return dec_string(d, m);
	default: /* 11 */
		return dec_value_type(d, m, &p->period_type);
	}
}

/* walk 1: everything except samples, whose framing is checked on the way */
static int dec_tables(struct dec *d, struct src *in)
{
	struct field fl;
	int ret;

	while ((ret = src_next(in, &fl)) > 0) {
		switch (fl.f) {
		case 2:
			ret = fl.wt == WT_LEN ? 0 : malformed(d);
			break;
		case 1: case 3: case 4: case 5: case 6: case 11:
			ret = fl.wt == WT_LEN ? dec_table_field(d, fl.f, &fl.body) : malformed(d);
			break;
		default:
			ret = dec_header_field(d, &fl);
		}
		if (ret)
			return ret;
	}
	return ret ? ret : finish_strings(d);
}

static int check_tables(struct dec *d)
{
	const struct pprof_profile *p = d->p;
	size_t i;

	for (i = 0; i < p->n_sample_types; i++)
		if (!str_ok(p, p->sample_types[i].type) || !str_ok(p, p->sample_types[i].unit))
			return seterr(d, -EINVAL, "corrupt profile: a sample type names a string that does not exist");
	if (!str_ok(p, p->period_type.type) || !str_ok(p, p->period_type.unit) ||
	    !str_ok(p, p->drop_frames) || !str_ok(p, p->keep_frames) ||
	    !str_ok(p, p->default_sample_type) || !str_ok(p, p->doc_url))
		return seterr(d, -EINVAL, "corrupt profile: the header names a string that does not exist");
	for (i = 0; i < p->n_comments; i++)
		if (!str_ok(p, p->comments[i]))
			return seterr(d, -EINVAL, "corrupt profile: a comment names a string that does not exist");
	for (i = 0; i < p->n_mappings; i++)
		if (!p->mappings[i].id || !str_ok(p, p->mappings[i].filename) ||
		    !str_ok(p, p->mappings[i].build_id))
			return seterr(d, -EINVAL, "corrupt profile: mapping %zu has id 0 or a missing string", i);
	for (i = 0; i < p->n_functions; i++) {
		const struct pprof_function *f = &p->functions[i];

		if (!f->id || !str_ok(p, f->name) || !str_ok(p, f->system_name) ||
		    !str_ok(p, f->filename))
			return seterr(d, -EINVAL, "corrupt profile: function %zu has id 0 or a missing string", i);
	}
	for (i = 0; i < p->n_locations; i++)
		if (!p->locations[i].id)
			return seterr(d, -EINVAL, "corrupt profile: location %zu has id 0", i);
	return 0;
}

/* every id a location refers to must exist: later code never checks again */
static int check_refs(struct dec *d)
{
	const struct pprof_profile *p = d->p;
	size_t i;

	for (i = 0; i < p->n_locations; i++) {
		const struct pprof_location *l = &p->locations[i];

		if (l->mapping_id && !pprof_profile__mapping(p, l->mapping_id))
			return seterr(d, -EINVAL, "corrupt profile: location %llu refers to mapping %llu, which does not exist",
				      (unsigned long long)l->id, (unsigned long long)l->mapping_id);
	}
	for (i = 0; i < p->n_lines; i++)
		if (!pprof_profile__function(p, p->lines[i].function_id))
			return seterr(d, -EINVAL, "corrupt profile: a line refers to function %llu, which does not exist",
				      (unsigned long long)p->lines[i].function_id);
	return 0;
}

/* --- samples ----------------------------------------------------------------------- */

static int dec_label(struct dec *d, struct pb *m, struct pprof_label *l)
{
	uint64_t v[4] = { 0 };

	if (pb_scalars(m, v, 4))
		return malformed(d);
	l->key = (int64_t)v[0];
	l->str = (int64_t)v[1];
	l->num = (int64_t)v[2];
	l->num_unit = (int64_t)v[3];
	if (!str_ok(d->p, l->key) || !str_ok(d->p, l->str) || !str_ok(d->p, l->num_unit))
		return seterr(d, -EINVAL, "corrupt profile: a label names a string that does not exist");
	return 0;
}

/* where a sample's arrays go: the model, or per-sample scratch in callback mode */
struct sample_dst {
	uint64_t **locs;
	size_t *n_locs, *cap_locs;
	int64_t **values;
	size_t *n_values, *cap_values;
	struct pprof_label **labels;
	size_t *n_labels, *cap_labels;
};

static int dec_sample_fields(struct dec *d, struct pb *m, const struct sample_dst *o)
{
	struct pb body;
	uint32_t f;
	uint64_t v;
	int wt, ret;

	while ((ret = pb_next(m, &f, &wt, &v, &body)) > 0) {
		switch (f) {
		case 1:
			ret = pb_append(d, wt, v, &body, o->locs, o->n_locs, o->cap_locs);
			break;
		case 2:
			ret = pb_append(d, wt, v, &body, (uint64_t **)o->values, o->n_values,
					o->cap_values);
			break;
		case 3:
			if (wt != WT_LEN)
				return malformed(d);
			ret = dec_reserve(d, o->labels, o->cap_labels, *o->n_labels + 1,
					  sizeof(**o->labels));
			if (ret)
				return ret;
			ret = dec_label(d, &body, &(*o->labels)[(*o->n_labels)++]);
			break;
		default:
			/* unknown: pb_next() has stepped over it */
			ret = 0;
		}
		if (ret)
			return ret == -ENOMEM || ret == -E2BIG ? ret : malformed(d);
	}
	return ret ? malformed(d) : 0;
}

static int check_sample(struct dec *d, size_t idx, const uint64_t *locs, size_t n_locs,
			size_t n_values)
{
	const struct pprof_profile *p = d->p;
	size_t i;

	if (n_values != p->n_sample_types)
		return seterr(d, -EINVAL, "corrupt profile: sample %zu has %zu values for %zu sample types",
			      idx, n_values, p->n_sample_types);
	for (i = 0; i < n_locs; i++)
		if (!pprof_profile__location(p, locs[i]))
			return seterr(d, -EINVAL, "corrupt profile: sample %zu refers to location %llu, which does not exist",
				      idx, (unsigned long long)locs[i]);
	return 0;
}

static int dec_sample_model(struct dec *d, struct pb *m)
{
	struct pprof_profile *p = d->p;
	struct pprof_sample s = {
		.loc_off = (uint32_t)p->n_loc_ids,
		.label_off = (uint32_t)p->n_labels,
	};
	size_t n_values = p->n_samples * p->n_sample_types;
	struct sample_dst o = {
		&p->loc_ids, &p->n_loc_ids, &d->cap_loc_ids,
		&p->values, &n_values, &d->cap_values,
		&p->labels, &p->n_labels, &d->cap_labels,
	};
	int ret;

	ret = dec_sample_fields(d, m, &o);
	if (ret)
		return ret;
	if (p->n_loc_ids > UINT32_MAX || p->n_labels > UINT32_MAX)
		return seterr(d, -E2BIG, "profile too large: more than 2^32 frames or labels");
	s.n_locs = (uint32_t)(p->n_loc_ids - s.loc_off);
	s.n_labels = (uint32_t)(p->n_labels - s.label_off);
	ret = check_sample(d, p->n_samples, p->loc_ids ? p->loc_ids + s.loc_off : NULL, s.n_locs,
			   n_values - p->n_samples * p->n_sample_types);
	if (ret)
		return ret;
	ret = dec_reserve(d, &p->samples, &d->cap_samples, p->n_samples + 1, sizeof(s));
	if (ret)
		return ret;
	p->samples[p->n_samples++] = s;
	return 0;
}

static int dec_sample_cb(struct dec *d, struct pb *m, size_t idx)
{
	struct pprof_sample_ref s = { 0 };
	size_t n_locs = 0, n_values = 0, n_labels = 0;
	struct sample_dst o = {
		&d->s_locs, &n_locs, &d->cap_s_locs,
		&d->s_values, &n_values, &d->cap_s_values,
		&d->s_labels, &n_labels, &d->cap_s_labels,
	};
	int ret;

	ret = dec_sample_fields(d, m, &o);
	if (!ret)
		ret = check_sample(d, idx, d->s_locs, n_locs, n_values);
	if (ret)
		return ret;
	s.loc_ids = d->s_locs;
	s.n_locs = n_locs;
	s.values = d->s_values;
	s.labels = d->s_labels;
	s.n_labels = n_labels;
	ret = d->o->on_sample(d->p, &s, d->o->ctx);
	if (ret == -E2BIG && d->budget->exceeded)
		return over_budget(d);
	if (ret)
		return seterr(d, ret, "%s",
			      ret == -ENOMEM ? "out of memory" : "reading the samples failed");
	return 0;
}

/* walk 2: the samples, in file order */
static int dec_samples(struct dec *d, struct src *in)
{
	struct field fl;
	size_t idx = 0;
	int ret;

	while ((ret = src_next(in, &fl)) > 0) {
		if (fl.f != 2)
			continue;
		if (d->o && d->o->on_sample)
			ret = dec_sample_cb(d, &fl.body, idx++);
		else
			ret = dec_sample_model(d, &fl.body);
		if (ret)
			return ret;
	}
	return ret;
}

/* --- entry points --------------------------------------------------------------------- */

/* empty arrays are still allocated, as the writer's are: users index them without checking */
static int ensure_arrays(struct pprof_profile *p)
{
	void **arrays[] = {
		(void **)&p->sample_types, (void **)&p->samples, (void **)&p->values,
		(void **)&p->loc_ids, (void **)&p->labels, (void **)&p->mappings,
		(void **)&p->locations, (void **)&p->lines, (void **)&p->functions,
		(void **)&p->comments,
	};
	size_t i;

	for (i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
		if (!*arrays[i] && !(*arrays[i] = calloc(1, 64)))
			return -ENOMEM;
	return 0;
}

/* the id lookups: hash tables of at most 8/3 slots an entry, 12 bytes a slot */
static int index_tables(struct dec *d)
{
	struct pprof_profile *p = d->p;

	if (pprof_budget__charge(d->budget, 32 * (p->n_locations + p->n_functions + p->n_mappings)))
		return over_budget(d);
	return pprof_profile__index(p);
}

/* `input`: the size of what was read (gzip'd or raw), which the default budget is relative to */
static struct pprof_profile *decode(struct dec *d, struct src *in, size_t input)
{
	int ret;

	d->budget = d->o && d->o->budget ? d->o->budget : &d->own_budget;
	if (!d->budget->max) {
		d->budget->input = input;
		d->budget->max = pprof_budget_for(input);
	}
	d->p = calloc(1, sizeof(*d->p));
	ret = d->p ? src_rewind(in) : -ENOMEM;
	if (!ret)
		ret = dec_tables(d, in);
	if (!ret)
		ret = check_tables(d);
	if (!ret)
		ret = index_tables(d);
	if (!ret)
		ret = check_refs(d);
	if (!ret)
		ret = src_rewind(in);
	if (!ret)
		ret = dec_samples(d, in);
	if (!ret)
		ret = ensure_arrays(d->p);
	src_close(in);
	free(d->s_locs);
	free(d->s_values);
	free(d->s_labels);
	free(d->block);
	free(d->str_off);
	if (ret) {
		seterr(d, ret, "out of memory decoding the profile");
		pprof_profile__free(d->p);
		errno = -ret;
		return NULL;
	}
	return d->p;
}

/* a fresh decoder; err starts empty, as seterr() keeps only the first reason */
static void dec_init(struct dec *d, const struct pprof_read_opts *opts, char *err, size_t errlen)
{
	*d = (struct dec){ .o = opts, .err = err, .errlen = errlen };
	if (err && errlen)
		err[0] = '\0';
}

static size_t max_decoded(const struct pprof_read_opts *opts)
{
	return opts && opts->max_decoded ? opts->max_decoded : PPROF_MAX_DECODED;
}

/* gzip'd input: from memory (buf, len), or from fd when it is >= 0 */
static struct src gzip_src(struct dec *d, const void *buf, size_t len, int fd)
{
	return (struct src){ .d = d, .gzip = true, .in = buf, .in_len = len,
			     .max = max_decoded(d->o), .fd = fd };
}

struct pprof_profile *pprof_decode_opts(const void *buf, size_t len,
					const struct pprof_read_opts *opts, char *err,
					size_t errlen)
{
	struct dec d;
	struct src in = { .d = &d, .win = (uint8_t *)buf, .end = len, .fd = -1 };

	dec_init(&d, opts, err, errlen);
	if (!len) {
		seterr(&d, 0, "empty profile");
		errno = EINVAL;
		return NULL;
	}
	return decode(&d, &in, len);
}

struct pprof_profile *pprof_decode(const void *buf, size_t len, char *err, size_t errlen)
{
	return pprof_decode_opts(buf, len, NULL, err, errlen);
}

struct pprof_profile *pprof_decode_gzip_opts(const void *buf, size_t len,
					     const struct pprof_read_opts *opts, char *err,
					     size_t errlen)
{
	const unsigned char *b = buf;
	struct pprof_profile *p;
	struct dec d;
	struct src in;

	dec_init(&d, opts, err, errlen);
	in = gzip_src(&d, buf, len, -1);
	if (!len) {
		seterr(&d, 0, "empty file, not a pprof profile");
		errno = EINVAL;
		return NULL;
	}
	if (len < 2 || b[0] != 0x1f || b[1] != 0x8b) {
		/* say so when it is a profile that only lacks the compression */
		p = len <= in.max ? pprof_decode(buf, len, NULL, 0) : NULL;
		if (p)
			seterr(&d, 0, "an uncompressed pprof protobuf; culpert reads gzip'd profiles: gzip it first");
		else
			seterr(&d, 0, "not gzip-compressed, not a pprof profile (a pprof file is a gzip'd protobuf)");
		pprof_profile__free(p);
		errno = EINVAL;
		return NULL;
	}
	return decode(&d, &in, len);
}

struct pprof_profile *pprof_decode_gzip(const void *buf, size_t len, char *err, size_t errlen)
{
	return pprof_decode_gzip_opts(buf, len, NULL, err, errlen);
}

static int read_all(int fd, size_t max, void **out, size_t *out_len)
{
	unsigned char *buf = NULL;
	size_t cap = 0, len = 0;
	struct stat st;
	ssize_t n;

	/* a regular file is read in one go into a buffer of its size */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0 && (size_t)st.st_size <= max &&
	    vec_reserve(&buf, &cap, (size_t)st.st_size + 1, 1))
		return -ENOMEM;
	for (;;) {
		if (vec_reserve(&buf, &cap, len + (1 << 16), 1)) {
			free(buf);
			return -ENOMEM;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			free(buf);
			return (int)n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			free(buf);
			return -E2BIG;
		}
	}
	*out = buf;
	*out_len = len;
	return 0;
}

/* a regular gzip'd file is inflated straight from its descriptor, twice: never held whole */
static struct pprof_profile *decode_fd(int fd, const struct pprof_read_opts *opts, char *err,
				       size_t errlen)
{
	struct stat st;
	struct dec d;
	struct src in;

	dec_init(&d, opts, err, errlen);
	in = gzip_src(&d, NULL, 0, fd);
	return decode(&d, &in, fstat(fd, &st) ? 0 : (size_t)st.st_size);
}

static bool is_gzip_file(int fd)
{
	unsigned char magic[2];
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) && pread(fd, magic, 2, 0) == 2 &&
	       magic[0] == 0x1f && magic[1] == 0x8b;
}

struct pprof_profile *pprof_read_file_opts(const char *path, const struct pprof_read_opts *opts,
					   char *err, size_t errlen)
{
	size_t max = max_decoded(opts);
	struct pprof_profile *p;
	struct stat st;
	void *buf = NULL;
	size_t len = 0;
	int fd, ret;

	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (fd < 0) {
		ret = errno;
		snprintf(err, errlen, "cannot open: %s", strerror(ret));
		errno = ret;
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "is a directory, not a profile");
		close(fd);
		errno = EISDIR;
		return NULL;
	}
	if (is_gzip_file(fd)) {
		p = decode_fd(fd, opts, err, errlen);
		ret = errno;
		if (fd != STDIN_FILENO)
			close(fd);
		errno = ret;
		return p;
	}
	/* a pipe, or not gzip at all: read it whole, the decoder says what it is */
	ret = read_all(fd, max, &buf, &len);
	if (fd != STDIN_FILENO)
		close(fd);
	if (ret) {
		snprintf(err, errlen, "cannot read: %s",
			 ret == -E2BIG ? "file too large" : strerror(-ret));
		errno = -ret;
		return NULL;
	}
	p = pprof_decode_gzip_opts(buf, len, opts, err, errlen);
	free(buf);
	return p;
}

struct pprof_profile *pprof_read_file(const char *path, char *err, size_t errlen)
{
	return pprof_read_file_opts(path, NULL, err, errlen);
}
