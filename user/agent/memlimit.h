/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's memory limit: --max-memory (against its RSS), else its
 * memory cgroup's (v2 memory.max, v1 memory.limit_in_bytes, against the
 * cgroup's working set: usage less inactive file pages, what the kernel
 * cannot reclaim before it kills).  docs/agent.md, "Memory".
 */
#ifndef CULPERT_MEMLIMIT_H
#define CULPERT_MEMLIMIT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

struct memlimit {
	uint64_t limit;			/* bytes; 0: none */
	bool cgroup;			/* the cgroup's, else --max-memory's against RSS */
	char source[PATH_MAX + 32];	/* "--max-memory" or the limit's file */
	char usage[PATH_MAX + 32];		/* the cgroup's usage file */
	char stat[PATH_MAX + 32];		/* its memory.stat */
	const char *inactive;		/* the memory.stat key of inactive file pages */
};

/* given: --max-memory (0: the cgroup's, if it has one); m->limit 0 when there is none */
void memlimit__init(struct memlimit *m, uint64_t given);
/* the bytes counted against m->limit now; 0 if unreadable */
uint64_t memlimit__usage(const struct memlimit *m);

#endif /* CULPERT_MEMLIMIT_H */
