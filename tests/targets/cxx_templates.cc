// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Callsites with the long names C++ templates give: an index of
 * unordered_map<string, vector<string>> filled by a function template, whose
 * demangled name spells every template argument out (hundreds of
 * characters), and the map's own node allocation.  Prints "pid N ready",
 * waits for SIGUSR1, inserts 20000 keys of 2 values each, prints "done" and
 * exits.
 */
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "ready.h"
}

template <typename K, typename V>
__attribute__((noipa)) void fill_index(std::unordered_map<K, V> &index, int n)
{
	for (int i = 0; i < n; i++) {
		auto &v = index[K("key-number-") + std::to_string(i) + K(" with a long tail")];

		v.push_back(K("first value of a long enough string"));
		v.push_back(K("second value of a long enough string"));
	}
}

int main()
{
	std::unordered_map<std::string, std::vector<std::string>> index;

	ready_then_wait(stdout);
	fill_index(index, 20000);
	std::printf("done %zu\n", index.size());
	return 0;
}
