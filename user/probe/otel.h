/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The otel_memory USDT contract in a process (docs/otel.md): which mapped
 * objects carry otel_memory:alloc and :free, whether attach takes that
 * path (--sampler), the rate the in-process sampler publishes, and which
 * frames of a sample are the sampler's own.  `attach`, `capture` and the
 * agent's collector plan through here, then hand the plan to the sampler.
 */
#ifndef CULPERT_OTEL_H
#define CULPERT_OTEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct objcache;
struct procmaps;
struct target;

/* --sampler */
enum otel_mode {
	OTEL_MODE_AUTO,		/* the contract when a mapped object carries it, else uprobes */
	OTEL_MODE_USDT,		/* the contract, or fail */
	OTEL_MODE_UPROBES,	/* the allocator's entry points, whatever is mapped */
	OTEL_MODE_INJECT,	/* the contract of libculpert-sampler.so, loaded into the process */
};

/* their names, in order, NULL-terminated (for opt_choice()) */
extern const char *const otel_mode_names[];

struct otel_object {
	char *path;		/* as the target maps it */
	char *open_path;	/* as the kernel should open it (target__object_path) */
	size_t n_alloc, n_free;	/* sites of otel_memory:alloc and :free */
	bool alloc_sem, free_sem;	/* ... behind semaphores */
	bool is_exe;		/* the program itself carries the probes */
	/* runtime range of its code (a library only): frames in it are the sampler's */
	uint64_t text_lo, text_hi;
	uint64_t page;		/* runtime address of culpert_sampler_page; 0: none */
};

struct otel_plan {
	struct otel_object *objects;
	size_t n;
	bool use;		/* attach takes the contract's probes */
	bool with_free;		/* ... and otel_memory:free (--inuse) */
	char why[512];		/* the choice, in a sentence for probes and -v */
};

/*
 * Find the contract in the mapped objects and decide, for `mode` and
 * whether frees are needed (--inuse).  0, or -errno with the reason in
 * plan->why: -ENOENT when `usdt` was asked for and cannot be had,
 * -ENOMEM.
 */
int otel__plan(const struct target *t, const struct procmaps *maps, struct objcache *objs,
	       enum otel_mode mode, bool need_free, struct otel_plan *plan);
void otel_plan__free(struct otel_plan *plan);

/*
 * The rate the in-process sampler publishes in its page (libculpert-sampler),
 * into *rate; 0, or -ENOENT when no object has a page, or the read's error.
 */
int otel_plan__rate(const struct otel_plan *plan, int pid, uint64_t *rate);

/*
 * A sample's frames, leaf first, without the leading ones inside a sampler
 * library (the function that called the allocator becomes the leaf).  The
 * new count.
 */
size_t otel_plan__trim(const struct otel_plan *plan, uint64_t *frames, size_t n);

#endif /* CULPERT_OTEL_H */
