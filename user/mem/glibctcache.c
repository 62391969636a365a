// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * x86-64 and arm64 differ in where a module's static TLS block sits from
 * the thread pointer: variant II (x86-64) puts it below, at tp -
 * l_tls_offset, and struct pthread is what tp points at.  Only variant II
 * is read here; arm64 (variant I) says it does not.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "elfobj.h"
#include "glibctcache.h"
#include "remotemem.h"

/* threads followed at most in each list */
#define MAX_THREADS	65536
/* link_maps followed at most to find libc's */
#define MAX_OBJECTS	4096
/* reads of all the caches before they are given as approximate */
#define TCACHE_TRIES	4
/* l_tls_offset values that mean "no static TLS" (NO_TLS_OFFSET, FORCED_DYNAMIC_TLS_OFFSET) */
#define NO_TLS_OFFSET	0
#define FORCED_DYNAMIC	((uint64_t)-2)
/* largest struct tcache_perthread_struct read (640 bytes in 2.36) */
#define MAX_TCACHE_SIZE	4096

static const struct {
	const char *path;	/* in its struct */
	int st;			/* 0 rtld_global, 1 list_t, 2 struct pthread, 3 struct link_map */
} ld_fields[LF__MAX] = {
	[LF_STACK_USED] = { "_dl_stack_used", 0 },
	[LF_STACK_USER] = { "_dl_stack_user", 0 },
	[LF_NS_LOADED] = { "_dl_ns._ns_loaded", 0 },
	[LF_LIST_NEXT] = { "next", 1 },
	[LF_LIST_PREV] = { "prev", 1 },
	[LF_PT_LIST] = { "list", 2 },
	[LF_PT_TID] = { "tid", 2 },
	[LF_LM_ADDR] = { "l_addr", 3 },
	[LF_LM_NEXT] = { "l_next", 3 },
	[LF_LM_TLS_OFFSET] = { "l_tls_offset", 3 },
};

static int load_ld_types(struct dwlayout *dl, struct glibc_threads_layout *tl, char *err,
			 size_t errlen)
{
	static const char *const types[] = { NULL, "list_t", "pthread", "link_map" };
	Dwarf_Die t[4];
	size_t i;
	int st;

	if (dwlayout__var_type(dl, "_rtld_global", &t[0]) || dw_type_size(&t[0], &tl->rtld_size)) {
		snprintf(err, errlen, "no struct rtld_global in the DWARF of ld.so");
		return -ENODATA;
	}
	for (st = 1; st < 4; st++) {
		if (dwlayout__type(dl, types[st], &t[st])) {
			snprintf(err, errlen, "no %s in the DWARF of ld.so", types[st]);
			return -ENODATA;
		}
	}
	for (i = 0; i < LF__MAX; i++) {
		struct dw_field *f = &tl->f[i];

		if (dw_type_field(&t[ld_fields[i].st], ld_fields[i].path, f) ||
		    (f->size != 8 && !(i == LF_PT_TID && f->size == 4) && i != LF_STACK_USED &&
		     i != LF_STACK_USER && i != LF_PT_LIST)) {
			snprintf(err, errlen, "the DWARF of ld.so has no usable %s",
				 ld_fields[i].path);
			return -ENODATA;
		}
	}
	return 0;
}

int glibc_threads_layout__load(struct elfobj *debug, struct glibc_threads_layout *tl, char *err,
			       size_t errlen)
{
	struct elf_symbol s;
	struct dwlayout *dl;
	int ret;

	memset(tl, 0, sizeof(*tl));
	if (elfobj__data_sym(debug, "_rtld_global", &s) || !s.value) {
		snprintf(err, errlen, "no symbol _rtld_global in %s", elfobj__path(debug));
		return -ENODATA;
	}
	tl->rtld_global = s.value;
	dl = dwlayout__new(elfobj__elf(debug));
	if (!dl) {
		snprintf(err, errlen, "%s has no DWARF", elfobj__path(debug));
		return -ENODATA;
	}
	ret = load_ld_types(dl, tl, err, errlen);
	dwlayout__free(dl);
	return ret;
}

/* --- reading ----------------------------------------------------------------------------- */

struct tc_walk {
	struct remotemem *r;
	const struct glibc_layout *l;
	const struct glibc_threads_layout *tl;
	const struct glibc_heap *h;
	struct glibc_tcache_totals t;
	char why[256];
	bool bad;
};

static void __attribute__((format(printf, 2, 3))) tc_bad(struct tc_walk *w, const char *fmt, ...)
{
	va_list ap;

	if (w->bad)
		return;
	w->bad = true;
	va_start(ap, fmt);
	vsnprintf(w->why, sizeof(w->why), fmt, ap);
	va_end(ap);
}

static int read_u64(struct remotemem *r, uint64_t addr, uint64_t *v)
{
	return remotemem__read(r, addr, v, sizeof(*v));
}

/* libc's static TLS offset, from its link_map (the one loaded at libc_base) */
static int libc_tls_offset(struct remotemem *r, const struct glibc_threads_layout *tl,
			   uint64_t rtld, uint64_t libc_base, uint64_t *off)
{
	uint64_t lm, addr;
	int i;

	if (read_u64(r, rtld + tl->f[LF_NS_LOADED].offset, &lm))
		return -EFAULT;
	for (i = 0; lm && i < MAX_OBJECTS; i++) {
		if (read_u64(r, lm + tl->f[LF_LM_ADDR].offset, &addr))
			return -EFAULT;
		if (addr == libc_base)
			return read_u64(r, lm + tl->f[LF_LM_TLS_OFFSET].offset, off) ? -EFAULT : 0;
		if (read_u64(r, lm + tl->f[LF_LM_NEXT].offset, &lm))
			return -EFAULT;
	}
	return -ENOENT;
}

