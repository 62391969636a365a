/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The cgroup v2 memory files of a process: /proc/PID/cgroup names the
 * cgroup, /proc/self/mountinfo where the v2 hierarchy is mounted (not always
 * /sys/fs/cgroup: systemd's hybrid layout puts it at /sys/fs/cgroup/unified).
 * cgroup v1 is not read: its memory is reported absent, with the reason.
 */
#ifndef CULPERT_MEMCG_H
#define CULPERT_MEMCG_H

#include <stdbool.h>
#include <stddef.h>

#include "memvalues.h"

struct mem_pressure {
	bool present;
	bool has_full;
	double avg[2][3];	/* [some, full][avg10, avg60, avg300], percent */
	uint64_t total_us[2];	/* [some, full], microseconds stalled */
};

struct mem_cgroup {
	char path[4096];	/* as /proc/PID/cgroup names it; "" without cgroup v2 */
	char container_id[72];	/* from the path when it names a container (container.h), else "" */
	bool memory;		/* the memory controller's files were read */
	char absent[256];	/* when !memory: why (cgroup v1, controller off, root cgroup...) */
	struct mem_values mem;	/* memory.current, .max, ... (max: see MEM_UNLIMITED) */
	struct mem_values stat;
	struct mem_values events;
	struct mem_pressure pressure;
};

/* memory.max / memory.high of "max": no limit */
#define MEM_UNLIMITED UINT64_MAX

extern const struct mem_section memcg_memory_section;	/* memory.current, .max, ... */
extern const struct mem_section memcg_stat_section;	/* memory.stat */
extern const struct mem_section memcg_events_section;	/* memory.events */

/* the cgroup of the process whose /proc directory is procfd; never fails: cg->absent says why */
void memcg__read(int procfd, struct mem_cgroup *cg);
/*
 * The memory files of cgroup directory dir, for the cgroup named path;
 * v1_memory: a cgroup v1 hierarchy holds the memory controller.
 */
void memcg__read_dir(const char *dir, const char *path, bool v1_memory, struct mem_cgroup *cg);

/* parsers, on the text of the files (the unit tests use them directly) */

/* the mount point of the cgroup v2 hierarchy and the cgroup it shows at its top; 0 or -ENOENT */
int memcg_parse_mountinfo(const char *text, char *mnt, size_t mntlen, char *root, size_t rootlen);
/* the "0::PATH" line of /proc/PID/cgroup; 0 or -ENOENT.  *v1_memory: a v1 line has "memory" */
int memcg_parse_proc_cgroup(const char *text, char *path, size_t len, bool *v1_memory);
/* memory.pressure; 0 or -EINVAL */
int memcg_parse_pressure(const char *text, struct mem_pressure *p);

#endif /* CULPERT_MEMCG_H */
