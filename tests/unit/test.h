/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A minimal unit-test harness in the style of the kernel's BPF selftests:
 * ASSERT_* print what differed and evaluate to false so the test can bail
 * out; RUN_TEST prints "PASS name" or "FAIL name" for tests/run.sh.
 */
#ifndef CULPERT_TEST_H
#define CULPERT_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;
static bool test_ok;
static const char *test_group = "unit";

#define ASSERT_TRUE(cond, what) ({                                                   \
	bool ___ok = (cond);                                                         \
	if (!___ok) {                                                                \
		fprintf(stdout, "  %s:%d: %s\n", __FILE__, __LINE__, what);          \
		test_ok = false;                                                     \
	}                                                                            \
	___ok; })

#define ASSERT_EQ(a, b, what) ({                                                     \
	long long ___a = (long long)(a), ___b = (long long)(b);                      \
	bool ___ok = ___a == ___b;                                                   \
	if (!___ok) {                                                                \
		fprintf(stdout, "  %s:%d: %s: got %lld, want %lld\n", __FILE__,      \
			__LINE__, what, ___a, ___b);                                 \
		test_ok = false;                                                     \
	}                                                                            \
	___ok; })

#define ASSERT_STREQ(a, b, what) ({                                                  \
	const char *___a = (a), *___b = (b);                                         \
	bool ___ok = ___a && ___b && !strcmp(___a, ___b);                            \
	if (!___ok) {                                                                \
		fprintf(stdout, "  %s:%d: %s: got \"%s\", want \"%s\"\n", __FILE__,  \
			__LINE__, what, ___a ? ___a : "(null)", ___b ? ___b : "(null)"); \
		test_ok = false;                                                     \
	}                                                                            \
	___ok; })

/* |a - b| <= tol */
#define ASSERT_NEAR(a, b, tol, what) ({                                              \
	double ___a = (a), ___b = (b);                                               \
	bool ___ok = fabs(___a - ___b) <= (tol);                                     \
	if (!___ok) {                                                                \
		fprintf(stdout, "  %s:%d: %s: got %.9g, want %.9g +- %.3g\n",        \
			__FILE__, __LINE__, what, ___a, ___b, (double)(tol));        \
		test_ok = false;                                                     \
	}                                                                            \
	___ok; })

#define ASSERT_OK_PTR(p, what) ASSERT_TRUE((p) != NULL, what)

/* TEST_PREFIX (e.g. "asan:") names the run of a sanitizer build apart */
#define RUN_TEST(fn) do {                                                            \
	test_ok = true;                                                              \
	fn();                                                                        \
	printf("%s %s%s/%s\n", test_ok ? "PASS" : "FAIL", getenv("TEST_PREFIX") ?: "",  \
	       test_group, #fn);                                                     \
	if (!test_ok)                                                                \
		test_failures++;                                                     \
} while (0)

#define TEST_EXIT() (test_failures ? 1 : 0)

#endif /* CULPERT_TEST_H */
