// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "escape.h"
#include "pprof.h"
#include "profsym.h"
#include "vec.h"

/*
 * What a location carries.  A mapping's has_* flags are these ORed over its
 * locations, the convention of pprof's own symbolizer (the flags say what
 * kind of information the mapping's locations have, and pprof re-symbolizes
 * only mappings with none); the report gives the exact counts.
 */
enum {
	HAS_FUNCTIONS = 1,
	HAS_FILENAMES = 2,
	HAS_LINES = 4,
	HAS_INLINE = 8,
};

struct loc_result {
	uint32_t frame_off;		/* into profsym.frames */
	uint32_t n_frames;		/* 0: the input's lines are kept */
	uint8_t has;
};

struct map_state {
	struct sym_object *obj;
	bool looked_up;
	bool not_file;
	uint8_t has;
	size_t n_unplaced;		/* addresses outside the object's segments */
	size_t n_unknown;		/* addresses no symbol or DWARF covers */
	char *why;
};

struct profsym {
	struct profsym_opts o;
	struct profsym_mapping *maps;
	struct map_state *st;
	size_t n_maps;
	struct loc_result *locs;
	struct sym_frame *frames;
	size_t n_frames, cap_frames;
};

struct profsym *profsym__new(const struct profsym_opts *o)
{
	struct profsym *ps = calloc(1, sizeof(*ps));

	if (ps)
		ps->o = *o;
	return ps;
}

static void reset(struct profsym *ps)
{
	size_t i;

	for (i = 0; ps->st && i < ps->n_maps; i++)
		free(ps->st[i].why);
	free(ps->maps);
	free(ps->st);
	free(ps->locs);
	free(ps->frames);
	ps->maps = NULL;
	ps->st = NULL;
	ps->locs = NULL;
	ps->frames = NULL;
	ps->n_maps = ps->n_frames = ps->cap_frames = 0;
}

void profsym__free(struct profsym *ps)
{
	if (!ps)
		return;
	reset(ps);
	free(ps);
}

/* --- pass 1: every location once ------------------------------------------------------------ */

static struct sym_object *object_of(struct profsym *ps, const struct pprof_profile *in, size_t mi)
{
	const struct pprof_mapping *m = &in->mappings[mi];
	struct map_state *st = &ps->st[mi];
	struct elfobj *local = NULL;

	if (st->looked_up)
		return st->obj;
	st->looked_up = true;
	if (!path_is_file(ps->maps[mi].filename)) {
		st->not_file = true;
		return NULL;
	}
	if (ps->o.local_object)
		local = ps->o.local_object(ps->o.ctx, m);
	st->obj = symbolizer__object(ps->o.sym, ps->maps[mi].build_id, ps->maps[mi].filename,
				     local);
	return st->obj;
}

static uint8_t has_of_lines(const struct pprof_profile *in, const struct pprof_location *l,
			    bool inline_frames)
{
	uint8_t has = HAS_FUNCTIONS | HAS_FILENAMES | HAS_LINES | (inline_frames ? HAS_INLINE : 0);
	uint32_t i;

	if (!l->n_lines)
		return 0;
	for (i = 0; i < l->n_lines; i++) {
		const struct pprof_line *ln = &in->lines[l->line_off + i];
		const struct pprof_function *f = pprof_profile__function(in, ln->function_id);

		if (!f || !*pprof_profile__str(in, f->name))
			has &= ~HAS_FUNCTIONS;
		if (!f || !*pprof_profile__str(in, f->filename))
			has &= ~HAS_FILENAMES;
		if (ln->line <= 0)
			has &= ~HAS_LINES;
	}
	return has;
}

static uint8_t has_of_frames(const struct sym_frame *f, int n, bool dwarf)
{
	uint8_t has = HAS_FUNCTIONS | HAS_FILENAMES | HAS_LINES | (dwarf ? HAS_INLINE : 0);
	int i;

	for (i = 0; i < n; i++) {
		if (!*f[i].name)
			has &= ~HAS_FUNCTIONS;
		if (!*f[i].file)
			has &= ~HAS_FILENAMES;
		if (f[i].line <= 0)
			has &= ~HAS_LINES;
	}
	return has;
}

