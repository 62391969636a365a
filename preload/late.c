// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Taking over late: the library dlopen'd into a running process, the
 * process's GOT slots of the allocator pointed at the entry points, and
 * written back on release (docs/sampler.md, "Taken over late").
 *
 * Objects opened later are patched when their dlopen returns: dlopen and
 * dlmopen are slots of the table too.  The hook opens as its caller would
 * have: a bare name goes through the caller's own search path (its
 * RUNPATH, its RPATHs) and the caller's namespace, which glibc would
 * otherwise take from the hook's return address, ours.
 *
 * The lock serialises takeover, release and the patching of new objects.
 * takeover and release take it from a thread that holds no loader lock;
 * a dlopen hook may run inside another dlopen (a constructor opening a
 * library), holding the loader's lock, so it only tries the lock and, when
 * busy, leaves a rescan to whoever holds it.  The functions that hold it
 * (takeover, release, the hooks, unlock, got_patch) are named in the
 * injector (user/target/inject.c), which borrows no thread inside them.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <culpert/sampler.h>
#include "got.h"
#include "sampler_internal.h"

/* the entry points of wrap.c, dlopen and dlmopen */
#define MAX_TARGETS	48

static pthread_mutex_t late_lock = PTHREAD_MUTEX_INITIALIZER;
static int taken;
static int rescan;
static struct got_target targets[MAX_TARGETS];
static size_t ntargets;
/* inside the objects not to patch: this library, the allocator's */
static uintptr_t skip[2];

static void *(*real_dlopen)(const char *, int);
static void *(*real_dlmopen)(Lmid_t, const char *, int);

/* --- opening as the caller would have --- */

