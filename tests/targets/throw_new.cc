// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Exceptions through allocator and callback frames, which a return probe
 * would turn into std::terminate.  Each round:
 *   throw_new   new char[2^47] fails with std::bad_alloc, caught here
 *               (mode "nothrow": new (std::nothrow) and the throw is ours,
 *               for allocators that abort instead of throwing, as
 *               mimalloc's C build does);
 *   keep_new    new char[96], kept;        churn_new   new char[200], deleted;
 *   in_visit    libcvisit's visit() (plain C) calls back a C++ function
 *               that allocates new char[64] and throws on the last item;
 *   in_qsort    glibc's qsort with a comparator that allocates new char[32]
 *               and throws after 3 comparisons.
 * Prints "pid N ready", waits for SIGUSR1, runs, prints "caught N" (the
 * exceptions it caught, which must equal 3 per round), "total FN ALLOC LIVE"
 * for the functions above, "total SPAN ALLOC" for the callbacks' bytes, and
 * exits 0.
 *   throw_new [ROUNDS [nothrow]]
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "ready.h"

extern "C" void visit(void **items, size_t n, void (*cb)(void *));

#define NOINLINE __attribute__((noipa))

static volatile size_t big = 1ULL << 47;
static volatile unsigned long sink;
static std::vector<char *> kept;
static unsigned long visited, compared;

struct stop {};

static NOINLINE void throw_new(bool nothrow)
{
	if (!nothrow) {
		char *p = new char[big];

		sink += (unsigned long)p;
		delete[] p;
		return;
	}
	char *p = new (std::nothrow) char[big];

	if (!p)
		throw std::bad_alloc();
	delete[] p;
}

static NOINLINE void keep_new()
{
	kept.push_back(new char[96]);
}

static NOINLINE void churn_new()
{
	char *p = new char[200];

	sink += (unsigned long)p;
	delete[] p;
}

static NOINLINE void visited_cb(void *item)
{
	char *p = new char[64];

	sink += (unsigned long)p;
	delete[] p;
	if (++visited % 4 == 0)
		throw stop();
}

static NOINLINE int compare_cb(const void *a, const void *b)
{
	char *p = new char[32];

	sink += (unsigned long)p;
	delete[] p;
	if (++compared % 3 == 0)
		throw stop();
	return *(const int *)a - *(const int *)b;
}

static NOINLINE void in_visit()
{
	void *items[4] = { nullptr, nullptr, nullptr, nullptr };

	visit(items, 4, visited_cb);
}

static NOINLINE void in_qsort()
{
	int v[8] = { 5, 3, 7, 1, 8, 2, 6, 4 };

	qsort(v, 8, sizeof(v[0]), compare_cb);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000, r;
	bool nothrow = argc > 2 && !strcmp(argv[2], "nothrow");
	unsigned long caught = 0;

	kept.reserve(rounds);
	ready_then_wait(stdout);
	for (r = 0; r < rounds; r++) {
		try {
			throw_new(nothrow);
		} catch (std::bad_alloc &) {
			caught++;
		}
		keep_new();
		churn_new();
		try {
			in_visit();
		} catch (stop &) {
			caught++;
		}
		try {
			in_qsort();
		} catch (stop &) {
			caught++;
		}
	}
	printf("caught %lu\n", caught);
	printf("total keep_new %lu %lu\n", 96UL * rounds, 96UL * rounds);
	printf("total churn_new %lu 0\n", 200UL * rounds);
	printf("total visited_cb %lu 0\n", 64UL * visited);
	printf("total compare_cb %lu 0\n", 32UL * compared);
	printf("span visit %lu\n", 64UL * visited);
	printf("span qsort %lu\n", 32UL * compared);
	fflush(stdout);
	return 0;
}
