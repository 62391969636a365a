/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --sampler inject for a session (docs/inject.md): whether the process
 * can take libculpert-sampler.so (the injector's checks and a Go
 * runtime's), where our copy of the library is, and the one-line
 * reasons the commands print.
 */
#ifndef CULPERT_INJECTION_H
#define CULPERT_INJECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct inject_stats;
struct objcache;
struct procmaps;
struct target;

/* the library beside culpert-bpf (the build) or in ../lib (an install); NULL if neither */
const char *injection__library(void);
/* would injection work?  0, or -errno with the cause in why */
int injection__check(const struct target *t, const struct procmaps *maps, struct objcache *objs,
		     char *why, size_t len);
/*
 * Inject and take over at rate (0: the library's default).  0, or -errno
 * with the one-line error in err.
 */
int injection__start(const struct target *t, const struct procmaps *maps, struct objcache *objs,
		     uint64_t rate, char *err, size_t len);
/*
 * Release the sampler (it stays mapped, dormant); 0 or -errno, said at
 * warning level.  By deadline_ns (CLOCK_MONOTONIC) when not 0: past it no
 * thread is stopped, and a release under way finishes in the target alone.
 */
int injection__stop(const struct target *t, struct objcache *objs, uint64_t deadline_ns);

#endif /* CULPERT_INJECTION_H */