/* frames for one location of a mapping whose object was found; 0 when none */
static int resolve(const struct pprof_mapping *m, struct map_state *st,
		   const struct pprof_location *l, struct sym_frame *buf, bool *dwarf)
{
	uint64_t vaddr;
	int n;

	if (sym_object__vaddr(st->obj, m->memory_start, m->file_offset, l->address, &vaddr)) {
		st->n_unplaced++;
		return 0;
	}
	n = sym_object__frames(st->obj, vaddr, buf, SYM_MAX_FRAMES, dwarf);
	if (!n)
		st->n_unknown++;
	return n;
}

static int symbolize_location(struct profsym *ps, const struct pprof_profile *in, size_t i)
{
	const struct pprof_location *l = &in->locations[i];
	const struct pprof_mapping *m = pprof_profile__mapping(in, l->mapping_id);
	struct sym_frame buf[SYM_MAX_FRAMES];
	struct loc_result *r = &ps->locs[i];
	struct profsym_mapping *pm;
	struct map_state *st;
	bool dwarf = false;
	size_t mi;
	int n = 0;

	if (!m) {
		r->has = has_of_lines(in, l, false);
		return 0;
	}
	mi = (size_t)(m - in->mappings);
	pm = &ps->maps[mi];
	st = &ps->st[mi];
	pm->n_locs++;
	if (object_of(ps, in, mi) && sym_object__level(st->obj) != SYM_LEVEL_NONE)
		n = resolve(m, st, l, buf, &dwarf);
	if (n) {
		if (vec_reserve(&ps->frames, &ps->cap_frames, ps->n_frames + (size_t)n,
				sizeof(*buf)))
			return -ENOMEM;
		memcpy(&ps->frames[ps->n_frames], buf, (size_t)n * sizeof(*buf));
		r->frame_off = (uint32_t)ps->n_frames;
		r->n_frames = (uint32_t)n;
		ps->n_frames += (size_t)n;
		r->has = has_of_frames(buf, n, dwarf);
	} else {
		/* nothing better found: what the profile already says stays */
		r->has = has_of_lines(in, l, m->has_inline_frames);
		if (l->n_lines)
			pm->n_kept++;
	}
	if (r->has & HAS_FUNCTIONS)
		pm->n_functions++;
	if ((r->has & (HAS_FILENAMES | HAS_LINES)) == (HAS_FILENAMES | HAS_LINES))
		pm->n_lines++;
	st->has |= r->has;
	return 0;
}

static void explain(struct profsym *ps, size_t mi)
{
	struct profsym_mapping *pm = &ps->maps[mi];
	struct map_state *st = &ps->st[mi];
	const char *obj_why = st->obj ? sym_object__why(st->obj) : "";
	char extra[160] = "";

	pm->level = st->obj ? sym_object__level(st->obj) : SYM_LEVEL_NONE;
	pm->source = st->obj ? sym_object__source(st->obj) : "";
	if (st->not_file) {
		pm->why = "not a file";
		return;
	}
	if (st->n_unplaced)
		snprintf(extra, sizeof(extra), "%zu addresses outside the object's segments "
			 "(give the binary with --binary-dir)", st->n_unplaced);
	else if (st->n_unknown)
		snprintf(extra, sizeof(extra), "%zu addresses in no known function", st->n_unknown);
	if (!*extra) {
		pm->why = obj_why;
		return;
	}
	if (asprintf(&st->why, "%s%s%s", obj_why, *obj_why ? "; " : "", extra) < 0) {
		st->why = NULL;
		pm->why = obj_why;
		return;
	}
	pm->why = st->why;
}

