// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ground truth for symbolization of C++: an allocation reached through two
 * functions inlined into a third (a class template member and a namespace
 * function), so its location has three frames, innermost first:
 *   shop::Pool<char>::grab(unsigned long)  at the line marked @grab
 *   shop::make_buffer(unsigned long)       at the line marked @make_buffer
 *   shop::handle_order(int)                at the line marked @handle_order
 * and an operator new from a member function.  Prints "pid N ready", waits
 * for SIGUSR1, allocates, prints "done", and waits for SIGUSR1 again so the
 * profiler can detach while the process is still alive.
 *
 * Built twice: sym_cpp, and sym_cpp_rebuild with -DREBUILD, the "same
 * program, rebuilt" whose build ID differs.
 *
 * The start protocol is ready.h's, copied: included, its ready_then_wait is
 * inlined into main, and binutils 2.40's addr2line -i names that inline
 * frame "main" (eu-addr2line: ready_then_wait inlined in main), so the
 * addr2line comparisons of tests/cli/test_symbolize.sh would differ on a
 * frame they are not about.
 */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#define NOINLINE __attribute__((noipa))
#define ALWAYS_INLINE __attribute__((always_inline)) inline

#ifdef REBUILD
#define EXTRA 1
#else
#define EXTRA 0
#endif

static volatile unsigned long sink;

namespace shop {

template <typename T> struct Pool {
	ALWAYS_INLINE T *grab(size_t n)
	{
		return static_cast<T *>(malloc(n * sizeof(T) + EXTRA)); /* @grab */
	}
};

ALWAYS_INLINE char *make_buffer(size_t n)
{
	Pool<char> pool;

	return pool.grab(n); /* @make_buffer */
}

struct Order {
	long id;
	char note[56];
};

class Cart {
public:
	NOINLINE void add_items(int n)
	{
		for (int i = 0; i < n; i++) {
			Order *o = new Order();

			sink += (unsigned long)o;
			delete o;
		}
	}
};

NOINLINE void handle_order(int n)
{
	for (int i = 0; i < n; i++) {
		char *b = make_buffer(100 + i); /* @handle_order */

		sink += (unsigned long)b;
		free(b);
	}
}

} // namespace shop

int main()
{
	shop::Cart cart;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
	shop::handle_order(100);
	cart.add_items(50);
	printf("done\n");
	fflush(stdout);
	sigwait(&set, &sig);
	return 0;
}
