// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof_writer: builds a pprof_profile with every string, function,
 * location and mapping stored once.  Entries keep insertion order, so the
 * same calls in the same order give a byte-identical file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "vec.h"

struct pprof_writer {
	struct pprof_profile p;
	size_t cap_strings, cap_samples, cap_values, cap_loc_ids, cap_labels;
	size_t cap_mappings, cap_locations, cap_lines, cap_functions, cap_comments;
	struct hashtab str_ht, func_ht, loc_ht, map_ht;
};

/* --- strings --------------------------------------------------------------------- */

static bool str_eq(uint32_t idx, const void *key, void *ctx)
{
	struct pprof_writer *w = ctx;

	return !strcmp(w->p.strings[idx], key);
}

int64_t pprof_writer__str(struct pprof_writer *w, const char *s)
{
	uint64_t h;
	uint32_t idx;
	char *copy;

	if (!s)
		s = "";
	h = hash_bytes(s, strlen(s), 0);
	if (hashtab__find(&w->str_ht, h, s, str_eq, w, &idx))
		return idx;
	if (vec_reserve(&w->p.strings, &w->cap_strings, w->p.n_strings + 1, sizeof(char *)))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	idx = (uint32_t)w->p.n_strings;
	if (hashtab__insert(&w->str_ht, h, idx)) {
		free(copy);
		return -ENOMEM;
	}
	w->p.strings[w->p.n_strings++] = copy;
	return idx;
}

/* --- functions --------------------------------------------------------------------- */

static bool func_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct pprof_function *a = &((struct pprof_writer *)ctx)->p.functions[idx];
	const struct pprof_function *b = key;

	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->start_line == b->start_line;
}

uint64_t pprof_writer__add_function(struct pprof_writer *w, const char *name,
				    const char *system_name, const char *filename,
				    int64_t start_line)
{
	struct pprof_function f = { .start_line = start_line };
	uint64_t h;
	uint32_t idx;

	f.name = pprof_writer__str(w, name);
	f.system_name = pprof_writer__str(w, system_name ? system_name : name);
	f.filename = pprof_writer__str(w, filename);
	if (f.name < 0 || f.system_name < 0 || f.filename < 0)
		return 0;
	h = hash_bytes(&f.name, 4 * sizeof(int64_t), 1);
	if (hashtab__find(&w->func_ht, h, &f, func_eq, w, &idx))
		return w->p.functions[idx].id;
	if (vec_reserve(&w->p.functions, &w->cap_functions, w->p.n_functions + 1, sizeof(f)))
		return 0;
	idx = (uint32_t)w->p.n_functions;
	f.id = idx + 1;
	if (hashtab__insert(&w->func_ht, h, idx))
		return 0;
	w->p.functions[w->p.n_functions++] = f;
	return f.id;
}

/* --- locations --------------------------------------------------------------------- */

struct loc_key {
	uint64_t mapping_id;
	uint64_t address;
	const struct pprof_line *lines;
	size_t n_lines;
};

static bool loc_eq(uint32_t idx, const void *key, void *ctx)
{
	struct pprof_writer *w = ctx;
	const struct pprof_location *l = &w->p.locations[idx];
	const struct loc_key *k = key;

	return l->mapping_id == k->mapping_id && l->address == k->address &&
	       l->n_lines == k->n_lines &&
	       !memcmp(&w->p.lines[l->line_off], k->lines, k->n_lines * sizeof(*k->lines));
}

