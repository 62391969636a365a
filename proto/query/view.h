/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A profile as the commands see it: samples aggregated once, while they are
 * read, by (span, callsite, age), with the span tree built from span_path
 * (or span_name/span_id/span_parent_id links when there is no path).  report,
 * diff, info and flamegraph all start from a view, and so does the summary
 * culpert-bpf capture prints; none keeps the samples.
 */
#ifndef CULPERT_VIEW_H
#define CULPERT_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "pprof.h"
#include "totals.h"
#include "treepath.h"

#define VIEW_NONE	UINT32_MAX
#define VIEW_NO_SPAN	"(no span)"
/*
 * Bounds of the span tree, whatever a file holds (culpert-bpf keeps 32 open
 * spans of 127 bytes): a span path keeps its first VIEW_MAX_SPAN_DEPTH - 1
 * spans, everything deeper is one span named VIEW_DEEPER at the last level;
 * names are cut to VIEW_SPAN_NAME_MAX bytes (at a character boundary).  So
 * every path fits VIEW_PATH_MAX bytes (each byte of a name escaped, at worst)
 * and every printer's recursion is bounded.
 */
#define VIEW_MAX_SPAN_DEPTH	TREEPATH_MAX_DEPTH
#define VIEW_SPAN_NAME_MAX	255
#define VIEW_PATH_MAX		(VIEW_MAX_SPAN_DEPTH * (2 * VIEW_SPAN_NAME_MAX + 1))
#define VIEW_DEEPER		"\u2026"
/* the parent of spans whose own parent was entered before culpert-bpf attached (orphans.c) */
#define VIEW_BEFORE_ATTACH	"(entered before attach)"

enum view_value {
	VIEW_ALLOC,	/* alloc_objects / alloc_space */
	VIEW_INUSE,	/* inuse_objects / inuse_space */
};

struct view_opts {
	enum view_value value;
	bool stacks;		/* keep each record's stack (flamegraph) */
	size_t max_memory;	/* the budget of reading the file; 0: pprof_budget_for() its size */
	/* --skip: globs of functions looked through as wrappers, beside the default list */
	const char *const *skip;
	size_t n_skip;
	/* each record's caller too: the callsite's first caller outside the machinery */
	bool callers;
};

/* a node of the span tree; (no span) is a root of its own; its path is view__path()'s */
struct view_span {
	char *name;
	uint32_t parent;	/* VIEW_NONE for roots */
	uint32_t depth;
	uint32_t first_child, next_sibling;	/* VIEW_NONE terminated, in creation order */
	bool no_span;
	double self, total;	/* selected bytes: own samples, and with the descendants' */
	double self_objects, total_objects;
	uint64_t self_samples, total_samples;	/* records */
	uint64_t self_sampled, total_sampled;	/* sampled allocations (view.has_sampled) */
};

/*
 * The selected values of one process: pid and comm labels (attach
 * --children); pid -1 and comm 0 for the samples without them
 */
struct view_proc {
	int64_t pid;
	int64_t comm;		/* string index, 0 when absent */
	double bytes, objects;
	uint64_t samples;	/* records */
	uint64_t sampled;	/* sampled allocations */
};

/* samples with equal span, callsite, age (and stack, with opts.stacks), summed */
struct view_rec {
	uint32_t span;		/* index into spans */
	uint32_t callsite;	/* index into callsites */
	uint32_t wrapper;	/* index into wrappers: the outermost one skipped; VIEW_NONE */
	uint32_t caller;	/* index into callsites, with opts.callers; VIEW_NONE */
	uint32_t stack;		/* index into stacks, VIEW_NONE without opts.stacks */
	int64_t age_ns;		/* the age_ns label; -1 when absent */
	double bytes, objects;
	uint64_t samples;	/* sample records of the file summed here */
	uint64_t sampled;	/* the sampled allocations they stand for (sampled_allocs labels) */
};

struct view {
	struct pprof_profile *p;	/* everything but the samples */
	struct view_opts opts;
	int64_t rate;
	int bytes_idx, objects_idx;	/* sample value columns in use */
	bool has_inuse, has_age, has_spans;
	uint64_t n_samples;		/* sample records of the file */
	uint64_t n_value_samples;	/* ... with a non-zero selected value */
	/*
	 * Every such record says how many sampled allocations it aggregates
	 * (culpert-bpf's sampled_allocs label): n_sampled is their sum.
	 */
	bool has_sampled;
	uint64_t n_sampled;
	double total_bytes, total_objects;
	/* inuse_space and inuse_objects summed whatever the value (info shows both) */
	int inuse_bytes_idx, inuse_objects_idx;
	double inuse_bytes, inuse_objects;

	struct view_span *spans;
	size_t n_spans;
	/* the VIEW_BEFORE_ATTACH node, or VIEW_NONE (orphans.c) */
	uint32_t before_attach;
	char **callsites;		/* "function (file:line)" */
	size_t *callsite_name_len;	/* the length of each one's "function" */
	/*
	 * the function of each, as view__frame_fid() names it: the name's string
	 * index, p->n_strings + the location index for an unnamed frame,
	 * UINT64_MAX for "(no stack)"
	 */
	uint64_t *callsite_fid;
	size_t n_callsites;
	char **wrappers;		/* functions looked through to find a callsite */
	size_t n_wrappers;
	struct view_rec *recs;
	size_t n_recs;
	uint32_t *stack_locs;		/* indices into p->locations, leaf first, of every stack */
	uint32_t *stack_off;		/* stack i: stack_locs[stack_off[i]..stack_off[i+1]] */
	size_t n_stacks;

