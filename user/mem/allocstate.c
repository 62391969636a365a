// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocator.h"
#include "allocstate.h"
#include "clock.h"
#include "debuginfo.h"
#include "elfobj.h"
#include "glibctcache.h"
#include "log.h"
#include "objcache.h"
#include "procmaps.h"
#include "remotemem.h"
#include "target.h"
#include "usdt.h"

/* how often a wait for the sampler's refresh looks at the page */
#define SAMPLER_POLL_NS 20000000ULL

/* where a layout came from: the debug file of the object with this build ID, or why none */
struct layout_src {
	char bid[129];
	int err;
	char why[1024];
	char debug[256];
};

struct alloc_reader {
	struct alloc_reader_opts o;
	struct debuginfo *di;
	struct layout_src libc;
	struct glibc_layout layout;
	/* ld.so's, for the threads' tcaches */
	struct layout_src ld;
	struct glibc_threads_layout ld_layout;
	/* a listener on the sampler's allocator_stats probe */
	int listen_fd;
	pid_t listen_pid;
	uint64_t listen_since_ns;	/* CLOCK_MONOTONIC when it started */
	/* the objects of every target read, kept: a libc's symbols are read once, not per read */
	struct objcache *objs;
};

/* past this many objects the cache starts over (targets come and go, their files too) */
#define MAX_KEPT_OBJECTS 512

struct alloc_reader *alloc_reader__new(const struct alloc_reader_opts *o)
{
	struct debuginfo_opts dio = { .sz = sizeof(dio) };
	struct alloc_reader *ar = calloc(1, sizeof(*ar));

	if (!ar)
		return NULL;
	ar->o = *o;
	ar->listen_fd = -1;
	dio.debug_dirs = o->debug_dirs;
	dio.n_debug_dirs = o->n_debug_dirs;
	dio.no_debuginfod = o->no_debuginfod;
	ar->di = debuginfo__new(&dio);
	if (!ar->di) {
		free(ar);
		return NULL;
	}
	return ar;
}

static void stop_listening(struct alloc_reader *ar)
{
	if (ar->listen_fd >= 0)
		close(ar->listen_fd);
	ar->listen_fd = -1;
	ar->listen_pid = 0;
}

void alloc_reader__free(struct alloc_reader *ar)
{
	if (!ar)
		return;
	stop_listening(ar);
	debuginfo__free(ar->di);
	objcache__free(ar->objs);
	free(ar);
}

/* link-time address 0 of the object mapped at m: ET_EXEC is where it says */
static int object_base(const struct procmaps *maps, const struct procmap *m, struct elfobj *obj,
		       uint64_t *base)
{
	uint64_t vaddr;
	size_t i;

	if (elfobj__type(obj) == ET_EXEC) {
		*base = 0;
		return 0;
	}
	for (i = 0; i < maps->n; i++) {
		const struct procmap *x = &maps->v[i];

		if (x->inode != m->inode || strcmp(x->path, m->path) || x->offset)
			continue;
		if (elfobj__offset_to_vaddr(obj, 0, &vaddr))
			return -ENOENT;
		*base = x->start - vaddr;
		return 0;
	}
	return -ENOENT;
}

/* --- glibc ---------------------------------------------------------------------------------- */

/*
 * The object's own DWARF (an unstripped build: it has the local symbol
 * `marker`), else its debug file by build ID, else debuginfod
 */
static struct elfobj *find_debug(struct alloc_reader *ar, struct elfobj *bin, const char *path,
				 const char *marker, struct search_notes *notes)
{
	const char *bid = elfobj__build_id(bin);
	struct elf_symbol s;
	struct elfobj *dbg;

	if (!elfobj__data_sym(bin, marker, &s) && s.bind == STB_LOCAL) {
		dbg = elfobj__open(elfobj__path(bin));
		if (dbg)
			return dbg;
	}
	dbg = debuginfo__find_debug(ar->di, bid, bin, path, notes);
	if (!dbg)
		dbg = debuginfo__fetch(ar->di, bid, true, notes);
	return dbg;
}

static void no_debug_info(char *why, size_t len, const char *what, const char *path,
			  const char *bid, const struct search_notes *notes, const char *purpose)
{
	snprintf(why, len, "no debug info for %s %.200s (build ID %.128s) %s: %.300s%s; "
		 "install it: apt install libc6-dbg (or set DEBUGINFOD_URLS)", what, path,
		 *bid ? bid : "none", purpose, notes->buf,
		 debuginfo__urls_set() ? "" : "; DEBUGINFOD_URLS is not set");
}

