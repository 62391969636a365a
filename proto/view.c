// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Building a view while the samples stream by.  A sample's span is first
 * remembered "raw" (its span_path string, or its span_name/span_id/
 * span_parent_id triple): parent links may point to spans whose samples come
 * later in the file, so the tree is only built once everything is read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machinery.h"
#include "vec.h"
#include "view.h"

/* raw span kinds */
enum { RAW_NONE, RAW_PATH, RAW_NAMED };

struct raw_span {
	int kind;
	int64_t str;		/* RAW_PATH: the path; RAW_NAMED: the name */
	int64_t id, parent_id;	/* RAW_NAMED */
	bool has_parent;
	uint32_t node;		/* tree node, once resolved */
};

/* a callsite key: a function line, or an address where there is no line */
struct cs_key {
	int64_t name, file, line;
	uint64_t mapping, address;
};

#define CS_UNSET	UINT32_MAX
#define CS_MACHINERY	(UINT32_MAX - 1)
#define MAX_SPAN_DEPTH	128

struct builder {
	struct view *v;
	struct raw_span *raw;
	size_t n_raw, cap_raw;
	struct hashtab raw_ht;
	struct cs_key *cs;
	size_t cap_cs, cap_callsites;
	struct hashtab cs_ht;
	size_t cap_recs;
	struct hashtab rec_ht;
	size_t cap_stack_locs, cap_stack_off;
	struct hashtab stack_ht;
	size_t cap_spans;
	struct hashtab span_ht;
	struct hashtab id_ht;	/* span_id -> the first RAW_NAMED span with it */
	uint32_t *loc_cs;	/* per location index: its callsite, CS_UNSET or CS_MACHINERY */
	uint8_t *fn_mach;	/* per function index: 0 unknown, 1 machinery, 2 not */
	char err[256];		/* why prepare() refused the profile */
};

/* --- interning ------------------------------------------------------------------ */

static bool raw_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct raw_span *a = &((struct builder *)ctx)->raw[idx], *b = key;

	return a->kind == b->kind && a->str == b->str && a->id == b->id &&
	       a->parent_id == b->parent_id && a->has_parent == b->has_parent;
}

static int intern_raw(struct builder *b, const struct raw_span *r, uint32_t *out)
{
	uint64_t h = hash_u64((uint64_t)r->parent_id, (uint64_t)r->kind * 2 + r->has_parent);

	h = hash_u64((uint64_t)r->str, hash_u64((uint64_t)r->id, h));

	if (hashtab__find(&b->raw_ht, h, r, raw_eq, b, out))
		return 0;
	if (vec_reserve(&b->raw, &b->cap_raw, b->n_raw + 1, sizeof(*r)) ||
	    hashtab__insert(&b->raw_ht, h, (uint32_t)b->n_raw))
		return -ENOMEM;
	b->raw[b->n_raw] = *r;
	*out = (uint32_t)b->n_raw++;
	return 0;
}

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

/* --- frames and callsites --------------------------------------------------------- */

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

static int sample_callsite(struct builder *b, const struct pprof_sample_ref *s, uint32_t *out)
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

/* --- records ------------------------------------------------------------------------ */

static bool stack_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct view *v = ((struct builder *)ctx)->v;
	const struct pprof_sample_ref *s = key;

	return v->stack_off[idx + 1] - v->stack_off[idx] == s->n_locs &&
	       (!s->n_locs || !memcmp(&v->stack_locs[v->stack_off[idx]], s->loc_ids,
				      s->n_locs * sizeof(uint64_t)));
}