	/* the records by process (view_proc); has_procs: some sample has a pid label */
	struct view_proc *procs;
	size_t n_procs;
	bool has_procs;

	/* exact span totals from the profile's comments (totals.h); .present false if none */
	struct span_totals totals;

	void *priv;			/* the builder's state while reading */
	char *path_buf;			/* view__path()'s, VIEW_PATH_MAX bytes */
	/* what reading took of the budget: printers that build more charge it too */
	struct pprof_budget budget;
};

/*
 * Read path ("-" = stdin) into a view.  NULL with a one-line reason in err
 * (without the path) on failure; a profile without in-use sample types read
 * with VIEW_INUSE fails with errno ENODATA.
 */
struct view *view__load(const char *path, const struct view_opts *opts, char *err, size_t errlen);
/* the same from gzip'd bytes in memory */
struct view *view__decode(const void *buf, size_t len, const struct view_opts *opts, char *err,
			  size_t errlen);
void view__free(struct view *v);

/*
 * Move v's roots that `other` shows nested under another span (and their
 * exact totals' paths) under v's VIEW_BEFORE_ATTACH node, as v's own nesting
 * already did: two profiles of one program compare with one grouping
 * whenever each attached.  0, -ENOMEM or -E2BIG.
 */
int view__orphans_from(struct view *v, const struct view *other);
/* span i's path ("a;b;c"), in a buffer of the view's valid until the next call */
const char *view__path(const struct view *v, uint32_t span);
/* the span tree for lib/treepath.h */
struct treepath_tree view__span_tree(const struct view *v);

/* children of span i (VIEW_NONE: the roots) sorted by total bytes, largest first, ties by name */
size_t view__children(const struct view *v, uint32_t span, uint32_t *out);
/* is span i, or one of its ancestors, named `name` (or with path `name`)? */
bool view__span_within(const struct view *v, uint32_t span, const char *name);
/* is some span (not the no-span bucket) named `name`, or with path `name`? */
bool view__has_span(const struct view *v, const char *name);
/*
 * The spans that allocated themselves, by their own bytes, largest first, ties
 * by path, into out (room for n_spans); their count returned.
 */
size_t view__flat_spans(const struct view *v, uint32_t *out);

/* one callsite's share of the selected records */
struct view_cs_row {
	uint32_t callsite;
	double bytes, objects;
	uint64_t samples;	/* records */
	uint64_t sampled;	/* sampled allocations */
	int64_t oldest_ns;	/* -1 when no record carries an age */
};

/*
 * The records select() keeps (NULL: all) summed by callsite: the callsites
 * with samples, by bytes, largest first, ties by name, in a malloc'd array of
 * *n rows, *total their bytes.  NULL when out of memory.
 */
struct view_cs_row *view__callsite_rows(const struct view *v,
					bool (*select)(const struct view_rec *rec, void *ctx),
					void *ctx, size_t *n, double *total);
/* the bytes of the selected records that reached their callsite through one wrapper */
struct view_wrap_row {
	uint32_t wrapper;	/* index into wrappers */
	double bytes;
};

/*
 * The records select() keeps (NULL: all) summed by the outermost wrapper
 * they skipped, by bytes, largest first, ties by name; NULL when out of
 * memory.  Records that skipped none are left out.
 */
struct view_wrap_row *view__wrapper_rows(const struct view *v,
					 bool (*select)(const struct view_rec *rec, void *ctx),
					 void *ctx, size_t *n);
/*
 * Callsite i for a table row: its function name shortened (shorten.h), the
 * file and line as they are; or the full name when `full`.  Returns buf.
 */
const char *view__callsite_label(const struct view *v, uint32_t i, bool full, char *buf,
				 size_t len);
/*
 * Does line `line` of location l name a function of the view's --skip globs
 * (opts.skip)?  The default wrapper list does not count: a flame graph keeps
 * every frame unless the user names it.
 */
bool view__frame_skipped(const struct view *v, const struct pprof_location *l, uint32_t line);
/*
 * The function of line `line` of location l, for inclusive sums: its name's
 * string index; an unnamed frame's is p->n_strings + its location index.
 */
uint64_t view__frame_fid(const struct view *v, const struct pprof_location *l, uint32_t line);
/* is callsite i an unnamed frame ("object+0xoffset")? */
bool view__callsite_unnamed(const struct view *v, uint32_t i);
/*
 * The inclusive bytes of every function (view__frame_fid()) over the records
 * select() keeps (NULL: all), each record's bytes once per function on its
 * stack (opts.stacks), in a malloc'd array of *n; NULL when out of memory.
 * *depth (malloc'd too) sums each function's frames from the leaf, by
 * bytes: over its inclusive bytes, how deep it is on average.
 */
double *view__inclusive(const struct view *v, bool (*select)(const struct view_rec *rec, void *ctx),
			void *ctx, size_t *n, double **depth);
/*
 * The records select() keeps (NULL: all) summed by caller (opts.callers), as
 * view__callsite_rows() by callsite.
 */
struct view_cs_row *view__caller_rows(const struct view *v,
				      bool (*select)(const struct view_rec *rec, void *ctx),
				      void *ctx, size_t *n, double *total);
/*
 * The display name of line `line` of location l into buf: "function", or with
 * `where` "function (file:line)"; "lib.so+0x1f0" when l has no lines.
 */
const char *view__frame_name(const struct view *v, const struct pprof_location *l, uint32_t line,
			     bool where, char *buf, size_t len);

/* the processes, by selected bytes, largest first, ties by pid; malloc'd, NULL when out of memory */
struct view_proc *view__process_rows(const struct view *v, size_t *n);

#endif /* CULPERT_VIEW_H */
