// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which frame of a sample is its callsite: the first one from the leaf that
 * is not allocator machinery (machinery.c), cached per location and per
 * function, and the display names of frames.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machinery.h"
#include "vec.h"
#include "view_build.h"

static bool cs_eq(uint32_t idx, const void *key, void *ctx)
{
	return !memcmp(&((struct builder *)ctx)->cs[idx], key, sizeof(struct cs_key));
}

static int intern_callsite(struct builder *b, const struct cs_key *k, const char *display,
			   uint32_t *out)
{
	struct view *v = b->v;
	uint64_t h = hash_bytes(k, sizeof(*k), 7);
	char *copy;

	if (hashtab__find(&b->cs_ht, h, k, cs_eq, b, out))
		return 0;
	if (vec_reserve(&b->cs, &b->cap_cs, v->n_callsites + 1, sizeof(*k)) ||
	    vec_reserve(&v->callsites, &b->cap_callsites, v->n_callsites + 1, sizeof(char *)))
		return -ENOMEM;
	copy = strdup(display);
	if (!copy || hashtab__insert(&b->cs_ht, h, (uint32_t)v->n_callsites)) {
		free(copy);
		return -ENOMEM;
	}
	b->cs[v->n_callsites] = *k;
	v->callsites[v->n_callsites] = copy;
	*out = (uint32_t)v->n_callsites++;
	return 0;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

const char *view__frame_name(const struct view *v, const struct pprof_location *l, uint32_t line,
			     bool where, char *buf, size_t len)
{
	const struct pprof_profile *p = v->p;
	const struct pprof_mapping *m = pprof_profile__mapping(p, l->mapping_id);
	const struct pprof_function *f;
	const struct pprof_line *ln;
	const char *name, *file;

	if (!l->n_lines) {
		/* the file offset is what stays the same from one run to the next */
		const char *obj = m ? pprof_profile__str(p, m->filename) : "";

		if (obj[0])
			snprintf(buf, len, "%s+0x%" PRIx64, basename_of(obj),
				 l->address - m->memory_start + m->file_offset);
		else
			snprintf(buf, len, "0x%" PRIx64, l->address);
		return buf;
	}
	ln = &p->lines[l->line_off + line];
	f = pprof_profile__function(p, ln->function_id);
	name = pprof_profile__str(p, f->name);
	if (!name[0])
		name = pprof_profile__str(p, f->system_name);
	if (!name[0])
		name = "??";
	file = pprof_profile__str(p, f->filename);
	if (!where || !file[0])
		snprintf(buf, len, "%s", name);
	else if (ln->line > 0)
		snprintf(buf, len, "%s (%s:%" PRId64 ")", name, file, ln->line);
	else
		snprintf(buf, len, "%s (%s)", name, file);
	return buf;
}

static bool fn_is_machinery(struct builder *b, uint64_t function_id)
{
	const struct pprof_profile *p = b->v->p;
	const struct pprof_function *f = pprof_profile__function(p, function_id);
	size_t i = (size_t)(f - p->functions);

	if (!b->fn_mach[i])
		b->fn_mach[i] = machinery__match(pprof_profile__str(p, f->name)) ||
				machinery__match(pprof_profile__str(p, f->system_name)) ? 1 : 2;
	return b->fn_mach[i] == 1;
}

static int frame_callsite(struct builder *b, const struct pprof_location *l, uint32_t line,
			  uint32_t *out)
{
	const struct pprof_profile *p = b->v->p;
	struct cs_key k;
	char buf[1024];

	memset(&k, 0, sizeof(k));
	if (l->n_lines) {
		const struct pprof_line *ln = &p->lines[l->line_off + line];
		const struct pprof_function *f = pprof_profile__function(p, ln->function_id);

		k.name = f->name ? f->name : f->system_name;
		k.file = f->filename;
		k.line = ln->line;
	} else {
		k.mapping = l->mapping_id;
		k.address = l->address;
	}
	return intern_callsite(b, &k, view__frame_name(b->v, l, line, true, buf, sizeof(buf)), out);
}

/* the callsite of one location: its innermost line that is not machinery */
static int loc_callsite(struct builder *b, const struct pprof_location *l, uint32_t *out)
{
	const struct pprof_profile *p = b->v->p;
	size_t i = (size_t)(l - p->locations);
	uint32_t j;
	int ret = 0;

	if (b->loc_cs[i] != CS_UNSET) {
		*out = b->loc_cs[i];
		return 0;
	}
	b->loc_cs[i] = CS_MACHINERY;
	for (j = 0; j < l->n_lines; j++) {
		if (!fn_is_machinery(b, p->lines[l->line_off + j].function_id)) {
			ret = frame_callsite(b, l, j, &b->loc_cs[i]);
			break;
		}
	}
	if (!l->n_lines)
		ret = frame_callsite(b, l, 0, &b->loc_cs[i]);
	*out = b->loc_cs[i];
	return ret;
}

int callsite__of_sample(struct builder *b, const struct pprof_sample_ref *s, uint32_t *out)
{
	const struct pprof_profile *p = b->v->p;
	const struct pprof_location *l = NULL;
	struct cs_key none = { .name = -1 };
	size_t i;
	int ret;

	for (i = 0; i < s->n_locs; i++) {
		l = pprof_profile__location(p, s->loc_ids[i]);
		ret = loc_callsite(b, l, out);
		if (ret || *out != CS_MACHINERY)
			return ret;
	}
	if (!l)
		return intern_callsite(b, &none, "(no stack)", out);
	/* machinery all the way up (a truncated stack): the outermost frame is the best left */
	return frame_callsite(b, l, l->n_lines ? l->n_lines - 1 : 0, out);
}

int callsite__prepare(struct builder *b)
{
	const struct pprof_profile *p = b->v->p;

	b->loc_cs = malloc((p->n_locations ?: 1) * sizeof(*b->loc_cs));
	b->fn_mach = calloc(p->n_functions ?: 1, 1);
	if (!b->loc_cs || !b->fn_mach)
		return -ENOMEM;
	memset(b->loc_cs, 0xff, (p->n_locations ?: 1) * sizeof(*b->loc_cs));
	return 0;
}

void callsite__free(struct builder *b)
{
	free(b->cs);
	hashtab__free(&b->cs_ht);
	free(b->loc_cs);
	free(b->fn_mach);
}
