// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Injection (docs/inject.md): what the target must offer (a glibc dynamic
 * loader, ptrace allowed), where its code is (dlopen, the gadgets), which
 * thread may run it (the safe point), and the calls themselves.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <dlfcn.h>

#include "clock.h"
#include "elfobj.h"
#include "hijack.h"
#include "inject.h"
#include "log.h"
#include "objcache.h"
#include "procmaps.h"
#include "readfile.h"
#include "target.h"

/* how long to look for a safe point, and how long one call may run */
#define INJECT_SAFE_POINT_NS	(2000ULL * 1000 * 1000)
#define INJECT_CALL_NS		(5000ULL * 1000 * 1000)
/* the stack above a stopped thread's pointer searched for return addresses */
#define INJECT_STACK_SCAN	(32 << 10)
/* code page layout: the strings the calls take, after the code */
#define OFF_NAME		64
#define OFF_PATH		128
#define OFF_SYM			192

struct range {
	uint64_t lo, hi;
};

struct inject_ctx {
	const struct target *t;
	struct objcache *objs;
	struct procmaps maps;
	struct hijack_gadgets g;
	uint64_t dlopen, dlsym, dlerror;
	struct range libc_text;
	struct range sampler_text;	/* a library loaded before: no thread stopped inside */
	struct range *avoid;	/* no thread whose stack returns into these runs our calls */
	size_t n_avoid, cap_avoid;
	struct inject_stats *st;
	/* CLOCK_MONOTONIC, 0: none: no thread stopped nor a call waited for after it */
	uint64_t deadline_ns;
	char *err;
	size_t errlen;
};

/*
 * Functions that hold a lock dlopen or the library's takeover may need:
 * the allocator (its arena locks), the loader's entry points (the
 * loader lock), thread creation and fork (the stack and atfork locks).
 */
static const char *const lock_holders[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign",
	"aligned_alloc", "valloc", "pvalloc", "malloc_trim", "malloc_info", "malloc_stats",
	"mallinfo", "mallinfo2", "dlopen", "dlmopen", "dlclose", "dlsym", "dlvsym", "dladdr",
	"dladdr1", "dlinfo", "dl_iterate_phdr", "pthread_create", "pthread_join", "fork", "_Fork",
	"exit", "__cxa_thread_atexit_impl", "_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm",
	"_ZdaPvm",
};

/*
 * In a library an earlier injection left dormant, only the functions that
 * take its lock (preload/late.c) keep a thread from being borrowed: its
 * allocation wrappers are lock-free, and the addresses they leave on a
 * stack long after would otherwise pass over every thread for good.
 */
static const char *const sampler_lock_holders[] = {
	"culpert_sampler_takeover", "culpert_sampler_release", "hook_dlopen", "hook_dlmopen",
	"unlock", "got_patch",
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool is_glibc(const char *path)
{
	return !strncmp(base_name(path), "libc.so.6", 9);
}

/* ld-musl-ARCH.so.1 is a link to musl's libc.so (Debian: /usr/lib/ARCH-linux-musl/libc.so) */
static bool is_musl(const char *path)
{
	return !strncmp(base_name(path), "ld-musl-", 8) || strstr(path, "-linux-musl/");
}

static bool is_loader(const char *path)
{
	return !strncmp(base_name(path), "ld-linux", 8);
}

const char *inject__mapped(const struct procmaps *maps)
{
	size_t i;

	for (i = 0; i < maps->n; i++) {
		const char *p = maps->v[i].path;

		if (maps->v[i].executable && strstr(p, "libculpert-sampler"))
			return p;
	}
	return NULL;
}

static const struct procmap *find_exec(const struct procmaps *maps, bool (*pred)(const char *))
{
	size_t i;

	for (i = 0; i < maps->n; i++)
		if (maps->v[i].executable && procmap__is_file(&maps->v[i]) && pred(maps->v[i].path))
			return &maps->v[i];
	return NULL;
}

static bool is_sampler(const char *path)
{
	return strstr(path, "libculpert-sampler") != NULL;
}

/* a symbol's address in the target: through the mapping of its file that holds it */
static uint64_t runtime_addr(const struct procmaps *maps, const struct procmap *m,
			     const struct elfobj *obj, uint64_t vaddr)
{
	uint64_t off;
	size_t i;

	if (elfobj__vaddr_to_offset(obj, vaddr, &off))
		return 0;
	for (i = 0; i < maps->n; i++) {
		const struct procmap *o = &maps->v[i];

		if (o->inode == m->inode && o->dev_major == m->dev_major &&
		    o->dev_minor == m->dev_minor && !strcmp(o->path, m->path) &&
		    off >= o->offset && off < o->offset + (o->end - o->start))
			return o->start + off - o->offset;
	}
	return 0;
}

static uint64_t sym_addr(struct inject_ctx *c, const struct procmap *m, const char *name,
			 uint64_t *size)
{
	struct elfobj *obj = objcache__get(c->objs, m);
	const struct elf_symbol *s = obj ? elfobj__sym_by_name(obj, name) : NULL;

	if (!s)
		return 0;
	if (size)
		*size = s->size;
	return runtime_addr(&c->maps, m, obj, s->value);
}

static int fail(struct inject_ctx *c, int ret, const char *fmt, const char *arg)
{
	snprintf(c->err, c->errlen, fmt, arg);
	return ret;
}

static int read_status(pid_t pid, char **text)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return read_file_at(AT_FDCWD, path, text, NULL);
}

