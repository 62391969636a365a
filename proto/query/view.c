// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Building a view while the samples stream by: each sample becomes a record
 * (span, callsite, age, stack), equal records summed; then the span tree
 * (spantree.c).  Queries on the result are in query.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"
#include "view_build.h"

/* a sample's stack as location indices, in b->scratch */
struct stack_key {
	const uint32_t *locs;
	size_t n;
};

static bool stack_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct view *v = ((struct builder *)ctx)->v;
	const struct stack_key *k = key;

	return v->stack_off[idx + 1] - v->stack_off[idx] == k->n &&
	       (!k->n || !memcmp(&v->stack_locs[v->stack_off[idx]], k->locs,
				 k->n * sizeof(uint32_t)));
}

static int intern_stack(struct builder *b, const struct pprof_sample_ref *s, uint32_t *out)
{
	struct view *v = b->v;
	struct stack_key k = { b->scratch, s->n_locs };
	uint64_t h;
	size_t off, i;
	int ret;

	if (vec_reserve(&b->scratch, &b->cap_scratch, s->n_locs + 1, sizeof(uint32_t)))
		return -ENOMEM;
	/* indices take half the memory of ids, and need no lookup to use */
	k.locs = b->scratch;
	for (i = 0; i < s->n_locs; i++)
		b->scratch[i] = (uint32_t)(pprof_profile__location(v->p, s->loc_ids[i]) -
					   v->p->locations);
	h = hash_bytes(k.locs, k.n * sizeof(uint32_t), 3);
	if (hashtab__find(&b->stack_ht, h, &k, stack_eq, b, out))
		return 0;
	off = v->n_stacks ? v->stack_off[v->n_stacks] : 0;
	if (off + s->n_locs > UINT32_MAX || v->n_stacks >= UINT32_MAX - 2)
		return -E2BIG;
	ret = pprof_budget__reserve(&b->budget, &v->stack_locs, &b->cap_stack_locs,
				    off + s->n_locs, sizeof(uint32_t));
	if (!ret)
		ret = pprof_budget__reserve(&b->budget, &v->stack_off, &b->cap_stack_off,
					    v->n_stacks + 2, sizeof(uint32_t));
	if (!ret)
		ret = pprof_budget__insert(&b->budget, &b->stack_ht, h, (uint32_t)v->n_stacks);
	if (ret)
		return ret;
	if (s->n_locs)	/* an empty stack has no array to copy from (or to) */
		memcpy(&v->stack_locs[off], k.locs, s->n_locs * sizeof(uint32_t));
	v->stack_off[v->n_stacks] = (uint32_t)off;
	v->stack_off[v->n_stacks + 1] = (uint32_t)(off + s->n_locs);
	*out = (uint32_t)v->n_stacks++;
	return 0;
}

static bool rec_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct view_rec *a = &((struct builder *)ctx)->v->recs[idx], *k = key;

	return a->span == k->span && a->callsite == k->callsite && a->stack == k->stack &&
	       a->age_ns == k->age_ns && a->wrapper == k->wrapper && a->caller == k->caller;
}

static int add_rec(struct builder *b, const struct view_rec *k)
{
	struct view *v = b->v;
	uint64_t h = hash_u64(k->stack, (uint64_t)k->age_ns);
	struct view_rec *r;
	uint32_t idx;
	int ret;

	h = hash_u64(k->span, hash_u64(k->callsite, hash_u64(k->wrapper, hash_u64(k->caller, h))));
	if (!hashtab__find(&b->rec_ht, h, k, rec_eq, b, &idx)) {
		if (v->n_recs >= UINT32_MAX - 1)
			return -E2BIG;
		ret = pprof_budget__reserve(&b->budget, &v->recs, &b->cap_recs, v->n_recs + 1,
					    sizeof(*k));
		if (!ret)
			ret = pprof_budget__insert(&b->budget, &b->rec_ht, h, (uint32_t)v->n_recs);
		if (ret)
			return ret;
		idx = (uint32_t)v->n_recs++;
		v->recs[idx] = *k;
		v->recs[idx].bytes = v->recs[idx].objects = 0;
		v->recs[idx].samples = v->recs[idx].sampled = 0;
	}
	r = &v->recs[idx];
	r->bytes += k->bytes;
	r->objects += k->objects;
	r->samples += k->samples;
	r->sampled += k->sampled;
	return 0;
}

/* the raw span, age and sampled allocations (-1: no label) of a sample, from its labels */
static void sample_labels(const struct pprof_profile *p, const struct pprof_sample_ref *s,
			  struct raw_span *r, int64_t *age, int64_t *sampled)
{
	int64_t name = 0, path = 0, id = 0, parent = 0;
	bool has_id = false, has_parent = false;
	size_t i;

