// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>

#include "escape.h"

int utf8_decode(const char *str, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char lo = 0x80, hi = 0xbf;
	uint32_t c;
	int n, i;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2, c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3, c = s[0] & 0x0f;
		/* no overlong forms (E0 80..9F) and no UTF-16 surrogates (ED A0..BF) */
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4, c = s[0] & 0x07;
		/* no overlong forms (F0 80..8F), nothing past U+10FFFF (F4 90..) */
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	*cp = c;
	return n;
}

/* where escaped text goes: a FILE, or a buffer that keeps whole units only */
struct sink {
	FILE *f;
	char *buf;
	size_t len, n;
	bool full;
};

static void put(struct sink *o, const char *p, size_t n)
{
	if (o->f) {
		fwrite(p, 1, n, o->f);
		return;
	}
	if (o->full || o->n + n >= o->len) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->n, p, n);
	o->n += n;
	o->buf[o->n] = '\0';
}

bool esc_is_control(uint32_t c)
{
	return c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == 0x061c ||
	       c == 0x200e || c == 0x200f || (c >= 0x2028 && c <= 0x202e) ||
	       (c >= 0x2066 && c <= 0x2069) || c == 0xfffe || c == 0xffff;
}

/* the text rule for the character at s into out (room for 8); its input length in *used */
static size_t text_unit(const char *s, char *out, size_t *used)
{
	uint32_t c;
	int n = utf8_decode(s, &c);

	if (!n) {
		*used = 1;
		return (size_t)snprintf(out, 8, "\\x%02x", (unsigned char)*s);
	}
	*used = (size_t)n;
	if (!esc_is_control(c)) {
		memcpy(out, s, (size_t)n);
		return (size_t)n;
	}
	if (c == '\n' || c == '\r' || c == '\t')
		return (size_t)snprintf(out, 8, "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
	if (c < 0x80)
		return (size_t)snprintf(out, 8, "\\x%02x", c);
	return (size_t)snprintf(out, 8, "\\u%04x", c);
}

enum rule { RULE_TEXT, RULE_FOLDED, RULE_XML, RULE_MD_TABLE };

static const char *xml_entity(char c)
{
	switch (c) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&apos;";
	default: return NULL;
	}
}

static void escape(struct sink *o, const char *s, enum rule r)
{
	char u[8];
	size_t used, n;

	while (*s) {
		n = text_unit(s, u, &used);
		s += used;
		if (n == 1 && r == RULE_FOLDED && u[0] == ';')
			u[0] = ':';
		if (n == 1 && r == RULE_XML && xml_entity(u[0])) {
			put(o, xml_entity(u[0]), strlen(xml_entity(u[0])));
			continue;
		}
		if (n == 1 && r == RULE_MD_TABLE && u[0] == '|')
			put(o, "\\", 1);
		put(o, u, n);
	}
}

static char *to_buf(char *buf, size_t len, const char *s, enum rule r)
{
	struct sink o = { .buf = buf, .len = len };

	if (!len)
		return buf;
	buf[0] = '\0';
	escape(&o, s, r);
	return buf;
}

char *esc_text(char *buf, size_t len, const char *s)
{
	return to_buf(buf, len, s, RULE_TEXT);
}

char *esc_folded(char *buf, size_t len, const char *s)
{
	return to_buf(buf, len, s, RULE_FOLDED);
}

void esc_text_fputs(const char *s, FILE *f)
{
	struct sink o = { .f = f };

	escape(&o, s, RULE_TEXT);
}

void esc_xml_fputs(const char *s, FILE *f)
{
	struct sink o = { .f = f };

	escape(&o, s, RULE_XML);
}

/*
 * CommonMark code spans: the fence is one backtick more than the longest run
 * inside; one space is stripped from each end when both ends have one (and
 * the span is not all spaces), so a space goes on both sides when an end is
 * a backtick or a space.
 */
static void md_code(struct sink *o, const char *s, bool in_table)
{
	size_t run = 0, longest = 0, n = strlen(s), i;
	bool pad, blank = true;

	for (i = 0; i < n; i++) {
		run = s[i] == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
		blank &= s[i] == ' ';
	}
	if (!n) {
		/* no empty code span exists: one space, which stays */
		put(o, "` `", 3);
		return;
	}
	pad = !blank && (s[0] == '`' || s[n - 1] == '`' || s[0] == ' ' || s[n - 1] == ' ');
	for (i = 0; i <= longest; i++)
		put(o, "`", 1);
	if (pad)
		put(o, " ", 1);
	escape(o, s, in_table ? RULE_MD_TABLE : RULE_TEXT);
	if (pad)
		put(o, " ", 1);
	for (i = 0; i <= longest; i++)
		put(o, "`", 1);
}

void esc_md_code(const char *s, bool in_table, FILE *f)
{
	struct sink o = { .f = f };

	md_code(&o, s, in_table);
}

char *esc_md_code_str(char *buf, size_t len, const char *s, bool in_table)
{
	struct sink o = { .buf = buf, .len = len };

	if (!len)
		return buf;
	buf[0] = '\0';
	md_code(&o, s, in_table);
	return buf;
}
