/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The memory picture of a process, read from outside it (SPEC §6):
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

/* a section holds at most this many values (memory.stat is the longest) */
#define MEM_VALUES_MAX 64

enum mem_unit {
	MEM_UNIT_KB,		/* "N kB" in the file, kept in bytes */
	MEM_UNIT_BYTES,		/* bytes in the file and here */
	MEM_UNIT_COUNT,		/* a number of things now (threads, mappings) */
	MEM_UNIT_EVENTS,	/* a count of events since start: a counter */
};

/* one value of a kernel file: its key there, our name (with the unit in it) and what it means */
struct mem_field {
	const char *key;
	const char *name;
	enum mem_unit unit;
	const char *help;
};

struct mem_section {
	const struct mem_field *fields;
	size_t n;
};

#define MEM_SECTION(fields) { (fields), sizeof(fields) / sizeof((fields)[0]) }

struct mem_values {
	uint64_t v[MEM_VALUES_MAX];
	uint64_t present;	/* bit i: v[i] came from the kernel */
};

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

struct mem_pressure {
	bool present;
	bool has_full;
	double avg[2][3];	/* [some, full][avg10, avg60, avg300], percent */
	uint64_t total_us[2];	/* [some, full], microseconds stalled */
};

struct mem_cgroup {
	char path[4096];	/* as /proc/PID/cgroup names it; "" without cgroup v2 */
	char container_id[72];	/* from the path when it names a container, else "" */
	bool memory;		/* the memory controller's files were read */
	char absent[256];	/* when !memory: why (cgroup v1, controller off, root cgroup...) */
	struct mem_values mem;	/* memory.current, .max, ... (max: see MEM_UNLIMITED) */
	struct mem_values stat;
	struct mem_values events;
	struct mem_pressure pressure;
};

/* memory.max / memory.high of "max": no limit */
#define MEM_UNLIMITED UINT64_MAX

struct memstats {
	pid_t pid;
	char comm[32];
	int64_t time_ns;	/* when it was read, Unix ns */
	struct mem_values rollup;
	struct mem_values status;
	struct mem_values kinds[MEM_KIND__MAX];
	struct mem_cgroup cg;
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

/* the index of the field called `name` in s, or -1 */
int mem_section__index(const struct mem_section *s, const char *name);
/* the value called `name` if the kernel gave it */
bool mem_get(const struct mem_section *s, const struct mem_values *v, const char *name,
	     uint64_t *out);

static inline bool mem_has(const struct mem_values *v, int i)
{
	return v->present & (1ULL << i);
}

static inline void mem_set(struct mem_values *v, int i, uint64_t val)
{
	v->v[i] = val;
	v->present |= 1ULL << i;
}

/* parsers, on the text of the files (the unit tests use them directly) */

/* "Key:   N kB", "Key:\tN" or "key N" lines; keys not in the section are skipped */
void mem_parse_keyed(const char *text, const struct mem_section *s, struct mem_values *out);
/* /proc/PID/smaps: add every mapping to its kind.  0 or -EINVAL on a line it cannot read */
int mem_parse_smaps(const char *text, struct mem_values kinds[MEM_KIND__MAX]);
/* the kind of a mapping from its path and the VmFlags line ("rd wr sh ht ...") */
enum mem_kind mem_classify(const char *path, const char *vmflags);
/* is word one of the blank-separated words of list ("rd wr sh", "cpu io memory")? */
bool mem_has_word(const char *list, const char *word);

#endif /* CULPERT_MEMSTATS_H */
