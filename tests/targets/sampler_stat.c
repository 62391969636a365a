// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ground truth for libculpert-sampler.so with no profiler: workloads of
 * known calls and bytes, and what the sampler counted meanwhile, read from
 * the counters it publishes (culpert_sampler_page, a documented dynamic
 * symbol) before and after each workload, so what the C library allocates
 * for itself at start-up or for stdio is not mixed in.
 *
 *   sampler_stat exact            every entry point, N calls each, one line each:
 *                                 "fn NAME calls C bytes B events E weight W"
 *   sampler_stat small GIB        GIB GiB in blocks of 16 B .. 4 KiB
 *   sampler_stat large GIB        GIB GiB in blocks of 64 KiB .. 4 MiB, and 16 MiB ones
 *   sampler_stat threads N KIB    N threads one after another, each allocating KIB KiB
 *                                 in 256-byte blocks (a thread's first draw decides
 *                                 whether it is sampled at all)
 *
 * Every block is checked as alloc_exact checks them (non-NULL, aligned, calloc
 * zeroed, realloc kept the contents).  Prints "truth calls C bytes B", then
 * "sampler events E points P weight W" (or "sampler absent"), the
 * allocator statistics of the page ("allocator refreshed NS allocated A
 * resident R mapped M"), then "checks N failed M".  No stdio: it allocates.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <culpert/sampler.h>

#define NOINLINE __attribute__((noipa))
#define N 200

struct counts {
	unsigned long long events, points, weight;
};

static const struct culpert_sampler_page *page;
static unsigned long long calls, bytes, checks, failed;
static volatile unsigned long sink;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && write(1, line, (size_t)n) < 0)
		_exit(3);
}

/* what the call gave back is right; the first failure of each kind is said */
static void expect(int ok, const char *what)
{
	static const char *said[16];
	int i;

	checks++;
	if (ok)
		return;
	failed++;
	for (i = 0; i < 16 && said[i] && said[i] != what; i++)
		;
	if (i < 16 && !said[i]) {
		said[i] = what;
		out("check failed: %s\n", what);
	}
}

static struct counts now(void)
{
	struct counts c = { 0 };

	if (page) {
		c.events = __atomic_load_n(&page->events, __ATOMIC_RELAXED);
		c.points = __atomic_load_n(&page->points, __ATOMIC_RELAXED);
		c.weight = __atomic_load_n(&page->weight_bytes, __ATOMIC_RELAXED);
	}
	return c;
}

static void *got(void *p, size_t size, size_t align, const char *what)
{
	expect(p && (uintptr_t)p % align == 0, what);
	if (p && size) {
		/* the block is the program's: writable to its end */
		((volatile unsigned char *)p)[0] = 1;
		((volatile unsigned char *)p)[size - 1] = 1;
	}
	calls++;
	bytes += size;
	return p;
}

/* --- exact: every entry point, alone --- */

static void fn_line(const char *name, struct counts before, unsigned long long c0,
		    unsigned long long b0)
{
	struct counts after = now();

	out("fn %s calls %llu bytes %llu events %llu weight %llu\n", name, calls - c0, bytes - b0,
	    after.events - before.events, after.weight - before.weight);
}

#define EACH(name, body)									\
	do {											\
		struct counts b_ = now();							\
		unsigned long long c_ = calls, y_ = bytes;					\
		for (int i = 0; i < N; i++) {							\
			body;									\
		}										\
		fn_line(name, b_, c_, y_);							\
	} while (0)

static NOINLINE void run_exact(void)
{
	/* sizes the compiler cannot see, so it cannot warn that they fail */
	volatile size_t huge = (size_t)1 << 62, big = (size_t)1 << 40;
	long page_size = sysconf(_SC_PAGESIZE);
	static void *keep[N];
	void *p;

	EACH("malloc", free(got(malloc(100 + i), 100 + i, 16, "malloc")));
	EACH("malloc0", free(got(malloc(0), 0, 1, "malloc(0)")));
	EACH("calloc", {
		unsigned char *c = calloc(10, 30 + i);

		for (int j = 0; c && j < 10 * (30 + i); j++)
			expect(!c[j], "calloc zeroed");
		free(got(c, 10 * (30 + i), 16, "calloc"));
	});
	EACH("realloc_null", keep[i] = got(realloc(NULL, 200), 200, 16, "realloc(NULL)"));
	EACH("realloc_grow", {
		memset(keep[i], i, 200);
		p = realloc(keep[i], 100000);
		for (int j = 0; p && j < 200; j++)
			expect(((unsigned char *)p)[j] == (unsigned char)i, "realloc kept");
		keep[i] = got(p, 100000, 16, "realloc grow");
	});
	for (int i = 0; i < N; i++)
		free(keep[i]);
	EACH("reallocarray", free(got(reallocarray(NULL, 20, 20), 400, 16, "reallocarray")));
	EACH("posix_memalign", {
		p = NULL;
		expect(!posix_memalign(&p, 64, 240), "posix_memalign returned 0");
		free(got(p, 240, 64, "posix_memalign(64)"));
	});
	EACH("aligned_alloc", free(got(aligned_alloc(256, 512), 512, 256, "aligned_alloc(256)")));
	EACH("memalign", free(got(memalign(4096, 160), 160, 4096, "memalign(4096)")));
	EACH("valloc", free(got(valloc(1000), 1000, (size_t)page_size, "valloc")));
	EACH("pvalloc", {
		void *v = pvalloc(1000);

		expect(malloc_usable_size(v) >= (size_t)page_size, "pvalloc: a whole page");
		free(got(v, (size_t)page_size, (size_t)page_size, "pvalloc"));
	});
	EACH("usable_size", {
		void *u = got(malloc(333), 333, 16, "malloc for malloc_usable_size");

		expect(malloc_usable_size(u) >= 333, "malloc_usable_size");
		free(u);
	});
	/* what is not allocated is not counted: the failures, and free(NULL) */
	EACH("failures", {
		p = NULL;
		expect(!malloc(huge), "malloc(2^62) fails");
		expect(!calloc(big, big), "calloc overflow fails");
		expect(!reallocarray(NULL, big, big), "reallocarray overflow");
		expect(posix_memalign(&p, 24, 16) != 0, "posix_memalign(24) is EINVAL");
		free(NULL);
	});
}