/* the chunks of one thread's tcache: the counts, checked against the lists they count */
static void read_cache(struct tc_walk *w, uint64_t tc)
{
	const struct glibc_layout *l = w->l;
	unsigned char buf[MAX_TCACHE_SIZE];
	size_t n = l->size[GS_TCACHE], i;
	uint64_t next_off = l->f[GF_TE_NEXT].offset;

	if (!n || n > sizeof(buf) || !remotemem__is_heap(w->r, tc, n) ||
	    remotemem__read_cached(w->r, tc, buf, n)) {
		tc_bad(w, "a tcache at %#llx is not in the heap", (unsigned long long)tc);
		return;
	}
	for (i = 0; i < l->f[GF_TC_COUNTS].count && !w->bad; i++) {
		uint64_t count = glibc_get(l, GF_TC_COUNTS, buf, i), k, e, v;

		if (w->h->tcache_count && count > w->h->tcache_count) {
			tc_bad(w, "a tcache bin holds %llu chunks, more than tcache_count",
			       (unsigned long long)count);
			return;
		}
		/* entries point at the chunk's user memory; next is PROTECT_PTR'd */
		for (k = 0, e = glibc_get(l, GF_TC_ENTRIES, buf, i); k < count; k++) {
			if (e % l->align || !remotemem__is_heap(w->r, e, next_off + 8) ||
			    remotemem__read_cached(w->r, e + next_off, &v, sizeof(v))) {
				tc_bad(w, "tcache bin %zu: entry %#llx is not in the heap", i,
				       (unsigned long long)e);
				return;
			}
			e = l->safe_linking ? ((e + next_off) >> 12) ^ v : v;
		}
		if (e) {
			tc_bad(w, "tcache bin %zu: the list is longer than its count", i);
			return;
		}
		w->t.chunks += count;
		/* tidx2usize(i) + SIZE_SZ: bin i holds chunks of i * MALLOC_ALIGNMENT + MINSIZE */
		w->t.bytes += count * (i * l->align + l->min_chunk);
	}
}

/* each thread of one list of ld.so's (a list_t of struct pthread) */
static void read_list(struct tc_walk *w, uint64_t head, uint64_t tls_off)
{
	const struct glibc_threads_layout *tl = w->tl;
	uint64_t prev = head, node, back, tc;
	int i;

	if (read_u64(w->r, head + tl->f[LF_LIST_NEXT].offset, &node)) {
		tc_bad(w, "the thread list cannot be read");
		return;
	}
	for (i = 0; node != head && !w->bad; i++) {
		uint64_t self = node - tl->f[LF_PT_LIST].offset;

		if (i == MAX_THREADS || read_u64(w->r, node + tl->f[LF_LIST_PREV].offset, &back) ||
		    back != prev) {
			tc_bad(w, "the thread list changed while it was read");
			return;
		}
		w->t.threads++;
		if (read_u64(w->r, self - tls_off + w->l->tcache_tls, &tc)) {
			tc_bad(w, "a thread's TLS at %#llx cannot be read",
			       (unsigned long long)(self - tls_off));
			return;
		}
		/* 0: the thread has not allocated yet, or is exiting (tcache_thread_shutdown) */
		if (tc)
			read_cache(w, tc);
		prev = node;
		if (read_u64(w->r, node + tl->f[LF_LIST_NEXT].offset, &node))
			tc_bad(w, "the thread list cannot be read");
	}
}

int glibc_tcache__read(struct remotemem *r, const struct glibc_layout *l,
		       const struct glibc_threads_layout *tl, uint64_t ld_base, uint64_t libc_base,
		       struct glibc_heap *h)
{
	struct tc_walk w = { .r = r, .l = l, .tl = tl, .h = h };
	uint64_t rtld = ld_base + tl->rtld_global, tls_off = 0;
	uint32_t t;
	int err;

#if !defined(__x86_64__)
	snprintf(h->tcache_why, sizeof(h->tcache_why), "read on x86-64 only (TLS variant II)");
	return -EOPNOTSUPP;
#endif
	if (!l->has_tcache_tls || !glibc_has(l, GF_TC_COUNTS) || !glibc_has(l, GF_TC_ENTRIES) ||
	    !glibc_has(l, GF_TE_NEXT)) {
		snprintf(h->tcache_why, sizeof(h->tcache_why), "this glibc has no tcache");
		return -ENODATA;
	}
	err = libc_tls_offset(r, tl, rtld, libc_base, &tls_off);
	if (err || tls_off == NO_TLS_OFFSET || tls_off >= FORCED_DYNAMIC) {
		snprintf(h->tcache_why, sizeof(h->tcache_why), "libc's static TLS block not found "
			 "through ld.so's link_maps");
		return err ?: -ENOENT;
	}
	for (t = 1; t <= TCACHE_TRIES; t++) {
		memset(&w.t, 0, sizeof(w.t));
		w.bad = false;
		remotemem__drop_cache(r);
		read_list(&w, rtld + tl->f[LF_STACK_USER].offset, tls_off);
		if (!w.bad)
			read_list(&w, rtld + tl->f[LF_STACK_USED].offset, tls_off);
		if (!w.bad)
			break;
	}
	w.t.present = true;
	w.t.consistent = !w.bad;
	w.t.tries = t > TCACHE_TRIES ? TCACHE_TRIES : t;
	h->tcache = w.t;
	if (w.bad)
		snprintf(h->tcache_why, sizeof(h->tcache_why), "%s", w.why);
	return 0;
}