static int symbolize_all(struct profsym *ps, const struct pprof_profile *in)
{
	size_t i;
	int err;

	ps->n_maps = in->n_mappings;
	ps->maps = calloc(in->n_mappings ?: 1, sizeof(*ps->maps));
	ps->st = calloc(in->n_mappings ?: 1, sizeof(*ps->st));
	ps->locs = calloc(in->n_locations ?: 1, sizeof(*ps->locs));
	if (!ps->maps || !ps->st || !ps->locs)
		return -ENOMEM;
	for (i = 0; i < in->n_mappings; i++) {
		ps->maps[i].filename = pprof_profile__str(in, in->mappings[i].filename);
		ps->maps[i].build_id = pprof_profile__str(in, in->mappings[i].build_id);
	}
	for (i = 0; i < in->n_locations; i++) {
		err = symbolize_location(ps, in, i);
		/* an object's debug info is read at its first location: checked often enough */
		if (!err && !(i % 256))
			err = pprof_budget__check_heap(ps->o.budget);
		if (err)
			return err;
	}
	for (i = 0; i < in->n_mappings; i++)
		explain(ps, i);
	return 0;
}

/* --- pass 2: the profile again, in canonical order ---------------------------------------------- */

struct rebuild {
	const struct pprof_profile *in;
	struct pprof_writer *w;
	uint64_t *map_ids;
	uint64_t *loc_ids;
	int64_t *str_ids;		/* the output's index + 1 of each input string, 0: not yet */
	uint64_t *ids;			/* one sample's location ids */
	size_t cap_ids;
	struct pprof_label *labels;
	size_t cap_labels;
	struct pprof_line *lines;
	size_t cap_lines;
};

static const char *str(const struct rebuild *rb, int64_t i)
{
	return pprof_profile__str(rb->in, i);
}

/*
 * The output's index of input string i, interned at its first use as
 * before: a label's key and unit come once per sample, looked up by index
 * rather than hashed again.  Negative on ENOMEM.
 */
static int64_t out_str(struct rebuild *rb, int64_t i)
{
	int64_t o;

	if (i <= 0 || (uint64_t)i >= rb->in->n_strings)
		return pprof_writer__str(rb->w, str(rb, i));
	if (rb->str_ids[i])
		return rb->str_ids[i] - 1;
	o = pprof_writer__str(rb->w, str(rb, i));
	if (o >= 0)
		rb->str_ids[i] = o + 1;
	return o;
}

static struct pprof_writer *new_writer(const struct pprof_profile *in)
{
	const char **names = calloc(in->n_sample_types ?: 1, sizeof(char *));
	const char **units = calloc(in->n_sample_types ?: 1, sizeof(char *));
	struct pprof_writer_opts wo = {
		.sz = sizeof(wo),
		.n_sample_types = in->n_sample_types,
		.sample_type_names = names,
		.sample_type_units = units,
		.period = in->period,
		.time_nanos = in->time_nanos,
		.duration_nanos = in->duration_nanos,
	};
	struct pprof_writer *w = NULL;
	size_t i;

#define OPT_STR(i) ((i) ? pprof_profile__str(in, (i)) : NULL)
	wo.default_sample_type = OPT_STR(in->default_sample_type);
	wo.period_type = OPT_STR(in->period_type.type);
	wo.period_unit = pprof_profile__str(in, in->period_type.unit);
	wo.drop_frames = OPT_STR(in->drop_frames);
	wo.keep_frames = OPT_STR(in->keep_frames);
	wo.doc_url = OPT_STR(in->doc_url);
#undef OPT_STR
	if (names && units) {
		for (i = 0; i < in->n_sample_types; i++) {
			names[i] = pprof_profile__str(in, in->sample_types[i].type);
			units[i] = pprof_profile__str(in, in->sample_types[i].unit);
		}
		w = pprof_writer__new(&wo);
	}
	free(names);
	free(units);
	return w;
}