/* --- the statistics --- */

static NOINLINE void run_small(unsigned long long total)
{
	unsigned int seed = 1;

	while (bytes < total) {
		size_t size = (size_t)16 << (rand_r(&seed) % 9);
		unsigned char *p = got(malloc(size), size, 16, "malloc");

		sink += p[0];
		free(p);
	}
}

static NOINLINE void run_large(unsigned long long total)
{
	unsigned int seed = 2;
	int i = 0;

	while (bytes < total) {
		/* every 16th a block of 256 rates at 64 KiB: its points are counted by expectation */
		size_t size = ++i % 16 ? ((size_t)64 << 10) << (rand_r(&seed) % 7) : (size_t)16 << 20;

		free(got(malloc(size), size, 16, "malloc large"));
	}
}

static unsigned long long thread_kib;

static void *thread_body(void *arg)
{
	unsigned long long n = thread_kib * 1024 / 256;
	unsigned long long i;

	for (i = 0; i < n; i++) {
		unsigned char *p = malloc(256);

		/* counted by the main thread: only one thread runs at a time */
		expect(p != NULL, "malloc in a thread");
		sink += (uintptr_t)p;
		free(p);
	}
	calls += n;
	bytes += n * 256;
	return NULL;
}

static NOINLINE void run_threads(unsigned long n)
{
	pthread_t t;

	for (unsigned long i = 0; i < n; i++) {
		if (pthread_create(&t, NULL, thread_body, NULL)) {
			expect(0, "pthread_create");
			return;
		}
		pthread_join(t, NULL);
	}
}

static void usage(void)
{
	out("usage: sampler_stat exact | small GIB | large GIB | threads N KIB\n");
	_exit(2);
}

int main(int argc, char **argv)
{
	struct counts before, after;
	pthread_t t;

	if (argc < 2)
		usage();
	page = dlsym(RTLD_DEFAULT, "culpert_sampler_page");
	if (page && page->magic != CULPERT_SAMPLER_MAGIC)
		page = NULL;
	if (!strcmp(argv[1], "threads")) {
		if (argc != 4)
			usage();
		/* a first thread outside the count: later ones reuse its cached stack and TLS */
		thread_kib = 0;
		pthread_create(&t, NULL, thread_body, NULL);
		pthread_join(t, NULL);
		thread_kib = strtoull(argv[3], NULL, 10);
	}
	before = now();
	if (!strcmp(argv[1], "exact") && argc == 2)
		run_exact();
	else if (!strcmp(argv[1], "small") && argc == 3)
		run_small(strtoull(argv[2], NULL, 10) << 30);
	else if (!strcmp(argv[1], "large") && argc == 3)
		run_large(strtoull(argv[2], NULL, 10) << 30);
	else if (!strcmp(argv[1], "threads"))
		run_threads(strtoul(argv[2], NULL, 10));
	else
		usage();
	after = now();
	out("truth calls %llu bytes %llu\n", calls, bytes);
	if (page)
		out("sampler events %llu points %llu weight %llu\n", after.events - before.events,
		    after.points - before.points, after.weight - before.weight);
	else
		out("sampler absent\n");
	if (page)
		out("allocator refreshed %llu allocated %llu resident %llu mapped %llu\n",
		    (unsigned long long)page->allocator_stats.refreshed_ns,
		    (unsigned long long)page->allocator_stats.allocated,
		    (unsigned long long)page->allocator_stats.resident,
		    (unsigned long long)page->allocator_stats.mapped);
	out("checks %llu failed %llu\n", checks, failed);
	return failed != 0;
}