static long status_field(const char *text, const char *field)
{
	const char *p = strstr(text, field);

	return p ? strtol(p + strlen(field), NULL, 10) : -1;
}

/* YAMA: 3 forbids ptrace to everyone, 2 to all but CAP_SYS_PTRACE (docs/inject.md) */
static int check_yama(char *why, size_t len)
{
	char *text;
	long scope;

	if (read_file_at(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope", &text, NULL))
		return 0;
	scope = strtol(text, NULL, 10);
	free(text);
	if (scope < 2 || (scope == 2 && !access("/proc/self/status", R_OK) && geteuid() == 0))
		return 0;
	snprintf(why, len, "YAMA's kernel.yama.ptrace_scope is %ld: ptrace is %s", scope,
		 scope == 3 ? "disabled until reboot" : "reserved to CAP_SYS_PTRACE");
	return -EPERM;
}

/*
 * Another tracer (gdb, strace) holds it; a seccomp filter might kill or
 * refuse the syscalls we run in it (mmap, mprotect, memfd_create, openat
 * of /proc/self/fd): a filter's verdicts cannot be read without running
 * it, so any filter is a refusal; a process that asked not to be dumped
 * (PR_SET_DUMPABLE 0, owner of its /proc files root) asked not to be
 * looked into.
 */
static int check_status(const struct target *t, char *why, size_t len)
{
	struct stat sb;
	char path[64], *text;
	long tracer, seccomp, uid;
	int ret;

	ret = read_status(t->pid, &text);
	if (ret) {
		snprintf(why, len, "cannot read /proc/%d/status: %s", (int)t->pid, strerror(-ret));
		return ret;
	}
	tracer = status_field(text, "\nTracerPid:");
	seccomp = status_field(text, "\nSeccomp:");
	uid = status_field(text, "\nUid:");
	free(text);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	if (tracer > 0) {
		snprintf(why, len, "pid %d is traced by pid %ld already (a debugger or strace): one "
			 "tracer at a time", (int)t->pid, tracer);
		return -EBUSY;
	}
	if (seccomp == 2) {
		snprintf(why, len, "pid %d runs under a seccomp filter, which may kill or refuse the "
			 "syscalls injection makes (mmap, memfd_create, openat); its verdicts cannot be "
			 "checked beforehand", (int)t->pid);
		return -EPERM;
	}
	if (uid > 0 && !stat(path, &sb) && sb.st_uid == 0) {
		snprintf(why, len, "pid %d is not dumpable (prctl PR_SET_DUMPABLE 0, or a set-id "
			 "program): it asked not to be looked into", (int)t->pid);
		return -EPERM;
	}
	return 0;
}

/* a dynamic glibc process: musl's or a static (or Go) program's cannot dlopen our library */
static int check_loader(const struct target *t, const struct procmaps *maps, char *why,
			size_t len)
{
	const struct procmap *m = find_exec(maps, is_musl);

	if (m) {
		snprintf(why, len, "pid %d runs on musl (%s): libculpert-sampler.so is built for "
			 "glibc", (int)t->pid, m->path);
		return -ENOEXEC;
	}
	if (!find_exec(maps, is_glibc) || !find_exec(maps, is_loader)) {
		snprintf(why, len, "pid %d has no glibc dynamic loader mapped (a static program, or "
			 "Go without cgo): nothing in it can load a library", (int)t->pid);
		return -ENOEXEC;
	}
	return 0;
}

int inject__check(const struct target *t, const struct procmaps *maps, struct objcache *objs,
		  char *why, size_t len)
{
	const struct procmap *libc;
	struct elfobj *obj;
	int ret;

#ifndef __x86_64__
	snprintf(why, len, "injection is implemented for x86-64 only");
	return -EOPNOTSUPP;
#endif
	ret = check_yama(why, len);
	if (!ret)
		ret = check_status(t, why, len);
	if (!ret)
		ret = check_loader(t, maps, why, len);
	if (ret)
		return ret;
	libc = find_exec(maps, is_glibc);
	obj = objcache__get(objs, libc);
	if (!obj || !elfobj__sym_by_name(obj, "dlopen")) {
		snprintf(why, len, "%s exports no dlopen (glibc before 2.34?)", libc->path);
		return -ENOEXEC;
	}
	return 0;
}

/*
 * Find the two gadgets in libc's code, read from its file (the one the
 * mapping holds, objcache.c), not from the target's memory: a read of the
 * whole text through process_vm_readv faults every page of it into the
 * target's page tables, and 400-700 KiB more of libc counted in its RSS
 * (docs/inject.md, "What it costs").
 */
static int find_gadgets(struct inject_ctx *c, const struct procmap *m)
{
	static const unsigned char sys_ret[] = { 0x0f, 0x05, 0xc3 };
	static const unsigned char restore[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	struct elfobj *obj = objcache__get(c->objs, m);
	size_t len = m->end - m->start;
	unsigned char *buf;
	unsigned char *p;
	ssize_t n;
	int ret = 0;

	if (!obj)
		return -errno ?: -ENOENT;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	n = pread(elfobj__fd(obj), buf, len, (off_t)m->offset);
	if (n <= 0) {
		ret = n < 0 ? -errno : -EIO;
		goto out;
	}
	p = memmem(buf, (size_t)n, sys_ret, sizeof(sys_ret));
	if (p)
		c->g.syscall_ret = m->start + (uint64_t)(p - buf);
	p = memmem(buf, (size_t)n, restore, sizeof(restore));
	if (p)
		c->g.restore_rt = m->start + (uint64_t)(p - buf);
	if (!c->g.syscall_ret || !c->g.restore_rt)
		ret = -ENOENT;
out:
	free(buf);
	return ret;
}

static int add_avoid(struct inject_ctx *c, uint64_t lo, uint64_t hi)
{
	if (c->n_avoid == c->cap_avoid) {
		size_t cap = c->cap_avoid ? c->cap_avoid * 2 : 64;
		struct range *v = realloc(c->avoid, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->avoid = v;
		c->cap_avoid = cap;
	}
	c->avoid[c->n_avoid].lo = lo;
	c->avoid[c->n_avoid++].hi = hi;
	return 0;
}

/* the functions NAMES of the object mapped at m; -ENOENT if one is missing and ALL set */
static int avoid_holders(struct inject_ctx *c, const struct procmap *m,
			 const char *const *names, size_t n, bool all)
{
	uint64_t a, size;
	size_t j;
	int ret = 0;

	for (j = 0; j < n && !ret; j++) {
		size = 0;
		a = sym_addr(c, m, names[j], &size);
		if (a)
			ret = add_avoid(c, a, a + (size ?: 1));
		else if (all)
			ret = -ENOENT;
	}
	return ret;
}

/*
 * The loader whole, the lock holders of every object that defines them,
 * and those of our library if it is there already (whole when its symbol
 * table is stripped)
 */
static int collect_avoid(struct inject_ctx *c)
{
	size_t i, n_before;
	int ret = 0;

	for (i = 0; i < c->maps.n && !ret; i++) {
		const struct procmap *m = &c->maps.v[i];

		if (!m->executable || !procmap__is_file(m))
			continue;
		if (is_loader(m->path)) {
			ret = add_avoid(c, m->start, m->end);
			continue;
		}
		if (is_sampler(m->path)) {
			n_before = c->n_avoid;
			if (!c->sampler_text.hi) {
				c->sampler_text = (struct range){ m->start, m->end };
				ret = avoid_holders(c, m, sampler_lock_holders,
						    sizeof(sampler_lock_holders) /
						    sizeof(sampler_lock_holders[0]), true);
			}
			if (c->sampler_text.lo != m->start || ret == -ENOENT) {
				c->n_avoid = n_before;
				ret = add_avoid(c, m->start, m->end);
			}
			continue;
		}
		/* once per file: its first executable mapping */
		if (i && c->maps.v[i - 1].inode == m->inode && !strcmp(c->maps.v[i - 1].path, m->path))
			continue;
		ret = avoid_holders(c, m, lock_holders,
				    sizeof(lock_holders) / sizeof(lock_holders[0]), false);
	}
	if (!ret)
		ret = add_avoid(c, c->g.restore_rt, c->g.restore_rt + 9);
	return ret;
}

static bool avoided(const struct inject_ctx *c, uint64_t addr)
{
	size_t i;

	for (i = 0; i < c->n_avoid; i++)
		if (addr >= c->avoid[i].lo && addr < c->avoid[i].hi)
			return true;
	return false;
}

/*
 * __restore_rt on a stack that is not a signal frame's return: glibc's
 * sigaction leaves it in its kernel_sigaction (sa_restorer), and a program
 * that installed handlers carries the copy in a slot no frame overwrites
 * (python3's interpreter did in every stop).  A frame names an instruction
 * in code and a stack pointer in a writable mapping; when unsure, a frame.
 */
static bool stale_restorer(const struct inject_ctx *c, const uint64_t *w, size_t n)
{
	const struct procmap *code, *stack;
	uint64_t ip, sp;

	if (w[0] != c->g.restore_rt)
		return false;
	if (!hijack__sigframe(w, n, &ip, &sp))
		return true;
	if (!ip && !sp)
		return false;
	code = procmaps__find(&c->maps, ip);
	stack = procmaps__find(&c->maps, sp);
	return !code || !code->executable || !stack || !stack->writable;
}

/*
 * The safe point: not stopped inside libc's code unless in a syscall
 * (its internal locks have no names we can see), not in the loader, and
 * no word on the top of its stack pointing into a lock holder or at
 * __restore_rt (a signal handler's return).  Stale words only make us
 * pass over a thread that was safe: conservative, never the reverse.
 */
static bool safe_point(const struct inject_ctx *c, const struct hijack *h)
{
	static uint64_t words[INJECT_STACK_SCAN / 8];
	const struct procmap *sm;
	uint64_t ip, sp, len;
	struct iovec local, remote;
	ssize_t n;
	long nr;
	size_t i;

	hijack__where(h, &ip, &sp, &nr);
	if (avoided(c, ip) || (ip >= c->sampler_text.lo && ip < c->sampler_text.hi) ||
	    (nr < 0 && ip >= c->libc_text.lo && ip < c->libc_text.hi)) {
		pr_debug("inject: thread %d not at a safe point: stopped at %#llx\n", h->tid,
			 (unsigned long long)ip);
		return false;
	}
	sm = procmaps__find(&c->maps, sp);
	if (!sm || !sm->writable || sp - 4096 < sm->start)
		return false;
	len = sm->end - sp < sizeof(words) ? sm->end - sp : sizeof(words);
	local.iov_base = words;
	local.iov_len = len;
	remote.iov_base = (void *)sp;
	remote.iov_len = len;
	n = process_vm_readv(c->t->pid, &local, 1, &remote, 1, 0);
	if (n < 8)
		return false;
	for (i = 0; i < (size_t)n / 8; i++)
		if (avoided(c, words[i]) && !stale_restorer(c, words + i, (size_t)n / 8 - i)) {
			pr_debug("inject: thread %d not at a safe point: %#llx at sp+%#zx\n",
				 h->tid, (unsigned long long)words[i], i * 8);
			return false;
		}
	return true;
}

static int list_tasks(pid_t pid, pid_t **out, size_t *n)
{
	char path[64];
	struct dirent *d;
	size_t cap = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	*out = NULL;
	*n = 0;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		if (*n == cap) {
			pid_t *v = realloc(*out, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!v) {
				closedir(dir);
				return -ENOMEM;
			}
			*out = v;
		}
		(*out)[(*n)++] = (pid_t)atoi(d->d_name);
	}
	closedir(dir);
	return 0;
}

static void note_stop(struct inject_ctx *c, uint64_t ns)
{
	c->st->stops++;
	if (ns > c->st->max_stop_ns)
		c->st->max_stop_ns = ns;
}

/*
 * Stop the threads one at a time, each for the few microseconds it takes
 * to look at it, and keep the first at a safe point, armed.  Threads that
 * are all busy inside the allocator get another look a little later.
 */
static int borrow(struct inject_ctx *c, struct hijack *h)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), deadline = t0 + INJECT_SAFE_POINT_NS;
	pid_t *tids = NULL;
	size_t n = 0, i;
	int ret = 0, pass;

	if (c->deadline_ns && c->deadline_ns < deadline)
		deadline = c->deadline_ns;
	for (pass = 0; clock_ns(CLOCK_MONOTONIC) < deadline; pass++) {
		free(tids);
		tids = NULL;
		ret = list_tasks(c->t->pid, &tids, &n);
		if (ret)
			return fail(c, ret, "cannot list the threads of the target: %s", strerror(-ret));
		for (i = 0; i < n; i++) {
			ret = hijack__seize(h, c->t->pid, tids[(i + (size_t)pass) % n], &c->g);
			if (ret == -ESRCH)
				continue;
			if (ret) {
				free(tids);
				return fail(c, ret, "cannot stop a thread of the target: %s",
					    strerror(-ret));
			}
			if (!safe_point(c, h)) {
				note_stop(c, hijack__let_go(h));
				continue;
			}
			ret = hijack__arm(h);
			if (ret == -EAGAIN || ret == -ESRCH) {
				note_stop(c, clock_ns(CLOCK_MONOTONIC) - h->stopped_ns);
				continue;
			}
			free(tids);
			if (ret)
				return fail(c, ret, "cannot prepare a thread of the target: %s",
					    strerror(-ret));
			c->st->stops++;
			c->st->tid = h->tid;
			return 0;
		}
		usleep(1000 + (useconds_t)pass * 100);
	}
	free(tids);
	snprintf(c->err, c->errlen, "no thread of pid %d reached a safe point in the %llu ms given "
		 "(each stopped inside the allocator, the loader or a signal handler)",
		 (int)c->t->pid, (unsigned long long)(deadline > t0 ? (deadline - t0) / 1000000 : 0));
	return -EBUSY;
}

static int ctx_open(struct inject_ctx *c, const struct target *t, struct objcache *objs,
		    struct inject_stats *st, char *err, size_t errlen)
{
	const struct procmap *libc;
	int ret;

	memset(c, 0, sizeof(*c));
	memset(st, 0, sizeof(*st));
	c->t = t;
	c->objs = objs;
	c->st = st;
	c->err = err;
	c->errlen = errlen;
	ret = procmaps__read(t->pid, &c->maps);
	if (ret)
		return fail(c, ret, "cannot read the target's mappings: %s", strerror(-ret));
	ret = inject__check(t, &c->maps, objs, err, errlen);
	if (ret)
		return ret;
	libc = find_exec(&c->maps, is_glibc);
	procmaps__text_range(&c->maps, libc, &c->libc_text.lo, &c->libc_text.hi);
	c->dlopen = sym_addr(c, libc, "dlopen", NULL);
	c->dlsym = sym_addr(c, libc, "dlsym", NULL);
	c->dlerror = sym_addr(c, libc, "dlerror", NULL);
	if (!c->dlopen || !c->dlsym || !c->dlerror)
		return fail(c, -ENOENT, "cannot find dlopen, dlsym and dlerror in %s", libc->path);
	ret = find_gadgets(c, libc);
	if (ret)
		return fail(c, ret, "cannot find a syscall instruction and rt_sigreturn in %s",
			    libc->path);
	ret = collect_avoid(c);
	if (ret)
		return fail(c, ret, "out of memory", "");
	return 0;
}

static void ctx_close(struct inject_ctx *c)
{
	procmaps__free(&c->maps);
	free(c->avoid);
}

/* an exported function of the mapped sampler library, or 0 */
static uint64_t mapped_fn(struct inject_ctx *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->maps.n; i++) {
		const struct procmap *m = &c->maps.v[i];
		uint64_t a;

		if (!m->executable || !is_sampler(m->path))
			continue;
		a = sym_addr(c, m, name, NULL);
		if (a)
			return a;
	}
	return 0;
}