static int intern_stack(struct builder *b, const struct pprof_sample_ref *s, uint32_t *out)
{
	struct view *v = b->v;
	uint64_t h = hash_bytes(s->loc_ids, s->n_locs * sizeof(uint64_t), 3);
	size_t off;

	if (hashtab__find(&b->stack_ht, h, s, stack_eq, b, out))
		return 0;
	off = v->n_stacks ? v->stack_off[v->n_stacks] : 0;
	if (off + s->n_locs > UINT32_MAX)
		return -E2BIG;
	if (vec_reserve(&v->stack_locs, &b->cap_stack_locs, off + s->n_locs, sizeof(uint64_t)) ||
	    vec_reserve(&v->stack_off, &b->cap_stack_off, v->n_stacks + 2, sizeof(uint32_t)) ||
	    hashtab__insert(&b->stack_ht, h, (uint32_t)v->n_stacks))
		return -ENOMEM;
	if (s->n_locs)	/* an empty stack has no array to copy from (or to) */
		memcpy(&v->stack_locs[off], s->loc_ids, s->n_locs * sizeof(uint64_t));
	v->stack_off[v->n_stacks] = (uint32_t)off;
	v->stack_off[v->n_stacks + 1] = (uint32_t)(off + s->n_locs);
	*out = (uint32_t)v->n_stacks++;
	return 0;
}

static bool rec_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct view_rec *a = &((struct builder *)ctx)->v->recs[idx], *k = key;

	return a->span == k->span && a->callsite == k->callsite && a->stack == k->stack &&
	       a->age_ns == k->age_ns;
}

static int add_rec(struct builder *b, const struct view_rec *k)
{
	struct view *v = b->v;
	uint64_t h = hash_u64(k->stack, (uint64_t)k->age_ns);
	struct view_rec *r;
	uint32_t idx;

	h = hash_u64(k->span, hash_u64(k->callsite, h));
	if (!hashtab__find(&b->rec_ht, h, k, rec_eq, b, &idx)) {
		if (vec_reserve(&v->recs, &b->cap_recs, v->n_recs + 1, sizeof(*k)) ||
		    hashtab__insert(&b->rec_ht, h, (uint32_t)v->n_recs))
			return -ENOMEM;
		idx = (uint32_t)v->n_recs++;
		v->recs[idx] = *k;
		v->recs[idx].bytes = v->recs[idx].objects = 0;
		v->recs[idx].samples = 0;
	}
	r = &v->recs[idx];
	r->bytes += k->bytes;
	r->objects += k->objects;
	r->samples += k->samples;
	return 0;
}

/* the raw span and age of a sample, from its labels */
static void sample_labels(const struct pprof_profile *p, const struct pprof_sample_ref *s,
			  struct raw_span *r, int64_t *age)
{
	int64_t name = 0, path = 0, id = 0, parent = 0;
	bool has_id = false, has_parent = false;
	size_t i;

	*age = -1;
	for (i = 0; i < s->n_labels; i++) {
		const struct pprof_label *l = &s->labels[i];
		const char *k = pprof_profile__str(p, l->key);

		if (!strcmp(k, "span_path"))
			path = l->str;
		else if (!strcmp(k, "span_name"))
			name = l->str;
		else if (!strcmp(k, "span_id"))
			id = l->num, has_id = true;
		else if (!strcmp(k, "span_parent_id"))
			parent = l->num, has_parent = true;
		else if (!strcmp(k, "age_ns") && !l->str)
			*age = l->num < 0 ? 0 : l->num;
	}
	memset(r, 0, sizeof(*r));
	if (path && p->strings[path][0]) {
		r->kind = RAW_PATH;
		r->str = path;
	} else if (name && p->strings[name][0]) {
		r->kind = RAW_NAMED;
		r->str = name;
		/* without an id the name alone identifies the span: a root; parent 0 is none */
		r->id = has_id ? id : 0;
		r->has_parent = has_id && has_parent && parent != 0 && parent != id;
		r->parent_id = r->has_parent ? parent : 0;
	}
}

