// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The selected values by process: a capture of a process tree (culpert-bpf
 * attach --children) labels each sample with its pid and comm
 * (docs/profile-format.md); a profile without them is its target's alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view_build.h"

static bool proc_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct view_proc *a = &((struct builder *)ctx)->v->procs[idx], *k = key;

	return a->pid == k->pid && a->comm == k->comm;
}

/* the pid and comm labels of a sample; false without a pid label */
static bool proc_labels(const struct pprof_profile *p, const struct pprof_sample_ref *s,
			struct view_proc *out)
{
	bool have = false;
	size_t i;

	for (i = 0; i < s->n_labels; i++) {
		const struct pprof_label *l = &s->labels[i];
		const char *k = pprof_profile__str(p, l->key);

		if (!strcmp(k, "pid") && !l->str) {
			out->pid = l->num;
			have = true;
		} else if (!strcmp(k, "comm") && l->str) {
			out->comm = l->str;
		}
	}
	return have;
}

int procs__add(struct builder *b, const struct pprof_profile *p, const struct pprof_sample_ref *s,
	       const struct view_rec *r)
{
	struct view *v = b->v;
	struct view_proc k = { .pid = -1 };
	uint32_t idx;
	uint64_t h;
	int ret;

	if (proc_labels(p, s, &k))
		v->has_procs = true;
	h = hash_u64((uint64_t)k.pid, (uint64_t)k.comm);
	if (!hashtab__find(&b->proc_ht, h, &k, proc_eq, b, &idx)) {
		if (v->n_procs >= UINT32_MAX - 1)
			return -E2BIG;
		ret = pprof_budget__reserve(&b->budget, &v->procs, &b->cap_procs, v->n_procs + 1,
					    sizeof(k));
		if (!ret)
			ret = pprof_budget__insert(&b->budget, &b->proc_ht, h, (uint32_t)v->n_procs);
		if (ret)
			return ret;
		idx = (uint32_t)v->n_procs++;
		v->procs[idx] = k;
	}
	v->procs[idx].bytes += r->bytes;
	v->procs[idx].objects += r->objects;
	v->procs[idx].samples += r->samples;
	v->procs[idx].sampled += r->sampled;
	return 0;
}

static int proc_cmp(const void *pa, const void *pb)
{
	const struct view_proc *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

struct view_proc *view__process_rows(const struct view *v, size_t *n)
{
	struct view_proc *out = malloc((v->n_procs ?: 1) * sizeof(*out));

	if (!out)
		return NULL;
	if (v->n_procs)
		memcpy(out, v->procs, v->n_procs * sizeof(*out));
	qsort(out, v->n_procs, sizeof(*out), proc_cmp);
	*n = v->n_procs;
	return out;
}
