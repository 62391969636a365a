// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A stand-in for a jemalloc built with --with-jemalloc-prefix=je_: Debian
 * ships no prefixed jemalloc, so this library defines the names such a
 * build exports (je_malloc, je_mallocx, ...) and forwards every call to
 * the process's malloc.  Its allocations reach libc's malloc from inside
 * another probed object: culpert must count each once, at the je_ call.
 */
#include <malloc.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default"), noipa))

EXPORT void *je_malloc(size_t size)
{
	return malloc(size);
}

EXPORT void *je_calloc(size_t n, size_t size)
{
	return calloc(n, size);
}

EXPORT void *je_realloc(void *ptr, size_t size)
{
	return realloc(ptr, size);
}

EXPORT void je_free(void *ptr)
{
	free(ptr);
}

EXPORT int je_posix_memalign(void **memptr, size_t align, size_t size)
{
	return posix_memalign(memptr, align, size);
}

EXPORT void *je_aligned_alloc(size_t align, size_t size)
{
	return aligned_alloc(align, size);
}

EXPORT void *je_memalign(size_t align, size_t size)
{
	return memalign(align, size);
}

EXPORT void *je_valloc(size_t size)
{
	return valloc(size);
}

/* the *allocx API; flags (alignment, zeroing, arenas) are ignored */
EXPORT void *je_mallocx(size_t size, int flags)
{
	return malloc(size);
}

EXPORT void *je_rallocx(void *ptr, size_t size, int flags)
{
	return realloc(ptr, size);
}

/* never grows in place: the usable size it already has */
EXPORT size_t je_xallocx(void *ptr, size_t size, size_t extra, int flags)
{
	return malloc_usable_size(ptr);
}

EXPORT void je_sdallocx(void *ptr, size_t size, int flags)
{
	free(ptr);
}

EXPORT void je_dallocx(void *ptr, int flags)
{
	free(ptr);
}
