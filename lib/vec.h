/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Growable arrays: a pointer, a length and a capacity the caller keeps. */
#ifndef CULPERT_VEC_H
#define CULPERT_VEC_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* make room for `need` elements of `elem` bytes; 0 or -ENOMEM */
static inline int vec_reserve(void *ptrp, size_t *cap, size_t need, size_t elem)
{
	void **ptr = ptrp;
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*ptr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*ptr = p;
	*cap = ncap;
	return 0;
}

#endif /* CULPERT_VEC_H */
