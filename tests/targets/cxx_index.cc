// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A C++17 program built with frame pointers whose allocations go through
 * Debian's libstdc++ operator new (built without them): index_by<T>() and
 * load_names() call new themselves, from template and ordinary code.  Each
 * allocation's caller must be the leaf of its sample, and the stack go on
 * to main.  Prints "pid N ready", waits for SIGUSR1, runs, prints
 * "total FN BYTES CALLS" and exits.
 */
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "ready.h"

#define NOINLINE __attribute__((noipa))

static volatile unsigned long sink;

template <typename T>
NOINLINE std::unique_ptr<T[]> index_by(size_t n)
{
	std::unique_ptr<T[]> v(new T[n]);

	sink += reinterpret_cast<unsigned long>(v.get());
	return v;
}

struct name {
	char text[48];
};

static NOINLINE void load_names(std::vector<name *> &out, int n)
{
	for (int i = 0; i < n; i++)
		out.push_back(new name());
}

int main()
{
	std::vector<name *> names;
	const int rounds = 500;

	names.reserve(rounds * 4);
	ready_then_wait(stdout);
	for (int r = 0; r < rounds; r++) {
		auto a = index_by<long>(512);
		auto b = index_by<int>(256);
		load_names(names, 4);
	}
	for (name *n : names)
		delete n;
	std::printf("total index_by<long> %lu %d\n", 512UL * sizeof(long) * rounds, rounds);
	std::printf("total index_by<int> %lu %d\n", 256UL * sizeof(int) * rounds, rounds);
	std::printf("total load_names %lu %d\n", sizeof(name) * 4UL * rounds, 4 * rounds);
	return 0;
}
