/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call tree of a view for flame graphs: span names first (root to
 * innermost), then frames from the root to the leaf, inline frames
 * outermost first; each node with its bytes including descendants.
 */
#ifndef CULPERT_CLI_FLAME_TREE_H
#define CULPERT_CLI_FLAME_TREE_H

#include <stdbool.h>
#include <stdio.h>

#include "hashtab.h"
#include "view.h"

struct flame_node {
	char *name;
	uint32_t parent, depth;
	uint32_t first_child, next_sibling;	/* sorted by name once built */
	bool is_span;
	double total, self;
};

struct flame_tree {
	struct flame_node *nodes;	/* nodes[0] is the root, named "all" */
	size_t n_nodes, cap_nodes;
	uint32_t max_depth;
	struct hashtab ht;
};

/* span: only records inside that span (NULL: all) */
struct flame_tree *flame_tree__new(const struct view *v, const char *span);
/* "name;name;... bytes" for every node with bytes of its own, depth first, by name */
void flame_tree__folded(const struct flame_tree *t, FILE *f);
void flame_tree__free(struct flame_tree *t);

#endif /* CULPERT_CLI_FLAME_TREE_H */
