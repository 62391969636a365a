// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Human units in and out. */
#include "test.h"
#include "units.h"

static void test_parse_size(void)
{
	uint64_t v = 0;

	ASSERT_TRUE(!parse_size("4096", &v) && v == 4096, "plain");
	ASSERT_TRUE(!parse_size("4k", &v) && v == 4096, "k");
	ASSERT_TRUE(!parse_size("512KiB", &v) && v == 524288, "KiB");
	ASSERT_TRUE(!parse_size("1.5MiB", &v) && v == 1572864, "fractional");
	ASSERT_TRUE(!parse_size("2g", &v) && v == 2147483648ULL, "g");
	ASSERT_TRUE(!parse_size("1", &v) && v == 1, "one byte");
	ASSERT_TRUE(parse_size("", &v) < 0, "empty");
	ASSERT_TRUE(parse_size("abc", &v) < 0, "junk");
	ASSERT_TRUE(parse_size("-4k", &v) < 0, "negative");
	ASSERT_TRUE(parse_size("4kk", &v) < 0, "trailing junk");
	ASSERT_TRUE(parse_size("0.5", &v) < 0, "half a byte");
	ASSERT_TRUE(parse_size("99999999999T", &v) < 0, "overflow");
}

static void test_parse_duration(void)
{
	uint64_t v = 0;

	ASSERT_TRUE(!parse_duration("30s", &v) && v == 30000000000ULL, "30s");
	ASSERT_TRUE(!parse_duration("2m", &v) && v == 120000000000ULL, "2m");
	ASSERT_TRUE(!parse_duration("500ms", &v) && v == 500000000ULL, "500ms");
	ASSERT_TRUE(!parse_duration("1h", &v) && v == 3600000000000ULL, "1h");
	ASSERT_TRUE(!parse_duration("1.5s", &v) && v == 1500000000ULL, "1.5s");
	ASSERT_TRUE(!parse_duration("10", &v) && v == 10000000000ULL, "bare seconds");
	ASSERT_TRUE(parse_duration("soon", &v) < 0, "junk");
	ASSERT_TRUE(parse_duration("5 s", &v) < 0, "space");
}

static void test_format_bytes(void)
{
	char b[32];

	ASSERT_STREQ(format_bytes(b, sizeof(b), 0), "0 B", "zero");
	ASSERT_STREQ(format_bytes(b, sizeof(b), 1023), "1023 B", "under 1 KiB");
	ASSERT_STREQ(format_bytes(b, sizeof(b), 1024), "1.00 KiB", "1 KiB");
	ASSERT_STREQ(format_bytes(b, sizeof(b), 524288), "512.00 KiB", "512 KiB");
	ASSERT_STREQ(format_bytes(b, sizeof(b), 1.30 * 1073741824.0), "1.30 GiB", "GB");
	ASSERT_STREQ(format_bytes(b, sizeof(b), 1048575), "1.00 MiB", "carry into the next unit");
	ASSERT_STREQ(format_bytes_signed(b, sizeof(b), 1048576), "+1.00 MiB", "signed +");
	ASSERT_STREQ(format_bytes_signed(b, sizeof(b), -12), "-12 B", "signed -");
	ASSERT_STREQ(format_bytes_signed(b, sizeof(b), 0), "0 B", "signed zero");
	ASSERT_STREQ(format_bytes(b, sizeof(b), 7.5 * 1152921504606846976.0), "7.50 EiB", "EiB");
}

/* sums past the int64 a pprof value is: saturated, and saying so */
static void test_saturation(void)
{
	char b[32];

	ASSERT_STREQ(format_bytes(b, sizeof(b), 2.0 * 9223372036854775807.0), ">=8.00 EiB",
		     "a sum past INT64_MAX");
	ASSERT_STREQ(format_bytes(b, sizeof(b), 9223372036854775807.0), ">=8.00 EiB", "INT64_MAX");
	ASSERT_STREQ(format_bytes(b, sizeof(b), -3.0 * 9223372036854775807.0), "<=-8.00 EiB",
		     "below INT64_MIN");
	ASSERT_STREQ(format_bytes_signed(b, sizeof(b), 1e19), ">=8.00 EiB", "signed, saturated");
	ASSERT_STREQ(format_count(b, sizeof(b), 1e19), ">=9223372036854775807", "a count");
	ASSERT_STREQ(format_count(b, sizeof(b), 12), "12", "a small count");
	ASSERT_EQ(round_sat(1e19), INT64_MAX, "rounded, saturated");
	ASSERT_EQ(round_sat(-1e19), INT64_MIN, "rounded, saturated below");
	ASSERT_EQ(round_sat(2.5), 3, "rounded");
}

int main(void)
{
	test_group = "unit/units";
	RUN_TEST(test_parse_size);
	RUN_TEST(test_parse_duration);
	RUN_TEST(test_format_bytes);
	RUN_TEST(test_saturation);
	return TEST_EXIT();
}
