// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every C++ operator new and delete, N calls each, checked (non-null,
 * aligned as asked, usable), and the failure paths: nothrow new of an
 * impossible size gives nullptr, plain new throws std::bad_alloc through
 * the sampler's frames (left out by `sampler_cxx nofail`).  What the sampler counted is read from its page
 * before and after each, as tests/targets/sampler_stat does:
 * "fn NAME calls C bytes B events E weight W" per operator (at rate 1,
 * events and weight must be calls and bytes), then "checks N failed M".
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>

#include <culpert/sampler.h>

#define N 200

static const culpert_sampler_page *page;
static unsigned long checks, failed;

static void expect(bool ok, const char *what)
{
	checks++;
	if (!ok && !failed++)
		std::printf("check failed: %s\n", what);
}

struct counts {
	unsigned long long events, weight;
};

static counts now()
{
	if (!page)
		return { 0, 0 };
	return { __atomic_load_n(&page->events, __ATOMIC_RELAXED),
		 __atomic_load_n(&page->weight_bytes, __ATOMIC_RELAXED) };
}

template <typename F> static void each(const char *name, unsigned long long size, F f)
{
	counts before = now(), after;

	for (int i = 0; i < N; i++)
		f();
	after = now();
	std::printf("fn %s calls %d bytes %llu events %llu weight %llu\n", name, N, N * size,
		    after.events - before.events, after.weight - before.weight);
}

struct alignas(128) wide {
	char bytes[384];
};

static void check(void *p, std::size_t align, const char *what)
{
	expect(p && reinterpret_cast<std::uintptr_t>(p) % align == 0, what);
	if (p)
		static_cast<volatile char *>(p)[0] = 1;
}

int main(int argc, char **argv)
{
	/* mimalloc's own operator new aborts rather than throw: `nofail` leaves that out */
	bool failures = !(argc > 1 && !std::strcmp(argv[1], "nofail"));

	page = static_cast<const culpert_sampler_page *>(dlsym(RTLD_DEFAULT, "culpert_sampler_page"));
	/* the messages below come from stdio: its buffer is allocated before the first count */
	std::printf("operator new and delete\n");
	each("new", 100, [] {
		char *p = new char[100];
		check(p, 16, "new[]");
		delete[] p;
	});
	each("new_scalar", sizeof(long), [] {
		long *p = new long(7);
		expect(p && *p == 7, "new long(7)");
		check(p, alignof(long), "new");
		delete p;
	});
	each("new_nothrow", 300, [] {
		char *p = new (std::nothrow) char[300];
		check(p, 16, "new nothrow");
		delete[] p;
	});
	each("new_aligned", sizeof(wide), [] {
		wide *w = new wide;
		check(w, 128, "new aligned");
		delete w;
	});
	each("new_aligned_array", 2 * sizeof(wide), [] {
		wide *w = new wide[2];
		check(w, 128, "new[] aligned");
		delete[] w;
	});
	each("new_aligned_nothrow", 1000, [] {
		void *p = ::operator new(1000, std::align_val_t(4096), std::nothrow);
		check(p, 4096, "new aligned nothrow");
		::operator delete(p, std::align_val_t(4096));
	});
	each("new_sized_delete", 64, [] {
		void *p = ::operator new(64);
		check(p, 16, "new for sized delete");
		::operator delete(p, 64);
	});
	/* not a "fn" line: the std::bad_alloc thrown is itself allocated (__cxa_allocate_exception) */
	for (int i = 0; failures && i < N; i++) {
		volatile std::size_t huge = std::size_t(1) << 62;
		char *p = new (std::nothrow) char[huge];
		bool threw = false;

		expect(!p, "nothrow new of 2^62 bytes is nullptr");
		try {
			p = new char[huge];
		} catch (const std::bad_alloc &) {
			threw = true;
		}
		expect(threw, "new of 2^62 bytes throws std::bad_alloc");
	}
	std::printf("checks %lu failed %lu\n", checks, failed);
	return failed != 0;
}