	*age = *sampled = -1;
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
		else if (!strcmp(k, "sampled_allocs") && !l->str)
			*sampled = l->num < 0 ? 0 : l->num;
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

/* callsite__of_sample(), with the names of new callsites and wrappers charged to the budget */
static int callsite_of(struct builder *b, const struct pprof_sample_ref *s, uint32_t *out,
		       uint32_t *wrapper, uint32_t *caller)
{
	size_t cs = b->v->n_callsites, wr = b->v->n_wrappers, i;
	int ret = callsite__of_sample(b, s, out, wrapper, b->v->opts.callers ? caller : NULL);

	for (i = cs; i < b->v->n_callsites && !ret; i++)
		ret = pprof_budget__charge(&b->budget, strlen(b->v->callsites[i]) + 1 +
					   sizeof(struct cs_key) + sizeof(char *) +
					   sizeof(size_t) + sizeof(uint64_t) + 24);
	for (i = wr; i < b->v->n_wrappers && !ret; i++)
		ret = pprof_budget__charge(&b->budget, strlen(b->v->wrappers[i]) + 1 +
					   sizeof(char *) + 12);
	return ret;
}

static int on_sample(const struct pprof_profile *p, const struct pprof_sample_ref *s, void *ctx)
{
	struct builder *b = ctx;
	struct view *v = b->v;
	struct view_rec k = { .stack = VIEW_NONE, .caller = VIEW_NONE };
	struct raw_span r;
	int64_t sampled;
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
	sample_labels(p, s, &r, &k.age_ns, &sampled);
	if (k.age_ns >= 0)
		v->has_age = true;
	if (sampled < 0)
		b->unlabelled++;
	k.sampled = sampled > 0 ? (uint64_t)sampled : 0;
	v->n_sampled += k.sampled;
	ret = spantree__intern_raw(b, &r, &k.span);
	if (!ret)
		ret = callsite_of(b, s, &k.callsite, &k.wrapper, &k.caller);
	if (!ret && v->opts.stacks)
		ret = intern_stack(b, s, &k.stack);
	if (!ret)
		ret = add_rec(b, &k);
	if (!ret)
		ret = procs__add(b, p, s, &k);
	return ret;
}

/*
 * Sampled allocations per span, once the tree is built; they count only when
 * every record carries them (a culpert-bpf profile; an empty one by its
 * samples= comment).
 */
static void sum_sampled(struct builder *b)
{
	struct view *v = b->v;
	size_t i;
	uint32_t s;

	v->has_sampled = !b->unlabelled &&
			 (v->n_value_samples || pprof_profile__comment(v->p, "samples"));
	for (i = 0; v->has_sampled && i < v->n_recs; i++) {
		const struct view_rec *rec = &v->recs[i];

		v->spans[rec->span].self_sampled += rec->sampled;
		for (s = rec->span; s != VIEW_NONE; s = v->spans[s].parent)
			v->spans[s].total_sampled += rec->sampled;
	}
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
	/* callsite.c's caches: a callsite and a wrapper per location, a byte per function */
	if (!ret)
		ret = pprof_budget__charge(&b->budget, (p->n_locations + 1) * 2 * sizeof(uint32_t) +
					   p->n_functions + 1);
	if (ret)
		return ret;
	return callsite__prepare(b);
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
	spantree__free(b);
	callsite__free(b);
	hashtab__free(&b->rec_ht);
	hashtab__free(&b->stack_ht);
	hashtab__free(&b->proc_ht);
	free(b->scratch);
}

/* from a file (path) or from gzip'd bytes in memory (buf, len) */
static struct view *view_read(const char *path, const void *buf, size_t len,
			      const struct view_opts *opts, char *err, size_t errlen)
{
	struct builder b = { .budget.max = opts->max_memory };
	struct pprof_read_opts ro = { .sz = sizeof(ro), .on_sample = first_sample, .ctx = &b,
				      .budget = &b.budget };
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
		ret = spantree__build(&b);
		if (!ret && (ret = span_totals__read(&v->totals, p)) == -EINVAL)
			snprintf(b.err, sizeof(b.err), "malformed span.total, span.hist or span.totals comments "
				 "(docs/profile-format.md); the file was not written by culpert-bpf or was altered");
		/* after the exact totals: their paths show nesting too, and move with the tree */
		if (!ret)
			ret = orphans__mark(&b);
		if (!ret)
			sum_sampled(&b);
	}
	if (b.err[0]) {
		/* a reason of ours beats the reader's generic one */
		snprintf(err, errlen, "%s", b.err);
	} else if (ret && p && b.budget.exceeded) {
		char why[256];

		pprof_budget__explain(&b.budget, "reading", why, sizeof(why));
		snprintf(err, errlen, "profile too large: %s", why);
	} else if (ret && p) {
		snprintf(err, errlen, "out of memory");
	}
	v->budget = b.budget;
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
	for (i = 0; i < v->n_spans; i++)
		free(v->spans[i].name);
	free(v->path_buf);
	span_totals__free(&v->totals);
	for (i = 0; i < v->n_callsites; i++)
		free(v->callsites[i]);
	for (i = 0; i < v->n_wrappers; i++)
		free(v->wrappers[i]);
	free(v->spans);
	free(v->callsites);
	free(v->callsite_name_len);
	free(v->callsite_fid);
	free(v->wrappers);
	free(v->recs);
	free(v->procs);
	free(v->stack_locs);
	free(v->stack_off);
	pprof_profile__free(v->p);
	free(v);
}