/* the debug file a layout comes from: looked for once per build ID */
static bool layout_known(const struct layout_src *src, struct elfobj *bin)
{
	return src->bid[0] && !strcmp(src->bid, elfobj__build_id(bin));
}

/* bin's debug file, or NULL with src->err and src->why set */
static struct elfobj *layout_debug(struct alloc_reader *ar, struct layout_src *src,
				   struct elfobj *bin, const char *path, const char *what,
				   const char *marker, const char *purpose)
{
	struct search_notes notes = { 0 };
	const char *bid = elfobj__build_id(bin);
	struct elfobj *dbg;

	snprintf(src->bid, sizeof(src->bid), "%s", bid);
	src->debug[0] = '\0';
	dbg = find_debug(ar, bin, path, marker, &notes);
	if (!dbg) {
		no_debug_info(src->why, sizeof(src->why), what, path, bid, &notes, purpose);
		src->err = -ENODATA;
		return NULL;
	}
	snprintf(src->debug, sizeof(src->debug), "%s", elfobj__path(dbg));
	return dbg;
}

/* the layout of this libc */
static int load_layout(struct alloc_reader *ar, struct elfobj *bin, const char *path)
{
	struct layout_src *src = &ar->libc;
	struct elfobj *dbg;

	if (layout_known(src, bin))
		return src->err;
	dbg = layout_debug(ar, src, bin, path, "libc", "main_arena",
			   "to find main_arena and mp_ in");
	if (!dbg)
		return src->err;
	src->err = glibc_layout__load(dbg, bin, &ar->layout, src->why, sizeof(src->why));
	if (!src->err)
		pr_debug("glibc layout from %s: main_arena %#llx, mp_ %#llx, malloc_state %llu "
			 "bytes\n", src->debug, (unsigned long long)ar->layout.main_arena,
			 (unsigned long long)ar->layout.mp,
			 (unsigned long long)ar->layout.size[GS_STATE]);
	elfobj__free(dbg);
	return src->err;
}

/* the layout of this ld.so */
static int load_ld_layout(struct alloc_reader *ar, struct elfobj *bin, const char *path)
{
	struct layout_src *src = &ar->ld;
	struct elfobj *dbg;

	if (layout_known(src, bin))
		return src->err;
	dbg = layout_debug(ar, src, bin, path, "ld.so", "_dl_start", "to find the threads in");
	if (!dbg)
		return src->err;
	src->err = glibc_threads_layout__load(dbg, &ar->ld_layout, src->why, sizeof(src->why));
	elfobj__free(dbg);
	return src->err;
}

/* the dynamic linker: where the threads are listed */
static const struct procmap *find_ldso(const struct procmaps *maps)
{
	size_t i;

	for (i = 0; i < maps->n; i++) {
		const char *b = strrchr(maps->v[i].path, '/');

		if (b && !strncmp(b + 1, "ld-", 3) && strstr(b, ".so") && !maps->v[i].offset)
			return &maps->v[i];
	}
	return NULL;
}

/* every thread's tcache, through ld.so's thread lists */
static void read_tcache(struct alloc_reader *ar, struct remotemem *rm, struct objcache *cache,
			uint64_t libc_base, struct alloc_state *st)
{
	struct glibc_heap *h = &st->heap;
	const struct procmap *m = find_ldso(&rm->maps);
	struct elfobj *ld = m ? objcache__get(cache, m) : NULL;
	uint64_t base;

	if (!ld || object_base(&rm->maps, m, ld, &base)) {
		snprintf(h->tcache_why, sizeof(h->tcache_why), "no dynamic linker (ld.so) in the "
			 "process: a static program's threads are not found");
		return;
	}
	if (load_ld_layout(ar, ld, m->path)) {
		snprintf(h->tcache_why, sizeof(h->tcache_why), "%.500s", ar->ld.why);
		return;
	}
	glibc_tcache__read(rm, &ar->layout, &ar->ld_layout, base, libc_base, h);
}

static void read_glibc(struct alloc_reader *ar, const struct target *t, struct remotemem *rm,
		       struct objcache *cache, struct alloc_state *st)
{
	const struct procmap *m;
	struct elfobj *bin;
	const char *fam;
	uint64_t base;
	int err;

