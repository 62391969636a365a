/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Paths of trees with parent links (the span tree, diff's merged tree): a
 * node's names from the root, ';'-joined, a ';' or '\\' inside a name
 * escaped with '\\' (docs/profile-format.md, span_path).  Nodes keep a name and a parent
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

/* name escaped for a path ("semi\\;colon") into buf (NUL-terminated, cut); its whole length */
size_t treepath_escape(const char *name, char *buf, size_t len);
/* the length of path's first name: up to the first ';' that no '\\' escapes */
size_t treepath_seg_len(const char *path);
/*
 * that name (n bytes of a path) unescaped into buf (NUL-terminated, cut to
 * fit); its length.  A '\\' before anything but ';' and '\\' is kept, as
 * paths written before the escape have it.
 */
size_t treepath_unescape(const char *seg, size_t n, char *buf, size_t len);

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
