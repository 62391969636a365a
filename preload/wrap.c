// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The entry points: the C allocation API and C++ operator new/delete,
 * each a call of the next allocator plus sampler_account() (allocations)
 * or sampler_release() (frees).
 *
 * Entry points the allocator of malloc lacks (jemalloc has no pvalloc,
 * reallocarray is not everywhere) are built on its posix_memalign and
 * realloc rather than taken from another object, whose heap is not the
 * one free() gives back to.  operator new is malloc plus, on failure only,
 * the next operator new (the new_handler loop and std::bad_alloc, which C
 * cannot throw): jemalloc, mimalloc and tcmalloc define their own, which
 * would otherwise bypass the sampler.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler_internal.h"

static int ready(void)
{
	return likely(__atomic_load_n(&sampler_next.ready, __ATOMIC_ACQUIRE));
}

/* before the next allocator is known: resolve it, or serve from the arena */
static int booted(void)
{
	sampler_boot();
	return ready();
}

static size_t page_size(void)
{
	static size_t page;

	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

static inline __attribute__((always_inline)) void *do_malloc(size_t size)
{
	void *p;

	if (unlikely(!ready()) && !booted())
		return boot_alloc(size, 16);
	p = sampler_next.malloc(size);
	sampler_account(p, size);
	return p;
}

/* everything but the plain free of a block the sampler never kept */
static __attribute__((noinline)) void free_slow(void *p)
{
	if (unlikely(in_boot_arena(p)))
		return;
	if (unlikely(!ready()) && !booted())
		return;
	sampler_release(p);
	sampler_next.free(p);
}

/*
 * Both ways out are tail calls, so free needs no frame of its own even
 * for a frame-pointer walk from the free probe: free_slow's frame holds
 * the program's return address.
 */
static inline __attribute__((always_inline)) void do_free(void *p)
{
	if (unlikely(!ready() || in_boot_arena(p) ||
		     __atomic_load_n(&sampler_live.n, __ATOMIC_RELAXED))) {
		free_slow(p);
		return;
	}
	sampler_next.free(p);
}

static int is_pow2(size_t v)
{
	return v && !(v & (v - 1));
}

/* posix_memalign's contract; `size` is what the sample says was asked for */
static int do_memalign(void **out, size_t align, size_t bytes, size_t size)
{
	int err;

	if (!is_pow2(align) || align % sizeof(void *))
		return EINVAL;
	if (unlikely(!ready()) && !booted()) {
		*out = boot_alloc(bytes, align);
		return *out ? 0 : ENOMEM;
	}
	err = sampler_next.posix_memalign(out, align, bytes);
	if (!err)
		sampler_account(*out, size);
	return err;
}

/* memalign(3) and friends return NULL and set errno */
static void *memalign_or_null(size_t align, size_t bytes, size_t size)
{
	void *p = NULL;
	int err = do_memalign(&p, align, bytes, size);

	if (err) {
		errno = err;
		return NULL;
	}
	return p;
}

static size_t round_pow2(size_t v)
{
	size_t p = sizeof(void *);

	while (p < v && p)
		p <<= 1;
	return p;
}

static void *do_realloc(void *p, size_t size)
{
	void *q;

	if (unlikely(!ready()) && !booted()) {
		q = boot_alloc(size, 16);
		if (q && p)
			memcpy(q, p, boot_size(p) < size ? boot_size(p) : size);
		return q;
	}
	if (unlikely(in_boot_arena(p))) {
		q = do_malloc(size);
		if (q)
			memcpy(q, p, boot_size(p) < size ? boot_size(p) : size);
		return q;
	}
	/* the old block's free fires before it can be reused, even if it stays in place */
	if (p)
		sampler_release(p);
	q = sampler_next.realloc(p, size);
	sampler_account(q, size);
	return q;
}

/* --- the C allocation API --- */

SAMPLER_EXPORT void *malloc(size_t size)
{
	return do_malloc(size);
}

SAMPLER_EXPORT void free(void *p)
{
	do_free(p);
}

SAMPLER_EXPORT void *calloc(size_t nmemb, size_t size)
{
	size_t bytes;
	void *p;

	if (__builtin_mul_overflow(nmemb, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	/* the arena is zero and never reused */
	if (unlikely(!ready()) && !booted())
		return boot_alloc(bytes, 16);
	if (sampler_next.calloc) {
		p = sampler_next.calloc(nmemb, size);
	} else {
		p = sampler_next.malloc(bytes);
		if (p)
			memset(p, 0, bytes);
	}
	sampler_account(p, bytes);
	return p;
}

SAMPLER_EXPORT void *realloc(void *p, size_t size)
{
	return do_realloc(p, size);
}

SAMPLER_EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(nmemb, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return do_realloc(p, bytes);
}

SAMPLER_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	return do_memalign(out, align, size, size);
}

SAMPLER_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	void *p;

	if (likely(ready()) && sampler_next.aligned_alloc) {
		p = sampler_next.aligned_alloc(align, size);
		sampler_account(p, size);
		return p;
	}
	if (!is_pow2(align)) {
		errno = EINVAL;
		return NULL;
	}
	return memalign_or_null(round_pow2(align), size, size);
}

SAMPLER_EXPORT void *memalign(size_t align, size_t size)
{
	void *p;

	if (likely(ready()) && sampler_next.memalign) {
		p = sampler_next.memalign(align, size);
		sampler_account(p, size);
		return p;
	}
	/* glibc's memalign takes any alignment, rounded up to a power of two */
	return memalign_or_null(round_pow2(align), size, size);
}

SAMPLER_EXPORT void *valloc(size_t size)
{
	void *p;

	if (likely(ready()) && sampler_next.valloc) {
		p = sampler_next.valloc(size);
		sampler_account(p, size);
		return p;
	}
	return memalign_or_null(page_size(), size, size);
}

SAMPLER_EXPORT void *pvalloc(size_t size)
{
	size_t page = page_size(), bytes;
	void *p;

	if (size > SIZE_MAX - page) {
		errno = ENOMEM;
		return NULL;
	}
	/* what pvalloc hands out, and what culpert-bpf's probes count for it */
	bytes = (size + page - 1) & ~(page - 1);
	if (likely(ready()) && sampler_next.pvalloc) {
		p = sampler_next.pvalloc(size);
		sampler_account(p, bytes);
		return p;
	}
	return memalign_or_null(page, bytes ?: page, bytes);
}

SAMPLER_EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (unlikely(in_boot_arena(p)))
		return boot_size(p);
	if (unlikely(!ready()) && !booted())
		return 0;
	return sampler_next.malloc_usable_size ? sampler_next.malloc_usable_size(p) : 0;
}

