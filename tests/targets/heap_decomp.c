// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Known amounts of each part of the anonymous RSS, for capture's
 * decomposition (tests/bpf/test_capture.sh):
 *
 *   heap_decomp BEFORE HOLES THREAD MMAPS OTHER [tick]
 *
 * Before attach: BEFORE MiB in 4 KiB blocks, kept, and OTHER MiB of an
 * anonymous mapping of its own (not malloc's), every page touched; then
 * "pid N ready", and SIGUSR1 is waited for.  During the capture:
 *   - a thread allocates THREAD MiB in 4 KiB blocks in an arena of its own
 *     and stays, so its arena keeps them (it comes first: starting it
 *     mallocs a few small blocks in the main arena, which must not split
 *     the holes below);
 *   - 2 * HOLES MiB in 4 KiB blocks, every other one freed: HOLES MiB stay
 *     live, and as many chunks lie free in the main arena's bins (each
 *     freed block sits between two kept ones, so none coalesces, and 4 KiB
 *     is above what tcaches and fastbins take);
 *   - MMAPS blocks of 1 MiB (above the mmap threshold: one mapping each).
 * Every block is written.  Then "live BYTES" (requested bytes allocated
 * since SIGUSR1 and still live), "holes N" (4 KiB chunks freed), "done",
 * and it sleeps until killed.  With "tick" it allocates and frees 1000
 * bytes every 20 ms meanwhile, so that libculpert-sampler.so, which
 * refreshes the allocator's figures only on a sampled call, keeps them
 * fresh; glibc serves that block from the thread's tcache, where one was
 * put before attach, so the bins stay as they are.  It prints "fresh" once
 * the figures describe the state after "done": at once without the sampler
 * (culpert-bpf reads the allocator itself), else on the first refresh of
 * the sampler's page (culpert_sampler_page) after "done".
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <culpert/sampler.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define BLOCK 4096UL
#define MIB (1UL << 20)

static pthread_barrier_t filled;

static NOINLINE void *block(unsigned long size)
{
	char *p = malloc(size);

	if (!p)
		exit(1);
	memset(p, 1, size);
	return p;
}

/* mib MiB in kept 4 KiB blocks */
static NOINLINE void fill(unsigned long mib)
{
	unsigned long i;

	for (i = 0; i < mib * MIB / BLOCK; i++)
		block(BLOCK);
}

/* 2n blocks, the even ones freed: n holes between n live blocks */
static NOINLINE unsigned long holes(unsigned long mib)
{
	unsigned long i, n = mib * MIB / BLOCK;
	void **v = mmap(NULL, 2 * n * sizeof(*v), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	/* the array is not malloc's: it would be one more block of its own */
	if (v == MAP_FAILED)
		exit(1);
	for (i = 0; i < 2 * n; i++)
		v[i] = block(BLOCK);
	for (i = 0; i < 2 * n; i += 2)
		free(v[i]);
	munmap(v, 2 * n * sizeof(*v));
	return n;
}

static void *thread_main(void *arg)
{
	struct timespec hour = { 3600, 0 };

	fill((unsigned long)arg);
	pthread_barrier_wait(&filled);
	for (;;)
		nanosleep(&hour, NULL);
	return NULL;
}

/* a small block in and out of the tcache; noipa: the compiler must not drop the pair */
static NOINLINE void tick(void)
{
	free(block(1000));
}

static void other(unsigned long mib)
{
	char *p = mmap(NULL, mib * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	if (p == MAP_FAILED)
		exit(1);
	memset(p, 1, mib * MIB);
}

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* the allocator's figures are from after DONE_NS: the sampler refreshed its page since */
static bool fresh(const struct culpert_sampler_page *page, unsigned long long done_ns)
{
	return !page || __atomic_load_n(&page->allocator_stats.refreshed_ns, __ATOMIC_ACQUIRE) >
		done_ns;
}

int main(int argc, char **argv)
{
	const struct culpert_sampler_page *page = dlsym(RTLD_DEFAULT, "culpert_sampler_page");
	unsigned long long done_ns;
	bool said = false;
	struct timespec hour = { 3600, 0 }, pause = { 0, 20 * 1000 * 1000 };
	unsigned long hole_mib, thread_mib, mmaps, i, n;
	bool ticks = argc > 6 && !strcmp(argv[6], "tick");
	pthread_t t;

	if (argc < 6)
		return 2;
	fill(strtoul(argv[1], NULL, 10));
	hole_mib = strtoul(argv[2], NULL, 10);
	thread_mib = strtoul(argv[3], NULL, 10);
	mmaps = strtoul(argv[4], NULL, 10);
	other(strtoul(argv[5], NULL, 10));
	pthread_barrier_init(&filled, NULL, 2);
	tick();
	ready_then_wait(stdout);
	if (pthread_create(&t, NULL, thread_main, (void *)thread_mib))
		return 1;
	pthread_barrier_wait(&filled);
	n = holes(hole_mib);
	for (i = 0; i < mmaps; i++)
		block(MIB);
	printf("live %lu\nholes %lu\ndone\n", n * BLOCK + mmaps * MIB + thread_mib * MIB, n);
	fflush(stdout);
	done_ns = mono_ns();
	for (;;) {
		if (ticks)
			tick();
		if (ticks && !said && fresh(page, done_ns)) {
			printf("fresh\n");
			fflush(stdout);
			said = true;
		}
		nanosleep(ticks ? &pause : &hour, NULL);
	}
}
