// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The wrapped allocator's own statistics in the published page, for a
 * reader listening to culpert_sampler:allocator_stats (see the header).
 * Refreshed on a sampled call, at most once per interval, by one thread
 * at a time, never in a nested call of the sampler: jemalloc through
 * mallctl("stats.*") after an "epoch" bump, mimalloc through
 * mi_process_info(), glibc through mallinfo2().  Each takes the
 * allocator's locks, which is why it runs outside the allocator and only
 * while someone listens.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <culpert/sampler.h>
#include "sampler_internal.h"
#include "usdt.h"

#define STATS_INTERVAL_NS	1000000000ULL

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef void (*mi_process_info_fn)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *,
				   size_t *, size_t *);
typedef struct mallinfo2 (*mallinfo2_fn)(void);

static void *stats_fn;			/* of the allocator named in the page */
static int refreshing;

USDT_SEMAPHORE(culpert_sampler_allocator_stats_semaphore);

#if defined(__x86_64__)
static __attribute__((noinline)) void fire_stats(void *page, uint64_t size)
{
	__asm__ __volatile__(USDT_SITE("culpert_sampler", "allocator_stats",
				       "culpert_sampler_allocator_stats_semaphore", USDT_ARGS2,
				       "sampler_stats_site")
			     : : "D"(page), "S"(size) : "memory");
}
#elif defined(__aarch64__)
static __attribute__((noinline)) void fire_stats(void *page, uint64_t size)
{
	register uint64_t x0 __asm__("x0") = (uint64_t)page;
	register uint64_t x1 __asm__("x1") = size;

	__asm__ __volatile__(USDT_SITE("culpert_sampler", "allocator_stats",
				       "culpert_sampler_allocator_stats_semaphore", USDT_ARGS2,
				       "sampler_stats_site")
			     : : "r"(x0), "r"(x1) : "memory");
}
#endif

extern const unsigned char sampler_stats_site[] SAMPLER_HIDDEN;

/*
 * A reader of the page (culpert-bpf stats raises this semaphore with a
 * counting uprobe on the site) patches the site as the other probes'
 * profilers do: the fork child must not run it (sampler.c says why).
 */
void allocstats_child_after_fork(void)
{
	sampler_drop_inherited_site(sampler_stats_site, &culpert_sampler_allocator_stats_semaphore);
}

void allocstats_init(uint32_t kind, void *(*sym)(const char *name))
{
	static const char *const names[] = {
		[CULPERT_SAMPLER_ALLOC_GLIBC] = "mallinfo2",
		[CULPERT_SAMPLER_ALLOC_JEMALLOC] = "mallctl",
		[CULPERT_SAMPLER_ALLOC_MIMALLOC] = "mi_process_info",
	};

	culpert_sampler_page.stats_interval_ns = STATS_INTERVAL_NS;
	if (kind < sizeof(names) / sizeof(names[0]) && names[kind])
		stats_fn = sym(names[kind]);
}

static uint64_t jemalloc_stat(mallctl_fn ctl, const char *name)
{
	size_t v = 0, len = sizeof(v);

	return ctl(name, &v, &len, NULL, 0) ? 0 : (uint64_t)v;
}

static void refresh(struct culpert_sampler_allocator_stats *s)
{
	switch (culpert_sampler_page.allocator) {
	case CULPERT_SAMPLER_ALLOC_JEMALLOC: {
		mallctl_fn ctl = (mallctl_fn)stats_fn;
		uint64_t epoch = 1;
		size_t len = sizeof(epoch);

		/* jemalloc's stats.* are a snapshot taken at the last epoch bump */
		ctl("epoch", &epoch, &len, &epoch, len);
		s->allocated = jemalloc_stat(ctl, "stats.allocated");
		s->active = jemalloc_stat(ctl, "stats.active");
		s->metadata = jemalloc_stat(ctl, "stats.metadata");
		s->resident = jemalloc_stat(ctl, "stats.resident");
		s->mapped = jemalloc_stat(ctl, "stats.mapped");
		s->retained = jemalloc_stat(ctl, "stats.retained");
		break;
	}
	case CULPERT_SAMPLER_ALLOC_MIMALLOC: {
		size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;

		((mi_process_info_fn)stats_fn)(&elapsed, &user, &sys, &rss, &peak_rss, &commit,
					       &peak_commit, &faults);
		s->resident = rss;
		s->mapped = commit;
		break;
	}
	case CULPERT_SAMPLER_ALLOC_GLIBC: {
		struct mallinfo2 mi = ((mallinfo2_fn)stats_fn)();

		s->allocated = mi.uordblks + mi.hblkhd;
		s->mapped = mi.arena + mi.hblkhd;
		s->free_bytes = mi.fordblks;
		break;
	}
	}
}

/* on a sampled call, outside the allocator and not nested in the sampler */
void allocstats_maybe_refresh(void)
{
	struct culpert_sampler_allocator_stats *s = &culpert_sampler_page.allocator_stats;
	struct timespec ts;
	uint64_t now;

	if (likely(!culpert_sampler_allocator_stats_semaphore) || !stats_fn)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	if (s->refreshed_ns && now - s->refreshed_ns < STATS_INTERVAL_NS)
		return;
	if (__atomic_exchange_n(&refreshing, 1, __ATOMIC_ACQUIRE))
		return;
	refresh(s);
	__atomic_store_n(&s->refreshed_ns, now, __ATOMIC_RELEASE);
	fire_stats(&culpert_sampler_page, sizeof(culpert_sampler_page));
	__atomic_store_n(&refreshing, 0, __ATOMIC_RELEASE);
}
