// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ground truth for --inuse.  Each function allocates in 64..1024-byte
 * blocks and keeps a known part alive:
 *   leak_early   8 MiB, all kept, allocated 3 s before everything else
 *   keep_all    32 MiB, all kept
 *   churn       32 MiB, all freed
 *   keep_half   64 MiB, every other block freed: 32 MiB kept
 *   grow        16 MiB, each block realloc'ed to twice its size: 32 MiB kept
 * Prints "pid N ready", waits for SIGUSR1, runs, prints
 * "total FN ALLOCATED LIVE", "since_leak_ns N" (from the end of leak_early
 * to this line: how old its blocks are at least, by then) and "done", then
 * sleeps until killed.  On SIGUSR2 it prints "ages since_leak_ns N
 * since_keep_ns M": from the end of leak_early and from the start of
 * keep_all to now (sent once a capture has ended: how old leak_early's
 * blocks are at least and keep_all's at most at its end).
 *   alloc_live [UNIT]    the sizes above in units of UNIT bytes, not MiB
 *                        (a small run for --rate 1, where every call counts)
 * Each function cycles through the 16 block sizes from the first, 8704 bytes
 * a cycle, and stops at or past its total: with a UNIT that is a multiple of
 * 1088 every total is whole cycles and the printed bytes are exact; with MiB
 * they overshoot by less than 1 KiB.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define MiB (1024UL * 1024)

static volatile unsigned long sink;

struct blocks {
	void **p;
	size_t *size;
	size_t n;
};

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static size_t block_size(size_t i)
{
	return 64 * (1 + i % 16);
}

static void reserve(struct blocks *b, unsigned long total)
{
	/* bookkeeping outside the measured functions */
	size_t max = total / 64 + 1;

	b->p = calloc(max, sizeof(void *));
	b->size = calloc(max, sizeof(size_t));
	b->n = 0;
}

static NOINLINE void leak_early(struct blocks *b, unsigned long total)
{
	unsigned long done = 0;

	while (done < total) {
		size_t sz = block_size(b->n);

		b->p[b->n] = malloc(sz);
		b->size[b->n++] = sz;
		done += sz;
	}
}

static NOINLINE void keep_all(struct blocks *b, unsigned long total)
{
	unsigned long done = 0;

	while (done < total) {
		size_t sz = block_size(b->n);

		b->p[b->n] = malloc(sz);
		b->size[b->n++] = sz;
		done += sz;
	}
}

static NOINLINE void churn(unsigned long total)
{
	unsigned long done = 0, i = 0;

	while (done < total) {
		size_t sz = block_size(i++);
		char *p = malloc(sz);

		sink += (unsigned long)p;
		free(p);
		done += sz;
	}
}

static NOINLINE unsigned long keep_half(struct blocks *b, unsigned long total)
{
	unsigned long done = 0, kept = 0;
	size_t i;

	while (done < total) {
		size_t sz = block_size(b->n);

		b->p[b->n] = malloc(sz);
		b->size[b->n++] = sz;
		done += sz;
	}
	for (i = 0; i < b->n; i++) {
		if (i % 2) {
			free(b->p[i]);
			b->p[i] = NULL;
		} else {
			kept += b->size[i];
		}
	}
	return kept;
}

/* realloc of a live block: a free plus a new allocation of the new size */
static NOINLINE unsigned long grow(struct blocks *b, unsigned long total)
{
	unsigned long done = 0, kept = 0;
	size_t i;

	while (done < total) {
		size_t sz = block_size(b->n);

		b->p[b->n] = malloc(sz);
		b->size[b->n++] = sz;
		done += sz;
	}
	for (i = 0; i < b->n; i++) {
		b->p[i] = realloc(b->p[i], 2 * b->size[i]);
		kept += 2 * b->size[i];
	}
	return kept;
}

static volatile sig_atomic_t asked;

static void ask(int sig)
{
	asked = 1;
}

int main(int argc, char **argv)
{
	unsigned long u = argc > 1 ? strtoul(argv[1], NULL, 0) : MiB;
	struct blocks leak, all, half, grown;
	unsigned long half_kept, grow_kept;
	unsigned long long leak_end, keep_start;

	if (!u)
		return 2;
	reserve(&leak, 8 * u);
	reserve(&all, 32 * u);
	reserve(&half, 64 * u);
	reserve(&grown, 16 * u);
	ready_then_wait(stdout);

	leak_early(&leak, 8 * u);
	leak_end = mono_ns();
	sleep(3);
	keep_start = mono_ns();
	keep_all(&all, 32 * u);
	churn(32 * u);
	half_kept = keep_half(&half, 64 * u);
	grow_kept = grow(&grown, 16 * u);
	/* realloc moved blocks: alloc counts the malloc'ed and the realloc'ed bytes */
	printf("total leak_early %lu %lu\n", 8 * u, 8 * u);
	printf("total keep_all %lu %lu\n", 32 * u, 32 * u);
	printf("total churn %lu 0\n", 32 * u);
	printf("total keep_half %lu %lu\n", 64 * u, half_kept);
	printf("total grow %lu %lu\n", 16 * u + grow_kept, grow_kept);
	printf("since_leak_ns %llu\n", mono_ns() - leak_end);
	printf("done\n");
	fflush(stdout);
	signal(SIGUSR2, ask);
	for (;;) {
		pause();
		if (!asked)
			continue;
		asked = 0;
		printf("ages since_leak_ns %llu since_keep_ns %llu\n", mono_ns() - leak_end,
		       mono_ns() - keep_start);
		fflush(stdout);
	}
}