/* --- C++ operator new and delete (Itanium C++ ABI names, size_t = unsigned long) --- */

typedef void *(*new_fn)(size_t);
typedef void *(*new_nothrow_fn)(size_t, const void *);
typedef void *(*new_aligned_fn)(size_t, size_t);
typedef void *(*new_aligned_nothrow_fn)(size_t, size_t, const void *);

/* the next operator new of this signature, on the failure path only */
static void *next_new(const char *name)
{
	void *f = sampler_sym(name);

	/* nobody to throw std::bad_alloc: what a C++ runtime does without exceptions */
	if (!f)
		abort();
	return f;
}

static void *new_plain(size_t size, const char *name)
{
	void *p = do_malloc(size);

	return likely(p) ? p : ((new_fn)next_new(name))(size);
}

static void *new_nothrow(size_t size, const void *tag, const char *name)
{
	void *p = do_malloc(size);

	return likely(p) ? p : ((new_nothrow_fn)next_new(name))(size, tag);
}

static void *new_aligned(size_t size, size_t align, const char *name)
{
	void *p = NULL;

	if (!do_memalign(&p, round_pow2(align), size, size))
		return p;
	return ((new_aligned_fn)next_new(name))(size, align);
}

static void *new_aligned_nothrow(size_t size, size_t align, const void *tag, const char *name)
{
	void *p = NULL;

	if (!do_memalign(&p, round_pow2(align), size, size))
		return p;
	return ((new_aligned_nothrow_fn)next_new(name))(size, align, tag);
}

void *_Znwm(size_t size) SAMPLER_EXPORT;
void *_Znam(size_t size) SAMPLER_EXPORT;
void *_ZnwmRKSt9nothrow_t(size_t size, const void *tag) SAMPLER_EXPORT;
void *_ZnamRKSt9nothrow_t(size_t size, const void *tag) SAMPLER_EXPORT;
void *_ZnwmSt11align_val_t(size_t size, size_t align) SAMPLER_EXPORT;
void *_ZnamSt11align_val_t(size_t size, size_t align) SAMPLER_EXPORT;
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *tag) SAMPLER_EXPORT;
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *tag) SAMPLER_EXPORT;
void _ZdlPv(void *p) SAMPLER_EXPORT;
void _ZdaPv(void *p) SAMPLER_EXPORT;
void _ZdlPvm(void *p, size_t size) SAMPLER_EXPORT;
void _ZdaPvm(void *p, size_t size) SAMPLER_EXPORT;
void _ZdlPvRKSt9nothrow_t(void *p, const void *tag) SAMPLER_EXPORT;
void _ZdaPvRKSt9nothrow_t(void *p, const void *tag) SAMPLER_EXPORT;
void _ZdlPvSt11align_val_t(void *p, size_t align) SAMPLER_EXPORT;
void _ZdaPvSt11align_val_t(void *p, size_t align) SAMPLER_EXPORT;
void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align) SAMPLER_EXPORT;
void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align) SAMPLER_EXPORT;
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag) SAMPLER_EXPORT;
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag) SAMPLER_EXPORT;