static int add_mappings(struct profsym *ps, struct rebuild *rb)
{
	size_t i;

	for (i = 0; i < rb->in->n_mappings; i++) {
		const struct pprof_mapping *m = &rb->in->mappings[i];
		uint8_t has = ps->st[i].has;
		struct pprof_mapping_desc d = {
			.memory_start = m->memory_start,
			.memory_limit = m->memory_limit,
			.file_offset = m->file_offset,
			.filename = str(rb, m->filename),
			.build_id = str(rb, m->build_id),
			.has_functions = has & HAS_FUNCTIONS,
			.has_filenames = has & HAS_FILENAMES,
			.has_line_numbers = has & HAS_LINES,
			.has_inline_frames = has & HAS_INLINE,
		};

		rb->map_ids[i] = pprof_writer__add_mapping(rb->w, &d);
		if (!rb->map_ids[i])
			return -ENOMEM;
	}
	return 0;
}

static int fill_lines(struct profsym *ps, struct rebuild *rb, size_t li, size_t *n)
{
	const struct pprof_location *l = &rb->in->locations[li];
	const struct loc_result *r = &ps->locs[li];
	size_t i, nl = r->n_frames ?: l->n_lines;

	if (vec_reserve(&rb->lines, &rb->cap_lines, nl, sizeof(*rb->lines)))
		return -ENOMEM;
	for (i = 0; i < nl; i++) {
		struct pprof_line *out = &rb->lines[i];

		if (r->n_frames) {
			const struct sym_frame *f = &ps->frames[r->frame_off + i];

			out->function_id = pprof_writer__add_function(rb->w, f->name, f->system_name,
								      f->file, f->start_line);
			out->line = f->line;
			out->column = f->column;
		} else {
			const struct pprof_line *in = &rb->in->lines[l->line_off + i];
			const struct pprof_function *f = pprof_profile__function(rb->in,
										 in->function_id);

			out->function_id = pprof_writer__add_function(rb->w,
				f ? str(rb, f->name) : "", f ? str(rb, f->system_name) : "",
				f ? str(rb, f->filename) : "", f ? f->start_line : 0);
			out->line = in->line;
			out->column = in->column;
		}
		if (!out->function_id)
			return -ENOMEM;
	}
	*n = nl;
	return 0;
}

static uint64_t location_id(struct profsym *ps, struct rebuild *rb, uint64_t in_id)
{
	const struct pprof_location *l = pprof_profile__location(rb->in, in_id);
	const struct pprof_mapping *m;
	size_t li, n;
	uint64_t map_id = 0;

	if (!l)
		return 0;
	li = (size_t)(l - rb->in->locations);
	if (rb->loc_ids[li])
		return rb->loc_ids[li];
	if (fill_lines(ps, rb, li, &n))
		return 0;
	m = pprof_profile__mapping(rb->in, l->mapping_id);
	if (m)
		map_id = rb->map_ids[m - rb->in->mappings];
	rb->loc_ids[li] = pprof_writer__add_location(rb->w, map_id, l->address, rb->lines, n);
	return rb->loc_ids[li];
}

static int add_sample(struct profsym *ps, struct rebuild *rb, size_t si)
{
	const struct pprof_sample *s = &rb->in->samples[si];
	size_t i;

	if (vec_reserve(&rb->ids, &rb->cap_ids, s->n_locs, sizeof(*rb->ids)) ||
	    vec_reserve(&rb->labels, &rb->cap_labels, s->n_labels, sizeof(*rb->labels)))
		return -ENOMEM;
	for (i = 0; i < s->n_locs; i++) {
		rb->ids[i] = location_id(ps, rb, rb->in->loc_ids[s->loc_off + i]);
		if (!rb->ids[i])
			return pprof_profile__location(rb->in, rb->in->loc_ids[s->loc_off + i]) ?
			       -ENOMEM : -EINVAL;
	}
	for (i = 0; i < s->n_labels; i++) {
		const struct pprof_label *l = &rb->in->labels[s->label_off + i];

		rb->labels[i] = (struct pprof_label){
			.key = out_str(rb, l->key),
			.str = l->str ? out_str(rb, l->str) : 0,
			.num = l->num,
			.num_unit = l->num_unit ? out_str(rb, l->num_unit) : 0,
		};
		if (rb->labels[i].key < 0 || rb->labels[i].str < 0 || rb->labels[i].num_unit < 0)
			return -ENOMEM;
	}
	return pprof_writer__add_sample(rb->w, rb->ids, s->n_locs,
					&rb->in->values[si * rb->in->n_sample_types], rb->labels,
					s->n_labels);
}

