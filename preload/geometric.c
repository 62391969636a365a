// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The geometric draws of the sampling points, and the one logarithm they
 * need, computed here: linking libm made a late load map it into the
 * process and fault in some 300-460 KiB of its pages, for one function
 * (docs/inject.md, "What it costs").
 *
 * ln(1 + x), as fdlibm's log1p reduces it: 1 + x = 2^e (1 + f), 1 + f in
 * [sqrt(1/2), sqrt(2)), f exact (x itself when 1 + x is in that range, or
 * the mantissa less 1), and what rounding 1 + x lost, (1 + x - 1) - x, given back to
 * first order; ln(1 + f) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...),
 * s = f / (2 + f), |s| <= 0.1716: the terms after s^21/21 add less than
 * 2^-60 of the sum.  ln 2 is split in two (fdlibm's): e ln2_hi is exact for
 * every e a double can have.  Measured against long double's log1pl:
 * within 1.2 ulp (tests/unit/test_geometric.c).  The mean of the draws
 * moves by that relative error, some 10^-16 of the rate.
 */
#include <string.h>

#include "geometric.h"

static const double ln2_hi = 6.93147180369123816490e-01;
static const double ln2_lo = 1.90821492927058770002e-10;
static const double sqrt2 = 1.41421356237309504880;

/*
 * ln(1 + f) for f exact, 1 + f in [sqrt(1/2), sqrt(2)), plus `lo`:
 * f - (f^2/2 - s (f^2/2 + R)), R the series' tail, so that f, exact, is
 * the leading term and the rounding of s lands on the small ones.
 */
static double ln1p_reduced(double f, double lo)
{
	double s = f / (2.0 + f), z = s * s, hfsq = 0.5 * f * f, r = 0;
	int k;

	for (k = 21; k >= 3; k -= 2)
		r = (r + 2.0 / k) * z;
	return f - (hfsq - (s * (hfsq + r) + lo));
}

/* ln(u) for u > 0, finite */
static double ln(double u)
{
	double m;
	uint64_t bits;
	int e;

	memcpy(&bits, &u, sizeof(bits));
	e = (int)((bits >> 52) & 0x7ff);
	if (!e) {
		/* subnormal: scaled into the normal range first */
		u *= 0x1p54;
		memcpy(&bits, &u, sizeof(bits));
		e = (int)((bits >> 52) & 0x7ff) - 54;
	}
	e -= 1023;
	bits = (bits & ((1ULL << 52) - 1)) | (1023ULL << 52);
	memcpy(&m, &bits, sizeof(m));
	if (m > sqrt2) {
		m *= 0.5;
		e++;
	}
	return e * ln2_hi + ln1p_reduced(m - 1.0, e * ln2_lo);
}

double geometric_log1p(double x)
{
	double u;

	/* 1 + x in [sqrt(1/2), sqrt(2)): x is the reduced argument itself */
	if (x > -0.2928 && x < 0.4142)
		return ln1p_reduced(x, 0);
	/* what rounding 1 + x lost, (u - 1) - x exactly, taken back to first order */
	u = 1.0 + x;
	return ln(u) - ((u - 1.0) - x) / u;
}

double geometric_scale(uint64_t rate)
{
	return rate > 1 ? 1.0 / geometric_log1p(-1.0 / (double)rate) : 0;
}

/*
 * Geometric with p = 1/rate, P(K > k) = (1 - p)^k, mean exactly `rate`:
 * 1 + floor(ln(1 - u) / ln(1 - p)).  The discrete counterpart of the
 * exponential draws of the BPF side.
 */
int64_t geometric_draw(double u, double scale)
{
	double k = geometric_log1p(-u) * scale;

	if (k >= 0x1.0p62)
		return (int64_t)1 << 62;
	return (int64_t)k + 1;
}
