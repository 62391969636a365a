// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/live: the live-block table against a plain reference, under random churn. */
#include <errno.h>
#include <stdlib.h>

#include "live.h"
#include "test.h"

#define IDS 4096

/* reference: state per id (0 absent, 1 announced, 2 tracked) */
static unsigned char ref[IDS];

static size_t ref_tracked(void)
{
	size_t i, n = 0;

	for (i = 0; i < IDS; i++)
		n += ref[i] == 2;
	return n;
}

static bool same_tracked_set(const struct live *l)
{
	const struct live_block *b;
	unsigned char seen[IDS] = { 0 };
	size_t n, i, tracked = 0;

	b = live__blocks(l, &n);
	for (i = 0; i < n; i++) {
		if (b[i].id >= IDS || !ref[b[i].id] || seen[b[i].id]++)
			return false;
		if (b[i].tracked != (ref[b[i].id] == 2) || b[i].size != b[i].id * 8)
			return false;
		tracked += b[i].tracked;
	}
	return tracked == ref_tracked();
}

static void test_random_churn(void)
{
	struct live *l = live__new(IDS);
	unsigned int seed = 12345;
	int step;

	for (step = 0; step < 200000 && test_ok; step++) {
		uint64_t id = (uint64_t)(rand_r(&seed) % IDS);
		struct live_block b = { .id = id, .size = id * 8, .weight = 1 };

		switch (rand_r(&seed) % 4) {
		case 0:
		case 1:
			ASSERT_EQ(live__alloc(l, &b), 0, "alloc");
			if (!ref[id])
				ref[id] = 1;
			break;
		case 2: {
			bool tracked = rand_r(&seed) % 4 != 0;

			live__ret(l, id, tracked);
			if (ref[id])
				ref[id] = tracked ? 2 : 0;
			break;
		}
		default:
			live__release(l, id);
			ref[id] = 0;
			break;
		}
		if (step % 997 == 0)
			ASSERT_TRUE(same_tracked_set(l), "table matches the reference");
	}
	live__free(l);
}

/* the kernel's table is the truth: what it holds stays, whatever the ring buffer said */
static void test_bound_and_reconcile(void)
{
	struct live *l = live__new(10);
	struct live_block b = { .weight = 1 };
	size_t n;
	int i;

	for (i = 0; i < 10; i++) {
		b.id = (uint64_t)i + 1;
		ASSERT_EQ(live__alloc(l, &b), 0, "room");
	}
	b.id = 99;
	ASSERT_EQ(live__alloc(l, &b), -ENOSPC, "full");
	ASSERT_TRUE(live__full(l), "says it is full");
	/* the kernel holds the odd ones, and one this table never saw (id 42) */
	live__mark_begin(l);
	for (i = 0; i < 10; i += 2)
		ASSERT_TRUE(live__mark(l, (uint64_t)i + 1), "marked");
	ASSERT_TRUE(!live__mark(l, 42), "an id not here");
	ASSERT_EQ(live__sweep(l), 5, "the blocks whose free event was lost go");
	live__blocks(l, &n);
	ASSERT_EQ(n, 5, "what the kernel holds stays");
	ASSERT_EQ(live__alloc(l, &b), 0, "room again after the sweep");
	live__free(l);
}

int main(void)
{
	test_group = "unit/live";
	RUN_TEST(test_random_churn);
	RUN_TEST(test_bound_and_reconcile);
	return TEST_EXIT();
}
