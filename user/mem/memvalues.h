/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The values of the kernel's memory files, as both halves of the memory
 * picture keep them: a section names the fields of one file, a mem_values
 * holds what the kernel gave (a value it does not have is absent, never 0).
 * memstats (/proc/PID/...) and memcg (cgroup files) both build on this.
 */
#ifndef CULPERT_MEMVALUES_H
#define CULPERT_MEMVALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* one "Key: N kB" / "key N" line; false when it is not one of the section's */
bool mem_parse_keyed_line(const char *line, const struct mem_section *s, struct mem_values *out);
/* is word one of the blank-separated words of list ("rd wr sh", "cpu io memory")? */
bool mem_has_word(const char *list, const char *word);

#endif /* CULPERT_MEMVALUES_H */