/* the library's bytes, written from outside into the memfd the target made */
static int fill_memfd(pid_t pid, int64_t fd, const char *lib)
{
	char path[64], buf[65536];
	int in, out, ret = 0;
	ssize_t n;

	in = open(lib, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/fd/%lld", (int)pid, (long long)fd);
	out = open(path, O_WRONLY | O_CLOEXEC);
	if (out < 0) {
		ret = -errno;
		close(in);
		return ret;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			ret = -EIO;
			break;
		}
	if (n < 0)
		ret = -errno;
	close(in);
	close(out);
	return ret;
}

static int call(struct inject_ctx *c, struct hijack *h, uint64_t fn, uint64_t a0, uint64_t a1,
		uint64_t *ret)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), left = INJECT_CALL_NS;
	int err;

	/* a call not waited for finishes on its own and returns through the frame */
	if (c->deadline_ns)
		left = c->deadline_ns > now ? c->deadline_ns - now : 1;
	err = hijack__call(h, fn, a0, a1, left, ret);

	if (err)
		return fail(c, err, "a call in the target failed: %s", strerror(-err));
	return 0;
}

/* dlerror()'s message, read from the target */
static void remote_dlerror(struct inject_ctx *c, struct hijack *h, char *out, size_t len)
{
	struct iovec local = { out, len - 1 }, remote;
	uint64_t msg = 0;

	out[0] = 0;
	if (call(c, h, c->dlerror, 0, 0, &msg) || !msg)
		return;
	remote.iov_base = (void *)msg;
	remote.iov_len = len - 1;
	if (process_vm_readv(c->t->pid, &local, 1, &remote, 1, 0) > 0)
		out[len - 1] = 0;
	else
		out[0] = 0;
}

