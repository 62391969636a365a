/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The call stack of a sample, from what the BPF side recorded. */
#ifndef CULPERT_STACK_H
#define CULPERT_STACK_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "culpert.h"

/*
 * Return addresses, leaf first, the leaf being the allocator's caller
 * (allocator frames are never kept); at most max.  Returns the count.
 */
size_t stack_from_event(const struct culpert_alloc_event *e, uint64_t *out, size_t max);

#endif /* CULPERT_STACK_H */
