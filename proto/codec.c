// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof_profile <-> gzip'd protobuf.  Encoding and decoding go through the
 * protoc-c generated code for profile.proto; this file converts between
 * that representation and the flat in-memory model, and validates what it
 * reads so the rest of the code can trust every index it finds.
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

#include "profile.pb-c.h"
#include "pprof.h"
#include "vec.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__ValueType PbValueType;

/* --- arena for protoc-c: one free() for the whole decoded message --------------------- */

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct arena {
	struct arena_chunk *head;
};

static void *arena_alloc(void *data, size_t size)
{
	struct arena *a = data;
	struct arena_chunk *c = a->head;
	size_t need = (size + 15) & ~(size_t)15;

	if (!c || c->cap - c->used < need) {
		size_t cap = need > (1 << 20) ? need : (1 << 20);

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	c->used += need;
	return (char *)c->data + c->used - need;
}

static void arena_free(void *data, void *ptr)
{
	/* released all at once in arena_release() */
}

static void arena_release(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *next = a->head->next;

		free(a->head);
		a->head = next;
	}
}

/* --- errors ------------------------------------------------------------------------- */

static void seterr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* --- decoding ----------------------------------------------------------------------- */

static bool str_ok(const PbProfile *pb, int64_t i)
{
	return i >= 0 && (uint64_t)i < pb->n_string_table;
}

static int conv_strings(struct pprof_profile *p, const PbProfile *pb, char *err, size_t errlen)
{
	size_t i;

	if (!pb->n_string_table || pb->string_table[0][0]) {
		seterr(err, errlen, "not a pprof profile: string table must start with \"\"");
		return -EINVAL;
	}
	p->strings = calloc(pb->n_string_table, sizeof(char *));
	if (!p->strings)
		return -ENOMEM;
	for (i = 0; i < pb->n_string_table; i++) {
		p->strings[i] = strdup(pb->string_table[i]);
		if (!p->strings[i])
			return -ENOMEM;
		p->n_strings++;
	}
	return 0;
}

static int conv_value_types(struct pprof_profile *p, const PbProfile *pb, char *err,
			    size_t errlen)
{
	size_t i;

	p->sample_types = calloc(pb->n_sample_type ?: 1, sizeof(*p->sample_types));
	if (!p->sample_types)
		return -ENOMEM;
	for (i = 0; i < pb->n_sample_type; i++) {
		const PbValueType *vt = pb->sample_type[i];

		if (!str_ok(pb, vt->type) || !str_ok(pb, vt->unit))
			goto bad;
		p->sample_types[i].type = vt->type;
		p->sample_types[i].unit = vt->unit;
	}
	p->n_sample_types = pb->n_sample_type;
	if (pb->period_type) {
		if (!str_ok(pb, pb->period_type->type) || !str_ok(pb, pb->period_type->unit))
			goto bad;
		p->period_type.type = pb->period_type->type;
		p->period_type.unit = pb->period_type->unit;
	}
	return 0;
bad:
	seterr(err, errlen, "corrupt profile: value type names a string that does not exist");
	return -EINVAL;
}

