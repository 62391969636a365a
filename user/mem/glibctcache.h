/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * glibc's per-thread caches (tcache) read from outside.  Each thread's
 * tcache pointer is a thread-local variable of libc, so it is found
 * through the dynamic linker's lists of threads (_rtld_global's
 * _dl_stack_used and _dl_stack_user, struct pthread being the thread
 * pointer on x86-64) and libc's static TLS offset (its link_map's
 * l_tls_offset): the layouts come from ld.so's DWARF, which Debian's
 * libc6-dbg ships with libc's.  A chunk in a tcache is free to its thread
 * and in use to its arena: malloc_info() and the arena figures do not
 * count it, these figures do, on their own.
 */
#ifndef CULPERT_GLIBCTCACHE_H
#define CULPERT_GLIBCTCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwlayout.h"
#include "glibcheap.h"
#include "glibclayout.h"

struct elfobj;
struct remotemem;

enum ld_field {
	LF_STACK_USED,		/* _rtld_global._dl_stack_used: threads with stacks glibc made */
	LF_STACK_USER,		/* _rtld_global._dl_stack_user: the main thread, user stacks */
	LF_NS_LOADED,		/* _rtld_global._dl_ns[0]._ns_loaded: the first link_map */
	LF_LIST_NEXT,		/* list_t */
	LF_LIST_PREV,
	LF_PT_LIST,		/* struct pthread: its list_t node, its tid */
	LF_PT_TID,
	LF_LM_ADDR,		/* struct link_map */
	LF_LM_NEXT,
	LF_LM_TLS_OFFSET,
	LF__MAX,
};

struct glibc_threads_layout {
	uint64_t rtld_global;		/* link-time address in ld.so */
	uint64_t rtld_size;
	struct dw_field f[LF__MAX];
};

/* from ld.so's debug file (or ld.so itself with DWARF); 0 or -ENODATA with why in err */
int glibc_threads_layout__load(struct elfobj *debug, struct glibc_threads_layout *tl, char *err,
			       size_t errlen);

/*
 * Every thread's tcache: counts and bytes into h->tcache, or h->tcache_why.
 * ld_base and libc_base are where ld.so and libc are loaded.  0, or -errno
 * when they could not be read (h->tcache_why says why).
 */
int glibc_tcache__read(struct remotemem *r, const struct glibc_layout *l,
		       const struct glibc_threads_layout *tl, uint64_t ld_base, uint64_t libc_base,
		       struct glibc_heap *h);

#endif /* CULPERT_GLIBCTCACHE_H */
