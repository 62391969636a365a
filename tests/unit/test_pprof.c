// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* proto/: writer dedup, encode/decode round trip, determinism, bad input. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pprof.h"
#include "test.h"

static const char *const names[] = { "alloc_objects", "alloc_space" };
static const char *const units[] = { "count", "bytes" };

static struct pprof_writer *new_writer(void)
{
	struct pprof_writer_opts o = {
		.sz = sizeof(o),
		.n_sample_types = 2,
		.sample_type_names = names,
		.sample_type_units = units,
		.default_sample_type = "alloc_space",
		.period_type = "space",
		.period_unit = "bytes",
		.period = 524288,
		.time_nanos = 1700000000000000000LL,
		.duration_nanos = 5000000000LL,
	};

	return pprof_writer__new(&o);
}

/* two samples over shared locations, functions, one mapping, a label, comments */
static struct pprof_writer *build_small(void)
{
	struct pprof_writer *w = new_writer();
	struct pprof_mapping_desc md = {
		.memory_start = 0x400000, .memory_limit = 0x500000, .file_offset = 0x1000,
		.filename = "/bin/app", .build_id = "abcd", .has_functions = true,
	};
	struct pprof_line line = { 0 };
	struct pprof_label lab = { 0 };
	uint64_t map, locs[3];
	int64_t v1[2] = { 10, 1000 }, v2[2] = { 3, 300 };

	map = pprof_writer__add_mapping(w, &md);
	line.function_id = pprof_writer__add_function(w, "leaf", NULL, "a.c", 10);
	line.line = 12;
	locs[0] = pprof_writer__add_location(w, map, 0x401000, &line, 1);
	line.function_id = pprof_writer__add_function(w, "main", NULL, "a.c", 1);
	line.line = 3;
	locs[1] = pprof_writer__add_location(w, map, 0x402000, &line, 1);
	locs[2] = locs[1];
	lab.key = pprof_writer__str(w, "thread_id");
	lab.num = 42;
	pprof_writer__add_sample(w, locs, 2, v1, &lab, 1);
	pprof_writer__add_sample(w, &locs[1], 1, v2, NULL, 0);
	pprof_writer__add_comment(w, "rate=524288");
	pprof_writer__add_comment(w, "kernel=6.18");
	return w;
}

static void test_dedup(void)
{
	struct pprof_writer *w = new_writer();
	struct pprof_mapping_desc md = { .memory_start = 1, .memory_limit = 2, .filename = "x" };
	struct pprof_line line = { 0 };
	uint64_t f1, f2, l1, l2;

	ASSERT_EQ(pprof_writer__str(w, ""), 0, "empty string is index 0");
	ASSERT_EQ(pprof_writer__str(w, "a"), pprof_writer__str(w, "a"), "strings interned");
	f1 = pprof_writer__add_function(w, "f", "_Z1fv", "f.c", 3);
	f2 = pprof_writer__add_function(w, "f", "_Z1fv", "f.c", 3);
	ASSERT_EQ(f1, f2, "equal functions share an id");
	ASSERT_TRUE(f1 != pprof_writer__add_function(w, "f", "_Z1fv", "f.c", 4),
		    "a different start line is another function");
	line.function_id = f1;
	l1 = pprof_writer__add_location(w, 0, 0x10, &line, 1);
	l2 = pprof_writer__add_location(w, 0, 0x10, &line, 1);
	ASSERT_EQ(l1, l2, "equal locations share an id");
	ASSERT_TRUE(l1 != pprof_writer__add_location(w, 0, 0x11, &line, 1), "other address");
	ASSERT_EQ(pprof_writer__add_mapping(w, &md), pprof_writer__add_mapping(w, &md),
		  "equal mappings share an id");
	pprof_writer__free(w);
}

