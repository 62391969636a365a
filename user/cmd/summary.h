/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The few lines `culpert-bpf capture` prints after writing its profile. */
#ifndef CULPERT_SUMMARY_H
#define CULPERT_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

struct heap_gap;
struct mem_decomp;

/*
 * Top spans by allocated bytes and top live callsites of the profile at
 * path, lost events, the heap-vs-RSS gap when g is not NULL and the
 * decomposition of the anonymous RSS when d is not NULL (or why there is
 * none).  0 or -errno (the profile could not be read back).
 */
int capture_summary__print(FILE *f, const char *path, uint64_t lost, uint64_t untracked,
			   const struct heap_gap *g, const struct mem_decomp *d);

#endif /* CULPERT_SUMMARY_H */
