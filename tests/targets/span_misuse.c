// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Span misuse that async code produces, then clean spans whose attribution
 * must be exact (the test profiles with --rate 1):
 *   1. exit of a span that is not on top (pops it and what is above it);
 *      then 1 MiB outside any span
 *   2. exit of an id never entered (ignored); then 2 MiB in span "s2"
 *   3. 40 nested spans, deeper than the 32 kept: 3 MiB at depth 40 go to the
 *      32nd; all 40 exited; then 4 MiB in span "after"
 *   4. "after" exited twice (the second ignored); then 5 MiB outside any span
 * Prints "pid N ready", waits for SIGUSR1, prints "total PATH BYTES".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <culpert/span.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define MiB (1024UL * 1024)
#define DEEP 40

static volatile unsigned long sink;

static NOINLINE void alloc_bytes(unsigned long total)
{
	unsigned long done = 0;

	while (done < total) {
		char *p = malloc(4096);

		sink += (unsigned long)p;
		free(p);
		done += 4096;
	}
}

int main(void)
{
	uint64_t outer, inner, s2, after, deep[DEEP];
	int i;

	ready_then_wait(stdout);

	outer = culpert_span_enter("outer", 0);
	inner = culpert_span_enter("inner", 0);
	culpert_span_exit(outer);
	alloc_bytes(1 * MiB);
	culpert_span_exit(inner);		/* already popped with outer: ignored */

	culpert_span_exit(0xdeadbeef);		/* never entered */
	s2 = culpert_span_enter("s2", 0);
	alloc_bytes(2 * MiB);
	culpert_span_exit(s2);

	for (i = 0; i < DEEP; i++)
		deep[i] = culpert_span_enter("deep", 0);
	alloc_bytes(3 * MiB);
	for (i = DEEP - 1; i >= 0; i--)
		culpert_span_exit(deep[i]);
	after = culpert_span_enter("after", 0);
	alloc_bytes(4 * MiB);
	culpert_span_exit(after);
	culpert_span_exit(after);
	alloc_bytes(5 * MiB);

	printf("total (no-span) %lu\n", 6 * MiB);
	printf("total s2 %lu\n", 2 * MiB);
	printf("total deep*32 %lu\n", 3 * MiB);
	printf("total after %lu\n", 4 * MiB);
	return 0;
}
