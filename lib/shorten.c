// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "shorten.h"

#define ELLIPSIS "\xe2\x80\xa6"	/* U+2026, one column */

struct out {
	char *p;
	size_t len, at;
};

static void put(struct out *o, const char *s, size_t n)
{
	for (; n && o->at + 1 < o->len; n--)
		o->p[o->at++] = *s++;
	o->p[o->at] = '\0';
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.';
}

/* the index past the bracket matching the one at s[i] ('<' or '('), or n if unbalanced */
static size_t matching(const char *s, size_t i, size_t n)
{
	int angle = 0, paren = 0;

	for (; i < n; i++) {
		angle += (s[i] == '<') - (s[i] == '>');
		paren += (s[i] == '(') - (s[i] == ')');
		/* a '>' of "->" inside the arguments is no bracket */
		if (s[i] == '>' && i && s[i - 1] == '-')
			angle++;
		if (angle <= 0 && paren <= 0)
			return i + 1;
	}
	return n;
}

/* length of the operator spelled at s (after "operator"): <<=, (), <, -> ... */
static size_t operator_len(const char *s, size_t n)
{
	size_t i = 0;

	if (n >= 2 && s[0] == '(' && s[1] == ')')
		return 2;
	while (i < n && strchr("<>=!+-*/%^&|~[]", s[i]))
		i++;
	return i;
}

char *shorten_name(const char *s, size_t n, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	bool after_op = false;	/* just past "operator<": its lists follow */
	size_t i = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	while (i < n) {
		char c = s[i];
		bool prev_op = after_op;
		bool after_name = prev_op || (i && (ident_char(s[i - 1]) || strchr(">]", s[i - 1])));
		size_t end;

		if (i + 8 <= n && !strncmp(s + i, "operator", 8) && (!i || !ident_char(s[i - 1]))) {
			end = i + 8 + operator_len(s + i + 8, n - i - 8);
			put(&o, s + i, end - i);
			i = end;
			after_op = end < n && (s[end] == '(' || s[end] == '<' || s[end] == ' ');
			if (after_op && s[end] == ' ') {
				put(&o, " ", 1);
				i++;
			}
			continue;
		}
		after_op = false;
		if (c == '(' && n - i >= 21 && !strncmp(s + i, "(anonymous namespace)", 21)) {
			put(&o, s + i, 21);
			i += 21;
			continue;
		}
		/* a template argument list or a parameter list: keep the brackets only */
		if ((c == '<' && (prev_op || (i && (ident_char(s[i - 1]) || s[i - 1] == '>')))) ||
		    (c == '(' && after_name)) {
			end = matching(s, i, n);
			if (end - i == 2 || end > n || (end == n && s[n - 1] != (c == '<' ? '>' : ')')))
				put(&o, s + i, end - i);	/* empty, or unbalanced: as is */
			else {
				put(&o, &c, 1);
				put(&o, ELLIPSIS, strlen(ELLIPSIS));
				put(&o, c == '<' ? ">" : ")", 1);
			}
			i = end;
			continue;
		}
		put(&o, &c, 1);
		i++;
	}
	return buf;
}