/* memfd_create, fill it, dlopen("/proc/self/fd/N"), close; *fn the export `name` */
static int load(struct inject_ctx *c, struct hijack *h, const char *lib, const char *name,
		uint64_t *fn)
{
	uint64_t args[6] = { 0, MFD_CLOEXEC };
	char path[64], msg[256];
	uint64_t handle = 0;
	int64_t fd;
	int ret;

	ret = hijack__put(h, OFF_NAME, INJECT_MEMFD_NAME, sizeof(INJECT_MEMFD_NAME));
	if (ret)
		return fail(c, ret, "cannot write into the target: %s", strerror(-ret));
	args[0] = hijack__scratch_addr(h, OFF_NAME);
	ret = hijack__syscall(h, SYS_memfd_create, args, &fd);
	if (ret || fd < 0)
		return fail(c, ret ?: (int)fd, "memfd_create in the target failed: %s",
			    strerror(-(ret ?: (int)fd)));
	ret = fill_memfd(c->t->pid, fd, lib);
	if (ret) {
		fail(c, ret, "cannot write the library into the target's memfd: %s",
		     strerror(-ret));
		goto close_fd;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%lld", (long long)fd);
	ret = hijack__put(h, OFF_PATH, path, strlen(path) + 1);
	if (!ret)
		ret = hijack__put(h, OFF_SYM, name, strlen(name) + 1);
	if (!ret)
		ret = call(c, h, c->dlopen, hijack__scratch_addr(h, OFF_PATH), RTLD_NOW, &handle);
	if (ret)
		goto close_fd;
	if (!handle) {
		remote_dlerror(c, h, msg, sizeof(msg));
		ret = fail(c, -ENOEXEC, "dlopen of libculpert-sampler.so in the target failed: %s",
			   msg[0] ? msg : "no reason given");
		goto close_fd;
	}
	ret = call(c, h, c->dlsym, handle, hijack__scratch_addr(h, OFF_SYM), fn);
	if (!ret && !*fn) {
		remote_dlerror(c, h, msg, sizeof(msg));
		pr_debug("dlsym %s: %s\n", name, msg);
		ret = fail(c, -ENOENT, "the library loaded exports no %s: not a matching "
			   "libculpert-sampler.so", name);
	}
close_fd:
	args[0] = (uint64_t)fd;
	if (!h->resumed)
		hijack__syscall(h, SYS_close, args, &fd);
	return ret;
}

/* the time since *mark into step i, and *mark now */
static void step(struct inject_stats *st, enum inject_step i, uint64_t *mark)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	st->step_ns[i] = now - *mark;
	*mark = now;
}

