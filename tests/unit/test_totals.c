// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Exact span totals: the kernel's bucket of a value and proto/totals.c's
 * bounds agree; the comments round-trip; quantiles follow nearest rank.
 */
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>

#include "culpert.h"
#include "pprof.h"
#include "test.h"
#include "totals.h"

static void test_buckets(void)
{
	uint64_t v, lo, end;
	__u32 b;
	int i;

	for (i = 0; i < 20000; i++) {
		/* every value below 4096, then a spread up to past 2^48 */
		v = i < 4096 ? (uint64_t)i : (uint64_t)(i - 4095) * (uint64_t)(i - 4095) * 997 * 1009;
		b = culpert_hist_bucket(v);
		lo = culpert_hist_lower(b);
		end = totals_bucket_end(lo);
		if (!ASSERT_TRUE(b < CULPERT_HIST_BUCKETS && lo <= v &&
				 (v < end || b == CULPERT_HIST_BUCKETS - 1), "v in its bucket"))
			return;
		if (b + 1 < CULPERT_HIST_BUCKETS - 1 &&
		    !ASSERT_EQ(end, culpert_hist_lower(b + 1), "a bucket ends where the next starts"))
			return;
		if (lo >= 4 && !ASSERT_TRUE(4 * (end - lo) <= lo, "at most 25% of its lower bound"))
			return;
	}
}

static int add_comment(void *ctx, const char *c)
{
	return pprof_writer__add_comment(ctx, c);
}

static void test_round_trip(void)
{
	struct totals_bucket h[] = { { 1536, 3 }, { 4096, 2 }, { 1ULL << 48, 1 } };
	struct span_total a = { .path = (char *)"req=1;db", .self_bytes = 10, .self_calls = 2,
				.incl_bytes = 30, .incl_calls = 3, .instances = 6, .open = 1,
				.max_bytes = 300000000000000ULL, .closed_bytes = 29,
				.hist = h, .n_hist = 3 };
	struct span_total b = { .path = (char *)"leaked", .self_bytes = 7, .self_calls = 1,
				.incl_bytes = 7, .incl_calls = 1, .open = 1 };
	struct pprof_writer_opts wo = { .sz = sizeof(wo) };
	struct span_totals t = { 0 }, back;
	const struct span_total *r;
	struct pprof_writer *w = pprof_writer__new(&wo);

	if (!ASSERT_OK_PTR(w, "writer"))
		return;
	ASSERT_EQ(span_totals__add(&t, &a), 0, "add");
	ASSERT_EQ(span_totals__add(&t, &b), 0, "add");
	t.outside_bytes = 100, t.outside_calls = 4, t.inexact = 2;
	t.over_instances = 5, t.over_bytes = 6, t.over_calls = 7;
	span_totals__sort(&t);
	ASSERT_EQ(span_totals__comments(&t, add_comment, w), 0, "comments");
	ASSERT_EQ(span_totals__read(&back, pprof_writer__profile(w)), 0, "read");
	ASSERT_TRUE(back.present && back.n == 2, "two paths");
	ASSERT_EQ(back.outside_bytes, 100, "outside bytes");
	ASSERT_EQ(back.outside_calls, 4, "outside calls");
	ASSERT_EQ(back.inexact, 2, "inexact");
	ASSERT_EQ(back.over_calls, 7, "overflow calls");
	r = span_totals__find(&back, "req=1;db");
	if (ASSERT_OK_PTR(r, "a name holding '='")) {
		ASSERT_EQ(r->incl_bytes, 30, "inclusive");
		ASSERT_EQ(r->max_bytes, 300000000000000ULL, "max");
		ASSERT_EQ(r->closed_bytes, 29, "closed bytes");
		ASSERT_TRUE(r->n_hist == 3 && r->hist[2].lo == 1ULL << 48 && r->hist[1].count == 2,
			    "histogram");
	}
	r = span_totals__find(&back, "leaked");
	ASSERT_TRUE(r && r->open == 1 && !r->n_hist, "open span, no histogram");
	span_totals__free(&back);
	span_totals__free(&t);
	pprof_writer__free(w);
}

static void test_quantiles(void)
{
	/* 100 instances: 98 of ~1.5 KB, 2 of ~4-5 KB, max 5000 */
	struct totals_bucket h[] = { { 1536, 98 }, { 4096, 2 } };
	struct span_total s = { .instances = 100, .max_bytes = 5000, .hist = h, .n_hist = 2 };

	ASSERT_EQ(span_total__quantile(&s, 0.5), 1536 + 128, "p50: the middle of its bucket");
	ASSERT_EQ(span_total__quantile(&s, 0.98), 1536 + 128, "rank 98 still in the first");
	ASSERT_EQ(span_total__quantile(&s, 0.99), 4096 + 512, "rank 99 in the second");
	ASSERT_EQ(span_total__quantile(&s, 1.0), 5000, "the last rank is the max");
	s.max_bytes = 4500;
	ASSERT_EQ(span_total__quantile(&s, 0.99), 4500, "a bucket's middle capped at the max");
	s.instances = 0;
	ASSERT_EQ(span_total__quantile(&s, 0.5), 0, "no instance");
}

int main(void)
{
	test_group = "unit/totals";
	RUN_TEST(test_buckets);
	RUN_TEST(test_round_trip);
	RUN_TEST(test_quantiles);
	return TEST_EXIT();
}
