// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Libraries loaded and unloaded during a capture: CYCLES times dlopen the
 * next LIBRARY (round robin), call its dl_alloc(BYTES), dlclose it
 * (unmapped again: nothing keeps it loaded).  Prints "pid N ready", waits
 * for SIGUSR1, runs, prints "total LIBRARY BYTES" per library and "done",
 * then waits to be killed.
 *
 *   dlopen_cycles CYCLES BYTES LIBRARY...
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ready.h"

#define MAX_LIBS 8

int main(int argc, char **argv)
{
	unsigned long (*dl_alloc)(unsigned long);
	unsigned long cycles, bytes, total[MAX_LIBS] = { 0 }, i;
	int n_libs = argc - 3, l;
	void *h;

	if (argc < 4 || n_libs > MAX_LIBS || !(cycles = strtoul(argv[1], NULL, 10)) ||
	    !(bytes = strtoul(argv[2], NULL, 10))) {
		fprintf(stderr, "usage: dlopen_cycles CYCLES BYTES LIBRARY... (at most %d)\n",
			MAX_LIBS);
		return 2;
	}
	ready_then_wait(stdout);
	for (i = 0; i < cycles; i++) {
		l = (int)(i % (unsigned long)n_libs);
		h = dlopen(argv[3 + l], RTLD_NOW | RTLD_LOCAL);
		dl_alloc = h ? (unsigned long (*)(unsigned long))dlsym(h, "dl_alloc") : NULL;
		if (!dl_alloc) {
			fprintf(stderr, "dlopen %s: %s\n", argv[3 + l], dlerror());
			return 1;
		}
		total[l] += dl_alloc(bytes);
		if (dlclose(h)) {
			fprintf(stderr, "dlclose: %s\n", dlerror());
			return 1;
		}
	}
	for (l = 0; l < n_libs; l++)
		printf("total %s %lu\n", argv[3 + l], total[l]);
	printf("done\n");
	fflush(stdout);
	pause();
	return 0;
}
