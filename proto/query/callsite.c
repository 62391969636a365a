// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which frame of a sample is its callsite: the first one from the leaf that
 * is not allocator machinery (machinery.c), cached per location and per
 * function; the outermost wrapper it looked through; and the display names
 * of frames.
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

/*
 * display is "function (file:line)"; its first name_len bytes the function;
 * fid the function's identity for inclusive sums (view.callsite_fid)
 */
static int intern_callsite(struct builder *b, const struct cs_key *k, const char *display,
			   size_t name_len, uint64_t fid, uint32_t *out)
{
	struct view *v = b->v;
	uint64_t h = hash_bytes(k, sizeof(*k), 7);
	char *copy;

	if (hashtab__find(&b->cs_ht, h, k, cs_eq, b, out))
		return 0;
	if (vec_reserve(&b->cs, &b->cap_cs, v->n_callsites + 1, sizeof(*k)) ||
	    vec_reserve(&v->callsites, &b->cap_callsites, v->n_callsites + 1, sizeof(char *)) ||
	    vec_reserve(&v->callsite_name_len, &b->cap_name_len, v->n_callsites + 1,
			sizeof(size_t)) ||
	    vec_reserve(&v->callsite_fid, &b->cap_fid, v->n_callsites + 1, sizeof(uint64_t)))
		return -ENOMEM;
	copy = strdup(display);
	if (!copy || hashtab__insert(&b->cs_ht, h, (uint32_t)v->n_callsites)) {
		free(copy);
		return -ENOMEM;
	}
	b->cs[v->n_callsites] = *k;
	v->callsites[v->n_callsites] = copy;
	v->callsite_name_len[v->n_callsites] = name_len;
	v->callsite_fid[v->n_callsites] = fid;
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

bool view__frame_skipped(const struct view *v, const struct pprof_location *l, uint32_t line)
{
	const struct pprof_profile *p = v->p;
	const struct pprof_function *f;
	char name[512];

	if (!v->opts.n_skip)
		return false;
	/* an unnamed frame by its "object+0xoffset" name */
	if (!l->n_lines)
		return machinery__glob_any(view__frame_name(v, l, 0, false, name, sizeof(name)),
					   v->opts.skip, v->opts.n_skip);
	f = pprof_profile__function(p, p->lines[l->line_off + line].function_id);
	return machinery__glob_any(pprof_profile__str(p, f->name), v->opts.skip, v->opts.n_skip) ||
	       machinery__glob_any(pprof_profile__str(p, f->system_name), v->opts.skip,
				   v->opts.n_skip);
}

uint64_t view__frame_fid(const struct view *v, const struct pprof_location *l, uint32_t line)
{
	const struct pprof_profile *p = v->p;
	const struct pprof_function *f;

	if (!l->n_lines)
		return p->n_strings + (uint64_t)(l - p->locations);
	f = pprof_profile__function(p, p->lines[l->line_off + line].function_id);
	return (uint64_t)(f->name ? f->name : f->system_name);
}

/* what function_id is, cached per function: enum machinery_kind + 1, 0 while unknown */
static enum machinery_kind fn_kind(struct builder *b, uint64_t function_id)
{
	const struct pprof_profile *p = b->v->p;
	const struct pprof_function *f = pprof_profile__function(p, function_id);
	size_t i = (size_t)(f - p->functions);
	const struct view_opts *o = &b->v->opts;

	if (!b->fn_mach[i]) {
		enum machinery_kind k = machinery__classify(pprof_profile__str(p, f->name), o->skip,
							    o->n_skip);

		if (k == MACHINERY_NONE)
			k = machinery__classify(pprof_profile__str(p, f->system_name), o->skip,
						o->n_skip);
		b->fn_mach[i] = (uint8_t)(k + 1);
	}
	return (enum machinery_kind)(b->fn_mach[i] - 1);
}

/*
 * Line `line` of l as a callsite: "function (file:line)"; or with
 * by_function, as a caller, "function (file)", one row whatever the line.
 */
static int frame_callsite(struct builder *b, const struct pprof_location *l, uint32_t line,
			  bool by_function, uint32_t *out)
{
	const struct pprof_profile *p = b->v->p;
	struct cs_key k;
	/* C++ names run to thousands of bytes; JSON shows them whole */
	char buf[8192 + 4096], name[8192];
	const char *display;

	memset(&k, 0, sizeof(k));
	if (l->n_lines) {
		const struct pprof_line *ln = &p->lines[l->line_off + line];
		const struct pprof_function *f = pprof_profile__function(p, ln->function_id);

		k.name = f->name ? f->name : f->system_name;
		k.file = f->filename;
		/* no line of a file is -1: a caller's key is not any callsite's */
		k.line = by_function ? -1 : ln->line;
	} else {
		k.mapping = l->mapping_id;
		k.address = l->address;
	}
	view__frame_name(b->v, l, line, false, name, sizeof(name));
	if (by_function && l->n_lines) {
		const struct pprof_function *f = pprof_profile__function(p,
			p->lines[l->line_off + line].function_id);
		const char *file = pprof_profile__str(p, f->filename);

		if (file[0])
			snprintf(buf, sizeof(buf), "%s (%s)", name, file);
		else
			snprintf(buf, sizeof(buf), "%s", name);
		display = buf;
	} else {
		display = view__frame_name(b->v, l, line, true, buf, sizeof(buf));
	}
	return intern_callsite(b, &k, display, strlen(name), view__frame_fid(b->v, l, line), out);
}

static bool wrap_eq(uint32_t idx, const void *key, void *ctx)
{
	return !strcmp(((struct builder *)ctx)->v->wrappers[idx], key);
}

/* the index of wrapper `name` in v->wrappers, added if new */
static int intern_wrapper(struct builder *b, const char *name, uint32_t *out)
{
	struct view *v = b->v;
	uint64_t h = hash_bytes(name, strlen(name), 11);
	char *copy;

	if (hashtab__find(&b->wrap_ht, h, name, wrap_eq, b, out))
		return 0;
	if (vec_reserve(&v->wrappers, &b->cap_wrappers, v->n_wrappers + 1, sizeof(char *)))
		return -ENOMEM;
	copy = strdup(name);
	if (!copy || hashtab__insert(&b->wrap_ht, h, (uint32_t)v->n_wrappers)) {
		free(copy);
		return -ENOMEM;
	}
	v->wrappers[v->n_wrappers] = copy;
	*out = (uint32_t)v->n_wrappers++;
	return 0;
}

/* a skipped line: if a wrapper, it is the outermost one of the location so far */
static int note_wrapper(struct builder *b, size_t loc, uint64_t function_id)
{
	const struct pprof_profile *p = b->v->p;
	const struct pprof_function *f;
	const char *name;

	if (fn_kind(b, function_id) != MACHINERY_WRAPPER)
		return 0;
	f = pprof_profile__function(p, function_id);
	name = pprof_profile__str(p, f->name);
	return intern_wrapper(b, name[0] ? name : pprof_profile__str(p, f->system_name),
			      &b->loc_wrap[loc]);
}

/* an unnamed location of the user's --skip globs, by its "object+0xoffset" name */
static int unnamed_skipped(struct builder *b, const struct pprof_location *l, bool *skipped)
{
	const struct view *v = b->v;
	size_t i = (size_t)(l - v->p->locations);
	char name[512];

	view__frame_name(v, l, 0, false, name, sizeof(name));
	*skipped = machinery__glob_any(name, v->opts.skip, v->opts.n_skip);
	return *skipped ? intern_wrapper(b, name, &b->loc_wrap[i]) : 0;
}

/*
 * The callsite of one location: its innermost line that is not machinery,
 * and in loc_wrap the outermost wrapper among the lines skipped before it.
 */
static int loc_callsite(struct builder *b, const struct pprof_location *l, uint32_t *out,
			uint32_t *wrapper)
{
	const struct pprof_profile *p = b->v->p;
	size_t i = (size_t)(l - p->locations);
	bool skipped = false;
	uint32_t j;
	int ret = 0;

	if (b->loc_cs[i] == CS_UNSET) {
		b->loc_cs[i] = CS_MACHINERY;
		for (j = 0; j < l->n_lines && !ret; j++) {
			uint64_t fn = p->lines[l->line_off + j].function_id;

			if (fn_kind(b, fn) == MACHINERY_NONE) {
				ret = frame_callsite(b, l, j, false, &b->loc_cs[i]);
				break;
			}
			ret = note_wrapper(b, i, fn);
		}
		if (!l->n_lines && !ret)
			ret = unnamed_skipped(b, l, &skipped);
		if (!l->n_lines && !ret && !skipped)
			ret = frame_callsite(b, l, 0, false, &b->loc_cs[i]);
	}
	*out = b->loc_cs[i];
	if (b->loc_wrap[i] != VIEW_NONE)
		*wrapper = b->loc_wrap[i];
	return ret;
}

/* unnamed frames looked past to the wrapper above them, at most */
#define UNNAMED_RUN	4

static bool fn_inner(struct builder *b, uint64_t function_id)
{
	const struct pprof_profile *p = b->v->p;
	const struct pprof_function *f = pprof_profile__function(p, function_id);

	return machinery__inner(pprof_profile__str(p, f->name)) ||
	       machinery__inner(pprof_profile__str(p, f->system_name));
}

/*
 * Is the unnamed frame at s's location i the internals of a wrapper (docs/cli.md,
 * "Unnamed frames")?  It is when the first named frame above it, past at most
 * UNNAMED_RUN unnamed ones, is machinery (sqlite3Malloc's static routines in a
 * stripped libsqlite3, the memory context under postgres' palloc), and when the
 * frame below it is a wrapper only its family calls (machinery__inner()).
 * Frames below i are machinery: nothing was taken for the callsite yet.
 */
static bool unnamed_internals(struct builder *b, const struct pprof_sample_ref *s, size_t i)
{
	const struct pprof_profile *p = b->v->p;
	const struct pprof_location *c;
	size_t j;

	for (j = i + 1; j < s->n_locs && j <= i + UNNAMED_RUN; j++) {
		c = pprof_profile__location(p, s->loc_ids[j]);
		if (!c->n_lines)
			continue;
		if (fn_kind(b, p->lines[c->line_off].function_id) != MACHINERY_NONE)
			return true;
		break;
	}
	if (!i)
		return false;
	c = pprof_profile__location(p, s->loc_ids[i - 1]);
	return c->n_lines && fn_inner(b, p->lines[c->line_off + c->n_lines - 1].function_id);
}

/*
 * The caller of the callsite at s's location i: the first named frame above it
 * that is not machinery (nor of --skip), by function; unnamed frames are taken
 * for part of the named function calling them.  None: the callsite's own function.
 */
static int caller_of(struct builder *b, const struct pprof_sample_ref *s, size_t i,
		     uint32_t *caller)
{
	const struct pprof_profile *p = b->v->p;
	const struct pprof_location *l = pprof_profile__location(p, s->loc_ids[i]), *c;
	uint32_t j0 = 0, j;
	size_t k;

	while (j0 + 1 < l->n_lines &&
	       fn_kind(b, p->lines[l->line_off + j0].function_id) != MACHINERY_NONE)
		j0++;
	for (k = i; k < s->n_locs; k++) {
		c = pprof_profile__location(p, s->loc_ids[k]);
		for (j = k == i ? j0 + 1 : 0; j < c->n_lines; j++)
			if (fn_kind(b, p->lines[c->line_off + j].function_id) == MACHINERY_NONE)
				return frame_callsite(b, c, j, true, caller);
	}
	return frame_callsite(b, l, j0, true, caller);
}

int callsite__of_sample(struct builder *b, const struct pprof_sample_ref *s, uint32_t *out,
			uint32_t *wrapper, uint32_t *caller)
{
	const struct pprof_profile *p = b->v->p;
	const struct pprof_location *l = NULL;
	struct cs_key none = { .name = -1 };
	size_t i;
	int ret;

	*wrapper = VIEW_NONE;
	if (caller)
		*caller = VIEW_NONE;
	for (i = 0; i < s->n_locs; i++) {
		l = pprof_profile__location(p, s->loc_ids[i]);
		ret = loc_callsite(b, l, out, wrapper);
		if (ret)
			return ret;
		if (*out == CS_MACHINERY || (!l->n_lines && unnamed_internals(b, s, i)))
			continue;
		return caller ? caller_of(b, s, i, caller) : 0;
	}
	/* no callsite was found past any wrapper */
	*wrapper = VIEW_NONE;
	if (!l) {
		ret = intern_callsite(b, &none, "(no stack)", strlen("(no stack)"), UINT64_MAX,
				      out);
		if (!ret && caller)
			*caller = *out;
		return ret;
	}
	/* machinery all the way up (a truncated stack): the outermost frame is the best left */
	ret = frame_callsite(b, l, l->n_lines ? l->n_lines - 1 : 0, false, out);
	if (!ret && caller)
		ret = frame_callsite(b, l, l->n_lines ? l->n_lines - 1 : 0, true, caller);
	return ret;
}

int callsite__prepare(struct builder *b)
{
	const struct pprof_profile *p = b->v->p;

	b->loc_cs = malloc((p->n_locations ?: 1) * sizeof(*b->loc_cs));
	b->loc_wrap = malloc((p->n_locations ?: 1) * sizeof(*b->loc_wrap));
	b->fn_mach = calloc(p->n_functions ?: 1, 1);
	if (!b->loc_cs || !b->loc_wrap || !b->fn_mach)
		return -ENOMEM;
	memset(b->loc_cs, 0xff, (p->n_locations ?: 1) * sizeof(*b->loc_cs));
	memset(b->loc_wrap, 0xff, (p->n_locations ?: 1) * sizeof(*b->loc_wrap));
	return 0;
}

void callsite__free(struct builder *b)
{
	free(b->cs);
	hashtab__free(&b->cs_ht);
	free(b->loc_cs);
	free(b->loc_wrap);
	hashtab__free(&b->wrap_ht);
	free(b->fn_mach);
}
