// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Span names the program itself never reads: they sit alone in a 64 KiB
 * window of their own (the kernel's fault-around maps at most the 64 KiB
 * window of a faulting address), and culpert_span_enter_n() takes their
 * length, so no strlen() touches them.  Their page is not in the process's
 * page tables when the span_enter probe reads the name, which
 * bpf_probe_read_user() cannot fault in.  Each span allocates 1 MiB in
 * 4 KiB blocks.  Prints "pid N ready", waits for SIGUSR1, runs, prints
 * "total NAME BYTES" (reading the names only then) and exits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <culpert/span.h>
#include "ready.h"

#define WINDOW 65536
#define MiB (1024UL * 1024)

__attribute__((section(".span_cold"), aligned(WINDOW), used))
static const char cold_names[WINDOW] = "cold_alpha\0cold_beta\0cold_gamma";

static const struct {
	size_t off, len;
} spans[] = { { 0, 10 }, { 11, 9 }, { 21, 10 } };

static volatile unsigned long sink;

static __attribute__((noipa)) void alloc_in(const char *name, size_t len)
{
	uint64_t id = culpert_span_enter_n(name, len, 0);

	for (unsigned long done = 0; done < MiB; done += 4096) {
		char *p = malloc(4096);

		sink += (unsigned long)p;
		free(p);
	}
	culpert_span_exit(id);
}

int main(void)
{
	size_t i, r;

	ready_then_wait(stdout);
	for (r = 0; r < 4; r++)
		for (i = 0; i < sizeof(spans) / sizeof(spans[0]); i++)
			alloc_in(cold_names + spans[i].off, spans[i].len);
	for (i = 0; i < sizeof(spans) / sizeof(spans[0]); i++)
		printf("total %.*s %lu\n", (int)spans[i].len, cold_names + spans[i].off, 4 * MiB);
	return 0;
}
