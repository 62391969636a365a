/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* /proc/PID/maps, parsed. */
#ifndef CULPERT_PROCMAPS_H
#define CULPERT_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct procmap {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	bool readable, writable, executable;
	bool gone;		/* unmapped since: kept for samples taken while it was there */
	uint64_t seen_ns;	/* CLOCK_MONOTONIC when mapped or first seen; 0: at the start */
	char *path;		/* "" for anonymous; "[heap]", "[vdso]", or the file as the target sees it */
};

struct procmaps {
	struct procmap *v;	/* sorted by start, as the kernel lists them */
	size_t n;
};

/* 0 or -errno (-ENOENT: the process is gone) */
int procmaps__read(pid_t pid, struct procmaps *out);
/* parse the text of a maps file (tests use this directly) */
int procmaps__parse(const char *text, struct procmaps *out);
/*
 * The len bytes at line, one line: "start-end perms offset major:minor inode
 * path" (also the header line of an smaps entry); m->path is allocated.
 * 0 or -errno
 */
int procmaps__parse_line(const char *line, size_t len, struct procmap *m);
const struct procmap *procmaps__find(const struct procmaps *m, uint64_t addr);
/* the runtime range [lo, hi) spanned by the executable mappings of m's file */
void procmaps__text_range(const struct procmaps *maps, const struct procmap *m, uint64_t *lo,
			  uint64_t *hi);
/*
 * A library unloaded (dlclose) before its samples are read leaves them
 * pointing nowhere; keep what was seen.  fresh, a newer read of the same
 * process, takes the seen_ns of the mappings of old it still has (now_ns
 * for those it adds) and, flagged gone, the executable file mappings of
 * old it lacks and that overlap nothing in it, at most max_gone of them
 * (the others are counted in *dropped).  fresh stays sorted and without
 * overlaps.  0 or -ENOMEM.
 */
int procmaps__carry(struct procmaps *fresh, const struct procmaps *old, uint64_t now_ns,
		    size_t max_gone, uint64_t *dropped);
/*
 * A mapping made since the last read (a copy goes in, path included): what
 * it overlaps is no longer mapped there.  0 or -ENOMEM.
 */
int procmaps__insert(struct procmaps *v, const struct procmap *m);
/* does a mapping of v overlapping m have a later seen_ns? */
bool procmaps__newer(const struct procmaps *v, const struct procmap *m);
/* is [start, end) of m covered, wholly or in part, by a mapping of v other than m itself? */
bool procmaps__overlapped(const struct procmaps *v, const struct procmap *m);
void procmaps__free(struct procmaps *m);
bool procmap__is_file(const struct procmap *m);
/*
 * The same mapping of the same file: range, offset, device and inode (not
 * the path: /proc/PID/maps names it from our root, perf records from the
 * target's)
 */
bool procmap__same(const struct procmap *a, const struct procmap *b);

#endif /* CULPERT_PROCMAPS_H */
