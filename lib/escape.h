/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Names in a profile come from the profiled program (function and span
 * names, comm, file names) or from whoever wrote the file: any bytes at all.
 * Every printer writes them through the one rule of its format, here (JSON's
 * is lib/json.c, with the same controls as \uXXXX):
 *
 *   text      C0 controls, DEL, C1 controls, the bidirectional and line
 *             separator controls and U+FFFE/U+FFFF become visible escapes
 *             (\n \r \t \xHH \uHHHH), a byte that is not UTF-8 \xHH; the rest
 *             is kept.  No byte reaches the terminal that moves the cursor,
 *             changes colours or breaks a line.
 *   folded    the text rule, and ';' (the frame separator) becomes ':'.
 *   markdown  the text rule inside a code span with a long enough fence:
 *             nothing is markup, HTML or a line ending; in a table '|' is
 *             escaped.
 *   xml       the text rule, then & < > " ' as entities: well-formed XML 1.0.
 */
#ifndef CULPERT_ESCAPE_H
#define CULPERT_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * the UTF-8 sequence at s, strict (no overlong forms, no surrogates, nothing
 * past U+10FFFF): its length, 0 if invalid
 */
int utf8_decode(const char *s, uint32_t *cp);

/*
 * the characters every rule escapes: C0, DEL, C1, the bidirectional controls,
 * the line and paragraph separators, U+FFFE and U+FFFF (they reorder or
 * break the line a terminal or a browser shows, or are not XML)
 */
bool esc_is_control(uint32_t cp);

/*
 * s under a rule into buf (always NUL-terminated when len > 0, cut between
 * two characters' escapes, never inside one); returns buf.
 */
char *esc_text(char *buf, size_t len, const char *s);
char *esc_folded(char *buf, size_t len, const char *s);
/* the same straight to f */
void esc_text_fputs(const char *s, FILE *f);
void esc_xml_fputs(const char *s, FILE *f);
/* s as a markdown code span; in_table: inside a table cell ('|' escaped) */
void esc_md_code(const char *s, bool in_table, FILE *f);
char *esc_md_code_str(char *buf, size_t len, const char *s, bool in_table);

#endif /* CULPERT_ESCAPE_H */