/* a regular file of our ELF class: what the loader would take from a search directory */
static int elf_ok(const char *path)
{
	unsigned char id[EI_NIDENT];
	int fd = open(path, O_RDONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return 0;
	ok = read(fd, id, sizeof(id)) == (ssize_t)sizeof(id) && !memcmp(id, ELFMAG, SELFMAG) &&
	     id[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32);
	close(fd);
	return ok;
}

/*
 * $ORIGIN in a name dlopen is given is the caller's directory; glibc
 * would take ours.  The main program's l_name is empty: its directory is
 * /proc/self/exe's, as glibc finds it.  NULL: no $ORIGIN, or no room.
 */
static const char *expand_origin(const struct link_map *caller, const char *file, char *out,
				 size_t size)
{
	char dir[4096];
	const char *at, *name = caller->l_name;
	size_t len, used = 0;
	ssize_t n;

	if (!strstr(file, "$ORIGIN") && !strstr(file, "${ORIGIN}"))
		return NULL;
	if (name && *name) {
		len = strlen(name);
		if (len >= sizeof(dir))
			return NULL;
		memcpy(dir, name, len + 1);
	} else {
		n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
		if (n <= 0)
			return NULL;
		dir[n] = '\0';
	}
	at = strrchr(dir, '/');
	if (!at)
		return NULL;
	dir[at - dir] = '\0';
	len = strlen(dir);
	while (*file) {
		size_t cut = !strncmp(file, "$ORIGIN", 7) ? 7 : !strncmp(file, "${ORIGIN}", 9) ? 9 : 0;
		const char *piece = cut ? dir : file;
		size_t plen = cut ? len : 1;

		if (used + plen >= size)
			return NULL;
		memcpy(out + used, piece, plen);
		used += plen;
		file += cut ?: 1;
	}
	out[used] = '\0';
	return out;
}

static struct link_map *map_of(const void *addr)
{
	struct link_map *lm = NULL;
	Dl_info di;

	return dladdr1(addr, &di, (void **)&lm, RTLD_DL_LINKMAP) ? lm : NULL;
}

/* the search list of an object; NULL when it does not fit `buf` */
static Dl_serinfo *search_list(struct link_map *map, char *buf, size_t size)
{
	Dl_serinfo sz, *si = (Dl_serinfo *)buf;

	if (dlinfo(map, RTLD_DI_SERINFOSIZE, &sz) || sz.dls_size > size)
		return NULL;
	si->dls_size = sz.dls_size;
	si->dls_cnt = sz.dls_cnt;
	return dlinfo(map, RTLD_DI_SERINFO, si) ? NULL : si;
}

static int listed(const Dl_serinfo *si, const char *dir)
{
	unsigned int i;

	for (i = 0; i < si->dls_cnt; i++)
		if (!strcmp(si->dls_serpath[i].dls_name, dir))
			return 1;
	return 0;
}

/*
 * The path glibc would have found `file` at for a dlopen by `caller`, if
 * that differs from what it finds for a dlopen by this library: the
 * directories only the caller searches (its RUNPATH or RPATHs) and those
 * it searches before them, in its order.  The ld.so cache and the system
 * directories come after all of these for both.
 */
static const char *resolve_as(struct link_map *caller, const char *file, char *path, size_t size)
{
	char mine_buf[2048], theirs_buf[4096];
	const Dl_serinfo *mine, *theirs;
	unsigned int i, last = 0;

	if (!caller || !file)
		return file;
	if (strchr(file, '/'))
		return expand_origin(caller, file, path, size) ?: file;
	/*
	 * An object of that name already loaded is what dlopen returns, by
	 * name.  Not asked with RTLD_NOLOAD: its failure would leave an error
	 * that dlerror() formats with the process's allocator, calls the
	 * process did not make.
	 */
	if (got_loaded(file))
		return file;
	mine = search_list(map_of((const void *)resolve_as), mine_buf, sizeof(mine_buf));
	theirs = search_list(caller, theirs_buf, sizeof(theirs_buf));
	if (!mine || !theirs)
		return file;
	for (i = 0; i < theirs->dls_cnt; i++)
		if (!listed(mine, theirs->dls_serpath[i].dls_name))
			last = i + 1;
	for (i = 0; i < last; i++) {
		int n = snprintf(path, size, "%s/%s", theirs->dls_serpath[i].dls_name, file);

		if (n > 0 && (size_t)n < size && elf_ok(path))
			return path;
	}
	return file;
}

static void patch_new_objects(void);

static void *open_as(const void *ret, int explicit_ns, Lmid_t ns, const char *file, int mode)
{
	struct link_map *caller = map_of(ret);
	char path[4096];
	void *h;

	if (!explicit_ns && (!caller || dlinfo(caller, RTLD_DI_LMID, &ns)))
		ns = LM_ID_BASE;
	file = resolve_as(caller, file, path, sizeof(path));
	h = ns == LM_ID_BASE && !explicit_ns ? real_dlopen(file, mode) : real_dlmopen(ns, file, mode);
	if (h)
		patch_new_objects();
	return h;
}

static __attribute__((noinline)) void *hook_dlopen(const char *file, int mode)
{
	return open_as(__builtin_return_address(0), 0, LM_ID_BASE, file, mode);
}

static __attribute__((noinline)) void *hook_dlmopen(Lmid_t ns, const char *file, int mode)
{
	return open_as(__builtin_return_address(0), 1, ns, file, mode);
}

/* --- takeover and release --- */

/* operator new/delete the process uses are the C++ runtime's, over malloc, or the allocator's */
static int cxx_over_malloc(void *real)
{
	Dl_info di;

	if (!dladdr(real, &di))
		return 0;
	if (di.dli_fbase == sampler_allocator_base())
		return 1;
	return di.dli_fname && (strstr(di.dli_fname, "/libstdc++.so") || strstr(di.dli_fname, "/libc++.so"));
}

static void add_target(const char *name, void *real, void *wrapper)
{
	if (real && ntargets < MAX_TARGETS)
		targets[ntargets++] = (struct got_target){ name, real, wrapper };
}

/*
 * What each slot is bound to now.  A program's own operator new (a pool)
 * is not malloc's heap: its blocks must never reach our delete, so the
 * C++ family is taken over only when it is the runtime's or the
 * allocator's own.
 */
static int build_targets(void)
{
	size_t i;

	real_dlopen = (void *(*)(const char *, int))sampler_sym("dlopen");
	real_dlmopen = (void *(*)(Lmid_t, const char *, int))sampler_sym("dlmopen");
	if (!real_dlopen || !real_dlmopen)
		return -ENOENT;
	for (i = 0; i < sampler_n_entries; i++) {
		const struct sampler_entry *e = &sampler_entries[i];
		void *real = sampler_sym(e->name);

		if (real && e->cxx && !cxx_over_malloc(real))
			continue;
		add_target(e->name, real, e->fn);
	}
	add_target("dlopen", (void *)real_dlopen, (void *)hook_dlopen);
	add_target("dlmopen", (void *)real_dlmopen, (void *)hook_dlmopen);
	skip[0] = (uintptr_t)build_targets;
	skip[1] = (uintptr_t)sampler_next.malloc;
	return 0;
}

static int patch_all(void)
{
	struct got_stats st;

	return got_patch(targets, ntargets, skip, 2, &st);
}

/* unlock; then do the rescans a dlopen hook asked for while we held the lock */
static void unlock(void)
{
	for (;;) {
		pthread_mutex_unlock(&late_lock);
		if (!__atomic_load_n(&rescan, __ATOMIC_SEQ_CST) || pthread_mutex_trylock(&late_lock))
			return;
		__atomic_store_n(&rescan, 0, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&taken, __ATOMIC_RELAXED))
			patch_all();
	}
}

