// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cli/ modules: diff classification, allocator machinery, aligned tables. */
#include <math.h>
#include <stdlib.h>

#include "diff_rows.h"
#include "machinery.h"
#include "table.h"
#include "test.h"

#define MiB 1048576.0

static void test_classify_spec_order(void)
{
	struct diff_opts o = { .threshold_bytes = 4096, .threshold_pct = 5,
			       .min_span_bytes = 20 * 1048576 };
	static const struct {
		double before, after;
		enum diff_kind want;
		const char *reason;
	} cases[] = {
		/* issue 4's boundary table, --min-span-bytes 20MiB */
		{ 19, 19.5, KIND_QUIET, "min_span_bytes" },
		{ 19, 20, KIND_REGRESSION, NULL },
		{ 20, 19, KIND_IMPROVEMENT, NULL },	/* exactly -5%: the gate is >= */
		{ 0, 19, KIND_QUIET, "min_span_bytes" },
		{ 0, 20, KIND_NEW, NULL },
		{ 20, 0, KIND_GONE, NULL },
		{ 30, 31, KIND_QUIET, "threshold" },	/* 3.3% < 5% */
		{ 30, 30, KIND_QUIET, "threshold" },
	};
	const char *reason;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum diff_kind k = diff_classify(cases[i].before * MiB, cases[i].after * MiB, &o,
						 &reason);

		ASSERT_STREQ(diff_kind_name(k), diff_kind_name(cases[i].want), "kind");
		ASSERT_TRUE(cases[i].reason ? reason && !strcmp(reason, cases[i].reason) : !reason,
			    "quiet reason");
	}
	o.threshold_bytes = 2 * 1048576;
	ASSERT_EQ(diff_classify(19 * MiB, 20 * MiB, &o, &reason), KIND_QUIET,
		  "1 MiB < 2 MiB threshold");
	/* new/gone below the byte threshold are quiet, not new/gone */
	o.min_span_bytes = 0;
	ASSERT_EQ(diff_classify(0, 1 * MiB, &o, &reason), KIND_QUIET, "small new span");
	ASSERT_EQ(diff_classify(1 * MiB, 0, &o, &reason), KIND_QUIET, "small gone span");
}

static void test_classify_noise(void)
{
	/* rate 512 KiB, 100 -> 106 MiB: sigma = sqrt(524288 * 206 MiB) = 10.15 MiB, z = 0.59 */
	struct diff_opts o = { .threshold_bytes = 4096, .threshold_pct = 5, .rate = 524288 };
	const char *reason;

	ASSERT_EQ(diff_classify(100 * MiB, 106 * MiB, &o, &reason), KIND_REGRESSION, "no gate");
	o.min_confidence = 0.5;
	ASSERT_EQ(diff_classify(100 * MiB, 106 * MiB, &o, &reason), KIND_REGRESSION, "0.59 > 0.5");
	o.min_confidence = 0.6;
	ASSERT_EQ(diff_classify(100 * MiB, 106 * MiB, &o, &reason), KIND_QUIET, "0.59 < 0.6");
	ASSERT_STREQ(reason, "noise", "reason");
	/* rate 1 (every allocation): sigma = sqrt(1 B * 206 MiB) = 14.7 KB, far below 6 MiB */
	o.rate = 1;
	o.min_confidence = 3;
	ASSERT_EQ(diff_classify(100 * MiB, 106 * MiB, &o, &reason), KIND_REGRESSION, "rate 1");
}

static void test_machinery(void)
{
	static const char *const yes[] = {
		"malloc", "__libc_calloc", "je_mallocx", "_rjem_malloc", "mi_malloc_aligned",
		"tc_new", "operator new(unsigned long)", "_Znwm",
		"std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(int&&)",
		"__rust_alloc", "alloc::raw_vec::finish_grow", "alloc::alloc::exchange_malloc",
		"runtime.mallocgc", "runtime.growslice",
	};
	static const char *const no[] = {
		"main", "parse_header", "std::vector<int>::size", "my_malloc_stats",
		"handle_request", "mallocate_pool", "alloc_abc", "runtime.main",
	};
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ASSERT_TRUE(machinery__match(yes[i]), yes[i]);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ASSERT_TRUE(!machinery__match(no[i]), no[i]);
}

static void test_table(void)
{
	struct table *t = table__new("lr", (const char *const[]){ "NAME", "BYTES" });
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	table__add(t, (const char *const[]){ "  deep", "1.00 MB" });
	table__add(t, (const char *const[]){ "σ", "12 B" });
	table__add(t, (const char *const[]){ "x", "" });
	table__print(t, f);
	fclose(f);
	ASSERT_STREQ(out, "NAME      BYTES\n  deep  1.00 MB\nσ          12 B\nx\n",
		     "aligned by display width, no trailing blanks");
	free(out);
	table__free(t);
}

int main(void)
{
	test_group = "cli";
	RUN_TEST(test_classify_spec_order);
	RUN_TEST(test_classify_noise);
	RUN_TEST(test_machinery);
	RUN_TEST(test_table);
	return TEST_EXIT();
}