static void test_roundtrip(void)
{
	struct pprof_writer *w = build_small();
	const struct pprof_profile *a = pprof_writer__profile(w);
	struct pprof_profile *b;
	const struct pprof_location *loc;
	const struct pprof_label *lab;
	void *buf;
	size_t len;
	char err[256];

	ASSERT_EQ(pprof_encode_gzip(a, &buf, &len), 0, "encode");
	b = pprof_decode_gzip(buf, len, err, sizeof(err));
	if (!ASSERT_OK_PTR(b, err))
		goto out;
	ASSERT_EQ(b->n_samples, 2, "samples");
	ASSERT_EQ(b->n_locations, 2, "locations");
	ASSERT_EQ(b->n_functions, 2, "functions");
	ASSERT_EQ(b->n_mappings, 1, "mappings");
	ASSERT_EQ(b->period, 524288, "period");
	ASSERT_EQ(b->time_nanos, 1700000000000000000LL, "time_nanos");
	ASSERT_EQ(b->duration_nanos, 5000000000LL, "duration");
	ASSERT_STREQ(pprof_profile__str(b, b->default_sample_type), "alloc_space", "default type");
	ASSERT_EQ(pprof_profile__sample_type(b, "alloc_space"), 1, "sample type index");
	ASSERT_EQ(b->values[0], 10, "value");
	ASSERT_EQ(b->values[3], 300, "value");
	loc = pprof_profile__location(b, b->loc_ids[0]);
	ASSERT_EQ(loc->address, 0x401000, "leaf address");
	ASSERT_STREQ(pprof_profile__str(b, pprof_profile__function(b,
		     b->lines[loc->line_off].function_id)->name), "leaf", "leaf function");
	ASSERT_STREQ(pprof_profile__str(b, pprof_profile__mapping(b, loc->mapping_id)->build_id),
		     "abcd", "build id");
	lab = pprof_profile__label(b, &b->samples[0], "thread_id");
	ASSERT_TRUE(lab && lab->num == 42, "numeric label");
	/* comments come out sorted whatever order they went in */
	ASSERT_STREQ(pprof_profile__str(b, b->comments[0]), "kernel=6.18", "sorted comments");
	ASSERT_STREQ(pprof_profile__comment(b, "rate"), "524288", "comment lookup");
	pprof_profile__free(b);
out:
	free(buf);
	pprof_writer__free(w);
}

/*
 * Every field of profile.proto set (negative numbers, string labels with
 * units, inline lines, folded locations, flags), samples and a string
 * longer than the encoder's staging buffer: decoded, the same model.
 */
static struct pprof_writer *build_every_field(char *big, size_t big_len)
{
	struct pprof_writer_opts o = {
		.sz = sizeof(o), .n_sample_types = 2,
		.sample_type_names = (const char *[]){ "alloc_objects", "delta_space" },
		.sample_type_units = (const char *[]){ "count", "bytes" },
		.default_sample_type = "delta_space", .period_type = "space", .period_unit = "bytes",
		.period = -7, .time_nanos = -1, .duration_nanos = 1LL << 62,
		.drop_frames = "drop.*", .keep_frames = "keep", .doc_url = "https://example.com/d",
	};
	struct pprof_writer *w = pprof_writer__new(&o);
	struct pprof_mapping_desc md = {
		.memory_start = 0x7f0000000000, .memory_limit = UINT64_MAX, .file_offset = 0,
		.filename = "/lib/x.so", .build_id = "", .has_functions = true,
		.has_filenames = false, .has_line_numbers = true, .has_inline_frames = true,
	};
	struct pprof_line lines[3] = { { 0 } };
	struct pprof_label labs[3] = { { 0 } };
	uint64_t map, locs[130];
	int64_t v[2];
	size_t i;

