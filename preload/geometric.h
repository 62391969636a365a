/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The sampler's geometric draws, without libm (geometric.c). */
#ifndef CULPERT_SAMPLER_GEOMETRIC_H
#define CULPERT_SAMPLER_GEOMETRIC_H

#include <stdint.h>

#include "sampler_internal.h"

/* ln(1 + x) for x > -1, within 1.5 ulp of the exact value (tests/unit/test_geometric.c) */
double geometric_log1p(double x) SAMPLER_HIDDEN;
/* 1 / ln(1 - 1/rate), what geometric_draw takes; 0 for rate <= 1 (every byte a point) */
double geometric_scale(uint64_t rate) SAMPLER_HIDDEN;
/* the distance to the next sampling point, counting it, for `u` uniform in [0, 1) */
int64_t geometric_draw(double u, double scale) SAMPLER_HIDDEN;

#endif /* CULPERT_SAMPLER_GEOMETRIC_H */
