// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The leaf of every sample is the allocator's caller, never the allocator. */
#include <string.h>

#include "stack.h"
#include "test.h"

static union {
	struct culpert_alloc_event e;
	char bytes[CULPERT_EVENT_MAX];
} buf;
static struct culpert_alloc_event *const evp = &buf.e;
#define ev (*evp)

/* a record with two open spans before the frames, as the BPF side lays it out */
static void setup(uint64_t ret, const uint64_t *frames, int n)
{
	memset(&buf, 0, sizeof(buf));
	ev.ret_addr = ret;
	ev.nr_frames = n;
	ev.span_depth = 2;
	memcpy((void *)event_frames(&ev), frames, (size_t)(n > 0 ? n : 0) * sizeof(*frames));
}

static void test_caller_restored(void)
{
	/* older kernels: [ip in malloc, caller's caller, ...]; the caller is only at [sp] */
	const uint64_t f[] = { 0x7f0000001000, 0x401500, 0x401900 };
	uint64_t out[8];

	setup(0x401234, f, 3);
	ASSERT_EQ(stack_from_event(&ev, out, 8), 3, "frames");
	ASSERT_EQ(out[0], 0x401234, "leaf is the caller");
	ASSERT_EQ(out[1], 0x401500, "then the walk");
	ASSERT_EQ(out[2], 0x401900, "then the walk");
}

static void test_caller_already_there(void)
{
	/* 6.x kernels insert [sp] themselves at a function-entry probe: not twice */
	const uint64_t f[] = { 0x7f0000001000, 0x401234, 0x401500 };
	uint64_t out[8];

	setup(0x401234, f, 3);
	ASSERT_EQ(stack_from_event(&ev, out, 8), 2, "frames");
	ASSERT_EQ(out[0], 0x401234, "leaf is the caller, once");
	ASSERT_EQ(out[1], 0x401500, "then the walk");
}

static void test_junk_and_limits(void)
{
	const uint64_t f[] = { 0x7f0000001000, 0x401500, 0x10, 0x401900 };
	uint64_t out[8];

	setup(0x401234, f, 4);
	ASSERT_EQ(stack_from_event(&ev, out, 8), 2, "walk stops at junk");
	ASSERT_EQ(stack_from_event(&ev, out, 1), 1, "max depth honoured");
	ASSERT_EQ(out[0], 0x401234, "leaf kept first");
	setup(0x401234, f, -14);
	ASSERT_EQ(stack_from_event(&ev, out, 8), 1, "failed walk keeps the caller");
	setup(0, f, 2);
	ASSERT_EQ(stack_from_event(&ev, out, 8), 1, "unreadable [sp]: the walk only");
	ASSERT_EQ(out[0], 0x401500, "the walk only");
}

static void test_record_sizes(void)
{
	const uint64_t f[] = { 0x7f0000001000, 0x401500, 0x401900 };
	size_t need;

	setup(0x401234, f, 3);
	need = sizeof(ev) + 2 * sizeof(struct culpert_span_frame) + 3 * sizeof(__u64);
	ASSERT_TRUE(event_complete(&ev, need), "complete record");
	ASSERT_TRUE(!event_complete(&ev, need - 1), "one byte short");
	ev.span_depth = CULPERT_MAX_SPAN_DEPTH + 1;
	ASSERT_TRUE(!event_complete(&ev, sizeof(buf)), "impossible span depth");
}

int main(void)
{
	test_group = "unit/stack";
	RUN_TEST(test_record_sizes);
	RUN_TEST(test_caller_restored);
	RUN_TEST(test_caller_already_there);
	RUN_TEST(test_junk_and_limits);
	return TEST_EXIT();
}
