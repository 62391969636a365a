/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Aligned text tables: rows of cells collected first, printed once every
 * width is known, so columns line up whatever a cell holds (indented tree
 * names included).  Cells are separated by two spaces, no trailing blanks.
 */
#ifndef CULPERT_CLI_TABLE_H
#define CULPERT_CLI_TABLE_H

#include <stdio.h>

struct table;

/* align: one char per column, 'l' or 'r'; headers may be NULL (no header row) */
struct table *table__new(const char *align, const char *const *headers);
/* append a row of as many cells as columns; 0 or -ENOMEM */
int table__add(struct table *t, const char *const *cells);
/*
 * Keep column col within col_max columns and each row within row_max (0:
 * no limit); a cell that does not fit is cut in the middle with an ellipsis.
 */
void table__fit(struct table *t, size_t col, size_t row_max, size_t col_max);
void table__print(const struct table *t, FILE *f);
/* the same with another column separator, e.g. " | " for a markdown table */
void table__print_sep(const struct table *t, FILE *f, const char *sep);
void table__free(struct table *t);

#endif /* CULPERT_CLI_TABLE_H */