static int on_sample(const struct pprof_profile *p, const struct pprof_sample_ref *s, void *ctx)
{
	struct builder *b = ctx;
	struct view *v = b->v;
	struct view_rec k = { .stack = VIEW_NONE };
	struct raw_span r;
	int ret;

	v->n_samples++;
	if (v->inuse_bytes_idx >= 0)
		v->inuse_bytes += (double)s->values[v->inuse_bytes_idx];
	if (v->inuse_objects_idx >= 0)
		v->inuse_objects += (double)s->values[v->inuse_objects_idx];
	k.bytes = (double)s->values[v->bytes_idx];
	k.objects = v->objects_idx >= 0 ? (double)s->values[v->objects_idx] : 0;
	if (!k.bytes && !k.objects)
		return 0;
	k.samples = 1;
	v->n_value_samples++;
	v->total_bytes += k.bytes;
	v->total_objects += k.objects;
	sample_labels(p, s, &r, &k.age_ns);
	if (k.age_ns >= 0)
		v->has_age = true;
	ret = intern_raw(b, &r, &k.span);
	if (!ret)
		ret = sample_callsite(b, s, &k.callsite);
	if (!ret && v->opts.stacks)
		ret = intern_stack(b, s, &k.stack);
	if (!ret)
		ret = add_rec(b, &k);
	return ret;
}

/* --- the span tree ------------------------------------------------------------------ */

struct span_key {
	uint32_t parent;
	const char *name;
	bool no_span;
};

static bool span_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct view_span *a = &((struct builder *)ctx)->v->spans[idx];
	const struct span_key *k = key;

	return a->parent == k->parent && a->no_span == k->no_span && !strcmp(a->name, k->name);
}

static int span_child(struct builder *b, uint32_t parent, const char *name, bool no_span,
		      uint32_t *out)
{
	struct view *v = b->v;
	struct span_key k = { parent, name, no_span };
	uint64_t h = hash_bytes(name, strlen(name), hash_u64(parent, no_span));
	struct view_span *n;
	int len;

	if (hashtab__find(&b->span_ht, h, &k, span_eq, b, out))
		return 0;
	if (vec_reserve(&v->spans, &b->cap_spans, v->n_spans + 1, sizeof(*n)) ||
	    hashtab__insert(&b->span_ht, h, (uint32_t)v->n_spans))
		return -ENOMEM;
	n = &v->spans[v->n_spans];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->depth = parent == VIEW_NONE ? 0 : v->spans[parent].depth + 1;
	n->first_child = n->next_sibling = VIEW_NONE;
	n->no_span = no_span;
	n->name = strdup(name);
	len = parent == VIEW_NONE ? asprintf(&n->path, "%s", name) :
				    asprintf(&n->path, "%s;%s", v->spans[parent].path, name);
	if (!n->name || len < 0)
		return -ENOMEM;
	*out = (uint32_t)v->n_spans++;
	return 0;
}

/* the node of a ';'-joined path, created along the way */
static int span_path(struct builder *b, const char *path, uint32_t *out)
{
	uint32_t node = VIEW_NONE;
	char name[256];
	int ret = 0;

	while (!ret) {
		size_t n = strcspn(path, ";");

		snprintf(name, sizeof(name), "%.*s", (int)n, n ? path : "(unnamed)");
		ret = span_child(b, node, name, false, &node);
		if (!path[n])
			break;
		path += n + 1;
	}
	*out = node;
	return ret;
}

static bool id_eq(uint32_t idx, const void *key, void *ctx)
{
	return ((struct builder *)ctx)->raw[idx].id == *(const int64_t *)key;
}

/* span ids may be per instance (one per request): as many as samples, so an index */
static int index_ids(struct builder *b)
{
	uint32_t idx;
	size_t i;

	for (i = 0; i < b->n_raw; i++) {
		const struct raw_span *r = &b->raw[i];
		uint64_t h = hash_u64((uint64_t)r->id, 5);

		if (r->kind != RAW_NAMED || hashtab__find(&b->id_ht, h, &r->id, id_eq, b, &idx))
			continue;
		if (hashtab__insert(&b->id_ht, h, (uint32_t)i))
			return -ENOMEM;
	}
	return 0;
}

