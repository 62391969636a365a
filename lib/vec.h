/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Growable arrays: a pointer, a length and a capacity the caller keeps. */
#ifndef CULPERT_VEC_H
#define CULPERT_VEC_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* grow to exactly `need` elements of `elem` bytes (no slack); 0 or -ENOMEM */
static inline int vec_reserve_exact(void *ptrp, size_t *cap, size_t need, size_t elem)
{
	void **ptr = ptrp;
	void *p;

	if (need <= *cap)
		return 0;
	if (need > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*ptr, need * elem);
	if (!p)
		return -ENOMEM;
	*ptr = p;
	*cap = need;
	return 0;
}

/* make room for `need` elements of `elem` bytes, doubling; 0 or -ENOMEM */
static inline int vec_reserve(void *ptrp, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	return vec_reserve_exact(ptrp, cap, ncap, elem);
}

#endif /* CULPERT_VEC_H */
