/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The state of building a view while the samples stream by, shared by the
 * parts of the builder: view.c (records, loading), callsite.c (which frame
 * is the callsite), spantree.c (raw spans, then the tree).  Not for users
 * of view.h.
 */
#ifndef CULPERT_VIEW_BUILD_H
#define CULPERT_VIEW_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "hashtab.h"
#include "view.h"

/* raw span kinds */
enum { RAW_NONE, RAW_PATH, RAW_NAMED };

struct raw_span {
	int kind;
	int64_t str;		/* RAW_PATH: the path; RAW_NAMED: the name */
	int64_t id, parent_id;	/* RAW_NAMED */
	bool has_parent;
	uint32_t node;		/* tree node, once resolved (VIEW_NONE before) */
};

/* a callsite key: a function line, or an address where there is no line */
struct cs_key {
	int64_t name, file, line;
	uint64_t mapping, address;
};

#define CS_UNSET	UINT32_MAX
#define CS_MACHINERY	(UINT32_MAX - 1)

struct builder {
	struct view *v;
	struct pprof_budget budget;	/* the reader's and ours: pprof_read_opts.budget */
	struct raw_span *raw;
	size_t n_raw, cap_raw;
	struct hashtab raw_ht;
	struct cs_key *cs;
	size_t cap_cs, cap_callsites, cap_name_len, cap_fid;
	struct hashtab cs_ht;
	size_t cap_recs;
	struct hashtab rec_ht;
	size_t cap_stack_locs, cap_stack_off;
	struct hashtab stack_ht;
	uint32_t *scratch;	/* one sample's stack as location indices */
	size_t cap_scratch;
	size_t cap_spans;
	struct hashtab span_ht;
	struct hashtab id_ht;	/* span_id -> the first RAW_NAMED span with it */
	uint32_t *loc_cs;	/* per location index: its callsite, CS_UNSET or CS_MACHINERY */
	uint32_t *loc_wrap;	/* per location index: outermost wrapper skipped, or VIEW_NONE */
	struct hashtab wrap_ht;
	size_t cap_wrappers;
	uint8_t *fn_mach;	/* per function index: 0 unknown, 1 machinery, 2 not */
	uint64_t unlabelled;	/* value records without a sampled_allocs label */
	struct hashtab proc_ht;	/* (pid, comm) -> index into v->procs */
	size_t cap_procs;
	char err[256];		/* why prepare() refused the profile */
};

/* callsite.c: per-location caches, once the tables are read; 0 or -ENOMEM */
int callsite__prepare(struct builder *b);
/*
 * The callsite of a sample: its first frame from the leaf that is not
 * machinery; *wrapper the outermost wrapper skipped on the way (VIEW_NONE);
 * and, with caller, its first caller outside the machinery (opts.callers).
 */
int callsite__of_sample(struct builder *b, const struct pprof_sample_ref *s, uint32_t *out,
			uint32_t *wrapper, uint32_t *caller);
void callsite__free(struct builder *b);

/* spantree.c: a sample's raw span, interned; the tree once every sample is read */
int spantree__intern_raw(struct builder *b, const struct raw_span *r, uint32_t *out);
int spantree__build(struct builder *b);
void spantree__free(struct builder *b);

/* orphans.c: roots that are children of a span entered before attach, under a marker; 0 or -ENOMEM */
int orphans__mark(struct builder *b);

/* process.c: a value record's share of its process (pid and comm labels); 0 or -errno */
int procs__add(struct builder *b, const struct pprof_profile *p, const struct pprof_sample_ref *s,
	       const struct view_rec *r);

#endif /* CULPERT_VIEW_BUILD_H */
