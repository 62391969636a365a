/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The memory picture of a process, read from outside it (docs/memory-picture.md):
 * /proc/PID/smaps_rollup, /proc/PID/status, /proc/PID/smaps grouped by
 * kind of mapping, and its cgroup v2 memory files (memcg.h).
 *
 * Every section keeps which of its values the kernel actually gave: a value
 * the kernel does not have (an older kernel, cgroup v1) is absent, never 0.
 */
#ifndef CULPERT_MEMSTATS_H
#define CULPERT_MEMSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "allocstate.h"
#include "memcg.h"
#include "memvalues.h"

/*
 * Kinds of mapping in smaps.  Each mapping has exactly one, so the kinds
 * add up to the whole process.  Thread stacks other than the main one are
 * anonymous mappings to the kernel and count as anon.
 */
enum mem_kind {
	MEM_KIND_HEAP,		/* [heap]: the brk area */
	MEM_KIND_ANON,		/* private anonymous, [anon:name] included */
	MEM_KIND_FILE,		/* backed by a file (code, data, mmapped files) */
	MEM_KIND_STACK,		/* [stack] of the main thread */
	MEM_KIND_SHMEM,		/* shared memory: MAP_SHARED|MAP_ANONYMOUS, memfd, SysV, /dev/shm */
	MEM_KIND_HUGE,		/* hugetlbfs pages (not THP, which anon_huge_pages counts) */
	MEM_KIND_OTHER,		/* [vdso], [vvar], [vsyscall], [uprobes] */
	MEM_KIND__MAX,
};

/* indexes into mem_kind_section's values */
enum {
	MEM_KIND_F_COUNT,
	MEM_KIND_F_SIZE,
	MEM_KIND_F_RSS,
	MEM_KIND_F_PSS,
	MEM_KIND_F_SWAP,
	MEM_KIND_F_ANON_HUGE,
};

struct memstats {
	pid_t pid;
	char comm[32];
	int64_t time_ns;	/* when it was read, Unix ns */
	struct mem_values rollup;
	struct mem_values status;
	struct mem_values kinds[MEM_KIND__MAX];
	struct mem_cgroup cg;
	struct alloc_state alloc;	/* filled by alloc_reader__read(), not memstats__read() */
};

extern const struct mem_section mem_rollup_section;
extern const struct mem_section mem_status_section;
extern const struct mem_section mem_kind_section;
extern const char *const mem_kind_names[MEM_KIND__MAX];

/*
 * Read the whole picture of pid.  Fails (-errno, with a reason for the user
 * in err) when the process files cannot be read: gone (-ESRCH), not allowed
 * (-EACCES).  A cgroup that cannot be read is not a failure: m->cg says why.
 */
int memstats__read(pid_t pid, struct memstats *m, char *err, size_t errlen);

/* parsers, on the text of the files (the unit tests use them directly) */

/* /proc/PID/smaps: add every mapping to its kind.  0 or -EINVAL on a line it cannot read */
int mem_parse_smaps(const char *text, struct mem_values kinds[MEM_KIND__MAX]);
/* the kind of a mapping from its path and the VmFlags line ("rd wr sh ht ...") */
enum mem_kind mem_classify(const char *path, const char *vmflags);

#endif /* CULPERT_MEMSTATS_H */
