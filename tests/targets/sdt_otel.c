// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A program that speaks the otel_memory contract itself, written with
 * <sys/sdt.h> and not with libculpert-sampler: its own malloc wrapper
 * samples every call (weight = size, the contract at rate 1) and fires
 * otel_memory:alloc(ptr, size, weight) and otel_memory:free(ptr) behind
 * semaphores, as any other sampler following the contract would.  The
 * ground truth for profiling "some other sampler" through the contract:
 * f_small() and f_large() allocate known totals.
 *
 * Prints "pid N ready", waits for SIGUSR1, runs, prints
 * "total FN BYTES CALLS" per function and exits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "ready.h"

#define NOINLINE __attribute__((noipa))

__attribute__((used, section(".probes"))) volatile unsigned short otel_memory_alloc_semaphore;
__attribute__((used, section(".probes"))) volatile unsigned short otel_memory_free_semaphore;

static volatile unsigned long sink;

static NOINLINE void *traced_malloc(size_t size)
{
	void *p = malloc(size);

	if (p && otel_memory_alloc_semaphore)
		STAP_PROBE3(otel_memory, alloc, (uint64_t)(uintptr_t)p, (uint64_t)size, (uint64_t)size);
	return p;
}

static NOINLINE void traced_free(void *p)
{
	if (p && otel_memory_free_semaphore)
		STAP_PROBE1(otel_memory, free, (uint64_t)(uintptr_t)p);
	free(p);
}

static NOINLINE void f_small(void)
{
	for (int i = 0; i < 10000; i++) {
		char *p = traced_malloc(100);

		sink += (uintptr_t)p;
		traced_free(p);
	}
	printf("total f_small %d %d\n", 10000 * 100, 10000);
}

static NOINLINE void f_large(void)
{
	for (int i = 0; i < 100; i++) {
		char *p = traced_malloc(1 << 20);

		sink += (uintptr_t)p;
		traced_free(p);
	}
	printf("total f_large %d %d\n", 100 << 20, 100);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	ready_then_wait(stderr);
	f_small();
	f_large();
	return 0;
}