static int conv_samples(struct pprof_profile *p, const PbProfile *pb, char *err, size_t errlen)
{
	size_t i, j, nv = pb->n_sample_type, nloc = 0, nlab = 0;

	for (i = 0; i < pb->n_sample; i++) {
		const PbSample *s = pb->sample[i];

		if (s->n_value != nv) {
			seterr(err, errlen, "corrupt profile: sample %zu has %zu values for %zu sample types",
			       i, s->n_value, nv);
			return -EINVAL;
		}
		nloc += s->n_location_id;
		nlab += s->n_label;
	}
	if (nloc > UINT32_MAX || nlab > UINT32_MAX) {
		seterr(err, errlen, "profile too large: more than 2^32 frames or labels");
		return -E2BIG;
	}
	p->samples = calloc(pb->n_sample ?: 1, sizeof(*p->samples));
	p->values = calloc(pb->n_sample * nv ?: 1, sizeof(*p->values));
	p->loc_ids = calloc(nloc ?: 1, sizeof(*p->loc_ids));
	p->labels = calloc(nlab ?: 1, sizeof(*p->labels));
	if (!p->samples || !p->values || !p->loc_ids || !p->labels)
		return -ENOMEM;
	for (i = 0; i < pb->n_sample; i++) {
		const PbSample *s = pb->sample[i];
		struct pprof_sample *d = &p->samples[i];

		d->loc_off = (uint32_t)p->n_loc_ids;
		d->n_locs = (uint32_t)s->n_location_id;
		d->label_off = (uint32_t)p->n_labels;
		d->n_labels = (uint32_t)s->n_label;
		memcpy(&p->loc_ids[p->n_loc_ids], s->location_id, s->n_location_id * sizeof(uint64_t));
		p->n_loc_ids += s->n_location_id;
		if (nv)
			memcpy(&p->values[i * nv], s->value, nv * sizeof(int64_t));
		for (j = 0; j < s->n_label; j++) {
			const PbLabel *l = s->label[j];
			struct pprof_label *dl = &p->labels[p->n_labels++];

			if (!str_ok(pb, l->key) || !str_ok(pb, l->str) || !str_ok(pb, l->num_unit)) {
				seterr(err, errlen, "corrupt profile: label of sample %zu names a string that does not exist", i);
				return -EINVAL;
			}
			dl->key = l->key;
			dl->str = l->str;
			dl->num = l->num;
			dl->num_unit = l->num_unit;
		}
	}
	p->n_samples = pb->n_sample;
	return 0;
}

static int conv_mappings(struct pprof_profile *p, const PbProfile *pb, char *err, size_t errlen)
{
	size_t i;

	p->mappings = calloc(pb->n_mapping ?: 1, sizeof(*p->mappings));
	if (!p->mappings)
		return -ENOMEM;
	for (i = 0; i < pb->n_mapping; i++) {
		const PbMapping *m = pb->mapping[i];
		struct pprof_mapping *d = &p->mappings[i];

		if (!m->id || !str_ok(pb, m->filename) || !str_ok(pb, m->build_id)) {
			seterr(err, errlen, "corrupt profile: mapping %zu has id 0 or a missing string", i);
			return -EINVAL;
		}
		d->id = m->id;
		d->memory_start = m->memory_start;
		d->memory_limit = m->memory_limit;
		d->file_offset = m->file_offset;
		d->filename = m->filename;
		d->build_id = m->build_id;
		d->has_functions = m->has_functions;
		d->has_filenames = m->has_filenames;
		d->has_line_numbers = m->has_line_numbers;
		d->has_inline_frames = m->has_inline_frames;
	}
	p->n_mappings = pb->n_mapping;
	return 0;
}

static int conv_functions(struct pprof_profile *p, const PbProfile *pb, char *err, size_t errlen)
{
	size_t i;

	p->functions = calloc(pb->n_function ?: 1, sizeof(*p->functions));
	if (!p->functions)
		return -ENOMEM;
	for (i = 0; i < pb->n_function; i++) {
		const PbFunction *f = pb->function[i];
		struct pprof_function *d = &p->functions[i];

		if (!f->id || !str_ok(pb, f->name) || !str_ok(pb, f->system_name) ||
		    !str_ok(pb, f->filename)) {
			seterr(err, errlen, "corrupt profile: function %zu has id 0 or a missing string", i);
			return -EINVAL;
		}
		d->id = f->id;
		d->name = f->name;
		d->system_name = f->system_name;
		d->filename = f->filename;
		d->start_line = f->start_line;
	}
	p->n_functions = pb->n_function;
	return 0;
}

