// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A static program with no C library and no allocator at all: attach must
 * say that it found no allocator and where it looked.  Sleeps until killed.
 */
#include <sys/syscall.h>

static long sys2(long nr, long a, long b)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return ret;
}

void _start(void)
{
	static const long ts[2] = { 3600, 0 };

	for (;;)
		sys2(SYS_nanosleep, (long)ts, 0);
}