static int rebuild(struct profsym *ps, const struct pprof_profile *in, struct pprof_writer **out)
{
	struct rebuild rb = { .in = in };
	size_t i;
	int err = -ENOMEM;

	rb.w = new_writer(in);
	rb.map_ids = calloc(in->n_mappings ?: 1, sizeof(*rb.map_ids));
	rb.loc_ids = calloc(in->n_locations ?: 1, sizeof(*rb.loc_ids));
	rb.str_ids = calloc(in->n_strings ?: 1, sizeof(*rb.str_ids));
	if (!rb.w || !rb.map_ids || !rb.loc_ids || !rb.str_ids ||
	    pprof_writer__reserve(rb.w, in->n_samples, in->n_loc_ids, in->n_labels))
		goto out;
	err = add_mappings(ps, &rb);
	for (i = 0; !err && i < in->n_samples; i++)
		err = add_sample(ps, &rb, i);
	for (i = 0; !err && i < in->n_comments; i++)
		err = pprof_writer__add_comment(rb.w, str(&rb, in->comments[i]));
out:
	if (!err) {
		*out = rb.w;
		rb.w = NULL;
	}
	pprof_writer__free(rb.w);
	free(rb.map_ids);
	free(rb.loc_ids);
	free(rb.str_ids);
	free(rb.ids);
	free(rb.labels);
	free(rb.lines);
	return err;
}

int profsym__run(struct profsym *ps, const struct pprof_profile *in, struct pprof_writer **out)
{
	int err;

	reset(ps);
	err = symbolize_all(ps, in);
	err = err ?: rebuild(ps, in, out);
	return err ?: pprof_budget__check_heap(ps->o.budget);
}

/* --- the report --------------------------------------------------------------------------------- */

static bool complete(const struct profsym_mapping *m)
{
	return m->n_functions == m->n_locs && m->n_lines == m->n_locs && !*m->why;
}

void profsym__print(const struct profsym *ps, FILE *f, bool all)
{
	size_t i, with_locs = 0, full = 0, locs = 0, fns = 0, lines = 0;

	for (i = 0; i < ps->n_maps; i++) {
		const struct profsym_mapping *m = &ps->maps[i];

		if (!m->n_locs)
			continue;
		with_locs++;
		full += complete(m);
		locs += m->n_locs;
		fns += m->n_functions;
		lines += m->n_lines;
	}
	fprintf(f, "symbolized %zu of %zu mappings fully; %zu of %zu locations have functions, "
		"%zu file:line\n", full, with_locs, fns, locs, lines);
	for (i = 0; i < ps->n_maps; i++) {
		const struct profsym_mapping *m = &ps->maps[i];

		if (!m->n_locs || (!all && complete(m)))
			continue;
		/* file names and build IDs are the profile's: the text rule of escape.h */
		fputs("  ", f);
		esc_text_fputs(m->filename, f);
		if (*m->build_id) {
			fputs(" (build ID ", f);
			esc_text_fputs(m->build_id, f);
			fputs(")", f);
		}
		fprintf(f, ": %zu/%zu with functions, %zu/%zu with file:line", m->n_functions,
			m->n_locs, m->n_lines, m->n_locs);
		if (*m->source) {
			fputs(" from ", f);
			esc_text_fputs(m->source, f);
		}
		if (m->n_kept)
			fprintf(f, "; %zu kept as they were", m->n_kept);
		fputs(*m->why ? ": " : "", f);
		esc_text_fputs(m->why, f);
		fputs("\n", f);
	}
}
