// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unbiasing math, the exponential table, and the aggregate's bounds. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <linux/types.h>

#include "aggregate.h"
#include "bpfobj.h"
#include "test.h"

static void test_weight_formula(void)
{
	/* w = 1 / (1 - exp(-size/rate)) */
	ASSERT_NEAR(sample_weight(512 * 1024, 512 * 1024), 1.0 / (1.0 - exp(-1.0)), 1e-12,
		    "size == rate");
	ASSERT_NEAR(sample_weight(16, 524288), 1.0 / (1.0 - exp(-16.0 / 524288)), 1e-6,
		    "tiny size: no cancellation");
	/* for size << rate the weight tends to rate/size + 1/2 */
	ASSERT_NEAR(sample_weight(1, 1 << 20), (1 << 20) + 0.5, 1e-3, "limit for tiny sizes");
	ASSERT_NEAR(sample_weight(1ULL << 40, 4096), 1.0, 1e-12, "huge size: always sampled");
	ASSERT_EQ(sample_weight(0, 4096), 0, "size 0 stands for nothing");
	ASSERT_EQ(sample_weight(7, 1), 1, "rate 1: every allocation, weight 1");
	ASSERT_EQ(sample_weight(1 << 20, 1), 1, "rate 1: every allocation, weight 1");
}

/* unbias each sample, then sum: two sizes in one key must not share a weight */
static void test_unbias_then_sum(void)
{
	struct aggregate *a = aggregate__new(16);
	struct agg_sample s = { .tid = 1 };
	const struct agg_entry *e;
	size_t n;
	double want;

	s.size = 100;
	aggregate__add_sample(a, &s, 4096);
	s.size = 100000;
	aggregate__add_sample(a, &s, 4096);
	e = aggregate__entries(a, &n);
	want = 100 * sample_weight(100, 4096) + 100000 * sample_weight(100000, 4096);
	ASSERT_EQ(n, 1, "one key");
	ASSERT_NEAR(e[0].alloc_space, want, 1e-6, "sum of unbiased samples");
	ASSERT_NEAR(e[0].alloc_objects, sample_weight(100, 4096) + sample_weight(100000, 4096), 1e-9,
		    "objects");
	ASSERT_EQ(e[0].samples, 2, "samples");
	aggregate__free(a);
}

static void test_exp_table(void)
{
	__s64 *t = calloc(CULPERT_EXP_TABLE_SIZE, sizeof(*t));
	const uint64_t rate = 524288;
	double sum = 0, below = 0;
	size_t i;

	bpfobj_fill_exp_table(t, rate);
	for (i = 0; i < CULPERT_EXP_TABLE_SIZE; i++) {
		sum += (double)t[i];
		below += t[i] <= (__s64)rate;
		if (i && t[i] < t[i - 1])
			break;
	}
	ASSERT_EQ(i, CULPERT_EXP_TABLE_SIZE, "table is sorted (quantiles)");
	/* the mean is rescaled to the rate exactly, up to rounding */
	ASSERT_NEAR(sum / CULPERT_EXP_TABLE_SIZE, (double)rate, 1.0, "mean == rate");
	/* P(X <= rate) = 1 - 1/e for an exponential */
	ASSERT_NEAR(below / CULPERT_EXP_TABLE_SIZE, 1 - exp(-1), 2.0 / CULPERT_EXP_TABLE_SIZE,
		    "median-ish quantile");
	ASSERT_TRUE(t[0] >= 0, "no negative draws");
	free(t);
}

/* past the bound of thread keys, samples go on without their thread: the totals stay */
static void test_aggregate_bounds(void)
{
	struct aggregate *a = aggregate__new(4);
	uint64_t frames[2] = { 0x1000, 0x2000 };
	struct agg_sample s = { .frames = frames, .n_frames = 2, .size = 4096 };
	const struct agg_entry *e;
	double total = 0;
	size_t n, i;
	uint32_t tid;

	for (tid = 1; tid <= 100; tid++) {
		s.tid = tid;
		ASSERT_TRUE(aggregate__add_sample(a, &s, 4096) >= 0, "add");
	}
	e = aggregate__entries(a, &n);
	ASSERT_EQ(n, 5, "4 thread keys, then one without thread");
	for (i = 0; i < n; i++) {
		total += e[i].alloc_space;
		ASSERT_EQ(e[i].key.stack, e[0].key.stack, "every key keeps the stack");
	}
	ASSERT_NEAR(total, 100 * 4096 * sample_weight(4096, 4096), 1e-3, "coarsening keeps the totals");
	ASSERT_EQ(aggregate__coarsened(a), 96, "coarsened samples counted");
	ASSERT_EQ(aggregate__folded(a), 0, "nothing folded");
	aggregate__free(a);
}

int main(void)
{
	test_group = "unit/sampling";
	RUN_TEST(test_weight_formula);
	RUN_TEST(test_unbias_then_sum);
	RUN_TEST(test_exp_table);
	RUN_TEST(test_aggregate_bounds);
	return TEST_EXIT();
}
