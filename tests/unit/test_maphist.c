// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which mapping each sampled address was in (user/collect/maphist.c) and
 * the view of mappings kept current (procmaps__carry/insert), for
 * libraries loaded and unloaded at one address during a capture.
 */
#include <stdlib.h>

#include "maphist.h"
#include "procmaps.h"
#include "test.h"

static struct procmap lib(uint64_t inode, const char *path, uint64_t seen_ns)
{
	return (struct procmap){ .start = 0x7000, .end = 0x8000, .offset = 0x1000, .inode = inode,
				 .dev_major = 8, .readable = true, .executable = true,
				 .seen_ns = seen_ns, .path = (char *)path };
}

/*
 * Library a at 0x7000 from the start, then b at the same place at t=100.
 * A frame stored before the change still means a; a sample taken at t=50
 * but read after b came is a's; one at t=150 is b's, as a token, since the
 * bare address means a.
 */
static void test_two_libraries_one_address(void)
{
	struct maphist *h = maphist__new(16);
	struct procmap a = lib(11, "/lib/a.so", 0), b = lib(22, "/lib/b.so", 100);
	struct procmaps view = { 0 };
	const struct procmap *m, *in;
	uint64_t early = 0x7501, late, old, frame;

	if (!ASSERT_OK_PTR(h, "new") || !ASSERT_EQ(procmaps__insert(&view, &a), 0, "insert a"))
		return;
	maphist__seen(h, &a, 0);
	ASSERT_TRUE(!maphist__tracking(h), "nothing to track while mappings only come");
	ASSERT_EQ(maphist__frame(h, procmaps__find(&view, 0x7500), 0x7501, 10), 0x7501,
		  "frames stay bare");
	ASSERT_TRUE(procmaps__overlapped(&view, &b), "b covers a");
	ASSERT_EQ(maphist__changing(h, &view), 0, "changing");
	ASSERT_EQ(maphist__seen(h, &b, 100), 0, "seen b");
	ASSERT_TRUE(!procmaps__newer(&view, &b), "a is older than b");
	ASSERT_EQ(procmaps__insert(&view, &b), 0, "insert b");
	ASSERT_TRUE(maphist__tracking(h), "tracking once a mapping is replaced");
	in = procmaps__find(&view, 0x7500);
	ASSERT_TRUE(in && in->inode == 22 && view.n == 1, "the view has b alone");
	old = maphist__frame(h, in, 0x7601, 50);
	late = maphist__frame(h, in, early, 150);
	ASSERT_EQ(old, 0x7601, "a's frame read after b came stays bare");
	ASSERT_TRUE(late != early, "b's frame at a's address is a token");
	m = maphist__resolve(h, early, &frame);
	ASSERT_TRUE(m && m->inode == 11 && frame == early, "the bare address is a's");
	m = maphist__resolve(h, late, &frame);
	ASSERT_TRUE(m && m->inode == 22 && frame == early, "the token is b's, at the address");
	m = maphist__resolve(h, old, &frame);
	ASSERT_TRUE(m && m->inode == 11, "the sample of t=50 is a's");
	ASSERT_EQ(maphist__frame(h, in, early, 160), late, "one token per (address, mapping)");
	procmaps__free(&view);
	maphist__free(h);
}

/* a re-read keeps what it still has with its time, and carries what is gone */
static void test_carry(void)
{
	struct procmap a = lib(11, "/lib/a.so", 5), c = lib(33, "/lib/c.so", 0);
	struct procmaps old = { 0 }, fresh = { 0 };
	uint64_t dropped = 0;

	c.start = 0x9000;
	c.end = 0xa000;
	procmaps__insert(&old, &a);
	procmaps__insert(&old, &c);
	procmaps__insert(&fresh, &c);
	fresh.v[0].seen_ns = 0;
	ASSERT_EQ(procmaps__carry(&fresh, &old, 77, 8, &dropped), 0, "carry");
	ASSERT_EQ(fresh.n, 2, "c, and a carried");
	ASSERT_TRUE(fresh.v[0].inode == 11 && fresh.v[0].gone && fresh.v[0].seen_ns == 5,
		    "a gone, its time kept");
	ASSERT_TRUE(fresh.v[1].inode == 33 && !fresh.v[1].gone && fresh.v[1].seen_ns == 0,
		    "c still there, its time kept");
	procmaps__free(&old);
	procmaps__free(&fresh);
}

int main(void)
{
	test_group = "unit/maphist";
	RUN_TEST(test_two_libraries_one_address);
	RUN_TEST(test_carry);
	return TEST_EXIT();
}
