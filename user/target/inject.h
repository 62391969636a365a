/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Loading libculpert-sampler.so into a running process and switching it
 * on and off (docs/inject.md): the library's bytes in a memfd the target
 * creates, dlopen("/proc/self/fd/N") and culpert_sampler_takeover() on a
 * thread borrowed at a safe point (hijack.h), culpert_sampler_release()
 * the same way at the end.  Injecting again reuses the mapped library.
 */
#ifndef CULPERT_INJECT_H
#define CULPERT_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct objcache;
struct procmaps;
struct target;

#define INJECT_TAKEOVER		"culpert_sampler_takeover"
#define INJECT_RELEASE		"culpert_sampler_release"
#define INJECT_STATE		"culpert_sampler_state"
/* the memfd's name, which /proc/PID/maps shows as "/memfd:NAME (deleted)" */
#define INJECT_MEMFD_NAME	"libculpert-sampler.so"

/* what the borrowed thread's held time is made of */
enum inject_step {
	INJECT_STEP_ARM,	/* the safe point looked at, the frame, the signals blocked */
	INJECT_STEP_SCRATCH,	/* the code page and stack mapped */
	INJECT_STEP_LOAD,	/* memfd, dlopen, dlsym (the first injection only) */
	INJECT_STEP_CALL,	/* the library's takeover or release */
	INJECT_STEP_FINISH,	/* unmapped, the signal mask and registers given back */
	INJECT_STEPS,
};

struct inject_stats {
	uint64_t prep_ns;	/* reading /proc and the objects, before any stop */
	uint64_t total_ns;	/* from the first stop to the last hand-back */
	uint64_t max_stop_ns;	/* the longest a thread was stopped (examined, not borrowed) */
	uint64_t held_ns;	/* how long the borrowed thread ran our calls */
	unsigned int trips;	/* the times it was resumed and waited for, stops and calls */
	uint64_t step_ns[INJECT_STEPS];
	unsigned int stops;	/* threads stopped and examined */
	pid_t tid;		/* the thread borrowed */
	bool reused;		/* the library was mapped already */
	int result;		/* what the library's function returned */
};

/*
 * Would injecting into t work?  Reads only /proc and the mapped objects:
 * 0, or -errno with the cause in why (-EPERM: ptrace is not allowed,
 * -EBUSY: another tracer, -ENOEXEC: no dynamic loader or another libc,
 * -EOPNOTSUPP: not x86-64).
 */
int inject__check(const struct target *t, const struct procmaps *maps, struct objcache *objs,
		  char *why, size_t len);
/*
 * Load lib (unless mapped already) and call culpert_sampler_takeover(rate).
 * 0 or -errno with the cause in err; the target is as it was on failure,
 * but for the library, which stays mapped once loaded.
 */
int inject__takeover(const struct target *t, struct objcache *objs, const char *lib,
		     uint64_t rate, struct inject_stats *st, char *err, size_t len);
/*
 * culpert_sampler_release() in the mapped library; 0 or -errno with err.
 * deadline_ns (CLOCK_MONOTONIC, 0: none but the usual bounds): no thread
 * is stopped after it, nor the call waited for (it finishes on its own).
 */
int inject__release(const struct target *t, struct objcache *objs, uint64_t deadline_ns,
		    struct inject_stats *st, char *err, size_t len);
/*
 * A glibc program still in its dynamic loader: the loader is mapped, libc
 * not yet (a process caught at its exec).  Injection can come once it is.
 */
bool inject__loader_busy(const struct procmaps *maps);
/* the mapped sampler library's path as maps shows it, or NULL */
const char *inject__mapped(const struct procmaps *maps);

#endif /* CULPERT_INJECT_H */