void *_Znwm(size_t size)
{
	return new_plain(size, "_Znwm");
}

void *_Znam(size_t size)
{
	return new_plain(size, "_Znam");
}

void *_ZnwmRKSt9nothrow_t(size_t size, const void *tag)
{
	return new_nothrow(size, tag, "_ZnwmRKSt9nothrow_t");
}

void *_ZnamRKSt9nothrow_t(size_t size, const void *tag)
{
	return new_nothrow(size, tag, "_ZnamRKSt9nothrow_t");
}

void *_ZnwmSt11align_val_t(size_t size, size_t align)
{
	return new_aligned(size, align, "_ZnwmSt11align_val_t");
}

void *_ZnamSt11align_val_t(size_t size, size_t align)
{
	return new_aligned(size, align, "_ZnamSt11align_val_t");
}

void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *tag)
{
	return new_aligned_nothrow(size, align, tag, "_ZnwmSt11align_val_tRKSt9nothrow_t");
}

void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *tag)
{
	return new_aligned_nothrow(size, align, tag, "_ZnamSt11align_val_tRKSt9nothrow_t");
}

/* every block came from the allocator's malloc or posix_memalign: free() takes it back */
void _ZdlPv(void *p)
{
	do_free(p);
}

void _ZdaPv(void *p)
{
	do_free(p);
}

void _ZdlPvm(void *p, size_t size)
{
	do_free(p);
}

void _ZdaPvm(void *p, size_t size)
{
	do_free(p);
}

void _ZdlPvRKSt9nothrow_t(void *p, const void *tag)
{
	do_free(p);
}

void _ZdaPvRKSt9nothrow_t(void *p, const void *tag)
{
	do_free(p);
}

void _ZdlPvSt11align_val_t(void *p, size_t align)
{
	do_free(p);
}

void _ZdaPvSt11align_val_t(void *p, size_t align)
{
	do_free(p);
}

void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	do_free(p);
}

void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	do_free(p);
}

void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag)
{
	do_free(p);
}

void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *tag)
{
	do_free(p);
}

/*
 * The table late.c rewrites GOT slots with: the entry points at their
 * addresses in this library.  Their names, seen from here, are preemptible
 * and would give the process's malloc rather than ours, hence the hidden
 * aliases.
 */
#define C_ENTRIES(X)								\
	X(malloc, 0) X(free, 0) X(calloc, 0) X(realloc, 0) X(reallocarray, 0)		\
	X(posix_memalign, 0) X(aligned_alloc, 0) X(memalign, 0) X(valloc, 0)		\
	X(pvalloc, 0) X(malloc_usable_size, 0)
#define CXX_ENTRIES(X)								\
	X(_Znwm, 1) X(_Znam, 1) X(_ZnwmRKSt9nothrow_t, 1) X(_ZnamRKSt9nothrow_t, 1)	\
	X(_ZnwmSt11align_val_t, 1) X(_ZnamSt11align_val_t, 1)				\
	X(_ZnwmSt11align_val_tRKSt9nothrow_t, 1) X(_ZnamSt11align_val_tRKSt9nothrow_t, 1) \
	X(_ZdlPv, 1) X(_ZdaPv, 1) X(_ZdlPvm, 1) X(_ZdaPvm, 1)				\
	X(_ZdlPvRKSt9nothrow_t, 1) X(_ZdaPvRKSt9nothrow_t, 1)				\
	X(_ZdlPvSt11align_val_t, 1) X(_ZdaPvSt11align_val_t, 1)			\
	X(_ZdlPvmSt11align_val_t, 1) X(_ZdaPvmSt11align_val_t, 1)			\
	X(_ZdlPvSt11align_val_tRKSt9nothrow_t, 1) X(_ZdaPvSt11align_val_tRKSt9nothrow_t, 1)

#if defined(__GNUC__) && !defined(__clang__)
#define SAME_ATTRIBUTES(sym)	copy(sym),
#else
#define SAME_ATTRIBUTES(sym)
#endif
#define OWN_ALIAS(sym, cxx)							\
	extern __typeof__(sym) own_##sym					\
		__attribute__((SAME_ATTRIBUTES(sym) alias(#sym), visibility("hidden")));
#define OWN_ENTRY(sym, cxx)	{ #sym, (void *)own_##sym, cxx },

C_ENTRIES(OWN_ALIAS)
CXX_ENTRIES(OWN_ALIAS)

const struct sampler_entry sampler_entries[] = {
	C_ENTRIES(OWN_ENTRY)
	CXX_ENTRIES(OWN_ENTRY)
};
const size_t sampler_n_entries = sizeof(sampler_entries) / sizeof(sampler_entries[0]);
