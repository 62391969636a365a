// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A static program with no C library and no allocator at all: attach must
 * say that it found no allocator and where it looked.  Sleeps until killed.
 */
#include <sys/syscall.h>

#if defined(__aarch64__)
static long sys2(long nr, long a, long b)
{
	register long x8 __asm__("x8") = nr, x0 __asm__("x0") = a, x1 __asm__("x1") = b;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
	return x0;
}
#else
static long sys2(long nr, long a, long b)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return ret;
}
#endif

void _start(void)
{
	static const long ts[2] = { 3600, 0 };

	for (;;)
		sys2(SYS_nanosleep, (long)ts, 0);
}