	memset(big, 'x', big_len - 1);
	big[big_len - 1] = 0;
	map = pprof_writer__add_mapping(w, &md);
	lines[0] = (struct pprof_line){ pprof_writer__add_function(w, "inl", "_Z3inlv", "i.h", -3),
					-1, 7 };
	lines[1] = (struct pprof_line){ pprof_writer__add_function(w, big, NULL, "", 0), 0, 0 };
	lines[2] = (struct pprof_line){ pprof_writer__add_function(w, "outer", NULL, "o.c", 1),
					1 << 20, -2 };
	for (i = 0; i < 130; i++)
		locs[i] = pprof_writer__add_location(w, i % 2 ? map : 0, 0x7f0000001000 + 16 * i,
						     lines, 1 + i % 3);
	labs[0] = (struct pprof_label){ .key = pprof_writer__str(w, "span_name"),
					.str = pprof_writer__str(w, "GET /") };
	labs[1] = (struct pprof_label){ .key = pprof_writer__str(w, "age_ns"), .num = -5,
					.num_unit = pprof_writer__str(w, "nanoseconds") };
	labs[2] = (struct pprof_label){ .key = pprof_writer__str(w, "zero"), .num = 0 };
	/* a few thousand samples: more than one staging buffer of packed ids */
	for (i = 0; i < 3000; i++) {
		v[0] = (int64_t)i - 1500;
		v[1] = i % 2 ? INT64_MIN : INT64_MAX;
		pprof_writer__add_sample(w, &locs[i % 7], 1 + i % 123, v, labs, i % 4);
	}
	pprof_writer__add_sample(w, NULL, 0, (int64_t[]){ 0, 0 }, NULL, 0);
	pprof_writer__add_comment(w, "a=1");
	return w;
}

#define SAME_ARRAY(field, n, what) \
	ASSERT_TRUE((a->n) == (b->n) && (!(a->n) || !memcmp(a->field, b->field, \
		    (a->n) * sizeof(*a->field))), what)

static void test_roundtrip_every_field(void)
{
	size_t big_len = 100000, len, i;
	char *big = malloc(big_len), err[256];
	struct pprof_writer *w = big ? build_every_field(big, big_len) : NULL;
	const struct pprof_profile *a = w ? pprof_writer__profile(w) : NULL;
	struct pprof_profile *b = NULL;
	void *buf = NULL;
	bool strings_same = true;

	if (!ASSERT_OK_PTR(a, "build") || !ASSERT_EQ(pprof_encode_gzip(a, &buf, &len), 0, "encode"))
		goto out;
	b = pprof_decode_gzip(buf, len, err, sizeof(err));
	if (!ASSERT_OK_PTR(b, err))
		goto out;
	ASSERT_EQ(b->n_samples, 3001, "samples");
	SAME_ARRAY(sample_types, n_sample_types, "sample types");
	SAME_ARRAY(samples, n_samples, "samples' places");
	ASSERT_TRUE(!memcmp(a->values, b->values, a->n_samples * a->n_sample_types * 8), "values");
	SAME_ARRAY(loc_ids, n_loc_ids, "location ids");
	SAME_ARRAY(labels, n_labels, "labels");
	SAME_ARRAY(lines, n_lines, "lines");
	SAME_ARRAY(functions, n_functions, "functions");
	SAME_ARRAY(comments, n_comments, "comments");
	ASSERT_EQ(a->n_mappings, b->n_mappings, "mappings");
	/* field by field: a struct's padding is nobody's */
	for (i = 0; i < a->n_mappings && i < b->n_mappings; i++) {
		const struct pprof_mapping *x = &a->mappings[i], *y = &b->mappings[i];

		ASSERT_TRUE(x->id == y->id && x->memory_start == y->memory_start &&
			    x->memory_limit == y->memory_limit && x->file_offset == y->file_offset &&
			    x->filename == y->filename && x->build_id == y->build_id &&
			    x->has_functions == y->has_functions &&
			    x->has_filenames == y->has_filenames &&
			    x->has_line_numbers == y->has_line_numbers &&
			    x->has_inline_frames == y->has_inline_frames, "mapping fields");
	}
	ASSERT_EQ(a->n_locations, b->n_locations, "locations");
	for (i = 0; i < a->n_locations && i < b->n_locations; i++)
		ASSERT_TRUE(a->locations[i].id == b->locations[i].id &&
			    a->locations[i].mapping_id == b->locations[i].mapping_id &&
			    a->locations[i].address == b->locations[i].address &&
			    a->locations[i].n_lines == b->locations[i].n_lines &&
			    a->locations[i].is_folded == b->locations[i].is_folded,
			    "location fields");
	ASSERT_EQ(a->n_strings, b->n_strings, "strings");
	for (i = 0; i < a->n_strings && i < b->n_strings; i++)
		strings_same &= !strcmp(a->strings[i], b->strings[i]);
	ASSERT_TRUE(strings_same, "the string table");
	ASSERT_TRUE(a->drop_frames == b->drop_frames && a->keep_frames == b->keep_frames &&
		    a->time_nanos == b->time_nanos && a->duration_nanos == b->duration_nanos &&
		    a->period == b->period && a->default_sample_type == b->default_sample_type &&
		    a->doc_url == b->doc_url && a->period_type.type == b->period_type.type &&
		    a->period_type.unit == b->period_type.unit, "the profile's scalars");
out:
	pprof_profile__free(b);
	free(buf);
	pprof_writer__free(w);
	free(big);
}

