// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An allocator loaded after the profiler picked the process up: says
 * "pid N ready", waits for SIGUSR1, dlopen()s LIBRARY (a prefixed
 * allocator such as libjeprefix.so) and says "loaded"; at the next
 * SIGUSR1 je_live() allocates BYTES through PREFIXmalloc in 1 KiB blocks
 * and keeps them, then it prints "total je_live BYTES BYTES" and "done"
 * and waits to be killed.
 *   dlopen_alloc LIBRARY PREFIX BYTES
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))

static volatile unsigned long sink;

static NOINLINE void je_live(void *(*fn)(size_t), unsigned long bytes)
{
	unsigned long i;

	for (i = 0; i < bytes / 1024; i++)
		sink += (unsigned long)fn(1024);
}

int main(int argc, char **argv)
{
	void *(*fn)(size_t);
	char name[64];
	sigset_t set;
	void *lib;
	int sig;

	if (argc != 4) {
		fprintf(stderr, "usage: dlopen_alloc LIBRARY PREFIX BYTES\n");
		return 2;
	}
	ready_then_wait(stdout);
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	snprintf(name, sizeof(name), "%smalloc", argv[2]);
	fn = lib ? (void *(*)(size_t))dlsym(lib, name) : NULL;
	if (!fn) {
		fprintf(stderr, "dlopen_alloc: %s\n", dlerror());
		return 1;
	}
	printf("loaded\n");
	fflush(stdout);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigwait(&set, &sig);
	je_live(fn, strtoul(argv[3], NULL, 0));
	printf("total je_live %s %s\ndone\n", argv[3], argv[3]);
	fflush(stdout);
	for (;;)
		pause();
}
