/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Allocator machinery: the frames between the code that asked for memory and
 * the allocator.  Two kinds: the allocator itself (malloc and friends,
 * operator new, Rust's global allocator shims, Go's runtime), and wrappers
 * that only pass the request on (redis' zmalloc, nginx's ngx_palloc,
 * sqlite3Malloc, g_malloc, xmalloc, PyMem_*, C++ container and Rust RawVec
 * growth).  A callsite is the first frame from the leaf that is neither; the
 * report names the wrappers it looked through.
 */
#ifndef CULPERT_MACHINERY_H
#define CULPERT_MACHINERY_H

#include <stdbool.h>
#include <stddef.h>

enum machinery_kind {
	MACHINERY_NONE,		/* the program's own code: a callsite */
	MACHINERY_ALLOCATOR,	/* the allocator and its internals */
	MACHINERY_WRAPPER,	/* a wrapper of the default list or of the user's globs */
};

/*
 * What the function name (demangled or raw) is: the built-in lists, then
 * `skip`, the user's --skip globs (wrappers too).
 */
enum machinery_kind machinery__classify(const char *name, const char *const *skip, size_t n_skip);
/*
 * Is it a wrapper whose callers are the wrapper family's own static internals
 * (nginx's ngx_alloc, called by the pool's)?  An unnamed frame calling it is
 * looked through too.
 */
bool machinery__inner(const char *name);
/* is it machinery of either kind, with no globs of the user's? */
bool machinery__match(const char *name);
/* does the name match one of the globs (fnmatch(3), no escapes)? */
bool machinery__glob_any(const char *name, const char *const *globs, size_t n_globs);

#endif /* CULPERT_MACHINERY_H */
