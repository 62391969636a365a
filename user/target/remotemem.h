/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading another process's memory while it runs: process_vm_readv(2),
 * never a write, never a stop.  Every address is checked against the
 * target's mappings (read once, when opened) before it is read, so a
 * pointer torn by a concurrent write is refused, not followed.  A small
 * page cache makes a walk of a linked list cost one syscall per page
 * instead of one per node.
 */
#ifndef CULPERT_REMOTEMEM_H
#define CULPERT_REMOTEMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procmaps.h"

#define REMOTEMEM_PAGE		4096
/* pages the cache keeps: 256 KiB, enough for the bins of a few hundred pages of heap at a time */
#define REMOTEMEM_CACHE_PAGES	64

struct remotemem_page {
	uint64_t addr;		/* page address; 0: empty slot */
	unsigned char data[REMOTEMEM_PAGE];
};

/* bytes one snapshot copies at most */
#define REMOTEMEM_SNAPSHOT_MAX	(64u << 20)

struct remotemem {
	pid_t pid;
	struct procmaps maps;
	struct remotemem_page *cache;	/* REMOTEMEM_CACHE_PAGES slots, direct-mapped */
	unsigned char *snap;		/* a copy of [snap_addr, snap_addr + snap_len) */
	uint64_t snap_addr;
	size_t snap_len, snap_cap;
	bool no_snapshot;		/* swapped-out memory: read only the pages needed */
	uint64_t syscalls;		/* process_vm_readv calls made */
};

/* read the target's mappings; 0 or -errno (-ESRCH: gone, -EPERM/-EACCES: not allowed) */
int remotemem__open(struct remotemem *r, pid_t pid);
void remotemem__close(struct remotemem *r);
/* read the mappings again (a heap grew or shrank); 0 or -errno, the old ones kept on failure */
int remotemem__reread_maps(struct remotemem *r);
/* forget what the cache and the snapshot hold: the next reads see the target as it is now */
void remotemem__drop_cache(struct remotemem *r);
/*
 * Copy [addr, addr + len) (at most REMOTEMEM_SNAPSHOT_MAX, inside one
 * readable mapping) in one syscall: cached reads inside it come from the
 * copy until the cache is dropped.  A region read as it is at nearly one
 * moment, and a walk through it costs no syscall.  Refused (-EPERM) for a
 * process with swapped-out memory: reading a page brings it back in, and
 * only the pages a walk needs should be.  0 or -errno.
 */
int remotemem__snapshot(struct remotemem *r, uint64_t addr, size_t len);

/* [addr, addr + len) inside one readable mapping */
bool remotemem__mapped(const struct remotemem *r, uint64_t addr, size_t len);
/*
 * [addr, addr + len) inside one readable, writable, anonymous mapping or
 * the [heap]: where malloc's chunks and arenas live.
 */
bool remotemem__is_heap(const struct remotemem *r, uint64_t addr, size_t len);

/*
 * len bytes at addr, as they are now: 0, -EFAULT (not mapped, or only in
 * part), -ESRCH (the process is gone), -EPERM.
 */
int remotemem__read(struct remotemem *r, uint64_t addr, void *buf, size_t len);
/* the same through the snapshot or the page cache (len at most a page) */
int remotemem__read_cached(struct remotemem *r, uint64_t addr, void *buf, size_t len);

#endif /* CULPERT_REMOTEMEM_H */