uint64_t pprof_writer__add_location(struct pprof_writer *w, uint64_t mapping_id, uint64_t address,
				    const struct pprof_line *lines, size_t n_lines)
{
	struct loc_key k = { mapping_id, address, lines, n_lines };
	struct pprof_location *l;
	uint64_t h;
	uint32_t idx;

	h = hash_u64(address, mapping_id);
	if (n_lines)
		h = hash_bytes(lines, n_lines * sizeof(*lines), h);
	if (hashtab__find(&w->loc_ht, h, &k, loc_eq, w, &idx))
		return w->p.locations[idx].id;
	if (vec_reserve(&w->p.locations, &w->cap_locations, w->p.n_locations + 1, sizeof(*l)) ||
	    vec_reserve(&w->p.lines, &w->cap_lines, w->p.n_lines + n_lines, sizeof(*lines)))
		return 0;
	idx = (uint32_t)w->p.n_locations;
	if (hashtab__insert(&w->loc_ht, h, idx))
		return 0;
	l = &w->p.locations[w->p.n_locations++];
	memset(l, 0, sizeof(*l));
	l->id = idx + 1;
	l->mapping_id = mapping_id;
	l->address = address;
	l->line_off = (uint32_t)w->p.n_lines;
	l->n_lines = (uint32_t)n_lines;
	if (n_lines)
		memcpy(&w->p.lines[w->p.n_lines], lines, n_lines * sizeof(*lines));
	w->p.n_lines += n_lines;
	return l->id;
}

/* --- mappings --------------------------------------------------------------------- */

static bool map_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct pprof_mapping *a = &((struct pprof_writer *)ctx)->p.mappings[idx];
	const struct pprof_mapping *b = key;

	return a->memory_start == b->memory_start && a->memory_limit == b->memory_limit &&
	       a->file_offset == b->file_offset && a->filename == b->filename &&
	       a->build_id == b->build_id;
}

uint64_t pprof_writer__add_mapping(struct pprof_writer *w, const struct pprof_mapping_desc *d)
{
	struct pprof_mapping m = {
		.memory_start = d->memory_start,
		.memory_limit = d->memory_limit,
		.file_offset = d->file_offset,
		.has_functions = d->has_functions,
		.has_filenames = d->has_filenames,
		.has_line_numbers = d->has_line_numbers,
		.has_inline_frames = d->has_inline_frames,
	};
	uint64_t h;
	uint32_t idx;

	m.filename = pprof_writer__str(w, d->filename);
	m.build_id = pprof_writer__str(w, d->build_id);
	if (m.filename < 0 || m.build_id < 0)
		return 0;
	h = hash_u64(m.memory_start, hash_u64(m.file_offset, (uint64_t)m.filename));
	if (hashtab__find(&w->map_ht, h, &m, map_eq, w, &idx))
		return w->p.mappings[idx].id;
	if (vec_reserve(&w->p.mappings, &w->cap_mappings, w->p.n_mappings + 1, sizeof(m)))
		return 0;
	idx = (uint32_t)w->p.n_mappings;
	m.id = idx + 1;
	if (hashtab__insert(&w->map_ht, h, idx))
		return 0;
	w->p.mappings[w->p.n_mappings++] = m;
	return m.id;
}

/* --- samples and comments ---------------------------------------------------------- */

int pprof_writer__reserve(struct pprof_writer *w, size_t n_samples, size_t n_loc_ids,
			  size_t n_labels)
{
	struct pprof_profile *p = &w->p;
	size_t nv = p->n_sample_types ?: 1;

	if (vec_reserve_exact(&p->samples, &w->cap_samples, p->n_samples + n_samples,
			  sizeof(*p->samples)) ||
	    vec_reserve_exact(&p->values, &w->cap_values, (p->n_samples + n_samples) * nv,
			  sizeof(int64_t)) ||
	    vec_reserve_exact(&p->loc_ids, &w->cap_loc_ids, p->n_loc_ids + n_loc_ids,
			  sizeof(uint64_t)) ||
	    vec_reserve_exact(&p->labels, &w->cap_labels, p->n_labels + n_labels, sizeof(*p->labels)))
		return -ENOMEM;
	return 0;
}

