/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The allocator's own state, the third layer of the memory picture (after
 * the process's and the cgroup's): which allocator serves malloc, and what
 * it holds -- glibc's arenas read from the target's memory with libc's
 * DWARF (glibcheap.h), or the figures libculpert-sampler.so publishes for
 * jemalloc, mimalloc and glibc (samplerpage.h).  What cannot be read is
 * absent with the reason and what to do, never 0.
 */
#ifndef CULPERT_ALLOCSTATE_H
#define CULPERT_ALLOCSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glibcheap.h"
#include "samplerpage.h"

struct alloc_state {
	bool read;			/* looked at; false: no allocator section at all */
	char family[16];		/* serving malloc: glibc, jemalloc, ... custom; "" unknown */
	char provider[256];		/* its object, as the target sees it */
	char absent[320];		/* why the allocator could not be looked at, "" if it was */
	/* glibc's arenas */
	bool glibc;			/* glibc's malloc is in use (perhaps under the sampler) */
	bool glibc_read;		/* and its state was read: heap is valid */
	char glibc_absent[1024];	/* why not */
	char libc_path[256];
	char libc_build_id[129];
	char libc_debug[256];		/* the file the DWARF came from */
	char glibc_version[16];		/* "2.36", "" when unknown */
	struct glibc_heap heap;
	/* the sampler's page */
	struct sampler_stats sampler;
	char sampler_absent[320];	/* an allocator whose figures only the sampler can give */
};

struct alloc_reader_opts {
	size_t sz;
	const char *const *debug_dirs;	/* searched before /usr/lib/debug (kept by the caller) */
	size_t n_debug_dirs;
	bool no_debuginfod;		/* ignore DEBUGINFOD_URLS */
	bool no_listen;			/* never raise the sampler's allocator_stats semaphore */
	uint64_t wait_ns;		/* after raising it, wait up to this for fresh figures */
};

struct alloc_reader;

/*
 * A reader keeps what does not change between reads of one target: libc's
 * layout, found by build ID once, and the listener on the sampler's probe,
 * which stays (the figures stay fresh) until the reader is freed.  NULL
 * and errno on failure.
 */
struct alloc_reader *alloc_reader__new(const struct alloc_reader_opts *o);
void alloc_reader__free(struct alloc_reader *ar);

/*
 * The allocator state of pid into st.  0 (st->absent or the parts' absent
 * strings say what is missing), -ESRCH when the process is gone, -ENOMEM.
 */
int alloc_reader__read(struct alloc_reader *ar, pid_t pid, struct alloc_state *st);

#endif /* CULPERT_ALLOCSTATE_H */