static struct raw_span *raw_by_id(struct builder *b, int64_t id)
{
	uint32_t idx;

	if (!hashtab__find(&b->id_ht, hash_u64((uint64_t)id, 5), &id, id_eq, b, &idx))
		return NULL;
	return &b->raw[idx];
}

/* a span without a path: follow span_parent_id through spans present in the profile */
static int span_named(struct builder *b, const struct raw_span *r, uint32_t *out)
{
	const struct pprof_profile *p = b->v->p;
	const struct raw_span *chain[MAX_SPAN_DEPTH];
	uint32_t node = VIEW_NONE;
	size_t n = 0, i, j;
	int ret = 0;

	chain[n++] = r;
	while (r->has_parent && n < MAX_SPAN_DEPTH && (r = raw_by_id(b, r->parent_id))) {
		/* a cycle of ids: stop at the first repeat */
		for (j = 0; j < n && chain[j] != r; j++)
			;
		if (j < n)
			break;
		chain[n++] = r;
	}
	for (i = n; i-- > 0 && !ret;)
		ret = span_child(b, node, p->strings[chain[i]->str], false, &node);
	*out = node;
	return ret;
}

static int build_tree(struct builder *b)
{
	struct view *v = b->v;
	size_t i;
	int ret = index_ids(b);

	for (i = 0; i < b->n_raw && !ret; i++) {
		struct raw_span *r = &b->raw[i];

		if (r->kind == RAW_PATH)
			ret = span_path(b, v->p->strings[r->str], &r->node);
		else if (r->kind == RAW_NAMED)
			ret = span_named(b, r, &r->node);
		else
			ret = span_child(b, VIEW_NONE, VIEW_NO_SPAN, true, &r->node);
	}
	if (ret)
		return ret;
	/* children lists in creation order; sorting is the printer's */
	for (i = v->n_spans; i-- > 0;) {
		struct view_span *n = &v->spans[i];

		if (n->parent != VIEW_NONE) {
			n->next_sibling = v->spans[n->parent].first_child;
			v->spans[n->parent].first_child = (uint32_t)i;
		}
		v->has_spans |= !n->no_span;
	}
	for (i = 0; i < v->n_recs; i++) {
		struct view_rec *rec = &v->recs[i];
		uint32_t s;

		rec->span = b->raw[rec->span].node;
		v->spans[rec->span].self += rec->bytes;
		v->spans[rec->span].self_objects += rec->objects;
		v->spans[rec->span].self_samples += rec->samples;
		for (s = rec->span; s != VIEW_NONE; s = v->spans[s].parent) {
			v->spans[s].total += rec->bytes;
			v->spans[s].total_objects += rec->objects;
			v->spans[s].total_samples += rec->samples;
		}
	}
	return 0;
}

/* --- loading ---------------------------------------------------------------------- */

static int pick_columns(struct view *v, char *err, size_t errlen)
{
	const char *bytes = v->opts.value == VIEW_INUSE ? "inuse_space" : "alloc_space";
	const char *objects = v->opts.value == VIEW_INUSE ? "inuse_objects" : "alloc_objects";
	const char *def;

	v->inuse_bytes_idx = pprof_profile__sample_type(v->p, "inuse_space");
	v->inuse_objects_idx = pprof_profile__sample_type(v->p, "inuse_objects");
	v->has_inuse = v->inuse_bytes_idx >= 0;
	v->bytes_idx = pprof_profile__sample_type(v->p, bytes);
	v->objects_idx = pprof_profile__sample_type(v->p, objects);
	if (v->bytes_idx >= 0)
		return 0;
	if (v->opts.value == VIEW_INUSE) {
		snprintf(err, errlen, "the profile has no in-use data (no inuse_space sample type); "
			 "capture with 'culpert-bpf attach --inuse' or 'culpert-bpf capture'");
		return -ENODATA;
	}
	/* another tool's profile: take its default type, else its last (pprof's choice too) */
	if (!v->p->n_sample_types) {
		snprintf(err, errlen, "the profile has no sample types, so no values to report");
		return -ENODATA;
	}
	def = pprof_profile__str(v->p, v->p->default_sample_type);
	v->bytes_idx = def[0] ? pprof_profile__sample_type(v->p, def) : -1;
	if (v->bytes_idx < 0)
		v->bytes_idx = (int)v->p->n_sample_types - 1;
	return 0;
}

