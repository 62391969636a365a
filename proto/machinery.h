/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Allocator machinery: the frames between the code that asked for memory and
 * the allocator (malloc and friends, operator new, container growth helpers,
 * Rust's alloc shims, Go's runtime).  A callsite is the first frame from the
 * leaf that is not one of these.
 */
#ifndef CULPERT_MACHINERY_H
#define CULPERT_MACHINERY_H

#include <stdbool.h>

/* is the function name (demangled or raw) part of an allocator or of allocation plumbing? */
bool machinery__match(const char *name);

#endif /* CULPERT_MACHINERY_H */