int pprof_writer__add_sample(struct pprof_writer *w, const uint64_t *loc_ids, size_t n_locs,
			     const int64_t *values, const struct pprof_label *labels,
			     size_t n_labels)
{
	struct pprof_profile *p = &w->p;
	size_t nv = p->n_sample_types;
	struct pprof_sample *s;

	if (vec_reserve(&p->samples, &w->cap_samples, p->n_samples + 1, sizeof(*s)) ||
	    vec_reserve(&p->values, &w->cap_values, (p->n_samples + 1) * nv, sizeof(int64_t)) ||
	    vec_reserve(&p->loc_ids, &w->cap_loc_ids, p->n_loc_ids + n_locs, sizeof(uint64_t)) ||
	    vec_reserve(&p->labels, &w->cap_labels, p->n_labels + n_labels, sizeof(*labels)))
		return -ENOMEM;
	s = &p->samples[p->n_samples];
	s->loc_off = (uint32_t)p->n_loc_ids;
	s->n_locs = (uint32_t)n_locs;
	s->label_off = (uint32_t)p->n_labels;
	s->n_labels = (uint32_t)n_labels;
	if (n_locs)
		memcpy(&p->loc_ids[p->n_loc_ids], loc_ids, n_locs * sizeof(*loc_ids));
	if (n_labels)
		memcpy(&p->labels[p->n_labels], labels, n_labels * sizeof(*labels));
	memcpy(&p->values[p->n_samples * nv], values, nv * sizeof(*values));
	p->n_loc_ids += n_locs;
	p->n_labels += n_labels;
	p->n_samples++;
	return 0;
}

int pprof_writer__add_comment(struct pprof_writer *w, const char *comment)
{
	int64_t s = pprof_writer__str(w, comment);

	if (s < 0)
		return (int)s;
	if (vec_reserve(&w->p.comments, &w->cap_comments, w->p.n_comments + 1, sizeof(s)))
		return -ENOMEM;
	w->p.comments[w->p.n_comments++] = s;
	return 0;
}

/* --- lifecycle ------------------------------------------------------------------ */

struct pprof_writer *pprof_writer__new(const struct pprof_writer_opts *opts)
{
	struct pprof_writer *w;
	size_t i;

	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->p.sample_types = calloc(opts->n_sample_types ?: 1, sizeof(*w->p.sample_types));
	if (!w->p.sample_types || pprof_writer__str(w, "") != 0)
		goto err;
	w->p.n_sample_types = opts->n_sample_types;
	for (i = 0; i < opts->n_sample_types; i++) {
		w->p.sample_types[i].type = pprof_writer__str(w, opts->sample_type_names[i]);
		w->p.sample_types[i].unit = pprof_writer__str(w, opts->sample_type_units[i]);
	}
	if (opts->default_sample_type)
		w->p.default_sample_type = pprof_writer__str(w, opts->default_sample_type);
	if (opts->period_type) {
		w->p.period_type.type = pprof_writer__str(w, opts->period_type);
		w->p.period_type.unit = pprof_writer__str(w, opts->period_unit);
	}
	if (opts->drop_frames)
		w->p.drop_frames = pprof_writer__str(w, opts->drop_frames);
	if (opts->keep_frames)
		w->p.keep_frames = pprof_writer__str(w, opts->keep_frames);
	if (opts->doc_url)
		w->p.doc_url = pprof_writer__str(w, opts->doc_url);
	w->p.period = opts->period;
	w->p.time_nanos = opts->time_nanos;
	w->p.duration_nanos = opts->duration_nanos;
	return w;
err:
	pprof_writer__free(w);
	errno = ENOMEM;
	return NULL;
}

static int cmp_comment(const void *a, const void *b, void *ctx)
{
	const struct pprof_profile *p = ctx;

	return strcmp(p->strings[*(const int64_t *)a], p->strings[*(const int64_t *)b]);
}

const struct pprof_profile *pprof_writer__profile(struct pprof_writer *w)
{
	/* comments are key=value: sorted, the file does not depend on the order they came in */
	if (w->p.n_comments)	/* no array to sort yet: qsort_r() must not see NULL */
		qsort_r(w->p.comments, w->p.n_comments, sizeof(int64_t), cmp_comment, &w->p);
	if (pprof_profile__index(&w->p))
		return NULL;
	return &w->p;
}

int pprof_writer__write(struct pprof_writer *w, const char *path)
{
	const struct pprof_profile *p = pprof_writer__profile(w);

	if (!p)
		return -ENOMEM;
	return pprof_profile__write(p, path);
}

void pprof_writer__free(struct pprof_writer *w)
{
	if (!w)
		return;
	hashtab__free(&w->str_ht);
	hashtab__free(&w->func_ht);
	hashtab__free(&w->loc_ht);
	hashtab__free(&w->map_ht);
	pprof_profile__clear(&w->p);
	free(w);
}
