/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Span chains of samples, interned for aggregation, and the span names
 * the BPF side interned.  A chain is what a sample's labels are made of:
 * the names from the outermost to the innermost open span, and the
 * innermost span's id and parent id.
 */
#ifndef CULPERT_SPANS_H
#define CULPERT_SPANS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "culpert.h"

struct spans;

struct span_chain {
	uint32_t depth;			/* 0: outside any span */
	const uint32_t *name_ids;	/* depth entries, outermost first */
	uint64_t id;			/* innermost span; 0 when ids were dropped */
	uint64_t parent_id;
};

struct spans *spans__new(size_t max_chains);
void spans__free(struct spans *s);

/*
 * The chain id of a sample's open spans (0 = no span); with keep_ids false
 * only the names count, so every instance of a path shares one chain.
 * Returns UINT32_MAX when the table of chains with ids is full (chains
 * without ids are always kept: there are as many as distinct span paths).
 */
uint32_t spans__chain(struct spans *s, const struct culpert_span_frame *frames, uint32_t depth,
		      bool keep_ids);
int spans__get(const struct spans *s, uint32_t chain, struct span_chain *out);

/* name of name_id, as interned by the BPF side; NULL when unknown */
int spans__set_name(struct spans *s, uint32_t name_id, const char *name, size_t len);
const char *spans__name(const struct spans *s, uint32_t name_id);
/* "outer;inner" into buf; returns buf */
char *spans__path(const struct spans *s, uint32_t chain, char *buf, size_t len);

#endif /* CULPERT_SPANS_H */
