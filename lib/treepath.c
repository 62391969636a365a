// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>

#include "treepath.h"

/* s (l bytes) at buf + off, as much as fits before the NUL */
static void append(char *buf, size_t len, size_t off, const char *s, size_t l)
{
	size_t k;

	if (off + 1 >= len)
		return;
	k = l < len - 1 - off ? l : len - 1 - off;
	memcpy(buf + off, s, k);
	buf[off + k] = '\0';
}

static bool needs_escape(char c)
{
	return c == ';' || c == '\\';
}

size_t treepath_escape(const char *name, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (; *name; name++) {
		if (needs_escape(*name))
			append(buf, len, off++, "\\", 1);
		append(buf, len, off++, name, 1);
	}
	return off;
}

size_t treepath_seg_len(const char *path)
{
	size_t i;

	for (i = 0; path[i] && path[i] != ';'; i++)
		if (path[i] == '\\' && needs_escape(path[i + 1]))
			i++;
	return i;
}

size_t treepath_unescape(const char *seg, size_t n, char *buf, size_t len)
{
	size_t i, off = 0;

	if (!len)
		return 0;
	for (i = 0; i < n && off + 1 < len; i++) {
		if (seg[i] == '\\' && i + 1 < n && needs_escape(seg[i + 1]))
			i++;
		buf[off++] = seg[i];
	}
	buf[off] = '\0';
	return off;
}

size_t treepath_chain(const struct treepath_tree *t, uint32_t node,
		      uint32_t chain[TREEPATH_MAX_DEPTH])
{
	size_t n = 0, i;

	for (; node != TREEPATH_NONE && n < TREEPATH_MAX_DEPTH; node = t->parent(t->ctx, node))
		chain[n++] = node;
	for (i = 0; i < n / 2; i++) {
		uint32_t x = chain[i];

		chain[i] = chain[n - 1 - i];
		chain[n - 1 - i] = x;
	}
	return n;
}

size_t treepath_write(const struct treepath_tree *t, uint32_t node, char *buf, size_t len)
{
	uint32_t chain[TREEPATH_MAX_DEPTH];
	size_t n = treepath_chain(t, node, chain), i, off = 0;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < n; i++) {
		const char *s = t->name(t->ctx, chain[i]);

		if (i)
			append(buf, len, off++, ";", 1);
		for (; *s; s++) {
			if (needs_escape(*s))
				append(buf, len, off++, "\\", 1);
			append(buf, len, off++, s, 1);
		}
	}
	return off;
}

/* the characters of a path from segment `i` of a chain on: ";" before each but the first */
struct path_chars {
	const struct treepath_tree *t;
	const uint32_t *chain;
	size_t n, i;
	const char *p;
	bool sep;
	bool escaped;		/* the '\\' before *p was given */
};

static int next_char(struct path_chars *c)
{
	while (!c->p || !*c->p) {
		if (c->p && c->i + 1 < c->n && !c->sep) {
			c->sep = true;
			return ';';
		}
		if (c->p)
			c->i++;
		if (c->i >= c->n)
			return -1;
		c->p = c->t->name(c->t->ctx, c->chain[c->i]);
		c->sep = false;
	}
	if (needs_escape(*c->p) && !c->escaped) {
		c->escaped = true;
		return '\\';
	}
	c->escaped = false;
	return (unsigned char)*c->p++;
}

int treepath_cmp(const struct treepath_tree *t, uint32_t a, uint32_t b)
{
	uint32_t ca[TREEPATH_MAX_DEPTH], cb[TREEPATH_MAX_DEPTH];
	size_t na = treepath_chain(t, a, ca), nb = treepath_chain(t, b, cb), k = 0;
	struct path_chars x = { t, ca, na, 0, NULL, false, false };
	struct path_chars y = { t, cb, nb, 0, NULL, false, false };
	int p, q;

	/* a shared node is a shared prefix; the rest begins with the ';' after it */
	while (k < na && k < nb && ca[k] == cb[k])
		k++;
	if (k == na && k == nb)
		return 0;
	if (k) {
		x.i = y.i = k - 1;
		x.p = y.p = "";
	}
	do {
		p = next_char(&x);
		q = next_char(&y);
	} while (p == q && p >= 0);
	return p < q ? -1 : p > q;
}

bool treepath_is(const struct treepath_tree *t, uint32_t node, const char *path)
{
	uint32_t chain[TREEPATH_MAX_DEPTH];
	size_t n = treepath_chain(t, node, chain);
	struct path_chars x = { t, chain, n, 0, NULL, false, false };
	const unsigned char *p = (const unsigned char *)path;
	int c;

	/* the path as written, escapes included, character by character */
	if (!n || (node != TREEPATH_NONE && t->parent(t->ctx, chain[0]) != TREEPATH_NONE))
		return false;
	while ((c = next_char(&x)) >= 0)
		if (c != *p++)
			return false;
	return !*p;
}