	if (allocator__find(t, &rm->maps, cache, "glibc", &m, &bin, &fam)) {
		snprintf(st->glibc_absent, sizeof(st->glibc_absent), "no glibc in the process");
		return;
	}
	snprintf(st->libc_path, sizeof(st->libc_path), "%s", m->path);
	snprintf(st->libc_build_id, sizeof(st->libc_build_id), "%s", elfobj__build_id(bin));
	if (object_base(&rm->maps, m, bin, &base)) {
		snprintf(st->glibc_absent, sizeof(st->glibc_absent), "cannot tell where %s is loaded",
			 m->path);
		return;
	}
	if (load_layout(ar, bin, m->path)) {
		snprintf(st->glibc_absent, sizeof(st->glibc_absent), "%s", ar->libc.why);
		return;
	}
	snprintf(st->libc_debug, sizeof(st->libc_debug), "%s", ar->libc.debug);
	if (ar->layout.version_major)
		snprintf(st->glibc_version, sizeof(st->glibc_version), "%d.%d",
			 ar->layout.version_major, ar->layout.version_minor);
	err = glibc_heap__read(rm, &ar->layout, base, &st->heap);
	if (err) {
		snprintf(st->glibc_absent, sizeof(st->glibc_absent), "%s",
			 err == -ESRCH ? "the process exited while its arenas were read" :
			 st->heap.why[0] ? st->heap.why : strerror(-err));
		return;
	}
	st->glibc_read = true;
	read_tcache(ar, rm, cache, base, st);
}

/* --- the sampler ---------------------------------------------------------------------------- */

struct sampler_obj {
	const struct procmap *m;
	struct elfobj *obj;
	uint64_t site, semaphore;	/* link-time addresses of the allocator_stats probe */
};

static int find_sampler_cb(void *ctx, const struct procmap *m, struct elfobj *obj,
			   const struct usdt_site *sites, int n)
{
	struct sampler_obj *so = ctx;
	int i;

	for (i = 0; i < n; i++) {
		if (strcmp(sites[i].name, "allocator_stats"))
			continue;
		so->m = m;
		so->obj = obj;
		so->site = sites[i].pc;
		so->semaphore = sites[i].semaphore;
		return 1;
	}
	return 0;
}

/* raise the semaphore (once per reader and pid) so that the target refreshes its figures */
static void listen_sampler(struct alloc_reader *ar, const struct target *t,
			   const struct sampler_obj *so, struct sampler_stats *ss)
{
	uint64_t site_off, sem_off;
	char path[PATH_MAX];
	int fd;

	if (ar->listen_fd >= 0 && ar->listen_pid == t->pid)
		return;
	stop_listening(ar);
	if (target__object_path(t, so->m, path, sizeof(path)) ||
	    elfobj__vaddr_to_offset(so->obj, so->site, &site_off) ||
	    elfobj__vaddr_to_offset(so->obj, so->semaphore, &sem_off)) {
		snprintf(ss->note, sizeof(ss->note), "cannot locate the allocator_stats probe of %s",
			 so->m->path);
		return;
	}
	fd = sampler_listen(t->pid, path, site_off, sem_off);
	if (fd < 0) {
		snprintf(ss->note, sizeof(ss->note), "cannot listen to culpert_sampler:allocator_stats "
			 "(%s%s): the figures are as the last listener left them", strerror(-fd),
			 fd == -EACCES || fd == -EPERM ? "; needs root or CAP_PERFMON" : "");
		return;
	}
	ar->listen_fd = fd;
	ar->listen_pid = t->pid;
	ar->listen_since_ns = clock_ns(CLOCK_MONOTONIC);
}

/* read the page until it was refreshed since we started to listen, at most wait_ns */
static void wait_fresh(struct alloc_reader *ar, struct remotemem *rm, uint64_t addr,
		       struct sampler_stats *ss)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + ar->o.wait_ns;
	struct timespec ts = { 0, (long)SAMPLER_POLL_NS };

	for (;;) {
		ss->fresh = ss->has_figures && ss->s.refreshed_ns >= ar->listen_since_ns;
		if (ss->fresh || clock_ns(CLOCK_MONOTONIC) >= deadline)
			return;
		nanosleep(&ts, NULL);
		if (sampler_page__read(rm, addr, ss))
			return;
	}
}

static void stale_note(const struct alloc_reader *ar, struct sampler_stats *ss)
{
	const char *why = !ss->listened ? "nothing listened to culpert_sampler:allocator_stats" :
			  !ar->o.wait_ns ? "the read did not wait for a refresh" :
			  "no sampled allocation came while culpert-bpf listened";

	if (ss->note[0] || ss->fresh)
		return;
	if (!ss->has_figures)
		snprintf(ss->note, sizeof(ss->note), "no allocator figures yet: the sampler refreshes "
			 "them on a sampled allocation while someone listens; %s", why);
	else
		snprintf(ss->note, sizeof(ss->note), "the figures are %.1f s old: %s",
			 ss->age_ns / 1e9, why);
}

static void read_sampler(struct alloc_reader *ar, const struct target *t, struct remotemem *rm,
			 struct objcache *cache, struct alloc_state *st)
{
	struct sampler_stats *ss = &st->sampler;
	struct sampler_obj so = { 0 };
	struct elf_symbol page;
	uint64_t base;

