// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A process whose memory is known: [heap] grown by exactly HEAP_MIB with
 * sbrk() and an anonymous mapping of ANON_MIB, both touched page by page so
 * they are resident.  Nothing else allocates: no malloc, no stdio buffers.
 * The anonymous mapping sits between two PROT_NONE guard pages, so the kernel
 * cannot merge it with a neighbouring anonymous mapping (ld.so's TLS block,
 * say) and its smaps entry is exactly ANON_MIB.
 * Prints "heap <start> <bytes>", "anon <start> <bytes>" and "pid N ready".
 *
 *   mem_known           then waits until killed
 *   mem_known grow      says ready through ready.h (stdio) and on SIGUSR1 maps
 *                       and touches 1 MiB after 1 MiB, for driving its cgroup
 *                       against memory.max
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ready.h"

#define MIB (1024UL * 1024)
#define HEAP_MIB 16
#define ANON_MIB 48

static void say(const char *fmt, unsigned long a, unsigned long b)
{
	char buf[128];
	int n = snprintf(buf, sizeof(buf), fmt, a, b);

	if (write(STDOUT_FILENO, buf, (size_t)n) != n)
		_exit(1);
}

/* len bytes of read-write anonymous memory that no other mapping merges into */
static char *map_unmergeable(unsigned long len)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, len + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || mprotect(p + page, len, PROT_READ | PROT_WRITE))
		return MAP_FAILED;
	return p + page;
}

static void touch(char *p, unsigned long len)
{
	unsigned long i;

	for (i = 0; i < len; i += 4096)
		p[i] = 1;
}

int main(int argc, char **argv)
{
	int grow = argc > 1 && !strcmp(argv[1], "grow");
	char *heap, *anon;

	heap = sbrk(HEAP_MIB * MIB);
	anon = map_unmergeable(ANON_MIB * MIB);
	if (heap == (void *)-1 || anon == MAP_FAILED)
		return 1;
	touch(heap, HEAP_MIB * MIB);
	touch(anon, ANON_MIB * MIB);
	say("heap %lx %lu\n", (unsigned long)heap, HEAP_MIB * MIB);
	say("anon %lx %lu\n", (unsigned long)anon, ANON_MIB * MIB);
	if (!grow) {
		say("pid %lu ready\n", (unsigned long)getpid(), 0);
		for (;;)
			pause();
	}
	/* SIGUSR1 blocked before its ready line, which is its only one */
	ready_then_wait(stdout);
	for (;;) {
		char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 1;
		touch(p, MIB);
	}
}
