// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A stand-in for a jemalloc built with --with-jemalloc-prefix=je_ (or, with
 * -DJE_PREFIX=_rjem_, for tikv-jemallocator's build): Debian ships no
 * prefixed jemalloc, so this library defines the names such a build exports
 * (je_malloc, je_mallocx, ...) and forwards every call to the process's
 * malloc.  Its allocations reach libc's malloc from inside another probed
 * object: culpert must count each once, at the prefixed call.
 */
#include <malloc.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default"), noipa))

#ifndef JE_PREFIX
#define JE_PREFIX je_
#endif
#define JE_CAT(p, name) p##name
#define JE_NAME(p, name) JE_CAT(p, name)
#define JE(name) JE_NAME(JE_PREFIX, name)

EXPORT void *JE(malloc)(size_t size)
{
	return malloc(size);
}

EXPORT void *JE(calloc)(size_t n, size_t size)
{
	return calloc(n, size);
}

EXPORT void *JE(realloc)(void *ptr, size_t size)
{
	return realloc(ptr, size);
}

EXPORT void JE(free)(void *ptr)
{
	free(ptr);
}

EXPORT int JE(posix_memalign)(void **memptr, size_t align, size_t size)
{
	return posix_memalign(memptr, align, size);
}

EXPORT void *JE(aligned_alloc)(size_t align, size_t size)
{
	return aligned_alloc(align, size);
}

EXPORT void *JE(memalign)(size_t align, size_t size)
{
	return memalign(align, size);
}

EXPORT void *JE(valloc)(size_t size)
{
	return valloc(size);
}

/* the *allocx API; flags (alignment, zeroing, arenas) are ignored */
EXPORT void *JE(mallocx)(size_t size, int flags)
{
	return malloc(size);
}

EXPORT void *JE(rallocx)(void *ptr, size_t size, int flags)
{
	return realloc(ptr, size);
}

/* never grows in place: the usable size it already has */
EXPORT size_t JE(xallocx)(void *ptr, size_t size, size_t extra, int flags)
{
	return malloc_usable_size(ptr);
}

EXPORT void JE(sdallocx)(void *ptr, size_t size, int flags)
{
	free(ptr);
}

EXPORT void JE(dallocx)(void *ptr, int flags)
{
	free(ptr);
}
