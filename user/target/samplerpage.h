/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The page libculpert-sampler.so publishes in the target (docs/sampler.md):
 * its rate and counters and the wrapped allocator's own statistics
 * (jemalloc's stats.*, mimalloc's process info, glibc's mallinfo2), read
 * with process_vm_readv.  The allocator figures are refreshed by the
 * target only while someone listens to culpert_sampler:allocator_stats;
 * a listener here is a counting perf uprobe on that site, which raises the
 * probe's semaphore and needs no BPF.
 */
#ifndef CULPERT_SAMPLERPAGE_H
#define CULPERT_SAMPLERPAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <culpert/sampler.h>

struct remotemem;

struct sampler_stats {
	bool present;			/* the page was found and read */
	char path[256];			/* the library, as the target sees it */
	uint32_t allocator;		/* enum culpert_sampler_allocator */
	uint64_t rate;
	uint64_t events;		/* sampled calls */
	uint64_t weight_bytes;		/* the sampler's estimate of the bytes allocated */
	bool has_figures;		/* the allocator figures were refreshed at least once */
	uint64_t age_ns;		/* how old they are */
	bool listened;			/* this read raised the semaphore */
	bool fresh;			/* refreshed while we listened */
	char note[240];			/* why the figures are missing or may be stale */
	struct culpert_sampler_allocator_stats s;
};

/* the allocator the page names: "glibc", "jemalloc", ... "unknown" */
const char *sampler_allocator_name(uint32_t allocator);

/*
 * Read the page at addr (the runtime address of culpert_sampler_page):
 * 0, -EINVAL (not a page this version knows: magic, version, size), or
 * the read's error.  Fills everything but path, listened, fresh and note.
 */
int sampler_page__read(struct remotemem *r, uint64_t addr, struct sampler_stats *out);

/*
 * Listen to culpert_sampler:allocator_stats of pid: a perf uprobe at file
 * offset site_off of `path` (a path we can open: /proc/PID/root/...) with
 * the semaphore at file offset sem_off.  The fd (close it to stop), or
 * -errno (-EACCES/-EPERM: needs CAP_PERFMON, -ENOENT: no uprobe PMU).
 */
int sampler_listen(pid_t pid, const char *path, uint64_t site_off, uint64_t sem_off);

#endif /* CULPERT_SAMPLERPAGE_H */
