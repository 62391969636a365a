// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "vec.h"

/* columns a cut column keeps whatever the others take */
#define TABLE_MIN_FIT 24

struct table {
	char *align;
	size_t n_cols;
	char **cells;		/* row-major */
	size_t n_cells, cap_cells;
	size_t *width;
	/* table__fit(): the column cut to fit, and its limits (0: none) */
	size_t fit_col, fit_row_max, fit_col_max;
};

/* display width: UTF-8 continuation bytes take no column */
static size_t width_of(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

struct table *table__new(const char *align, const char *const *headers)
{
	struct table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->n_cols = strlen(align);
	t->align = strdup(align);
	t->width = calloc(t->n_cols, sizeof(*t->width));
	if (!t->align || !t->width || (headers && table__add(t, headers))) {
		table__free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

int table__add(struct table *t, const char *const *cells)
{
	size_t i;

	if (vec_reserve(&t->cells, &t->cap_cells, t->n_cells + t->n_cols, sizeof(char *)))
		return -ENOMEM;
	for (i = 0; i < t->n_cols; i++) {
		char *c = strdup(cells[i] ? cells[i] : "");
		size_t w;

		if (!c)
			return -ENOMEM;
		t->cells[t->n_cells++] = c;
		w = width_of(c);
		if (w > t->width[i])
			t->width[i] = w;
	}
	return 0;
}

void table__fit(struct table *t, size_t col, size_t row_max, size_t col_max)
{
	t->fit_col = col;
	t->fit_row_max = row_max;
	t->fit_col_max = col_max;
}

/* the width column `col` prints at: its widest cell, within table__fit()'s limits */
static size_t print_width(const struct table *t, size_t col, size_t sep_len)
{
	size_t w = t->width[col], others = 0, i;

	if (col != t->fit_col || (!t->fit_row_max && !t->fit_col_max))
		return w;
	if (t->fit_col_max && w > t->fit_col_max)
		w = t->fit_col_max;
	if (t->fit_row_max) {
		size_t room;

		for (i = 0; i < t->n_cols; i++)
			if (i != col)
				others += t->width[i] + sep_len;
		room = t->fit_row_max > others ? t->fit_row_max - others : 0;
		/* however narrow the terminal, a name keeps a readable width */
		if (room < TABLE_MIN_FIT)
			room = TABLE_MIN_FIT;
		if (w > room)
			w = room;
	}
	return w;
}

/* byte offset of display column `col` of s */
static size_t byte_of_column(const char *s, size_t col)
{
	size_t i = 0;

	for (; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && col-- == 0)
			break;
	return i;
}

/*
 * c cut to w columns in the middle: the start names the function, the end
 * its file and line.  Into buf (room for c); returns buf, or c if it fits.
 */
static const char *cut_middle(const char *c, size_t w, char *buf)
{
	size_t cw = width_of(c), tail, head;

	if (cw <= w || w < 2)
		return c;
	tail = w / 3;
	head = w - 1 - tail;
	memcpy(buf, c, byte_of_column(c, head));
	strcpy(buf + byte_of_column(c, head), "\xe2\x80\xa6");
	strcat(buf, c + byte_of_column(c, cw - tail));
	return buf;
}

void table__print(const struct table *t, FILE *f)
{
	table__print_sep(t, f, "  ");
}

void table__print_sep(const struct table *t, FILE *f, const char *sep)
{
	size_t r, i, end, fit_w = print_width(t, t->fit_col, strlen(sep)), longest = 0;
	char *cut;

	/* a cut cell is never longer than its cell, in bytes (widths count code points) */
	for (r = t->fit_col; r < t->n_cells; r += t->n_cols)
		if (strlen(t->cells[r]) > longest)
			longest = strlen(t->cells[r]);
	cut = malloc(longest + 4);

	for (r = 0; r < t->n_cells; r += t->n_cols) {
		/* empty trailing cells print nothing, not even their separator */
		for (end = t->n_cols; end > 1 && !t->cells[r + end - 1][0]; end--)
			;
		for (i = 0; i < end; i++) {
			const char *c = t->cells[r + i];
			size_t w = i == t->fit_col ? fit_w : t->width[i], pad;
			bool last = i + 1 == end;

			if (i == t->fit_col && cut)
				c = cut_middle(c, w, cut);
			pad = w > width_of(c) ? w - width_of(c) : 0;
			if (i)
				fputs(sep, f);
			if (t->align[i] == 'r')
				fprintf(f, "%*s", (int)pad, "");
			fputs(c, f);
			if (t->align[i] != 'r' && !last)
				fprintf(f, "%*s", (int)pad, "");
		}
		fputc('\n', f);
	}
	free(cut);
}

void table__free(struct table *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n_cells; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->width);
	free(t->align);
	free(t);
}
