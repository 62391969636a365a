/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DWARF CFI unwinding in userspace (--unwind dwarf): a sampled allocation
 * comes with the registers at the allocator's entry and a copy of the top of
 * the user stack; the mapped objects' .eh_frame/.debug_frame say how to step
 * from each frame to its caller (elfutils libdwfl does the stepping).
 *
 * One unwinder per capture.  Each object is reported to libdwfl once, the
 * first time a sample runs through it, and its CFI is parsed once, so the
 * cost per sample is the stepping itself.  Objects come from the capture's
 * objcache (opened early, kept open): the target may have exited by the
 * time its samples are unwound.  Not thread-safe: one thread per unwinder.
 */
#ifndef CULPERT_UNWIND_H
#define CULPERT_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct culpert_regs;
struct objcache;
struct procmaps;
struct unwinder;

/* why an unwind stopped */
enum unwind_stop {
	/* the outermost frame: its CFI leaves the return address undefined (_start, clone3) */
	UNWIND_STOP_END,
	/* the stack goes on beyond the copied bytes: a longer copy would give more frames */
	UNWIND_STOP_TRUNCATED,
	/* frames[] is full and the stack goes on */
	UNWIND_STOP_DEPTH,
	/*
	 * the next frame cannot be trusted: code with neither CFI nor a frame
	 * pointer, a return address outside executable mappings, a caller's
	 * frame not above its callee's (a loop), a read outside the copy
	 */
	UNWIND_STOP_ERROR,
	UNWIND_STOP__MAX,
};

struct unwinder_stats {
	uint64_t modules;	/* objects reported to libdwfl (each parsed once) */
	uint64_t resets;	/* module set rebuilds: an address range changed object */
};

/*
 * pid: the target (for libdwfl's bookkeeping only; nothing is read from the
 * live process).  objs must outlive the unwinder.  NULL with errno set.
 */
struct unwinder *unwinder__new(pid_t pid, struct objcache *objs);
void unwinder__free(struct unwinder *u);

/*
 * Unwind one sample.  maps: the target's mappings (a pc or the stack pointer
 * outside them is treated as garbage, so re-read them when the target may
 * have mapped something new).  stack: the bytes at [regs->sp, regs->sp +
 * stack_len).  Fills frames[0] = regs->ip (the probed instruction) and
 * frames[1..] with return addresses, callers last, and *stop with the
 * reason the walk ended.  Returns the number of frames (>= 1), -EFAULT when
 * regs->ip is not in an executable mapping or regs->sp in no mapping at all
 * (garbage registers, or maps older than the sample), -EINVAL on bad
 * arguments, -ENOMEM or -EIO when libdwfl fails.
 */
int unwinder__unwind(struct unwinder *u, const struct procmaps *maps,
		     const struct culpert_regs *regs, const void *stack, size_t stack_len,
		     uint64_t *frames, size_t max, enum unwind_stop *stop);

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *st);
/* "end", "truncated", "depth", "error" */
const char *unwind_stop_name(enum unwind_stop stop);

#endif /* CULPERT_UNWIND_H */
