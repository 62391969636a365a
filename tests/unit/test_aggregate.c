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

/* the samples of test_order: stacks over few addresses, so that many share callers */
#define ORDER_SAMPLES	3000

struct order_sample {
	uint64_t frames[6];	/* leaf first */
	size_t n;
	uint32_t tid, chain;
};

static void order_samples(struct order_sample *v, size_t n, unsigned int seed)
{
	size_t i, j;

	srand(seed);
	for (i = 0; i < n; i++) {
		v[i].n = (size_t)(rand() % 7);	/* 0: the empty stack */
		for (j = 0; j < v[i].n; j++)
			v[i].frames[j] = 0x1000 + 0x10 * (uint64_t)(rand() % 3);
		v[i].tid = (uint32_t)(rand() % 3);
		v[i].chain = (uint32_t)(rand() % 2);
	}
}

/* what the order is, written out: root first, a prefix before, then chain, thread */
static int key_cmp(const struct aggregate *a, const struct agg_key *x, const struct agg_key *y)
{
	size_t nx, ny, i;
	const uint64_t *fx = aggregate__stack_frames(a, x->stack, &nx);
	const uint64_t *fy = aggregate__stack_frames(a, y->stack, &ny);

	for (i = 0; i < nx && i < ny; i++)
		if (fx[nx - 1 - i] != fy[ny - 1 - i])
			return fx[nx - 1 - i] < fy[ny - 1 - i] ? -1 : 1;
	if (nx != ny)
		return nx < ny ? -1 : 1;
	if (x->span != y->span)
		return x->span < y->span ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* every entry once, each before the next */
static bool check_order(struct aggregate *a, const char *what)
{
	const uint32_t *order = aggregate__order(a);
	const struct agg_entry *e;
	size_t n, i;
	char *seen;
	bool ok = true;

	e = aggregate__entries(a, &n);
	seen = calloc(n ?: 1, 1);
	if (!ASSERT_OK_PTR(order, what) || !ASSERT_OK_PTR(seen, "calloc")) {
		free(seen);
		return false;
	}
	for (i = 0; i < n && ok; i++) {
		ok = ASSERT_TRUE(order[i] < n && !seen[order[i]], what);
		if (ok)
			seen[order[i]] = 1;
		if (ok && i)
			ok = ASSERT_TRUE(key_cmp(a, &e[order[i - 1]].key, &e[order[i]].key) < 0, what);
	}
	free(seen);
	return ok;
}

/* the same stack, span chain and thread in two aggregates */
static bool same_key(const struct aggregate *a, const struct agg_key *x,
		     const struct aggregate *b, const struct agg_key *y)
{
	size_t nx, ny;
	const uint64_t *fx = aggregate__stack_frames(a, x->stack, &nx);
	const uint64_t *fy = aggregate__stack_frames(b, y->stack, &ny);

	return nx == ny && (!nx || !memcmp(fx, fy, nx * sizeof(*fx))) && x->span == y->span &&
	       x->tid == y->tid;
}

/*
 * The order of the entries is kept between calls and only the new ones
 * sorted: after every batch of samples it is the whole sort's, and two
 * aggregates of the same samples in other orders give the same keys in
 * the same order
 */
static void test_order(void)
{
	struct order_sample *v = calloc(ORDER_SAMPLES, sizeof(*v));
	struct aggregate *a = aggregate__new(ORDER_SAMPLES), *b = aggregate__new(ORDER_SAMPLES);
	const struct agg_entry *ea, *eb;
	const uint32_t *oa, *ob;
	size_t i, na, nb, batch = 1;

	if (!ASSERT_OK_PTR(v, "calloc") || !ASSERT_OK_PTR(a, "aggregate__new") ||
	    !ASSERT_OK_PTR(b, "aggregate__new"))
		goto out;
	ASSERT_OK_PTR(aggregate__order(a), "an empty aggregate's order");
	order_samples(v, ORDER_SAMPLES, 1);
	/* batches of 1, 2, 4 ... samples: orders of a few entries among many and the reverse */
	for (i = 0; i < ORDER_SAMPLES; i++) {
		struct agg_sample s = { .frames = v[i].frames, .n_frames = v[i].n, .tid = v[i].tid,
					.chain = v[i].chain, .size = 8 };

		if (!ASSERT_TRUE(aggregate__add_sample(a, &s, RATE) >= 0, "add"))
			goto out;
		if (i + 1 == batch) {
			if (!check_order(a, "ordered after a batch"))
				goto out;
			batch *= 2;
		}
	}
	if (!check_order(a, "ordered at the end"))
		goto out;
	for (i = ORDER_SAMPLES; i-- > 0;) {
		struct agg_sample s = { .frames = v[i].frames, .n_frames = v[i].n, .tid = v[i].tid,
					.chain = v[i].chain, .size = 8 };

		if (!ASSERT_TRUE(aggregate__add_sample(b, &s, RATE) >= 0, "add"))
			goto out;
	}
	oa = aggregate__order(a);
	ob = aggregate__order(b);
	ea = aggregate__entries(a, &na);
	eb = aggregate__entries(b, &nb);
	if (!ASSERT_OK_PTR(ob, "order") || !ASSERT_EQ(na, nb, "the same keys"))
		goto out;
	ASSERT_TRUE(na > 100, "many entries");
	for (i = 0; i < na; i++)
		if (!ASSERT_TRUE(same_key(a, &ea[oa[i]].key, b, &eb[ob[i]].key),
				 "the same key at each place"))
			break;
out:
	aggregate__free(a);
	aggregate__free(b);
	free(v);
}

int main(void)
{
	test_group = "unit/aggregate";
	RUN_TEST(test_instances_do_not_consume_stacks);
	RUN_TEST(test_stacks_past_the_bound);
	RUN_TEST(test_empty_stack);
	RUN_TEST(test_freeze);
	RUN_TEST(test_rescale);
	RUN_TEST(test_order);
	return TEST_EXIT();
}
