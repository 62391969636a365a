// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "perfuprobe.h"
#include "remotemem.h"
#include "samplerpage.h"

/* the uprobe PMU's format/ref_ctr_offset: "config:32-63" since Linux 4.20 */
#define REF_CTR_OFFSET_SHIFT 32

const char *sampler_allocator_name(uint32_t allocator)
{
	static const char *const names[] = {
		[CULPERT_SAMPLER_ALLOC_UNKNOWN] = "unknown",
		[CULPERT_SAMPLER_ALLOC_GLIBC] = "glibc",
		[CULPERT_SAMPLER_ALLOC_JEMALLOC] = "jemalloc",
		[CULPERT_SAMPLER_ALLOC_MIMALLOC] = "mimalloc",
		[CULPERT_SAMPLER_ALLOC_TCMALLOC] = "tcmalloc",
	};

	return allocator < sizeof(names) / sizeof(names[0]) ? names[allocator] : "unknown";
}

int sampler_page__read(struct remotemem *r, uint64_t addr, struct sampler_stats *out)
{
	struct culpert_sampler_page pg;
	uint64_t now;
	int err;

	err = remotemem__read(r, addr, &pg, sizeof(pg));
	if (err)
		return err;
	/* a newer page may grow at its end: what this version knows is its start */
	if (pg.magic != CULPERT_SAMPLER_MAGIC || pg.version != CULPERT_SAMPLER_PAGE_VERSION ||
	    pg.size < sizeof(pg))
		return -EINVAL;
	now = clock_ns(CLOCK_MONOTONIC);
	out->present = true;
	out->allocator = pg.allocator;
	out->rate = pg.rate;
	out->events = pg.events;
	out->weight_bytes = pg.weight_bytes;
	out->s = pg.allocator_stats;
	/* the target's CLOCK_MONOTONIC is ours (one host; time namespaces aside) */
	out->has_figures = pg.allocator_stats.refreshed_ns != 0;
	out->age_ns = out->has_figures && now > pg.allocator_stats.refreshed_ns ?
		      now - pg.allocator_stats.refreshed_ns : 0;
	return 0;
}

int sampler_listen(pid_t pid, const char *path, uint64_t site_off, uint64_t sem_off)
{
	struct perf_event_attr attr;
	int type = perf_uprobe_pmu_type(), fd;

	if (type < 0)
		return type;
	if (sem_off >> 32)
		return -ERANGE;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = (uint32_t)type;
	/* a counting event: nothing is recorded, the kernel raises the semaphore while it exists */
	attr.config = sem_off << REF_CTR_OFFSET_SHIFT;
	attr.config1 = (uint64_t)(uintptr_t)path;
	attr.config2 = site_off;
	fd = (int)syscall(__NR_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
