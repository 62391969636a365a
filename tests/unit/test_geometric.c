// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sampler's geometric draws without libm (preload/geometric.c): its
 * ln(1 + x) against long double's log1pl, and the draws against the
 * distribution's mean and against the same draws computed with it.
 */
#include "geometric.h"
#include "test.h"

static uint64_t rng = 0x243f6a8885a308d3ULL;

static uint64_t next64(void)
{
	uint64_t x = (rng += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* what the sampler draws from: 53 random bits, [0, 1) */
static double uniform(void)
{
	return (double)(next64() >> 11) * 0x1.0p-53;
}

/* |got - exact| in units of the last place of the double nearest `exact` */
static double ulps(double got, long double exact)
{
	double near = (double)exact;
	double ulp = nextafter(fabs(near), INFINITY) - fabs(near);

	return (double)(fabsl((long double)got - exact) / ulp);
}

static double worst;
static double worst_at;

static void check(double x)
{
	double e = ulps(geometric_log1p(x), log1pl((long double)x));

	if (e > worst) {
		worst = e;
		worst_at = x;
	}
}

/*
 * Every kind of argument the sampler passes (-u for a uniform u, -1/rate)
 * and the rest of the domain: within 1.5 ulp (1.2 measured).  The series cut two terms
 * short (at s^17/17) reads 6 ulp, three short 211.
 */
static void test_log1p_error(void)
{
	uint64_t rate;
	int i;

	worst = 0;
	for (i = 0; i < 2000000; i++)
		check(-uniform());
	for (rate = 2; rate <= 1ULL << 40; rate = rate * 3 / 2 + 1)
		check(-1.0 / (double)rate);
	for (i = 0; i < 200000; i++) {
		check(-1.0 + 0x1p-53 * (double)(1 + next64() % 1000));
		check(uniform() * 8 - 0.999);
		check(ldexp(uniform(), -(int)(next64() % 1060)));
		check(-ldexp(uniform(), -(int)(next64() % 1060)));
		check(ldexp(1.0 + uniform(), (int)(next64() % 1000)));
	}
	check(0x1p-1074);
	check(1.0);
	check(-0.5);
	check(0x1.6a09e667f3bcdp-1 - 1);
	check(0x1.6a09e667f3bcdp0 - 1);
	printf("  ln(1 + x): at most %.3f ulp (at x = %a)\n", worst, worst_at);
	ASSERT_TRUE(worst <= 1.5, "ln(1 + x) within 1.5 ulp");
	ASSERT_EQ(geometric_log1p(0), 0, "ln(1) is 0");
	ASSERT_TRUE(geometric_log1p(-0x1p-60) == -0x1p-60, "tiny x: x itself");
}

/*
 * At rates from 2 to 2^30, 10^6 draws: their mean is `rate` within 5 sigma,
 * sigma = sqrt(1 - p) / p / 1000 (the geometric distribution's standard
 * deviation over sqrt(10^6)), and each draw is the one the same uniform gives
 * through log1pl.  Those can differ only where the quotient lies within a
 * few ulp of an integer: at these seeds, never.
 */
static void test_draws(void)
{
	static const uint64_t rates[] = { 2, 3, 64, 4096, 524288, 1ULL << 30 };
	const int n = 1000000;
	size_t r;
	int i;

	for (r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		double p = 1.0 / (double)rates[r], scale = geometric_scale(rates[r]), sum = 0;
		long double ref_scale = 1.0L / log1pl(-1.0L / (long double)rates[r]);
		double sigma = sqrt(1 - p) / p / sqrt(n);
		int differ = 0;
		char what[96];

		for (i = 0; i < n; i++) {
			double u = uniform();
			int64_t k = geometric_draw(u, scale);
			long double want = log1pl(-(long double)u) * ref_scale;

			differ += k != (int64_t)want + 1;
			sum += (double)k;
		}
		snprintf(what, sizeof(what), "rate %llu: mean %.2f, sigma %.3f",
			 (unsigned long long)rates[r], sum / n, sigma);
		ASSERT_NEAR(sum / n, (double)rates[r], 5 * sigma, what);
		snprintf(what, sizeof(what), "rate %llu: draws unlike log1pl's",
			 (unsigned long long)rates[r]);
		ASSERT_EQ(differ, 0, what);
	}
	ASSERT_EQ(geometric_scale(1), 0, "rate 1: no scale");
	ASSERT_EQ(geometric_draw(0.999, geometric_scale(1)), 1, "rate 1: every byte a point");
	ASSERT_EQ(geometric_draw(0, geometric_scale(4096)), 1, "u = 0: the next byte");
}

int main(void)
{
	test_group = "unit/geometric";
	RUN_TEST(test_log1p_error);
	RUN_TEST(test_draws);
	return TEST_EXIT();
}
