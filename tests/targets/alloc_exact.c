// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every entry point of the C allocation API, called a known number of times
 * from a function of its own, including the calls glibc forwards to its own
 * malloc (realloc(NULL, n), memalign(16, n), realloc of an mmapped block,
 * reallocarray).  Profiled with --rate 1, each function must show exactly
 * its calls and bytes: nothing missed, nothing counted twice.  Also built
 * static, against glibc and musl (tests/Makefile.inc).
 *
 * What each call returns is checked as it would be without a profiler
 * (non-NULL, aligned as asked, zeroed by calloc, contents kept by realloc):
 * probes that move registers or return addresses must not change it.
 *
 * Prints "pid N ready", waits for SIGUSR1, runs, prints
 * "total <fn> <bytes> <calls>" lines, "checks N failed M" and exits.
 */
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define N 100

static void *keep[N];
static unsigned long checks, failed;

/* what the call gave back is right; the first failure is said */
static void expect(int ok, const char *what)
{
	checks++;
	if (!ok && !failed++)
		printf("check failed: %s\n", what);
}

static void expect_aligned(const char *what, unsigned long align)
{
	for (int i = 0; i < N; i++)
		expect(keep[i] && (uintptr_t)keep[i] % align == 0, what);
}

static void report(const char *fn, unsigned long long bytes, unsigned long long calls)
{
	printf("total %s %llu %llu\n", fn, bytes, calls);
}

static void release(void)
{
	int i;

	for (i = 0; i < N; i++) {
		free(keep[i]);
		keep[i] = NULL;
	}
}

static NOINLINE void f_malloc(void)
{
	for (int i = 0; i < N; i++)
		keep[i] = malloc(100);
	expect_aligned("malloc", 16);
	report("f_malloc", N * 100, N);
}

static NOINLINE void f_calloc(void)
{
	for (int i = 0; i < N; i++)
		keep[i] = calloc(10, 30);
	expect_aligned("calloc", 16);
	for (int i = 0; i < N && keep[i]; i++)
		for (int j = 0; j < 300; j++)
			expect(!((const char *)keep[i])[j], "calloc zeroed");
	report("f_calloc", N * 300, N);
}

static NOINLINE void f_realloc_null(void)
{
	for (int i = 0; i < N; i++)
		keep[i] = realloc(NULL, 200);
	expect_aligned("realloc(NULL)", 16);
	report("f_realloc_null", N * 200, N);
}

/* grows blocks that glibc mmapped: it allocates the new one with its own malloc */
static NOINLINE void f_realloc_mmapped(void **blocks)
{
	for (int i = 0; i < 10; i++) {
		blocks[i] = realloc(blocks[i], 512 * 1024);
		for (int j = 0; blocks[i] && j < 256 * 1024; j += 4096)
			expect(((unsigned char *)blocks[i])[j] == (unsigned char)(i + j / 4096),
			       "realloc kept the contents");
	}
	report("f_realloc_mmapped", 10 * 512 * 1024, 10);
}

static NOINLINE void f_reallocarray(void)
{
	for (int i = 0; i < N; i++)
		keep[i] = reallocarray(NULL, 20, 20);
	expect_aligned("reallocarray", 16);
	report("f_reallocarray", N * 400, N);
}

static NOINLINE void f_memalign16(void)
{
	for (int i = 0; i < N; i++)
		keep[i] = memalign(16, 160);
	expect_aligned("memalign(16)", 16);
	report("f_memalign16", N * 160, N);
}

static NOINLINE void f_posix_memalign(void)
{
	for (int i = 0; i < N; i++)
		if (posix_memalign(&keep[i], 16, 240))
			abort();
	expect_aligned("posix_memalign(16)", 16);
	report("f_posix_memalign", N * 240, N);
}

static NOINLINE void f_aligned_alloc(void)
{
	for (int i = 0; i < N; i++)
		keep[i] = aligned_alloc(256, 512);
	expect_aligned("aligned_alloc(256)", 256);
	report("f_aligned_alloc", N * 512, N);
}

static NOINLINE void f_valloc(void)
{
	for (int i = 0; i < N; i++)
		keep[i] = valloc(1000);
	expect_aligned("valloc", (unsigned long)sysconf(_SC_PAGESIZE));
	report("f_valloc", N * 1000, N);
}

/* glibc's (and the malloc replacements'); musl has no pvalloc */
#ifdef __GLIBC__
static NOINLINE void f_pvalloc(void)
{
	long page = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < N; i++)
		keep[i] = pvalloc(1000);
	expect_aligned("pvalloc", (unsigned long)page);
	report("f_pvalloc", (unsigned long long)N * (unsigned long long)page, N);
}
#else
static void f_pvalloc(void)
{
}
#endif

static NOINLINE void make_mmapped(void **blocks)
{
	for (int i = 0; i < 10; i++) {
		blocks[i] = malloc(256 * 1024);
		/* a byte a page, for f_realloc_mmapped to find again */
		for (int j = 0; blocks[i] && j < 256 * 1024; j += 4096)
			((unsigned char *)blocks[i])[j] = (unsigned char)(i + j / 4096);
	}
	report("make_mmapped", 10 * 256 * 1024, 10);
}

int main(void)
{
	void *blocks[10];

	/* stdout buffers until exit: no allocation of stdio inside the measured functions */
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	ready_then_wait(stderr);

	f_malloc(), release();
	f_calloc(), release();
	f_realloc_null(), release();
	f_reallocarray(), release();
	f_memalign16(), release();
	f_posix_memalign(), release();
	f_aligned_alloc(), release();
	f_valloc(), release();
	f_pvalloc(), release();
	make_mmapped(blocks);
	f_realloc_mmapped(blocks);
	for (int i = 0; i < 10; i++)
		free(blocks[i]);
	printf("checks %lu failed %lu\n", checks, failed);
	return 0;
}
