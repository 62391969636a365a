/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libculpert-sampler.so: an in-process heap sampler that speaks the
 * OpenTelemetry `otel_memory` USDT contract.
 *
 *   LD_PRELOAD=/usr/local/lib/libculpert-sampler.so ./service
 *   LD_PRELOAD="libculpert-sampler.so libjemalloc.so.2" ./service   # over jemalloc
 *   cc ... -lculpert-sampler (before -ljemalloc/-lmimalloc, if any)
 *
 * It wraps malloc, calloc, realloc, reallocarray, free, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc, malloc_usable_size and the C++
 * operator new/delete family around the next allocator in the lookup order
 * (dlsym(RTLD_NEXT): glibc, jemalloc, mimalloc, tcmalloc ...).  Nothing
 * needs to include this header; it documents the contract and the page
 * below for the programs that read them.
 *
 * Sampling: every thread counts down the bytes it allocates.  Each byte is
 * a sampling point with probability 1/rate (a Bernoulli process over the
 * bytes, the discrete form of the Poisson process culpert-bpf's BPF side
 * runs), so the distance to the next point is a geometric draw with mean
 * `rate`, the first one drawn when the thread first allocates.  An
 * allocation whose bytes hold at least one point is sampled.
 *
 * USDT probes, provider "otel_memory", one site each, a 5-byte NOP
 * (x86-64: nopl 0x0(%rax,%rax,1)) behind a semaphore:
 *
 *   otel_memory:alloc(void *ptr, u64 size, u64 weight)   "8@%rdi 8@%rsi 8@%rdx"
 *   otel_memory:free(void *ptr)                          "8@%rdi"
 *
 * The arguments sit in the registers of the SysV calling convention (arm64:
 * x0, x1, x2), so a reader may take them from pt_regs without decoding the
 * note's argument string.  `size` is the size the program asked for
 * (calloc: nmemb * size, pvalloc: rounded up to a page).  `weight` is
 * nsamples * rate, nsamples being the number of sampling points in the
 * block (1 for a block much smaller than the rate): an unbiased estimate of
 * `size`, to be used as is for alloc_space.  weight / size is an unbiased
 * estimate of the number of allocations the sample stands for.  At rate 1
 * every call is sampled, malloc(0) included, with weight == size.
 *
 * alloc fires after the allocator returned, for sampled calls only; free
 * fires before the block goes back to the allocator, for blocks whose
 * alloc fired while someone listened to free, so an address the allocator
 * hands out again is never announced before its old block is freed.
 * realloc of such a block fires free(old) first, then alloc(new) if the
 * new call is sampled (itself a fresh draw).
 *
 * Semaphores: otel_memory_alloc_semaphore, otel_memory_free_semaphore (u16,
 * in section .probes of this library; the notes carry their addresses).
 * With both at 0 the probes never fire and the library keeps no pointers.
 *
 * Environment:
 *   CULPERT_SAMPLER_RATE   mean bytes between samples (default 524288; 1:
 *                          every allocation); accepts k/KiB/m/MiB suffixes
 *   CULPERT_SAMPLER_STATS  a file: at exit, append one line of counters
 *                          (pid, rate, events, points, weight_bytes, ...)
 *                          for tests and for checking a deployment
 *
 * Published counters: the dynamic symbol `culpert_sampler_page` (struct
 * culpert_sampler_page below) lets a reader with ptrace rights find the
 * sampler and its counters in a running process (/proc/PID/mem at the
 * symbol's address).  The counters are updated on sampled calls only.
 *
 * Allocator statistics (for culpert-bpf's memory picture): the
 * `allocator_stats` part of the page is refreshed, at most once per
 * `stats_interval_ns`, on a sampled call made while a reader listens to the
 * probe culpert_sampler:allocator_stats(struct culpert_sampler_page *page,
 * u64 size) ("8@%rdi 8@%rsi", semaphore culpert_sampler_allocator_stats_semaphore),
 * which fires right after the refresh: a BPF program attached there copies
 * the page.  jemalloc fills it from mallctl("stats.*") after an "epoch"
 * bump, mimalloc from mi_process_info(), glibc from mallinfo2().  The
 * refresh runs outside the allocator, never in a nested (signal handler)
 * call of the sampler, one thread at a time.
 */
#ifndef CULPERT_SAMPLER_H
#define CULPERT_SAMPLER_H

#include <stdint.h>

#define CULPERT_SAMPLER_MAGIC		0x4c504d53504c5543ULL	/* "CULPSMPL" in memory, little-endian */
#define CULPERT_SAMPLER_PAGE_VERSION	1

enum culpert_sampler_allocator {
	CULPERT_SAMPLER_ALLOC_UNKNOWN	= 0,
	CULPERT_SAMPLER_ALLOC_GLIBC	= 1,
	CULPERT_SAMPLER_ALLOC_JEMALLOC	= 2,
	CULPERT_SAMPLER_ALLOC_MIMALLOC	= 3,
	CULPERT_SAMPLER_ALLOC_TCMALLOC	= 4,
};

/* allocator-reported bytes; 0 where the allocator has no such figure */
struct culpert_sampler_allocator_stats {
	uint64_t refreshed_ns;		/* CLOCK_MONOTONIC of the last refresh, 0: never */
	uint64_t allocated;		/* bytes in live blocks (jemalloc stats.allocated, mallinfo2 uordblks+hblkhd) */
	uint64_t active;		/* bytes in active pages (jemalloc stats.active) */
	uint64_t metadata;		/* allocator metadata (jemalloc stats.metadata) */
	uint64_t resident;		/* resident pages (jemalloc stats.resident, mimalloc current_rss) */
	uint64_t mapped;		/* mapped (jemalloc stats.mapped, mimalloc current_commit, mallinfo2 arena+hblkhd) */
	uint64_t retained;		/* kept but unmapped from use (jemalloc stats.retained) */
	uint64_t free_bytes;		/* free in the allocator's own lists (mallinfo2 fordblks) */
};

/* what a reader finds at the dynamic symbol culpert_sampler_page */
struct culpert_sampler_page {
	uint64_t magic;			/* CULPERT_SAMPLER_MAGIC */
	uint32_t version;		/* CULPERT_SAMPLER_PAGE_VERSION */
	uint32_t size;			/* sizeof(struct culpert_sampler_page) */
	uint64_t rate;			/* mean bytes between samples */
	uint32_t allocator;		/* enum culpert_sampler_allocator: the one under the sampler */
	uint32_t __pad;
	uint64_t stats_interval_ns;	/* least time between two allocator-stats refreshes */
	/* counters of this process (a fork child starts again from 0) */
	uint64_t events;		/* sampled allocation calls */
	uint64_t points;		/* sampling points in them: sum of nsamples */
	uint64_t weight_bytes;		/* sum of weights: the estimate of bytes allocated */
	uint64_t alloc_fired;		/* otel_memory:alloc fired (someone listened) */
	uint64_t free_fired;		/* otel_memory:free fired */
	uint64_t tracked;		/* blocks put in the set of sampled pointers */
	uint64_t untracked;		/* of those, freed (or realloc'ed) since */
	uint64_t set_full;		/* sampled blocks the set had no room for: their free is never fired */
	struct culpert_sampler_allocator_stats allocator_stats;
};

/*
 * Taking over late (docs/sampler.md): the library dlopen'd into a running
 * process, as culpert-bpf's --sampler inject does.  Preloaded or linked, it
 * interposes from the start and these change nothing but the rate.
 * Call them from a thread that holds no allocator or loader lock.
 *
 * culpert_sampler_takeover: point the allocator's GOT slots (malloc family,
 *   operator new/delete, and dlopen/dlmopen, to patch objects opened later)
 *   of every loaded object at the sampler, sampling at `rate_bytes` (0:
 *   CULPERT_SAMPLER_RATE of the process, else 512 KiB).  0 or -errno;
 *   0 again when already taken over.  Preloaded: sets the rate, 0.
 *   -EEXIST: another copy of the library is preloaded (use its probes).
 * culpert_sampler_release: every slot back as it was, one aligned 8-byte
 *   compare-and-swap each; the library stays mapped and dormant, and a
 *   later takeover reuses it.  0 or -errno; -EOPNOTSUPP when preloaded.
 * culpert_sampler_state: 1 while taken over (or preloaded), 0 dormant.
 */
#ifdef __cplusplus
extern "C" {
#endif
int culpert_sampler_takeover(unsigned long rate_bytes);
int culpert_sampler_release(void);
int culpert_sampler_state(void);
#ifdef __cplusplus
}
#endif

#endif /* CULPERT_SAMPLER_H */
