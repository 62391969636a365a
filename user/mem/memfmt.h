/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The memory picture written out: human text, JSON, Prometheus text
 * exposition, and "key=value" profile comments.  All of them come from one
 * flat list of items, so a value has the same name everywhere: the JSON path
 * "cgroup.memory.current_bytes" is the comment "mem.end.cgroup.memory.current_bytes=..."
 * and the metric culpert_cgroup_memory_current_bytes.
 */
#ifndef CULPERT_MEMFMT_H
#define CULPERT_MEMFMT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "memstats.h"

/* bumped when a JSON key changes meaning or goes away */
#define MEMFMT_SCHEMA_VERSION 1

enum mem_item_type {
	MEM_ITEM_U64,
	MEM_ITEM_F64,
	MEM_ITEM_STR,
	MEM_ITEM_NULL,		/* a section that is absent */
};

struct mem_item {
	char path[128];		/* '.'-separated; sorts like its components */
	char prom[128];		/* metric name, "" when not exported to Prometheus */
	const char *label_key;	/* one more label (kind="heap"), or NULL */
	const char *label_val;
	const char *help;
	enum mem_item_type type;
	bool counter;
	bool usec;		/* u is in microseconds; Prometheus gets seconds */
	uint64_t u;		/* MEM_UNLIMITED: "max" */
	double f;
	const char *s;		/* points into the memstats */
};

struct mem_items {
	struct mem_item *v;
	size_t n, cap;
};

/* a new item of `path` (other fields zero) at the end of items; NULL when out of memory */
struct mem_item *mem_items__add(struct mem_items *items, const char *path, enum mem_item_type type);
/* a plain value: a string (s), a number (*u) or null (neither); 0 or -ENOMEM */
int mem_items__add_plain(struct mem_items *items, const char *path, const char *s,
			 const uint64_t *u);

/* one JSON object on one line (so --watch writes JSON Lines); 0 or -errno */
int memfmt_json(FILE *f, const struct memstats *m);
/* Prometheus text exposition format 0.0.4; 0 or -errno */
int memfmt_prometheus(FILE *f, const struct memstats *m);

/* ',key="value"' (no comma first unless comma), the value escaped as the format wants */
void memfmt_prom_label(FILE *f, const char *key, const char *val, bool comma);

/* more labels for one process's samples, after pid, comm and container_id */
#define MEM_PROM_MAX_LABELS 6
struct mem_prom_labels {
	const char *key[MEM_PROM_MAX_LABELS];
	const char *val[MEM_PROM_MAX_LABELS];
	size_t n;
};

/*
 * One process's picture rendered for an exposition of many (the agent's
 * /metrics keeps one per target): new, add the picture once, write any
 * number of them together, free.  A writer holds the text, not the
 * picture.  add and write return 0 or -errno.
 */
struct memfmt_prom;
struct memfmt_prom *memfmt_prom__new(void);
int memfmt_prom__add(struct memfmt_prom *w, const struct memstats *m,
		     const struct mem_prom_labels *extra);
/* the n processes' samples, each family once under its HELP and TYPE, processes in w's order */
int memfmt_prom__write(FILE *f, struct memfmt_prom *const *w, size_t n);
void memfmt_prom__free(struct memfmt_prom *w);

/*
 * The pictures of n processes in one exposition: each family once, with
 * the samples of every process under it; extra (may be NULL) has n entries.
 */
int memfmt_prometheus_many(FILE *f, const struct memstats *const *m,
			   const struct mem_prom_labels *extra, size_t n);
/* for people: sections with aligned names and human units; 0 or -errno */
int memfmt_text(FILE *f, const struct memstats *m);
/*
 * "PREFIX.path=value" for each item (profile comments), passed to add();
 * stops at and returns add()'s first error.
 */
int memfmt_comments(const struct memstats *m, const char *prefix,
		    int (*add)(void *ctx, const char *comment), void *ctx);

#endif /* CULPERT_MEMFMT_H */
