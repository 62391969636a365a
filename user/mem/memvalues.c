// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memvalues.h"

int mem_section__index(const struct mem_section *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->fields[i].name, name))
			return (int)i;
	return -1;
}

bool mem_get(const struct mem_section *s, const struct mem_values *v, const char *name,
	     uint64_t *out)
{
	int i = mem_section__index(s, name);

	if (i < 0 || !mem_has(v, i))
		return false;
	*out = v->v[i];
	return true;
}

static int field_by_key(const struct mem_section *s, const char *key, size_t len)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->fields[i].key && strlen(s->fields[i].key) == len &&
		    !strncmp(s->fields[i].key, key, len))
			return (int)i;
	return -1;
}

bool mem_parse_keyed_line(const char *line, const struct mem_section *s, struct mem_values *out)
{
	size_t klen = strcspn(line, ": \t\n");
	unsigned long long v;
	const char *p = line + klen;
	char *end;
	int i;

	if (!klen || (i = field_by_key(s, line, klen)) < 0)
		return false;
	if (*p == ':')
		p++;
	p += strspn(p, " \t");
	if (!isdigit((unsigned char)*p))
		return false;
	errno = 0;
	v = strtoull(p, &end, 10);
	if (errno)
		return false;
	if (s->fields[i].unit == MEM_UNIT_KB)
		v *= 1024;
	mem_set(out, i, v);
	return true;
}

void mem_parse_keyed(const char *text, const struct mem_section *s, struct mem_values *out)
{
	const char *line;

	for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		mem_parse_keyed_line(line, s, out);
}

/*
 * Both lists are one line from the kernel, but a newline is taken as a
 * blank too: cgroup.controllers is read whole, newline and all.
 */
bool mem_has_word(const char *list, const char *word)
{
	const char *p = list;
	size_t len, wlen = strlen(word);

	for (;;) {
		p += strspn(p, " \t\n");
		len = strcspn(p, " \t\n");
		if (!len)
			return false;
		if (len == wlen && !strncmp(p, word, len))
			return true;
		p += len;
	}
}
