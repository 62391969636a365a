/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Executable mappings of one process as they appear: the kernel's
 * PERF_RECORD_MMAP2 records (what `perf record` follows mappings with),
 * from a dummy software event per CPU, kept for the target's pid.  A
 * library dlopen'd and dlclose'd between two reads of /proc/PID/maps is
 * seen this way, with the time it was mapped.  Needs CAP_PERFMON (or root).
 */
#ifndef CULPERT_MMAPWATCH_H
#define CULPERT_MMAPWATCH_H

#include <stdint.h>
#include <sys/types.h>

struct mmapwatch;
struct procmap;

/* a new executable file mapping of the pid, mapped at ts_ns (CLOCK_MONOTONIC); non-zero stops */
typedef int (*mmapwatch_fn)(void *ctx, const struct procmap *m, uint64_t ts_ns);

/* NULL and errno set when the events cannot be opened */
struct mmapwatch *mmapwatch__new(pid_t pid);
/*
 * One set of rings for many processes (the agent's targets): the kernel
 * writes each mapping once, whatever the number of targets, instead of
 * once per target, and a target costs no descriptor and no ring.  Freed
 * after every watch joined to it.  NULL and errno set as mmapwatch__new().
 */
struct mmapwatch *mmapwatch__new_shared(void);
/*
 * A watch of pid through shared: a read sorts out what the rings hold to
 * every joined watch, then delivers pid's.  Reads of different joined
 * watches may run on different threads; one watch is read by one at a
 * time.  NULL and errno set when out of memory.
 */
struct mmapwatch *mmapwatch__join(struct mmapwatch *shared, pid_t pid);
/* deliver what was recorded since the last call; 0, cb's non-zero return, or -errno */
int mmapwatch__read(struct mmapwatch *w, mmapwatch_fn cb, void *ctx);
/* records the kernel dropped because a buffer was full */
uint64_t mmapwatch__lost(const struct mmapwatch *w);
void mmapwatch__free(struct mmapwatch *w);

#endif /* CULPERT_MMAPWATCH_H */
