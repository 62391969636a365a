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
void procmaps__free(struct procmaps *m);
bool procmap__is_file(const struct procmap *m);

#endif /* CULPERT_PROCMAPS_H */
