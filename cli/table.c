// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "table.h"
#include "vec.h"

struct table {
	char *align;
	size_t n_cols;
	char **cells;		/* row-major */
	size_t n_cells, cap_cells;
	size_t *width;
};

/* display width: UTF-8 continuation bytes take no column */
static size_t width_of(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* a cell as the terminal shows it: the text rule of escape.h (at most 4 bytes a byte) */
static char *cell_text(const char *s)
{
	size_t len = 4 * strlen(s) + 1;
	char *c = malloc(len);

	return c ? esc_text(c, len, s) : NULL;
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
		char *c = cell_text(cells[i] ? cells[i] : "");
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

void table__print(const struct table *t, FILE *f)
{
	table__print_sep(t, f, "  ");
}

void table__print_sep(const struct table *t, FILE *f, const char *sep)
{
	size_t r, i, end;

	for (r = 0; r < t->n_cells; r += t->n_cols) {
		/* empty trailing cells print nothing, not even their separator */
		for (end = t->n_cols; end > 1 && !t->cells[r + end - 1][0]; end--)
			;
		for (i = 0; i < end; i++) {
			const char *c = t->cells[r + i];
			size_t pad = t->width[i] - width_of(c);
			bool last = i + 1 == end;

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