static int conv_locations(struct pprof_profile *p, const PbProfile *pb, char *err, size_t errlen)
{
	size_t i, j, nlines = 0;

	for (i = 0; i < pb->n_location; i++)
		nlines += pb->location[i]->n_line;
	if (nlines > UINT32_MAX) {
		seterr(err, errlen, "profile too large: more than 2^32 lines");
		return -E2BIG;
	}
	p->locations = calloc(pb->n_location ?: 1, sizeof(*p->locations));
	p->lines = calloc(nlines ?: 1, sizeof(*p->lines));
	if (!p->locations || !p->lines)
		return -ENOMEM;
	for (i = 0; i < pb->n_location; i++) {
		const PbLocation *l = pb->location[i];
		struct pprof_location *d = &p->locations[i];

		if (!l->id) {
			seterr(err, errlen, "corrupt profile: location %zu has id 0", i);
			return -EINVAL;
		}
		d->id = l->id;
		d->mapping_id = l->mapping_id;
		d->address = l->address;
		d->is_folded = l->is_folded;
		d->line_off = (uint32_t)p->n_lines;
		d->n_lines = (uint32_t)l->n_line;
		for (j = 0; j < l->n_line; j++) {
			struct pprof_line *dl = &p->lines[p->n_lines++];

			dl->function_id = l->line[j]->function_id;
			dl->line = l->line[j]->line;
			dl->column = l->line[j]->column;
		}
	}
	p->n_locations = pb->n_location;
	return 0;
}

/* every id a sample or a location refers to must exist: later code never checks again */
static int check_refs(const struct pprof_profile *p, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < p->n_loc_ids; i++) {
		if (!pprof_profile__location(p, p->loc_ids[i])) {
			seterr(err, errlen, "corrupt profile: a sample refers to location %llu, which does not exist",
			       (unsigned long long)p->loc_ids[i]);
			return -EINVAL;
		}
	}
	for (i = 0; i < p->n_locations; i++) {
		const struct pprof_location *l = &p->locations[i];

		if (l->mapping_id && !pprof_profile__mapping(p, l->mapping_id)) {
			seterr(err, errlen, "corrupt profile: location %llu refers to mapping %llu, which does not exist",
			       (unsigned long long)l->id, (unsigned long long)l->mapping_id);
			return -EINVAL;
		}
	}
	for (i = 0; i < p->n_lines; i++) {
		if (!pprof_profile__function(p, p->lines[i].function_id)) {
			seterr(err, errlen, "corrupt profile: a line refers to function %llu, which does not exist",
			       (unsigned long long)p->lines[i].function_id);
			return -EINVAL;
		}
	}
	return 0;
}

static int conv_scalars(struct pprof_profile *p, const PbProfile *pb, char *err, size_t errlen)
{
	size_t i;

	if (!str_ok(pb, pb->drop_frames) || !str_ok(pb, pb->keep_frames) ||
	    !str_ok(pb, pb->default_sample_type) || !str_ok(pb, pb->doc_url)) {
		seterr(err, errlen, "corrupt profile: header names a string that does not exist");
		return -EINVAL;
	}
	p->drop_frames = pb->drop_frames;
	p->keep_frames = pb->keep_frames;
	p->time_nanos = pb->time_nanos;
	p->duration_nanos = pb->duration_nanos;
	p->period = pb->period;
	p->default_sample_type = pb->default_sample_type;
	p->doc_url = pb->doc_url;
	p->comments = calloc(pb->n_comment ?: 1, sizeof(int64_t));
	if (!p->comments)
		return -ENOMEM;
	for (i = 0; i < pb->n_comment; i++) {
		if (!str_ok(pb, pb->comment[i])) {
			seterr(err, errlen, "corrupt profile: comment names a string that does not exist");
			return -EINVAL;
		}
		p->comments[i] = pb->comment[i];
	}
	p->n_comments = pb->n_comment;
	return 0;
}

