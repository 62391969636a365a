/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A flame tree as one self-contained SVG file: no external script, style or
 * font, so it opens from disk, from a CI artifact or an e-mail alike.  Click
 * a frame to zoom into it, "Reset zoom" to go back, "Search" to highlight
 * frames matching a regular expression.
 */
#ifndef CULPERT_CLI_FLAME_SVG_H
#define CULPERT_CLI_FLAME_SVG_H

#include <stdio.h>

#include "flame_tree.h"

/*
 * At most 100000 frames are drawn (the narrowest are left out, and the SVG
 * says how many); frames are in the order the walk leaves them, children
 * before parents.  0 or -ENOMEM.
 */
int flame_svg__write(const struct flame_tree *t, FILE *f, const char *title_file,
		     const char *span);

#endif /* CULPERT_CLI_FLAME_SVG_H */