/* once the tables are read, before the first sample: columns and per-location caches */
static int prepare(struct builder *b, const struct pprof_profile *p)
{
	struct view *v = b->v;
	int ret;

	v->p = (struct pprof_profile *)p;
	ret = pick_columns(v, b->err, sizeof(b->err));
	if (ret)
		return ret;
	b->loc_cs = malloc((p->n_locations ?: 1) * sizeof(*b->loc_cs));
	b->fn_mach = calloc(p->n_functions ?: 1, 1);
	if (!b->loc_cs || !b->fn_mach)
		return -ENOMEM;
	memset(b->loc_cs, 0xff, (p->n_locations ?: 1) * sizeof(*b->loc_cs));
	return 0;
}

static int first_sample(const struct pprof_profile *p, const struct pprof_sample_ref *s, void *ctx)
{
	struct builder *b = ctx;
	int ret;

	if (!b->loc_cs) {
		ret = prepare(b, p);
		if (ret)
			return ret;
	}
	return on_sample(p, s, ctx);
}

static void builder_free(struct builder *b)
{
	free(b->raw);
	hashtab__free(&b->raw_ht);
	free(b->cs);
	hashtab__free(&b->cs_ht);
	hashtab__free(&b->rec_ht);
	hashtab__free(&b->stack_ht);
	hashtab__free(&b->span_ht);
	hashtab__free(&b->id_ht);
	free(b->loc_cs);
	free(b->fn_mach);
}

/* from a file (path) or from gzip'd bytes in memory (buf, len) */
static struct view *view_read(const char *path, const void *buf, size_t len,
			      const struct view_opts *opts, char *err, size_t errlen)
{
	struct builder b = { 0 };
	struct pprof_read_opts ro = { .sz = sizeof(ro), .on_sample = first_sample, .ctx = &b };
	struct pprof_profile *p;
	struct view *v;
	int ret = 0;

	v = calloc(1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	v->opts = *opts;
	b.v = v;
	p = path ? pprof_read_file_opts(path, &ro, err, errlen) :
		   pprof_decode_gzip_opts(buf, len, &ro, err, errlen);
	if (!p) {
		ret = -errno;
		/* prepare() may have kept the profile the reader freed on its way out */
		v->p = NULL;
	} else if (!b.loc_cs) {
		/* no samples, so first_sample() never ran; prepare() sets v->p */
		ret = prepare(&b, p);
	}
	if (!ret) {
		v->rate = p->period;
		ret = build_tree(&b);
		if (ret)
			snprintf(err, errlen, "out of memory");
	} else if (b.err[0]) {
		/* a reason of ours beats the reader's generic one */
		snprintf(err, errlen, "%s", b.err);
	}
	builder_free(&b);
	if (ret) {
		/* v->p is p or NULL here: view__free() frees the profile */
		view__free(v);
		errno = -ret;
		return NULL;
	}
	return v;
}

struct view *view__load(const char *path, const struct view_opts *opts, char *err, size_t errlen)
{
	return view_read(path, NULL, 0, opts, err, errlen);
}

struct view *view__decode(const void *buf, size_t len, const struct view_opts *opts, char *err,
			  size_t errlen)
{
	return view_read(NULL, buf, len, opts, err, errlen);
}

void view__free(struct view *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->n_spans; i++) {
		free(v->spans[i].name);
		free(v->spans[i].path);
	}
	for (i = 0; i < v->n_callsites; i++)
		free(v->callsites[i]);
	free(v->spans);
	free(v->callsites);
	free(v->recs);
	free(v->stack_locs);
	free(v->stack_off);
	pprof_profile__free(v->p);
	free(v);
}