struct pprof_profile *pprof_decode(const void *buf, size_t len, char *err, size_t errlen)
{
	struct arena arena = { 0 };
	ProtobufCAllocator alloc = { arena_alloc, arena_free, &arena };
	struct pprof_profile *p = NULL;
	PbProfile *pb;
	int ret;

	if (!len) {
		seterr(err, errlen, "empty profile");
		errno = EINVAL;
		return NULL;
	}
	pb = perftools__profiles__profile__unpack(&alloc, len, buf);
	if (!pb) {
		arena_release(&arena);
		seterr(err, errlen, "not a pprof profile: the protobuf message is malformed or truncated");
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	ret = p ? 0 : -ENOMEM;
	if (!ret)
		ret = conv_strings(p, pb, err, errlen);
	if (!ret)
		ret = conv_value_types(p, pb, err, errlen);
	if (!ret)
		ret = conv_scalars(p, pb, err, errlen);
	if (!ret)
		ret = conv_samples(p, pb, err, errlen);
	if (!ret)
		ret = conv_mappings(p, pb, err, errlen);
	if (!ret)
		ret = conv_functions(p, pb, err, errlen);
	if (!ret)
		ret = conv_locations(p, pb, err, errlen);
	if (!ret)
		ret = pprof_profile__index(p);
	if (!ret)
		ret = check_refs(p, err, errlen);
	arena_release(&arena);
	if (ret) {
		if (ret == -ENOMEM)
			seterr(err, errlen, "out of memory decoding the profile");
		pprof_profile__free(p);
		errno = -ret;
		return NULL;
	}
	return p;
}

/* inflate a gzip stream, refusing output beyond PPROF_MAX_DECODED */
static int gunzip(const void *in, size_t in_len, void **out, size_t *out_len, char *err,
		  size_t errlen)
{
	z_stream zs = { 0 };
	unsigned char *buf = NULL;
	size_t cap = 0, len = 0;
	int zr, ret = 0;

	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	zs.next_in = (unsigned char *)in;
	do {
		size_t chunk = in_len - (size_t)((const unsigned char *)zs.next_in - (const unsigned char *)in);

		zs.avail_in = chunk > UINT_MAX ? UINT_MAX : (unsigned int)chunk;
		if (vec_reserve(&buf, &cap, len + (1 << 16), 1)) {
			ret = -ENOMEM;
			break;
		}
		zs.next_out = buf + len;
		zs.avail_out = (unsigned int)(cap - len > UINT_MAX ? UINT_MAX : cap - len);
		zr = inflate(&zs, Z_NO_FLUSH);
		len = (size_t)(zs.next_out - buf);
		if (len > PPROF_MAX_DECODED) {
			seterr(err, errlen, "profile decompresses to more than %llu MiB; refusing to read it",
			       PPROF_MAX_DECODED >> 20);
			ret = -E2BIG;
			break;
		}
		if (zr == Z_BUF_ERROR && !zs.avail_in) {
			seterr(err, errlen, "truncated gzip data: the file ends before the profile does");
			ret = -EINVAL;
			break;
		}
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
			seterr(err, errlen, "corrupt gzip data (%s)", zs.msg ? zs.msg : "inflate failed");
			ret = -EINVAL;
			break;
		}
	} while (zr != Z_STREAM_END);
	inflateEnd(&zs);
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*out_len = len;
	return 0;
}

struct pprof_profile *pprof_decode_gzip(const void *buf, size_t len, char *err, size_t errlen)
{
	const unsigned char *b = buf;
	struct pprof_profile *p;
	void *raw;
	size_t raw_len;
	int ret;

	if (!len) {
		seterr(err, errlen, "empty file, not a pprof profile");
		errno = EINVAL;
		return NULL;
	}
	if (len < 2 || b[0] != 0x1f || b[1] != 0x8b) {
		seterr(err, errlen, "not gzip-compressed: a pprof profile is a gzip'd protobuf (gzip it, or check the file)");
		errno = EINVAL;
		return NULL;
	}
	ret = gunzip(buf, len, &raw, &raw_len, err, errlen);
	if (ret) {
		if (ret == -ENOMEM)
			seterr(err, errlen, "out of memory decompressing the profile");
		errno = -ret;
		return NULL;
	}
	p = pprof_decode(raw, raw_len, err, errlen);
	free(raw);
	return p;
}