static void patch_new_objects(void)
{
	if (!__atomic_load_n(&taken, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&rescan, 1, __ATOMIC_SEQ_CST);
	if (pthread_mutex_trylock(&late_lock))
		return;
	__atomic_store_n(&rescan, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&taken, __ATOMIC_RELAXED))
		patch_all();
	unlock();
}

/* a fork child has one thread: a lock another thread of the parent held is free */
void late_child_after_fork(void)
{
	pthread_mutex_init(&late_lock, NULL);
	rescan = 0;
}

SAMPLER_EXPORT int culpert_sampler_takeover(unsigned long rate_bytes)
{
	struct got_stats st;
	int err = 0;

	/* interposing from the start: nothing to rewrite, only the rate to set */
	if (!sampler_is_late()) {
		if (rate_bytes)
			sampler_configure(rate_bytes);
		return 0;
	}
	pthread_mutex_lock(&late_lock);
	if (__atomic_load_n(&taken, __ATOMIC_RELAXED))
		goto out;
	err = sampler_boot_late();
	if (!err && !ntargets)
		err = build_targets();
	if (err)
		goto out;
	sampler_configure(rate_bytes);
	/* what a previous takeover sampled is not the new profiler's to see freed */
	liveset_clear();
	__atomic_store_n(&taken, 1, __ATOMIC_SEQ_CST);
	err = patch_all();
	if (err) {
		/* all or nothing: a slot we could not write means a page we cannot trust */
		__atomic_store_n(&taken, 0, __ATOMIC_SEQ_CST);
		got_restore(targets, ntargets, &st);
	}
out:
	unlock();
	return err;
}

SAMPLER_EXPORT int culpert_sampler_release(void)
{
	struct got_stats st;
	int err = 0;

	/* preloaded or linked: interposition cannot be written back */
	if (!sampler_is_late())
		return -EOPNOTSUPP;
	pthread_mutex_lock(&late_lock);
	if (__atomic_load_n(&taken, __ATOMIC_RELAXED)) {
		__atomic_store_n(&taken, 0, __ATOMIC_SEQ_CST);
		err = got_restore(targets, ntargets, &st);
		/* calls still under way may add a pointer or two: harmless, see liveset_clear */
		liveset_clear();
	}
	unlock();
	return err;
}

SAMPLER_EXPORT int culpert_sampler_state(void)
{
	return !sampler_is_late() || __atomic_load_n(&taken, __ATOMIC_RELAXED);
}
