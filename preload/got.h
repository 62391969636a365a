/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Rewriting GOT slots of the loaded objects, and writing them back (got.c). */
#ifndef CULPERT_SAMPLER_GOT_H
#define CULPERT_SAMPLER_GOT_H

#include <stddef.h>
#include <stdint.h>

#include "sampler_internal.h"

struct got_target {
	const char *name;		/* the symbol the slot is a relocation of */
	void *real;			/* what the process is bound to now */
	void *wrapper;			/* what the slot gets */
};

struct got_stats {
	unsigned long objects;		/* objects visited */
	unsigned long written;		/* slots rewritten */
	unsigned long failed;		/* slots that could not be written (mprotect, memory) */
};

/* every slot of the targets in the base namespace's objects, but those holding a `skip` address */
int got_patch(const struct got_target *t, size_t n, const uintptr_t *skip, size_t nskip,
	      struct got_stats *stats) SAMPLER_HIDDEN;
/* every slot holding a target's wrapper back to what it held */
int got_restore(const struct got_target *t, size_t n, struct got_stats *stats) SAMPLER_HIDDEN;

/*
 * The first definition of the function `name` in the base namespace's
 * load order (its global scope, for the objects loaded at start), leaving
 * out the objects holding a `skip` address.  Not dlsym(RTLD_DEFAULT): in a
 * program built without -fPIE that takes malloc's address, that is the
 * program's PLT stub, the canonical address, not the allocator.
 */
void *got_definition(const char *name, const uintptr_t *skip, size_t nskip) SAMPLER_HIDDEN;

/* an object of the base namespace is loaded under `name` (its file's name or DT_SONAME) */
int got_loaded(const char *name) SAMPLER_HIDDEN;

#endif /* CULPERT_SAMPLER_GOT_H */
