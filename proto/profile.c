// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The in-memory profile: lookups and release. */
#include <stdlib.h>
#include <string.h>

#include "pprof.h"

void pprof_profile__clear(struct pprof_profile *p)
{
	size_t i;

	if (p->string_block)
		free(p->string_block);
	else
		for (i = 0; i < p->n_strings; i++)
			free(p->strings[i]);
	free(p->strings);
	free(p->sample_types);
	free(p->samples);
	free(p->values);
	free(p->loc_ids);
	free(p->labels);
	free(p->mappings);
	free(p->locations);
	free(p->lines);
	free(p->functions);
	free(p->comments);
	hashtab__free(&p->loc_ht);
	hashtab__free(&p->func_ht);
	hashtab__free(&p->map_ht);
	memset(p, 0, sizeof(*p));
}

void pprof_profile__free(struct pprof_profile *p)
{
	if (!p)
		return;
	pprof_profile__clear(p);
	free(p);
}

static bool id_eq(uint32_t idx, const void *key, void *ctx)
{
	const char *base = ctx;
	size_t elem = *(const size_t *)key;

	/* every indexed struct starts with its uint64_t id */
	return *(const uint64_t *)(base + (size_t)idx * elem) == ((const uint64_t *)key)[1];
}

static const void *by_id(const struct hashtab *ht, const void *arr, size_t n, size_t elem,
			 bool dense, uint64_t id)
{
	uint64_t key[2] = { elem, id };
	uint32_t idx;

	if (dense)
		return id && id <= n ? (const char *)arr + (size_t)(id - 1) * elem : NULL;
	if (!id || !hashtab__find(ht, hash_u64(id, 0), key, id_eq, (void *)arr, &idx))
		return NULL;
	return (const char *)arr + (size_t)idx * elem;
}

static int index_ids(struct hashtab *ht, bool *dense, const void *arr, size_t n, size_t elem)
{
	const char *base = arr;
	size_t i;
	int err;

	hashtab__free(ht);
	*dense = true;
	for (i = 0; i < n && *dense; i++)
		*dense = *(const uint64_t *)(base + i * elem) == i + 1;
	if (*dense)
		return 0;
	for (i = 0; i < n; i++) {
		uint64_t id = *(const uint64_t *)(base + i * elem);

		/* the first of duplicate ids wins, as in other pprof readers */
		if (by_id(ht, arr, n, elem, false, id))
			continue;
		err = hashtab__insert(ht, hash_u64(id, 0), (uint32_t)i);
		if (err)
			return err;
	}
	return 0;
}

int pprof_profile__index(struct pprof_profile *p)
{
	int err;

	err = index_ids(&p->loc_ht, &p->loc_dense, p->locations, p->n_locations,
			sizeof(*p->locations));
	if (!err)
		err = index_ids(&p->func_ht, &p->func_dense, p->functions, p->n_functions,
				sizeof(*p->functions));
	if (!err)
		err = index_ids(&p->map_ht, &p->map_dense, p->mappings, p->n_mappings,
				sizeof(*p->mappings));
	return err;
}

const struct pprof_location *pprof_profile__location(const struct pprof_profile *p, uint64_t id)
{
	return by_id(&p->loc_ht, p->locations, p->n_locations, sizeof(*p->locations), p->loc_dense,
		     id);
}

const struct pprof_function *pprof_profile__function(const struct pprof_profile *p, uint64_t id)
{
	return by_id(&p->func_ht, p->functions, p->n_functions, sizeof(*p->functions),
		     p->func_dense, id);
}

const struct pprof_mapping *pprof_profile__mapping(const struct pprof_profile *p, uint64_t id)
{
	return by_id(&p->map_ht, p->mappings, p->n_mappings, sizeof(*p->mappings), p->map_dense,
		     id);
}

const char *pprof_profile__str(const struct pprof_profile *p, int64_t i)
{
	if (i < 0 || (uint64_t)i >= p->n_strings)
		return "";
	return p->strings[i];
}

int pprof_profile__sample_type(const struct pprof_profile *p, const char *type)
{
	size_t i;

	for (i = 0; i < p->n_sample_types; i++)
		if (!strcmp(pprof_profile__str(p, p->sample_types[i].type), type))
			return (int)i;
	return -1;
}

const struct pprof_label *pprof_profile__label(const struct pprof_profile *p,
					       const struct pprof_sample *s, const char *key)
{
	uint32_t i;

	for (i = 0; i < s->n_labels; i++) {
		const struct pprof_label *l = &p->labels[s->label_off + i];

		if (!strcmp(pprof_profile__str(p, l->key), key))
			return l;
	}
	return NULL;
}

const char *pprof_profile__comment(const struct pprof_profile *p, const char *key)
{
	size_t klen = strlen(key), i;

	for (i = 0; i < p->n_comments; i++) {
		const char *c = pprof_profile__str(p, p->comments[i]);

		if (!strncmp(c, key, klen) && c[klen] == '=')
			return c + klen + 1;
	}
	return NULL;
}