static void test_deterministic(void)
{
	struct pprof_writer *w1 = build_small(), *w2 = build_small();
	void *b1, *b2;
	size_t l1, l2;

	pprof_encode_gzip(pprof_writer__profile(w1), &b1, &l1);
	pprof_encode_gzip(pprof_writer__profile(w2), &b2, &l2);
	ASSERT_TRUE(l1 == l2 && !memcmp(b1, b2, l1), "same input, same bytes");
	free(b1);
	free(b2);
	pprof_writer__free(w1);
	pprof_writer__free(w2);
}

static void expect_error(const void *buf, size_t len, const char *want, const char *what)
{
	char err[256] = "";
	struct pprof_profile *p = pprof_decode_gzip(buf, len, err, sizeof(err));

	if (!ASSERT_TRUE(p == NULL, what)) {
		pprof_profile__free(p);
		return;
	}
	ASSERT_TRUE(strstr(err, want) != NULL, err);
}

static size_t gz(const void *in, size_t n, unsigned char *out, size_t cap)
{
	z_stream zs = { 0 };

	deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (unsigned int)n;
	zs.next_out = out;
	zs.avail_out = (unsigned int)cap;
	deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	return zs.total_out;
}

static void test_bad_input(void)
{
	struct pprof_writer *w = build_small();
	unsigned char out[4096];
	/* field 2 (sample) claims 100 bytes, 2 present */
	static const unsigned char truncated_msg[] = { 0x12, 0x64, 0x08, 0x01 };
	/* string table that does not start with "" */
	static const unsigned char bad_strtab[] = { 0x32, 0x01, 'x' };
	/* a sample referring to location 7, which does not exist */
	static const unsigned char bad_ref[] = { 0x32, 0x00, 0x12, 0x02, 0x08, 0x07 };
	void *good;
	size_t len, n;

	expect_error("", 0, "empty", "empty input");
	expect_error("\x0a\x02\x08\x01", 4, "not gzip", "plain protobuf");
	expect_error("hello world", 11, "not gzip", "wrong magic");
	pprof_encode_gzip(pprof_writer__profile(w), &good, &len);
	expect_error(good, len / 2, "truncated", "truncated gzip");
	((unsigned char *)good)[len / 2] ^= 0xff;
	expect_error(good, len, "corrupt", "corrupt gzip");
	n = gz(truncated_msg, sizeof(truncated_msg), out, sizeof(out));
	expect_error(out, n, "malformed", "truncated protobuf");
	n = gz(bad_strtab, sizeof(bad_strtab), out, sizeof(out));
	expect_error(out, n, "string table", "string table without \"\"");
	n = gz(bad_ref, sizeof(bad_ref), out, sizeof(out));
	expect_error(out, n, "location 7", "dangling location id");
	free(good);
	pprof_writer__free(w);
}

int main(void)
{
	test_group = "unit/pprof";
	RUN_TEST(test_dedup);
	RUN_TEST(test_roundtrip);
	RUN_TEST(test_roundtrip_every_field);
	RUN_TEST(test_deterministic);
	RUN_TEST(test_bad_input);
	return TEST_EXIT();
}
