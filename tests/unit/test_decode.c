// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The wire-format decoder of proto/decode.c on hand-built protobuf bytes. */
#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#include "pprof.h"
#include "test.h"

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void varint(struct buf *b, uint64_t v)
{
	do {
		b->b[b->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void field_varint(struct buf *b, uint32_t f, uint64_t v)
{
	varint(b, (uint64_t)f << 3);
	varint(b, v);
}

static void field_bytes(struct buf *b, uint32_t f, const void *p, size_t n)
{
	varint(b, (uint64_t)f << 3 | 2);
	varint(b, n);
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void field_msg(struct buf *b, uint32_t f, const struct buf *m)
{
	field_bytes(b, f, m->b, m->n);
}

/*
 * A profile with one sample type, one mapping, location and function, two
 * samples: packed says whether repeated fields use the packed encoding.
 */
static void build(struct buf *p, bool packed, bool unknown_fields)
{
	static const char *const strs[] = { "", "alloc_space", "bytes", "f", "span_name", "s" };
	struct buf m = { .n = 0 }, l = { .n = 0 }, ln = { .n = 0 }, lab = { .n = 0 };
	size_t i;

	p->n = 0;
	field_varint(&m, 1, 1);
	field_varint(&m, 2, 2);
	field_msg(p, 1, &m);				/* sample_type alloc_space/bytes */
	for (i = 0; i < 2; i++) {
		struct buf s = { .n = 0 }, run = { .n = 0 };

		if (packed) {
			varint(&run, 1);
			varint(&run, 1);
			field_msg(&s, 1, &run);		/* location_id [1, 1] */
			run.n = 0;
			varint(&run, 100 + i);
			field_msg(&s, 2, &run);		/* value [100 + i] */
		} else {
			field_varint(&s, 1, 1);
			field_varint(&s, 1, 1);
			field_varint(&s, 2, 100 + i);
		}
		lab.n = 0;
		field_varint(&lab, 1, 4);
		field_varint(&lab, 2, 5);
		field_msg(&s, 3, &lab);			/* span_name=s */
		if (unknown_fields) {
			field_varint(&s, 77, 5);
			varint(&s, (99 << 3) | 5);	/* fixed32 */
			memcpy(s.b + s.n, "abcd", 4);
			s.n += 4;
		}
		field_msg(p, 2, &s);
	}
	m.n = 0;
	field_varint(&m, 1, 1);
	field_varint(&m, 2, 0x1000);
	field_varint(&m, 3, 0x2000);
	field_msg(p, 3, &m);				/* mapping 1 */
	field_varint(&ln, 1, 1);
	field_varint(&ln, 2, 7);
	field_varint(&l, 1, 1);
	field_varint(&l, 2, 1);
	field_varint(&l, 3, 0x1234);
	field_msg(&l, 4, &ln);
	field_msg(p, 4, &l);				/* location 1 -> function 1 line 7 */
	m.n = 0;
	field_varint(&m, 1, 1);
	field_varint(&m, 2, 3);
	field_msg(p, 5, &m);				/* function 1 "f" */
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		field_bytes(p, 6, strs[i], strlen(strs[i]));
	field_varint(p, 12, 4096);			/* period */
	if (unknown_fields) {
		varint(p, (200 << 3) | 1);		/* fixed64 */
		memcpy(p->b + p->n, "12345678", 8);
		p->n += 8;
	}
}

static void check_model(const struct pprof_profile *p)
{
	ASSERT_EQ(p->n_samples, 2, "samples");
	ASSERT_EQ(p->n_loc_ids, 4, "frames");
	ASSERT_EQ(p->values[0], 100, "value 0");
	ASSERT_EQ(p->values[1], 101, "value 1");
	ASSERT_EQ(p->period, 4096, "period");
	ASSERT_EQ(p->n_labels, 2, "labels");
	ASSERT_STREQ(pprof_profile__str(p, p->labels[1].str), "s", "label value");
	ASSERT_EQ(pprof_profile__location(p, 1)->address, 0x1234, "location address");
	ASSERT_EQ(p->lines[0].line, 7, "line");
}

static void test_packed_and_unpacked(void)
{
	struct buf b;
	struct pprof_profile *p;
	char err[256];
	int packed;

	for (packed = 0; packed < 2; packed++) {
		build(&b, packed, packed);
		p = pprof_decode(b.b, b.n, err, sizeof(err));
		if (!ASSERT_OK_PTR(p, err))
			return;
		check_model(p);
		pprof_profile__free(p);
	}
}

static int count_cb(const struct pprof_profile *p, const struct pprof_sample_ref *s, void *ctx)
{
	int64_t *sum = ctx;

	sum[0]++;
	sum[1] += s->values[0];
	sum[2] += (int64_t)s->n_locs;
	return 0;
}

static void test_streaming(void)
{
	int64_t sum[3] = { 0 };
	struct pprof_read_opts o = { .sz = sizeof(o), .on_sample = count_cb, .ctx = sum };
	struct pprof_profile *p;
	struct buf b;
	char err[256];

	build(&b, true, false);
	p = pprof_decode_opts(b.b, b.n, &o, err, sizeof(err));
	if (!ASSERT_OK_PTR(p, err))
		return;
	ASSERT_EQ(p->n_samples, 0, "streamed samples are not stored");
	ASSERT_EQ(sum[0], 2, "callbacks");
	ASSERT_EQ(sum[1], 201, "values seen");
	ASSERT_EQ(sum[2], 4, "frames seen");
	pprof_profile__free(p);
}

static size_t gz(const void *in, size_t n, uint8_t *out, size_t cap)
{
	z_stream zs = { 0 };

	deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	zs.next_in = (uint8_t *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	return zs.total_out;
}

static void test_gzip_members_and_limit(void)
{
	struct pprof_read_opts o = { .sz = sizeof(o), .max_decoded = 64 };
	uint8_t z[8192];
	struct pprof_profile *p;
	struct buf b;
	size_t n, half;
	char err[256];

	/* a protobuf split anywhere between fields, each half gzip'd: `cat a.gz b.gz` */
	build(&b, true, false);
	half = 2 + b.b[1];	/* the first field: tag, length, body */
	n = gz(b.b, half, z, sizeof(z));
	n += gz(b.b + half, b.n - half, z + n, sizeof(z) - n);
	p = pprof_decode_gzip(z, n, err, sizeof(err));
	if (ASSERT_OK_PTR(p, err))
		check_model(p);
	pprof_profile__free(p);

	p = pprof_decode_gzip_opts(z, n, &o, err, sizeof(err));
	ASSERT_TRUE(!p && errno == E2BIG, "max_decoded is enforced");
	ASSERT_TRUE(strstr(err, "decompresses to more than") != NULL, err);

	memcpy(z + n, "junk", 4);
	p = pprof_decode_gzip(z, n + 4, err, sizeof(err));
	ASSERT_TRUE(!p && strstr(err, "garbage after") != NULL, "trailing garbage is refused");
}

static void test_malformed(void)
{
	static const struct {
		const char *bytes;
		size_t n;
		const char *want;
	} cases[] = {
		/* a length past the end */
		{ "\x12\x05\x08", 3, "malformed or truncated" },
		/* an 11-byte varint */
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, "malformed" },
		{ "\x0b\x0c", 2, "malformed" },					/* a group */
		{ "\x32\x01x", 3, "must start with \"\"" },
		{ "\x60\x05", 2, "no string table" },
		{ "\x12\x02\x08\x05\x32\x00", 6, "refers to location 5" },
		{ "\x22\x02\x10\x01\x32\x00", 6, "location 0 has id 0" },
	};
	struct pprof_profile *p;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = pprof_decode(cases[i].bytes, cases[i].n, err, sizeof(err));
		ASSERT_TRUE(p == NULL, cases[i].want);
		ASSERT_TRUE(strstr(err, cases[i].want) != NULL, err);
		pprof_profile__free(p);
	}
}

/* our writer's output decodes to the same model, and re-encodes to the same bytes */
static void test_round_trip(void)
{
	const char *names[] = { "alloc_objects", "alloc_space" }, *units[] = { "count", "bytes" };
	struct pprof_writer_opts o = {
		.sz = sizeof(o), .n_sample_types = 2, .sample_type_names = names,
		.sample_type_units = units, .period = 512, .period_type = "space",
		.period_unit = "bytes",
	};
	struct pprof_writer *w = pprof_writer__new(&o);
	struct pprof_line line = { 0 };
	struct pprof_profile *p;
	void *a, *b;
	size_t an, bn;
	uint64_t loc;
	int64_t v[2] = { 3, 3072 };
	char err[256];

	line.function_id = pprof_writer__add_function(w, "g", NULL, "g.c", 1);
	line.line = 9;
	loc = pprof_writer__add_location(w, 0, 0x10, &line, 1);
	pprof_writer__add_sample(w, &loc, 1, v, NULL, 0);
	pprof_writer__add_comment(w, "rate=512");
	ASSERT_EQ(pprof_encode_gzip(pprof_writer__profile(w), &a, &an), 0, "encode");
	p = pprof_decode_gzip(a, an, err, sizeof(err));
	if (ASSERT_OK_PTR(p, err)) {
		ASSERT_EQ(pprof_encode_gzip(p, &b, &bn), 0, "re-encode");
		ASSERT_TRUE(an == bn && !memcmp(a, b, an), "byte-identical after a round trip");
		ASSERT_STREQ(pprof_profile__comment(p, "rate"), "512", "comment");
		free(b);
	}
	pprof_profile__free(p);
	pprof_writer__free(w);
	free(a);
}

int main(void)
{
	test_group = "decode";
	RUN_TEST(test_packed_and_unpacked);
	RUN_TEST(test_streaming);
	RUN_TEST(test_gzip_members_and_limit);
	RUN_TEST(test_malformed);
	RUN_TEST(test_round_trip);
	return TEST_EXIT();
}
