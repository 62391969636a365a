// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every allocation entry point culpert probes, of every family, each
 * called a known number of times from a function of its own (f_NAME, or
 * p_NAME for the prefixed section), so that a --rate 1 profile must show
 * each function's calls and bytes exactly: no entry point missed, none
 * counted twice when it calls another (operator new[] -> operator new,
 * mimalloc's valloc -> mi_valloc, a prefixed wrapper -> malloc).
 *
 *   alloc_api OBJECT[:PREFIX]...
 *
 * An entry point is called only when the symbol (with PREFIX) resolves to
 * the object whose path contains OBJECT: the allocator under test, not
 * glibc behind it.  Blocks are released with the family's own deallocator
 * when the object has it.  Prints "pid N ready", waits for SIGUSR1, runs,
 * prints "total FUNCTION BYTES CALLS" per function called, and exits.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define N 50

/* how an entry point is called, and what one call allocates */
enum shape {
	SIZE,		/* f(a, b, c): a bytes; b, c are alignment, flags or a nothrow_t & */
	COUNT,		/* f(a, b, c): a * b bytes (calloc, mi_mallocn, mi_calloc_aligned) */
	ALIGN_SIZE,	/* f(a, b): b bytes (memalign, aligned_alloc) */
	MEMPTR,		/* f(&p, a, b): b bytes (posix_memalign) */
	PAGE,		/* f(a): a rounded up to a page (pvalloc) */
	FRESH,		/* f(NULL, a, b): a bytes (realloc(NULL, n)) */
	RESIZE,		/* p = malloc(OLD); f(p, a, b): OLD + a bytes, two calls */
	RESIZE_N,	/* p = malloc(OLD); f(p, a, b, c): OLD + a * b bytes, two calls */
	IN_PLACE,	/* p = malloc(OLD); f(p, a, b, c) (xallocx): OLD bytes, one call */
};

/* how its blocks are released: rel(p, x, y) */
enum release {
	R_PTR,		/* (p) */
	R_SIZED,	/* (p, size) */
	R_ALIGNED,	/* (p, align) */
	R_SIZED_ALIGNED, /* (p, size, align) */
	R_NOTHROW,	/* (p, nothrow) */
	R_ALIGNED_NOTHROW, /* (p, align, nothrow) */
	R_FLAGS,	/* (p, 0) dallocx */
	R_SIZED_FLAGS,	/* (p, size, 0) sdallocx */
};

#define OLD 64
#define ALIGN 64

struct result {
	unsigned long long bytes, calls;
};

struct entry {
	void (*run)(const struct entry *e, void *f, void *(*alloc)(size_t), struct result *r);
	const char *fname;
	const char *sym;
	enum shape shape;
	uintptr_t a, b, c;
	const char *rel_sym;
	enum release rel;
};

typedef void *(*fn3)(uintptr_t, uintptr_t, uintptr_t);
typedef void *(*fn4)(uintptr_t, uintptr_t, uintptr_t, uintptr_t);
typedef void (*rel_fn)(void *, uintptr_t, uintptr_t);

static const char *object;		/* of the section being run */
static char nothrow_dummy;		/* std::nothrow_t is empty: any address will do */
static void *keep[N];

/* the symbol `prefix``name`, if the object under test defines it */
static void *lookup(const char *prefix, const char *name)
{
	char full[128];
	Dl_info info;
	void *f;

	snprintf(full, sizeof(full), "%s%s", prefix, name);
	f = dlsym(RTLD_DEFAULT, full);
	if (!f || !dladdr(f, &info) || !info.dli_fname || !strstr(info.dli_fname, object))
		return NULL;
	return f;
}

static uintptr_t arg(uintptr_t v)
{
	/* NOTHROW stands for the address of a std::nothrow_t */
	return v == (uintptr_t)-1 ? (uintptr_t)&nothrow_dummy : v;
}

static void release(const struct entry *e, const char *prefix)
{
	rel_fn rel = lookup(prefix, e->rel_sym);
	uintptr_t size = e->shape == COUNT ? e->a * e->b : e->a;
	uintptr_t x = 0, y = 0;
	int i;

	if (!rel) {
		/* the family's deallocator is absent: free() serves every block of these heaps */
		rel = (rel_fn)lookup(prefix, "free");
		e = NULL;
	}
	switch (e ? e->rel : R_PTR) {
	case R_SIZED:
	case R_SIZED_FLAGS:
		x = size;
		break;
	case R_ALIGNED:
	case R_ALIGNED_NOTHROW:
		x = ALIGN;
		y = (uintptr_t)&nothrow_dummy;
		break;
	case R_SIZED_ALIGNED:
		x = size;
		y = ALIGN;
		break;
	case R_NOTHROW:
		x = (uintptr_t)&nothrow_dummy;
		break;
	default:
		break;
	}
	for (i = 0; i < N; i++) {
		if (keep[i])
			rel(keep[i], x, y);
		keep[i] = NULL;
	}
}

static long page_size;

/* inlined into each f_NAME, so that the calls are made from it; no other allocation here */
static inline __attribute__((always_inline)) void call_n(const struct entry *e, void *f,
							  void *(*alloc)(size_t), struct result *r)
{
	uintptr_t a = arg(e->a), b = arg(e->b), c = arg(e->c);
	void *p;
	int i;

	for (i = 0; i < N; i++) {
		switch (e->shape) {
		case SIZE:
			keep[i] = ((fn3)f)(a, b, c);
			r->bytes += a;
			break;
		case COUNT:
			keep[i] = ((fn3)f)(a, b, c);
			r->bytes += a * b;
			break;
		case ALIGN_SIZE:
			keep[i] = ((fn3)f)(a, b, 0);
			r->bytes += b;
			break;
		case MEMPTR:
			if (((int (*)(void **, uintptr_t, uintptr_t))f)(&keep[i], a, b))
				keep[i] = NULL;
			r->bytes += b;
			break;
		case PAGE:
			keep[i] = ((fn3)f)(a, 0, 0);
			r->bytes += (a + page_size - 1) / page_size * page_size;
			break;
		case FRESH:
			keep[i] = ((fn3)f)(0, a, b);
			r->bytes += a;
			break;
		case RESIZE:
		case RESIZE_N:
		case IN_PLACE:
			/* the block to resize comes from the same allocator, through its malloc */
			p = alloc(OLD);
			r->bytes += OLD;
			r->calls++;
			if (e->shape == IN_PLACE) {
				((fn4)f)((uintptr_t)p, a, b, c);
				keep[i] = p;
				continue;
			}
			keep[i] = ((fn4)f)((uintptr_t)p, a, b, c);
			r->bytes += e->shape == RESIZE ? a : a * b;
			break;
		}
		r->calls++;
	}
}

#define NOTHROW ((uintptr_t)-1)

/*
 * X(name, symbol, shape, a, b, c, release symbol, release kind).  The C
 * API and jemalloc's: these take the prefix of a prefixed build.
 */
#define PREFIXED_ENTRIES(X)								\
	X(malloc, "malloc", SIZE, 100, 0, 0, "free", R_PTR)				\
	X(calloc, "calloc", COUNT, 10, 30, 0, "free", R_PTR)				\
	X(realloc, "realloc", RESIZE, 200, 0, 0, "free", R_PTR)				\
	X(realloc_null, "realloc", FRESH, 120, 0, 0, "free", R_PTR)			\
	X(reallocarray, "reallocarray", RESIZE_N, 20, 20, 0, "free", R_PTR)		\
	X(posix_memalign, "posix_memalign", MEMPTR, ALIGN, 240, 0, "free", R_PTR)	\
	X(aligned_alloc, "aligned_alloc", ALIGN_SIZE, 256, 512, 0, "free", R_PTR)	\
	X(memalign, "memalign", ALIGN_SIZE, 16, 160, 0, "free", R_PTR)			\
	X(valloc, "valloc", SIZE, 1000, 0, 0, "free", R_PTR)				\
	X(pvalloc, "pvalloc", PAGE, 1000, 0, 0, "free", R_PTR)				\
	X(mallocx, "mallocx", SIZE, 300, 0, 0, "dallocx", R_FLAGS)			\
	X(mallocx_sized, "mallocx", SIZE, 330, 0, 0, "sdallocx", R_SIZED_FLAGS)		\
	X(rallocx, "rallocx", RESIZE, 400, 0, 0, "dallocx", R_FLAGS)			\
	X(xallocx, "xallocx", IN_PLACE, 4000, 0, 0, "dallocx", R_FLAGS)

/* unprefixed only: mimalloc's and tcmalloc's own names, C++ operator new */
#define PLAIN_ENTRIES(X)								\
	X(mi_malloc, "mi_malloc", SIZE, 104, 0, 0, "mi_free", R_PTR)			\
	X(mi_zalloc, "mi_zalloc", SIZE, 108, 0, 0, "mi_free", R_PTR)			\
	X(mi_malloc_small, "mi_malloc_small", SIZE, 112, 0, 0, "mi_free", R_PTR)	\
	X(mi_zalloc_small, "mi_zalloc_small", SIZE, 116, 0, 0, "mi_free", R_PTR)	\
	X(mi_malloc_aligned, "mi_malloc_aligned", SIZE, 120, ALIGN, 0, "mi_free_aligned",	\
	  R_ALIGNED)									\
	X(mi_malloc_aligned_at, "mi_malloc_aligned_at", SIZE, 124, ALIGN, 8, "mi_free", R_PTR)	\
	X(mi_zalloc_aligned, "mi_zalloc_aligned", SIZE, 128, ALIGN, 0, "mi_free", R_PTR)	\
	X(mi_zalloc_aligned_at, "mi_zalloc_aligned_at", SIZE, 132, ALIGN, 8, "mi_free", R_PTR)	\
	X(mi_new, "mi_new", SIZE, 136, 0, 0, "mi_free", R_PTR)				\
	X(mi_new_nothrow, "mi_new_nothrow", SIZE, 140, 0, 0, "mi_free", R_PTR)		\
	X(mi_new_aligned, "mi_new_aligned", SIZE, 144, ALIGN, 0, "mi_free", R_PTR)	\
	X(mi_new_aligned_nothrow, "mi_new_aligned_nothrow", SIZE, 148, ALIGN, 0, "mi_free",	\
	  R_PTR)									\
	X(mi_valloc, "mi_valloc", SIZE, 152, 0, 0, "mi_free", R_PTR)			\
	X(mi_calloc, "mi_calloc", COUNT, 4, 39, 0, "mi_free", R_PTR)			\
	X(mi_mallocn, "mi_mallocn", COUNT, 4, 40, 0, "mi_free_size", R_SIZED)		\
	X(mi_calloc_aligned, "mi_calloc_aligned", COUNT, 4, 41, ALIGN, "mi_free", R_PTR)	\
	X(mi_calloc_aligned_at, "mi_calloc_aligned_at", COUNT, 4, 42, ALIGN, "mi_free", R_PTR)	\
	X(mi_new_n, "mi_new_n", COUNT, 4, 43, 0, "mi_free", R_PTR)			\
	X(mi_realloc, "mi_realloc", RESIZE, 176, 0, 0, "mi_free", R_PTR)		\
	X(mi_reallocf, "mi_reallocf", RESIZE, 180, 0, 0, "mi_free", R_PTR)		\
	X(reallocf, "reallocf", RESIZE, 184, 0, 0, "cfree", R_PTR)			\
	X(mi_rezalloc, "mi_rezalloc", RESIZE, 188, 0, 0, "mi_cfree", R_PTR)		\
	X(mi_realloc_aligned, "mi_realloc_aligned", RESIZE, 192, ALIGN, 0, "mi_free", R_PTR)	\
	X(mi_realloc_aligned_at, "mi_realloc_aligned_at", RESIZE, 196, ALIGN, 8, "mi_free",	\
	  R_PTR)									\
	X(mi_rezalloc_aligned, "mi_rezalloc_aligned", RESIZE, 200, ALIGN, 0, "mi_free", R_PTR)	\
	X(mi_new_realloc, "mi_new_realloc", RESIZE, 204, 0, 0, "mi_free", R_PTR)	\
	X(mi_reallocn, "mi_reallocn", RESIZE_N, 4, 52, 0, "mi_free", R_PTR)		\
	X(mi_reallocarray, "mi_reallocarray", RESIZE_N, 4, 53, 0, "mi_free", R_PTR)	\
	X(mi_recalloc, "mi_recalloc", RESIZE_N, 4, 54, 0, "mi_free", R_PTR)		\
	X(mi_recalloc_aligned, "mi_recalloc_aligned", RESIZE_N, 4, 55, ALIGN, "mi_free",	\
	  R_PTR)									\
	X(mi_new_reallocn, "mi_new_reallocn", RESIZE_N, 4, 56, 0, "mi_free", R_PTR)	\
	X(mi_posix_memalign, "mi_posix_memalign", MEMPTR, ALIGN, 228, 0, "mi_free", R_PTR)	\
	X(mi_memalign, "mi_memalign", ALIGN_SIZE, ALIGN, 232, 0, "mi_free", R_PTR)	\
	X(mi_aligned_alloc, "mi_aligned_alloc", ALIGN_SIZE, ALIGN, 236, 0, "mi_free", R_PTR)	\
	X(mi_pvalloc, "mi_pvalloc", PAGE, 240, 0, 0, "mi_free", R_PTR)			\
	X(tc_malloc, "tc_malloc", SIZE, 244, 0, 0, "tc_free", R_PTR)			\
	X(tc_malloc_skip_new_handler, "tc_malloc_skip_new_handler", SIZE, 248, 0, 0,	\
	  "tc_free_sized", R_SIZED)							\
	X(tc_valloc, "tc_valloc", SIZE, 252, 0, 0, "tc_cfree", R_PTR)			\
	X(tc_new, "tc_new", SIZE, 256, 0, 0, "tc_delete", R_PTR)			\
	X(tc_newarray, "tc_newarray", SIZE, 260, 0, 0, "tc_deletearray", R_PTR)		\
	X(tc_new_nothrow, "tc_new_nothrow", SIZE, 264, NOTHROW, 0, "tc_delete_nothrow",	\
	  R_NOTHROW)									\
	X(tc_new_aligned, "tc_new_aligned", SIZE, 268, ALIGN, 0, "tc_delete_aligned",	\
	  R_ALIGNED)									\
	X(tc_calloc, "tc_calloc", COUNT, 4, 68, 0, "tc_free", R_PTR)			\
	X(tc_realloc, "tc_realloc", RESIZE, 276, 0, 0, "tc_free", R_PTR)		\
	X(tc_posix_memalign, "tc_posix_memalign", MEMPTR, ALIGN, 280, 0, "tc_free", R_PTR)	\
	X(tc_memalign, "tc_memalign", ALIGN_SIZE, ALIGN, 284, 0, "tc_free", R_PTR)	\
	X(tc_pvalloc, "tc_pvalloc", PAGE, 288, 0, 0, "tc_free", R_PTR)			\
	X(new, "_Znwm", SIZE, 292, 0, 0, "_ZdlPv", R_PTR)				\
	X(new_array, "_Znam", SIZE, 296, 0, 0, "_ZdaPvm", R_SIZED)			\
	X(new_nothrow, "_ZnwmRKSt9nothrow_t", SIZE, 300, NOTHROW, 0,			\
	  "_ZdlPvRKSt9nothrow_t", R_NOTHROW)						\
	X(new_array_nothrow, "_ZnamRKSt9nothrow_t", SIZE, 304, NOTHROW, 0, "_ZdaPv", R_PTR) \
	X(new_aligned, "_ZnwmSt11align_val_t", SIZE, 308, ALIGN, 0, "_ZdlPvmSt11align_val_t",	\
	  R_SIZED_ALIGNED)								\
	X(new_array_aligned, "_ZnamSt11align_val_t", SIZE, 312, ALIGN, 0,		\
	  "_ZdaPvSt11align_val_t", R_ALIGNED)						\
	X(new_aligned_nothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t", SIZE, 316, ALIGN,	\
	  NOTHROW, "_ZdlPvSt11align_val_tRKSt9nothrow_t", R_ALIGNED_NOTHROW)		\
	X(new_array_aligned_nothrow, "_ZnamSt11align_val_tRKSt9nothrow_t", SIZE, 320,	\
	  ALIGN, NOTHROW, "_ZdaPvmSt11align_val_t", R_SIZED_ALIGNED)

#define DEFINE_F(name, ...)									\
	static NOINLINE void f_##name(const struct entry *e, void *f, void *(*alloc)(size_t),	\
				      struct result *r)						\
	{ call_n(e, f, alloc, r); }
#define DEFINE_P(name, ...)									\
	static NOINLINE void p_##name(const struct entry *e, void *f, void *(*alloc)(size_t),	\
				      struct result *r)						\
	{ call_n(e, f, alloc, r); }