/*
 * Borrow a thread, load the library if asked and not there, call
 * `name`(arg); by deadline_ns (CLOCK_MONOTONIC) when not 0
 */
static int run(const struct target *t, struct objcache *objs, const char *lib,
	       const char *name, uint64_t arg, uint64_t deadline_ns, struct inject_stats *st,
	       char *err, size_t len)
{
	struct inject_ctx c;
	struct hijack h;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), t1, fn, res = 0, mark;
	int ret;

	ret = ctx_open(&c, t, objs, st, err, len);
	c.deadline_ns = deadline_ns;
	if (ret)
		goto out;
	fn = mapped_fn(&c, name);
	st->reused = fn != 0;
	if (!fn && !lib) {
		ret = fail(&c, -ENOENT, "no libculpert-sampler.so with %s is mapped in the target",
			   name);
		goto out;
	}
	t1 = clock_ns(CLOCK_MONOTONIC);
	st->prep_ns = t1 - t0;
	ret = borrow(&c, &h);
	if (ret)
		goto out;
	mark = h.stopped_ns;
	step(st, INJECT_STEP_ARM, &mark);
	ret = hijack__map_scratch(&h);
	if (ret)
		fail(&c, ret, "cannot map scratch memory in the target: %s", strerror(-ret));
	step(st, INJECT_STEP_SCRATCH, &mark);
	if (!ret && !fn)
		ret = load(&c, &h, lib, name, &fn);
	step(st, INJECT_STEP_LOAD, &mark);
	if (!ret)
		ret = call(&c, &h, fn, arg, 0, &res);
	step(st, INJECT_STEP_CALL, &mark);
	if (!ret) {
		st->result = (int)(int64_t)res;
		if (st->result < 0)
			ret = fail(&c, st->result, "the library's call in the target failed: %s",
				   strerror(-st->result));
	}
	st->held_ns = hijack__finish(&h);
	step(st, INJECT_STEP_FINISH, &mark);
	st->trips = h.trips;
	st->total_ns = clock_ns(CLOCK_MONOTONIC) - t1;
out:
	ctx_close(&c);
	return ret;
}

int inject__takeover(const struct target *t, struct objcache *objs, const char *lib,
		     uint64_t rate, struct inject_stats *st, char *err, size_t len)
{
	return run(t, objs, lib, INJECT_TAKEOVER, rate, 0, st, err, len);
}

int inject__release(const struct target *t, struct objcache *objs, uint64_t deadline_ns,
		    struct inject_stats *st, char *err, size_t len)
{
	return run(t, objs, NULL, INJECT_RELEASE, 0, deadline_ns, st, err, len);
}

bool inject__loader_busy(const struct procmaps *maps)
{
	return find_exec(maps, is_loader) && !find_exec(maps, is_glibc) && !find_exec(maps, is_musl);
}
