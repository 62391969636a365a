// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The aggregate's bound is on distinct stacks: one span instance per
 * request must not push stacks out, coarsening keeps the stack, stacks past
 * the bound keep their leaf, and the totals stay exact throughout.
 */
#include <linux/types.h>

#include "aggregate.h"
#include "culpert.h"
#include "test.h"

#define RATE 1		/* every allocation counted once: totals are exact */

struct totals {
	double bytes;
	size_t entries, whole, leaf, unknown, with_tid;
};

static void sum(const struct aggregate *a, struct totals *t)
{
	const struct agg_entry *e;
	size_t n, i, nf;

	memset(t, 0, sizeof(*t));
	e = aggregate__entries(a, &n);
	t->entries = n;
	for (i = 0; i < n; i++) {
		const uint64_t *f = aggregate__stack_frames(a, e[i].key.stack, &nf);

		t->bytes += e[i].alloc_space;
		t->with_tid += e[i].key.tid != 0;
		if (!nf)
			t->unknown++;
		else if (nf == 2 && f[1] == CULPERT_FRAME_FOLDED)
			t->leaf++;
		else
			t->whole++;
	}
}

/* 10000 requests, each its own span instance, over 3 stacks: no stack is lost */
static void test_instances_do_not_consume_stacks(void)
{
	struct aggregate *a = aggregate__new(16);
	uint64_t frames[3][2] = { { 0x1000, 0x9000 }, { 0x2000, 0x9000 }, { 0x3000, 0x9000 } };
	struct totals t;
	uint32_t i;

	if (!ASSERT_OK_PTR(a, "aggregate__new"))
		return;
	for (i = 0; i < 10000; i++) {
		struct agg_sample s = { .frames = frames[i % 3], .n_frames = 2, .tid = 7,
					.chain = 100 + i, .path = 1, .size = 10 };

		if (!ASSERT_TRUE(aggregate__add_sample(a, &s, RATE) >= 0, "add"))
			break;
	}
	sum(a, &t);
	ASSERT_NEAR(t.bytes, 100000, 0, "totals exact");
	ASSERT_EQ(t.unknown + t.leaf, 0, "every stack kept whole");
	ASSERT_EQ(aggregate__folded(a), 0, "nothing folded");
	ASSERT_EQ(aggregate__coarsened(a), 10000 - 16, "past 16 instance keys: without ids");
	ASSERT_EQ(t.with_tid, 16, "the first 16 keep their thread and ids");
	ASSERT_EQ(t.entries, 16 + 3, "16 instance keys and one per stack after");
	aggregate__free(a);
}

/* more distinct stacks than the bound: the rest keep their leaf, then lose it */
static void test_stacks_past_the_bound(void)
{
	struct aggregate *a = aggregate__new(4);
	struct totals t;
	uint64_t f[2];
	uint32_t i;

	if (!ASSERT_OK_PTR(a, "aggregate__new"))
		return;
	/* 4 whole stacks, 4 more leaves, then 2 stacks whose leaves find no room */
	for (i = 0; i < 10; i++) {
		struct agg_sample s = { .frames = f, .n_frames = 2, .tid = 1, .chain = 5, .path = 5,
					.size = 100 };

		f[0] = 0x1000 + i;
		f[1] = 0x9000 + i;
		ASSERT_TRUE(aggregate__add_sample(a, &s, RATE) >= 0, "add");
	}
	sum(a, &t);
	ASSERT_NEAR(t.bytes, 1000, 0, "totals exact");
	ASSERT_EQ(t.whole, 4, "4 stacks whole");
	ASSERT_EQ(t.leaf, 4, "4 leaves under [folded]");
	ASSERT_EQ(t.unknown, 1, "the last two under one [unknown stack] key");
	ASSERT_EQ(aggregate__folded(a), 6, "6 samples folded");
	/* a stack seen before keeps its whole key: nothing more folded */
	f[0] = 0x1000;
	f[1] = 0x9000;
	ASSERT_TRUE(aggregate__add_sample(a, &(struct agg_sample){ .frames = f, .n_frames = 2,
			.tid = 1, .chain = 5, .path = 5, .size = 1 }, RATE) >= 0, "add again");
	ASSERT_EQ(aggregate__folded(a), 6, "a known stack is not folded");
	aggregate__free(a);
}