#define ROW_F(name, sym, ...) { f_##name, "f_" #name, sym, __VA_ARGS__ },
#define ROW_P(name, sym, ...) { p_##name, "p_" #name, sym, __VA_ARGS__ },

PREFIXED_ENTRIES(DEFINE_F)
PLAIN_ENTRIES(DEFINE_F)
PREFIXED_ENTRIES(DEFINE_P)

static const struct entry plain[] = { PREFIXED_ENTRIES(ROW_F) PLAIN_ENTRIES(ROW_F) };
static const struct entry prefixed[] = { PREFIXED_ENTRIES(ROW_P) };

static void run_section(const struct entry *entries, size_t n, const char *prefix)
{
	void *(*alloc)(size_t) = (void *(*)(size_t))lookup(prefix, "malloc");
	struct result r;
	size_t i;
	void *f;

	for (i = 0; i < n; i++) {
		f = lookup(prefix, entries[i].sym);
		if (!f)
			continue;
		memset(&r, 0, sizeof(r));
		entries[i].run(&entries[i], f, alloc, &r);
		printf("total %s %llu %llu\n", entries[i].fname, r.bytes, r.calls);
		release(&entries[i], prefix);
	}
}

int main(int argc, char **argv)
{
	int s;

	page_size = sysconf(_SC_PAGESIZE);
	/* stdout buffers until exit: no stdio allocation inside the measured functions */
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	ready_then_wait(stderr);

	for (s = 1; s < argc; s++) {
		char *prefix = strchr(argv[s], ':');

		if (prefix)
			*prefix++ = '\0';
		object = argv[s];
		if (prefix && *prefix)
			run_section(prefixed, sizeof(prefixed) / sizeof(prefixed[0]), prefix);
		else
			run_section(plain, sizeof(plain) / sizeof(plain[0]), "");
	}
	return 0;
}
