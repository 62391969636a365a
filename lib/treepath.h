/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Paths of trees with parent links (the span tree, diff's merged tree): a
 * node's names from the root, ';'-joined.  Nodes keep a name and a parent
 * only; a path is written out when printed, so the memory of a tree is
 * linear in its nodes however deep it is.
 */
#ifndef CULPERT_TREEPATH_H
#define CULPERT_TREEPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the deepest tree these functions see: trees are built no deeper */
#define TREEPATH_MAX_DEPTH	128
#define TREEPATH_NONE		UINT32_MAX

struct treepath_tree {
	const void *ctx;
	uint32_t (*parent)(const void *ctx, uint32_t node);	/* TREEPATH_NONE for a root */
	const char *(*name)(const void *ctx, uint32_t node);
};

/* node and its ancestors, root first, into chain; their count */
size_t treepath_chain(const struct treepath_tree *t, uint32_t node,
		      uint32_t chain[TREEPATH_MAX_DEPTH]);
/* the path into buf (NUL-terminated, cut when it does not fit); its whole length */
size_t treepath_write(const struct treepath_tree *t, uint32_t node, char *buf, size_t len);
/* strcmp() of the two paths, without writing them */
int treepath_cmp(const struct treepath_tree *t, uint32_t a, uint32_t b);
/* is node's path `path`? */
bool treepath_is(const struct treepath_tree *t, uint32_t node, const char *path);

#endif /* CULPERT_TREEPATH_H */