static int cmp_span(const void *a, const void *b, void *ctx)
{
	const struct view_span *x = &((const struct view *)ctx)->spans[*(const uint32_t *)a];
	const struct view_span *y = &((const struct view *)ctx)->spans[*(const uint32_t *)b];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t view__children(const struct view *v, uint32_t span, uint32_t *out)
{
	size_t n = 0, i;
	uint32_t c;

	if (span == VIEW_NONE) {
		for (i = 0; i < v->n_spans; i++)
			if (v->spans[i].parent == VIEW_NONE)
				out[n++] = (uint32_t)i;
	} else {
		for (c = v->spans[span].first_child; c != VIEW_NONE; c = v->spans[c].next_sibling)
			out[n++] = c;
	}
	qsort_r(out, n, sizeof(*out), cmp_span, (void *)v);
	return n;
}

/* a span is named by its name or its whole path; "(no span)" by neither */
static bool span_is_named(const struct view_span *s, const char *name)
{
	return !s->no_span && (!strcmp(s->name, name) || !strcmp(s->path, name));
}

bool view__span_within(const struct view *v, uint32_t span, const char *name)
{
	for (; span != VIEW_NONE; span = v->spans[span].parent)
		if (span_is_named(&v->spans[span], name))
			return true;
	return false;
}

/*
 * Every span is on the path of some record, so this is also "does a record
 * fall inside a span named `name`", without walking the records.
 */
bool view__has_span(const struct view *v, const char *name)
{
	size_t i;

	for (i = 0; i < v->n_spans; i++)
		if (span_is_named(&v->spans[i], name))
			return true;
	return false;
}

static int cmp_self(const void *a, const void *b, void *ctx)
{
	const struct view_span *x = &((const struct view *)ctx)->spans[*(const uint32_t *)a];
	const struct view_span *y = &((const struct view *)ctx)->spans[*(const uint32_t *)b];

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(x->path, y->path);
}

size_t view__flat_spans(const struct view *v, uint32_t *out)
{
	size_t n = 0, i;

	for (i = 0; i < v->n_spans; i++)
		if (v->spans[i].self_samples)
			out[n++] = (uint32_t)i;
	qsort_r(out, n, sizeof(*out), cmp_self, (void *)v);
	return n;
}

static int cmp_cs(const void *a, const void *b, void *ctx)
{
	const struct view_cs_row *x = a, *y = b;
	const struct view *v = ctx;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(v->callsites[x->callsite], v->callsites[y->callsite]);
}

struct view_cs_row *view__callsite_rows(const struct view *v,
					bool (*select)(const struct view_rec *rec, void *ctx),
					void *ctx, size_t *n, double *total)
{
	struct view_cs_row *rows = calloc(v->n_callsites ?: 1, sizeof(*rows));
	size_t i, k = 0;

	if (!rows)
		return NULL;
	*total = 0;
	for (i = 0; i < v->n_callsites; i++) {
		rows[i].callsite = (uint32_t)i;
		rows[i].oldest_ns = -1;
	}
	for (i = 0; i < v->n_recs; i++) {
		const struct view_rec *rec = &v->recs[i];
		struct view_cs_row *row = &rows[rec->callsite];

		if (select && !select(rec, ctx))
			continue;
		row->bytes += rec->bytes;
		row->objects += rec->objects;
		row->samples += rec->samples;
		if (rec->age_ns > row->oldest_ns)
			row->oldest_ns = rec->age_ns;
		*total += rec->bytes;
	}
	for (i = 0; i < v->n_callsites; i++)
		if (rows[i].samples)
			rows[k++] = rows[i];
	qsort_r(rows, k, sizeof(*rows), cmp_cs, (void *)v);
	*n = k;
	return rows;
}