/* frozen (memory pressure): the stacks held stay whole, new ones fold, totals exact */
static void test_freeze(void)
{
	struct aggregate *a = aggregate__new(100);
	struct totals t;
	uint64_t f[2];
	uint32_t i;

	if (!ASSERT_OK_PTR(a, "aggregate__new"))
		return;
	for (i = 0; i < 20; i++) {
		struct agg_sample s = { .frames = f, .n_frames = 2, .path = 5, .size = 100 };

		f[0] = 0x1000 + i % 3;
		f[1] = 0x9000 + (i < 10 ? i % 3 : i);
		ASSERT_TRUE(aggregate__add_sample(a, &s, RATE) >= 0, "add");
		if (i == 9)
			aggregate__freeze(a);
	}
	sum(a, &t);
	ASSERT_NEAR(t.bytes, 2000, 0, "totals exact");
	ASSERT_EQ(t.whole, 3, "the 3 stacks held before stay whole");
	ASSERT_EQ(t.leaf, 3, "the 10 new stacks under their 3 leaves");
	ASSERT_EQ(aggregate__folded(a), 10, "10 samples folded");
	aggregate__free(a);
}

/* a sample without frames is an [unknown stack] of its own, not a folded one */
static void test_empty_stack(void)
{
	struct aggregate *a = aggregate__new(2);
	struct totals t;

	if (!ASSERT_OK_PTR(a, "aggregate__new"))
		return;
	ASSERT_TRUE(aggregate__add_sample(a, &(struct agg_sample){ .tid = 3, .chain = 2, .path = 2,
			.size = 8 }, RATE) >= 0, "add");
	sum(a, &t);
	ASSERT_EQ(t.unknown, 1, "the empty stack");
	ASSERT_EQ(aggregate__folded(a), 0, "not counted as folded");
	aggregate__free(a);
}

/*
 * Thinned samples of a span path are scaled to its census, and only they:
 * an unthinned sample and another path's thinned one keep their bytes
 */
static void test_rescale(void)
{
	struct aggregate *a = aggregate__new(16);
	uint64_t frames[2][1] = { { 0x1000 }, { 0x2000 } };
	struct agg_sample s[] = {
		{ .frames = frames[0], .n_frames = 1, .chain = UINT32_MAX, .path = 1, .size = 10,
		  .weighted = true, .objects = 4, .thinned = true },
		{ .frames = frames[1], .n_frames = 1, .chain = UINT32_MAX, .path = 1, .size = 10,
		  .weighted = true, .objects = 2, .thinned = true },
		{ .frames = frames[1], .n_frames = 1, .chain = UINT32_MAX, .path = 1, .size = 10 },
		{ .frames = frames[0], .n_frames = 1, .chain = UINT32_MAX, .path = 2, .size = 10,
		  .weighted = true, .objects = 3, .thinned = true },
	};
	const struct agg_entry *e;
	double path1[2] = { 0 }, path2 = 0;
	size_t i, n;

	if (!ASSERT_OK_PTR(a, "aggregate__new"))
		return;
	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		ASSERT_TRUE(aggregate__add_sample(a, &s[i], RATE) >= 0, "add");
	ASSERT_NEAR(aggregate__rescale(a, 1, 1), 60, 1e-9, "thinned bytes of path 1");
	ASSERT_NEAR(aggregate__rescale(a, 1, 1.5), 60, 1e-9, "before scaling");
	e = aggregate__entries(a, &n);
	for (i = 0; i < n; i++) {
		if (e[i].path == 2)
			path2 += e[i].alloc_space;
		else
			path1[e[i].key.stack != e[0].key.stack] += e[i].alloc_space;
	}
	ASSERT_NEAR(path1[0], 60, 1e-9, "scaled: 40 x 1.5");
	ASSERT_NEAR(path1[1], 40, 1e-9, "scaled: 20 x 1.5, plus 10 unthinned");
	ASSERT_NEAR(path2, 30, 1e-9, "another path untouched");
	aggregate__free(a);
}

int main(void)
{
	test_group = "unit/aggregate";
	RUN_TEST(test_instances_do_not_consume_stacks);
	RUN_TEST(test_stacks_past_the_bound);
	RUN_TEST(test_empty_stack);
	RUN_TEST(test_freeze);
	RUN_TEST(test_rescale);
	return TEST_EXIT();
}