static int read_all(int fd, void **out, size_t *out_len)
{
	unsigned char *buf = NULL;
	size_t cap = 0, len = 0;
	ssize_t n;

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
		if (len > PPROF_MAX_DECODED) {
			free(buf);
			return -E2BIG;
		}
	}
	*out = buf;
	*out_len = len;
	return 0;
}

struct pprof_profile *pprof_read_file(const char *path, char *err, size_t errlen)
{
	struct pprof_profile *p;
	struct stat st;
	void *buf = NULL;
	size_t len = 0;
	int fd, ret;

	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (fd < 0) {
		ret = errno;
		seterr(err, errlen, "cannot open: %s", strerror(ret));
		errno = ret;
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		seterr(err, errlen, "is a directory, not a profile");
		close(fd);
		errno = EISDIR;
		return NULL;
	}
	ret = read_all(fd, &buf, &len);
	if (fd != STDIN_FILENO)
		close(fd);
	if (ret) {
		seterr(err, errlen, "cannot read: %s", ret == -E2BIG ? "file too large" : strerror(-ret));
		errno = -ret;
		return NULL;
	}
	p = pprof_decode_gzip(buf, len, err, errlen);
	free(buf);
	return p;
}

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

static int gzip_buf(const void *in, size_t in_len, void **out, size_t *out_len)
{
	z_stream zs = { 0 };
	unsigned char *buf;
	size_t cap;
	int zr;

	/* windowBits 15 + 16: gzip wrapper; zlib writes mtime 0, so output is reproducible */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, in_len);
	buf = malloc(cap);
	if (!buf || in_len > UINT_MAX || cap > UINT_MAX) {
		deflateEnd(&zs);
		free(buf);
		return buf ? -E2BIG : -ENOMEM;
	}
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (unsigned int)in_len;
	zs.next_out = buf;
	zs.avail_out = (unsigned int)cap;
	zr = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (zr != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*out_len = zs.total_out;
	return 0;
}

int pprof_encode_gzip(const struct pprof_profile *p, void **out, size_t *out_len)
{
	struct pb_build b = { 0 };
	uint8_t *raw = NULL;
	size_t raw_len;
	int ret;

	perftools__profiles__profile__init(&b.prof);
	ret = pb_build_header(&b, p);
	if (!ret)
		ret = pb_build_samples(&b, p);
	if (!ret)
		ret = pb_build_tables(&b, p);
	if (!ret) {
		raw_len = perftools__profiles__profile__get_packed_size(&b.prof);
		raw = malloc(raw_len ?: 1);
		if (!raw)
			ret = -ENOMEM;
	}
	if (!ret) {
		perftools__profiles__profile__pack(&b.prof, raw);
		ret = gzip_buf(raw, raw_len, out, out_len);
	}
	free(raw);
	pb_build_free(&b);
	return ret;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *s = buf;

	while (len) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

int pprof_profile__write(const struct pprof_profile *p, const char *path)
{
	char tmp[PATH_MAX];
	void *buf;
	size_t len;
	int fd, ret;

	ret = pprof_encode_gzip(p, &buf, &len);
	if (ret)
		return ret;
	if (!strcmp(path, "-")) {
		ret = write_all(STDOUT_FILENO, buf, len);
		free(buf);
		return ret;
	}
	/* a reader never sees half a profile: write aside, then rename over */
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp)) {
		free(buf);
		return -ENAMETOOLONG;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		ret = -errno;
		free(buf);
		return ret;
	}
	ret = write_all(fd, buf, len);
	if (!ret && fchmod(fd, 0644))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	free(buf);
	return ret;
}
