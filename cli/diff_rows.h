/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The arithmetic of `culpert diff`, apart from its printing: span (or callsite) matching,
 * the classification of docs/cli.md ("diff") and the sampling noise of each estimate.
 */
#ifndef CULPERT_CLI_DIFF_ROWS_H
#define CULPERT_CLI_DIFF_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "view.h"

/* in the order rows are listed: what fails first */
enum diff_kind { KIND_REGRESSION, KIND_NEW, KIND_IMPROVEMENT, KIND_GONE, KIND_QUIET, KIND__COUNT };

/* what a row is: a span (by path or innermost name), or a callsite over all spans */
enum diff_by { DIFF_BY_PATH, DIFF_BY_NAME, DIFF_BY_CALLSITE };

struct diff_opts {
	uint64_t threshold_bytes;
	double threshold_pct;
	uint64_t min_span_bytes;
	double min_confidence;	/* in standard errors, sampled rows only; 0 = off */
	double threshold_p99_pct;	/* exact rows: p99 bytes per instance grown this much; 0 = off */
	enum diff_by by;
	int64_t rate;		/* sampling rate of both profiles, for the noise */
};

struct diff_row {
	uint32_t node;		/* matched by path: the merged tree's node (diff_row__key()) */
	/* by name or callsite: a span name or "function (file:line)", borrowed from a view */
	const char *name;
	size_t name_len;	/* a callsite's: the length of its "function"; 0 for spans */
	double before, after, delta;
	double pct;		/* of |before|; NaN when before is 0 */
	/* standard errors of the estimates: sqrt(rate * bytes) per side, combined for delta */
	double se_before, se_after, se_delta;
	enum diff_kind kind;
	/* why quiet: "min_span_bytes", "threshold", "noise", "before_attach"; or NULL */
	const char *reason;
	/* exact: from both profiles' exact span totals (no noise), name is the span path */
	bool exact;
	bool p99_regressed;	/* p99 per instance grew by --threshold-p99-pct or more */
	double p99[2];		/* bytes per instance, before and after; 0: no closed instance */
	double p99_pct;		/* NaN when before has none */
};

struct diff_result {
	struct diff_row *rows;
	size_t n_rows;
	size_t *order;		/* rows by kind group, then |delta| descending, then key */
	size_t count[KIND__COUNT];
	double total[2];
	struct diff_tree *tree;	/* both span trees merged: rows by path are its nodes */
	enum diff_by by;
	bool exact;		/* span rows from exact totals, both profiles having them */
};

/* classify one span; *reason says why when quiet */
enum diff_kind diff_classify(double before, double after, const struct diff_opts *o,
			     const char **reason);
const char *diff_kind_name(enum diff_kind k);
/* 100 * (after - before) / |before|; NaN when before is 0 */
double diff_pct(double before, double after);
/* before and after, with the delta and pct that follow from them */
void diff_row__set(struct diff_row *r, double before, double after);

/* rows of every span (or callsite) present on either side; 0 or -ENOMEM */
int diff_result__build(struct diff_result *r, const struct view *before, const struct view *after,
		       const struct diff_opts *o);
void diff_result__clear(struct diff_result *r);
/* a regression or a new span: what fails a CI job */
bool diff_result__failed(const struct diff_result *r);
/*
 * a row's key, its span path, span name or callsite, into buf (VIEW_PATH_MAX bytes hold any
 * path; a longer callsite is cut between characters); returns buf
 */
const char *diff_row__key(const struct diff_result *r, const struct diff_row *row, char *buf,
			  size_t len);

/* the union of both span trees, matched by path, with inclusive totals per side */
struct diff_node {
	const char *name;		/* borrowed from one of the views */
	uint32_t parent, depth;
	uint32_t first_child, next_sibling;	/* VIEW_NONE: none */
	bool no_span;
	bool allocated;			/* a span that allocated itself on either side */
	double total[2], self[2];
};

struct diff_tree {
	struct diff_node *nodes;
	size_t n_nodes, cap_nodes;
	uint32_t first_root;
	struct hashtab ht;
};

/* children of node (VIEW_NONE: roots), largest first, into a malloc'd *out; count returned */
size_t diff_tree__children(const struct diff_tree *t, uint32_t node, uint32_t **out);

#endif /* CULPERT_CLI_DIFF_ROWS_H */
