// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "spans.h"
#include "treepath.h"
#include "vec.h"

struct chain {
	uint32_t name_off;	/* into spans.name_ids */
	uint32_t depth;
	uint64_t id, parent_id;
};

struct spans {
	size_t max_chains;
	struct chain *chains;	/* [0] is "no span" */
	size_t n_chains, cap_chains;
	uint32_t *name_ids;
	size_t n_name_ids, cap_name_ids;
	struct hashtab ht;
	char **names;		/* by name id */
	size_t cap_names;
};

struct chain_key {
	const uint32_t *names;
	uint32_t depth;
	uint64_t id, parent_id;
};

struct spans *spans__new(size_t max_chains)
{
	struct spans *s = calloc(1, sizeof(*s));

	if (!s || vec_reserve(&s->chains, &s->cap_chains, 1, sizeof(*s->chains))) {
		free(s);
		return NULL;
	}
	s->max_chains = max_chains;
	memset(&s->chains[0], 0, sizeof(s->chains[0]));
	s->n_chains = 1;
	return s;
}

void spans__free(struct spans *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->cap_names; i++)
		free(s->names[i]);
	free(s->names);
	free(s->chains);
	free(s->name_ids);
	hashtab__free(&s->ht);
	free(s);
}

static bool chain_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct spans *s = ctx;
	const struct chain *c = &s->chains[idx];
	const struct chain_key *k = key;

	return c->depth == k->depth && c->id == k->id && c->parent_id == k->parent_id &&
	       !memcmp(&s->name_ids[c->name_off], k->names, k->depth * sizeof(uint32_t));
}

/* chains with ids grow with requests and are bounded; paths alone are few and always kept */
static uint32_t intern(struct spans *s, const struct chain_key *k)
{
	uint64_t h = hash_u64(k->id, hash_u64(k->parent_id, k->depth));
	struct chain *c;
	uint32_t idx;

	if (!k->depth)
		return 0;
	h = hash_bytes(k->names, k->depth * sizeof(uint32_t), h);
	if (hashtab__find(&s->ht, h, k, chain_eq, s, &idx))
		return idx;
	if ((k->id && s->n_chains > s->max_chains) ||
	    vec_reserve(&s->chains, &s->cap_chains, s->n_chains + 1, sizeof(*c)) ||
	    vec_reserve(&s->name_ids, &s->cap_name_ids, s->n_name_ids + k->depth, sizeof(uint32_t)))
		return UINT32_MAX;
	idx = (uint32_t)s->n_chains;
	if (hashtab__insert(&s->ht, h, idx))
		return UINT32_MAX;
	c = &s->chains[s->n_chains++];
	c->name_off = (uint32_t)s->n_name_ids;
	c->depth = k->depth;
	c->id = k->id;
	c->parent_id = k->parent_id;
	memcpy(&s->name_ids[s->n_name_ids], k->names, k->depth * sizeof(uint32_t));
	s->n_name_ids += k->depth;
	return idx;
}

uint32_t spans__chain(struct spans *s, const struct culpert_span_frame *frames, uint32_t depth,
		      bool keep_ids)
{
	uint32_t names[CULPERT_MAX_SPAN_DEPTH];
	struct chain_key k = { names, depth, 0, 0 };
	uint32_t i;

	if (depth > CULPERT_MAX_SPAN_DEPTH)
		depth = k.depth = CULPERT_MAX_SPAN_DEPTH;
	for (i = 0; i < depth; i++)
		names[i] = frames[i].name_id;
	if (depth && keep_ids) {
		k.id = frames[depth - 1].id;
		k.parent_id = frames[depth - 1].parent_id;
	}
	return intern(s, &k);
}

int spans__get(const struct spans *s, uint32_t chain, struct span_chain *out)
{
	const struct chain *c;

	if (chain >= s->n_chains)
		return -ENOENT;
	c = &s->chains[chain];
	out->depth = c->depth;
	out->name_ids = s->name_ids ? &s->name_ids[c->name_off] : NULL;
	out->id = c->id;
	out->parent_id = c->parent_id;
	return 0;
}

int spans__set_name(struct spans *s, uint32_t name_id, const char *name, size_t len)
{
	size_t old = s->cap_names;
	char *copy;

	if (vec_reserve(&s->names, &s->cap_names, (size_t)name_id + 1, sizeof(char *)))
		return -ENOMEM;
	if (s->cap_names > old)
		memset(&s->names[old], 0, (s->cap_names - old) * sizeof(char *));
	copy = strndup(name, len);
	if (!copy)
		return -ENOMEM;
	free(s->names[name_id]);
	s->names[name_id] = copy;
	return 0;
}

const char *spans__name(const struct spans *s, uint32_t name_id)
{
	return name_id < s->cap_names ? s->names[name_id] : NULL;
}

char *spans__path(const struct spans *s, uint32_t chain, char *buf, size_t len)
{
	struct span_chain c;
	size_t used = 0;
	uint32_t i;

	buf[0] = 0;
	if (spans__get(s, chain, &c))
		return buf;
	/* a name's own ';' would read as nesting: escaped (lib/treepath.h) */
	for (i = 0; i < c.depth && used + 1 < len; i++) {
		const char *n = spans__name(s, c.name_ids[i]);

		if (i)
			buf[used++] = ';';
		used += treepath_escape(n ? n : "(unnamed span)", buf + used, len - used);
	}
	if (used >= len)
		used = len - 1;
	buf[used] = '\0';
	return buf;
}