	if (usdt_objects(&rm->maps, cache, "culpert_sampler", find_sampler_cb, &so) <= 0 || !so.m)
		return;
	snprintf(ss->path, sizeof(ss->path), "%s", so.m->path);
	if (elfobj__data_sym(so.obj, "culpert_sampler_page", &page) ||
	    object_base(&rm->maps, so.m, so.obj, &base) ||
	    sampler_page__read(rm, base + page.value, ss)) {
		snprintf(ss->note, sizeof(ss->note), "%s is loaded but its page cannot be read "
			 "(another version of the sampler?)", so.m->path);
		ss->present = false;
		return;
	}
	if (!ar->o.no_listen) {
		listen_sampler(ar, t, &so, ss);
		ss->listened = ar->listen_fd >= 0;
	}
	if (ss->listened)
		wait_fresh(ar, rm, base + page.value, ss);
	stale_note(ar, ss);
}

/* --- the whole state --------------------------------------------------------------------- */

/* what to say when the allocator in use keeps its figures to itself */
static void other_allocator(struct alloc_state *st)
{
	char *why = st->sampler_absent;
	size_t len = sizeof(st->sampler_absent);

	if (st->sampler.present || !strcmp(st->family, "glibc"))
		return;
	if (!strcmp(st->family, "jemalloc") || !strcmp(st->family, "mimalloc"))
		snprintf(why, len, "%s serves malloc and its statistics are computed in the process: "
			 "preload libculpert-sampler.so ahead of it to publish them (docs/sampler.md)",
			 st->family);
	else if (!strcmp(st->family, "custom"))
		snprintf(why, len, "the program's own allocator serves malloc (%.200s): its state is not "
			 "read", st->provider);
	else
		snprintf(why, len, "%s serves malloc: its state is not read (only glibc's arenas are, "
			 "and the figures libculpert-sampler.so publishes for jemalloc and mimalloc)",
			 st->family[0] ? st->family : "an allocator culpert-bpf does not know");
}

static void read_all(struct alloc_reader *ar, const struct target *t, struct remotemem *rm,
		     struct alloc_state *st)
{
	struct objcache *cache;
	const struct procmap *m;
	struct elfobj *obj;
	const char *fam;

	if (ar->objs && objcache__size(ar->objs) > MAX_KEPT_OBJECTS) {
		objcache__free(ar->objs);
		ar->objs = NULL;
	}
	if (!ar->objs)
		ar->objs = objcache__new(t);
	cache = ar->objs;
	if (cache)
		objcache__retarget(cache, t);
	if (!cache) {
		snprintf(st->absent, sizeof(st->absent), "out of memory");
		return;
	}
	if (!allocator__find(t, &rm->maps, cache, NULL, &m, &obj, &fam)) {
		snprintf(st->family, sizeof(st->family), "%s", fam);
		snprintf(st->provider, sizeof(st->provider), "%s", m->path);
	}
	read_sampler(ar, t, rm, cache, st);
	/* under the sampler, the allocator it wraps is the one its page names */
	if (st->sampler.present && st->sampler.allocator != CULPERT_SAMPLER_ALLOC_UNKNOWN)
		snprintf(st->family, sizeof(st->family), "%s",
			 sampler_allocator_name(st->sampler.allocator));
	st->glibc = !strcmp(st->family, "glibc");
	if (st->glibc)
		read_glibc(ar, t, rm, cache, st);
	other_allocator(st);
}

int alloc_reader__read(struct alloc_reader *ar, pid_t pid, struct alloc_state *st)
{
	struct remotemem rm;
	struct target t;
	char err[512];
	int ret;

	memset(st, 0, offsetof(struct alloc_state, heap));
	memset(&st->sampler, 0, sizeof(*st) - offsetof(struct alloc_state, sampler));
	st->read = true;
	ret = target__open(pid, &t, err, sizeof(err));
	if (ret) {
		snprintf(st->absent, sizeof(st->absent), "%.300s", err);
		return ret == -ENOMEM ? ret : -ESRCH;
	}
	ret = remotemem__open(&rm, t.pid);
	if (ret) {
		snprintf(st->absent, sizeof(st->absent), "cannot read the mappings of pid %d: %s",
			 (int)pid, strerror(-ret));
		target__close(&t);
		return ret == -ESRCH || ret == -ENOMEM ? ret : 0;
	}
	read_all(ar, &t, &rm, st);
	remotemem__close(&rm);
	ret = target__alive(&t) ? 0 : -ESRCH;
	target__close(&t);
	return ret;
}
