/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Symbolizing a whole pprof profile: every location of a mapping whose
 * object the symbolizer finds gets its frames (inline frames innermost
 * first), each mapping's has_* flags say what its locations now carry, and
 * a report says per mapping what stayed unsymbolized and why.
 *
 * The output is rebuilt in one canonical order from the input's content,
 * never from its string or function ids: capture-time symbolization and
 * `culpert symbolize` of an unsymbolized capture give the same bytes, and
 * symbolizing twice changes nothing.
 */
#ifndef CULPERT_PROFSYM_H
#define CULPERT_PROFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "symbolize.h"

struct elfobj;
struct pprof_budget;
struct pprof_mapping;
struct pprof_profile;
struct pprof_writer;
struct profsym;

struct profsym_opts {
	size_t sz;
	struct symbolizer *sym;
	/*
	 * Capture time: the mapping's file already open (borrowed), or NULL to
	 * search by build ID.  NULL callback: always search (offline).
	 */
	struct elfobj *(*local_object)(void *ctx, const struct pprof_mapping *m);
	void *ctx;
	/*
	 * When set, the process's heap is checked against it as the work goes
	 * (pprof_budget__check_heap): -E2BIG from profsym__run past it.
	 */
	struct pprof_budget *budget;
};

/* what became of one mapping; strings borrowed from the input profile and the symbolizer */
struct profsym_mapping {
	const char *filename;
	const char *build_id;
	size_t n_locs;			/* locations of the mapping */
	size_t n_functions;		/* ... with a function name */
	size_t n_lines;			/* ... with file:line for every frame */
	size_t n_kept;			/* ... left as they were: the object was not found */
	enum sym_level level;		/* what the object could give */
	const char *why;		/* why not more; "" when nothing is missing */
	const char *source;		/* the file frames came from, "" when none */
};

/* NULL and errno set on failure */
struct profsym *profsym__new(const struct profsym_opts *o);
void profsym__free(struct profsym *ps);
/*
 * Symbolize `in` into a new writer (*out, the caller frees it); `in` must
 * outlive the report.  0 or -errno.
 */
int profsym__run(struct profsym *ps, const struct pprof_profile *in, struct pprof_writer **out);
/*
 * The report: a summary line, then one line per mapping that has locations
 * and is not fully symbolized (every mapping with `all`).
 */
void profsym__print(const struct profsym *ps, FILE *f, bool all);

#endif /* CULPERT_PROFSYM_H */
