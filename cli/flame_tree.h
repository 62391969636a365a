/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call tree of a view for flame graphs: span names first (root to
 * innermost), then frames from the root to the leaf, inline frames
 * outermost first; each node with its bytes including descendants.
 *
 * The tree is never built.  A profile of a million distinct stacks has tens
 * of millions of distinct prefixes, one node each; instead the records are
 * sorted by their sequence of names, and one walk over them meets every node
 * of the tree in order, with the few on the current path open.  Memory is
 * the records' order and a key per frame name, time one sort.
 *
 * Bounds: FLAME_MAX_DEPTH levels under the root; a deeper stack ends in one
 * FLAME_DEEPER frame that holds the rest of it.  Only records with positive
 * bytes are drawn (negative values, as in pprof -diff_base files, have no
 * width).
 */
#ifndef CULPERT_CLI_FLAME_TREE_H
#define CULPERT_CLI_FLAME_TREE_H

#include <stdbool.h>
#include <stdio.h>

#include "view.h"

#define FLAME_MAX_DEPTH	512
#define FLAME_DEEPER	"\u2026"

struct flame_tree;

/* one node, as the walk leaves it (after its descendants) */
struct flame_node {
	const char *name;	/* escaped by the folded rule of escape.h; "all" for the root */
	uint32_t depth;		/* the root is 0 */
	bool is_span;
	double x;		/* bytes of the nodes before it at its level */
	double total;		/* bytes of it and its descendants */
};

struct flame_walk {
	/* a node left; children before parents, siblings by name */
	void (*leave)(const struct flame_node *n, void *ctx);
	/*
	 * a node's own bytes, once final, before any of its children: names[0..n)
	 * is its path below the root
	 */
	void (*self)(const char *const *names, size_t n, double bytes, void *ctx);
	void *ctx;
};

/* span: only records inside that span (NULL: all); NULL with a reason in err */
struct flame_tree *flame_tree__new(const struct view *v, const char *span, char *err,
				   size_t errlen);
/* the bytes of the root */
double flame_tree__total(const struct flame_tree *t);
/* every node once, depth first, siblings by name; 0 or -ENOMEM */
int flame_tree__walk(const struct flame_tree *t, const struct flame_walk *w);
/* "name;name;... bytes" for every node with bytes of its own, depth first, by name */
int flame_tree__folded(const struct flame_tree *t, FILE *f);
void flame_tree__free(struct flame_tree *t);

#endif /* CULPERT_CLI_FLAME_TREE_H */
