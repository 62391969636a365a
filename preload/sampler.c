// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sampler's slow paths: finding the next allocator, the per-thread
 * draws, what a sampled call does (set, probes, counters), and the
 * process's start, fork and exit.
 *
 * Reentrancy, in the order a process meets it:
 *  - the first allocation (ld.so's, before any constructor) resolves the
 *    next allocator with dlsym(RTLD_NEXT), which allocates itself; until
 *    it is done every call, from this thread or another, is served from a
 *    static bootstrap arena that is never given back, and no thread state
 *    is touched: the arena path reads no TLS;
 *  - a signal handler that allocates while its thread is in the slow path
 *    has its call counted but not sampled (busy): the outer call sets the
 *    countdown last, so the handler cannot leave it inconsistent;
 *  - the set of sampled pointers is lock-free, so are the counters;
 *  - a fork child keeps the parent's set (its blocks are the child's now)
 *    and draws from a new seed, so parent and child do not sample alike;
 *  - nothing is torn down at exit: late frees still find what they need.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <culpert/sampler.h>
#include "geometric.h"
#include "got.h"
#include "sampler_internal.h"
#include "usdt.h"

#define DEFAULT_RATE		(512 * 1024)
#define DEFAULT_MAX_LIVE	(64 * 1024)
/* a block of more than this many sampling points has the rest counted by expectation */
#define MAX_POINT_DRAWS		64

/* LATE: loaded by dlopen, not interposing: resolved by culpert_sampler_takeover() (late.c) */
enum { BOOT_NONE, BOOT_RESOLVING, BOOT_READY, BOOT_LATE };

struct sampler_next sampler_next;
__thread struct sampler_thread sampler_thread __attribute__((tls_model("initial-exec")));
unsigned char boot_arena[BOOT_ARENA_SIZE] __attribute__((aligned(4096)));

static int boot_state;
static size_t boot_used;

/* read by the slow paths only */
static struct {
	uint64_t rate;
	double inv_log1m_p;		/* 1 / ln(1 - 1/rate): draws of the geometric distance */
	uint32_t gen;			/* bumped when the rate changes: threads draw again */
	char stats_path[256];		/* CULPERT_SAMPLER_STATS */
} cfg;

SAMPLER_EXPORT struct culpert_sampler_page culpert_sampler_page __attribute__((aligned(64))) = {
	.magic = CULPERT_SAMPLER_MAGIC,
	.version = CULPERT_SAMPLER_PAGE_VERSION,
	.size = sizeof(struct culpert_sampler_page),
	.rate = DEFAULT_RATE,
};

USDT_SEMAPHORE(otel_memory_alloc_semaphore);
USDT_SEMAPHORE(otel_memory_free_semaphore);
__asm__(USDT_BASE_SECTION);

/* --- probes: one site each, arguments in the SysV argument registers --- */

/* a function of its own, never inlined nor cloned: exactly one site and one note per probe */
#ifdef __clang__
#define ONE_SITE __attribute__((noinline))
#else
#define ONE_SITE __attribute__((noinline, noclone))
#endif

#if defined(__x86_64__)
static ONE_SITE void fire_alloc(void *p, uint64_t size, uint64_t weight)
{
	__asm__ __volatile__(USDT_SITE("otel_memory", "alloc", "otel_memory_alloc_semaphore",
				       USDT_ARGS3, "sampler_alloc_site")
			     : : "D"(p), "S"(size), "d"(weight) : "memory");
}

static ONE_SITE void fire_free(void *p)
{
	__asm__ __volatile__(USDT_SITE("otel_memory", "free", "otel_memory_free_semaphore",
				       USDT_ARGS1, "sampler_free_site")
			     : : "D"(p) : "memory");
}
#elif defined(__aarch64__)
static ONE_SITE void fire_alloc(void *p, uint64_t size, uint64_t weight)
{
	register uint64_t x0 __asm__("x0") = (uint64_t)p;
	register uint64_t x1 __asm__("x1") = size;
	register uint64_t x2 __asm__("x2") = weight;

	__asm__ __volatile__(USDT_SITE("otel_memory", "alloc", "otel_memory_alloc_semaphore",
				       USDT_ARGS3, "sampler_alloc_site")
			     : : "r"(x0), "r"(x1), "r"(x2) : "memory");
}

static ONE_SITE void fire_free(void *p)
{
	register uint64_t x0 __asm__("x0") = (uint64_t)p;

	__asm__ __volatile__(USDT_SITE("otel_memory", "free", "otel_memory_free_semaphore",
				       USDT_ARGS1, "sampler_free_site")
			     : : "r"(x0) : "memory");
}
#endif

extern const unsigned char sampler_alloc_site[] SAMPLER_HIDDEN;
extern const unsigned char sampler_free_site[] SAMPLER_HIDDEN;

static int listening(volatile unsigned short *semaphore)
{
	return unlikely(*semaphore != 0);
}

static void count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* --- messages: no stdio, which may allocate --- */

static void say(const char *a, const char *b)
{
	ssize_t r;

	r = write(2, "libculpert-sampler: ", 20);
	r = write(2, a, strlen(a));
	if (b)
		r = write(2, b, strlen(b));
	r = write(2, "\n", 1);
	(void)r;
}

/* --- the bootstrap arena --- */

void *boot_alloc(size_t size, size_t align)
{
	size_t off = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;

	if (align < 16)
		align = 16;
	if (align > 4096 || size > BOOT_ARENA_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	do {
		/* 16 bytes before each block keep its size, for realloc and malloc_usable_size */
		start = (off + 16 + align - 1) & ~(align - 1);
		end = start + ((size + 15) & ~(size_t)15);
		if (end > BOOT_ARENA_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&boot_used, &off, end, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	*(size_t *)(boot_arena + start - 16) = size;
	return boot_arena + start;
}

size_t boot_size(const void *p)
{
	return *(const size_t *)((const unsigned char *)p - 16);
}

/* --- configuration --- */

/* "524288", "512k", "512KiB", "4m", "1": bytes; 0 on a malformed value */
static uint64_t parse_bytes(const char *s)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'k': case 'K':
		mul = 1ULL << 10;
		break;
	case 'm': case 'M':
		mul = 1ULL << 20;
		break;
	case 'g': case 'G':
		mul = 1ULL << 30;
		break;
	case '\0':
		return v;
	default:
		return 0;
	}
	end++;
	if (*end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (1ULL << 40) / mul)
		return 0;
	return v * mul;
}

void sampler_set_rate(uint64_t rate)
{
	cfg.rate = rate;
	cfg.inv_log1m_p = geometric_scale(rate);
	culpert_sampler_page.rate = rate;
	sampler_next.every = rate == 1;
	__atomic_add_fetch(&cfg.gen, 1, __ATOMIC_RELEASE);
}

/* the environment as it is now; early in start-up it may not be there yet */
static void read_env(void)
{
	const char *s = getenv("CULPERT_SAMPLER_RATE");
	uint64_t rate = DEFAULT_RATE;

	if (s && *s) {
		rate = parse_bytes(s);
		if (!rate) {
			say("ignoring malformed CULPERT_SAMPLER_RATE=", s);
			rate = DEFAULT_RATE;
		}
	}
	if (rate != cfg.rate)
		sampler_set_rate(rate);
	s = getenv("CULPERT_SAMPLER_STATS");
	if (s && strlen(s) < sizeof(cfg.stats_path))
		strcpy(cfg.stats_path, s);
}

/* --- finding the next allocator --- */

/*
 * Preloaded, the allocator is the next definition after this library;
 * loaded late, the first definition in the process's global scope other
 * than ours (RTLD_NEXT from a dlopen'd object searches the scope of
 * whoever opened it; RTLD_DEFAULT may give a program's PLT stub, got.h).
 */
static int lookup_late;

void *sampler_sym(const char *name)
{
	uintptr_t self = (uintptr_t)sampler_sym;

	return lookup_late ? got_definition(name, &self, 1) : dlsym(RTLD_NEXT, name);
}

/* a function of the object that defines malloc, or NULL: another object's would mix heaps */
static void *next_sym_of(const char *name, const void *base)
{
	void *f = sampler_sym(name);
	Dl_info di;

	if (!f || !base)
		return f;
	if (!dladdr(f, &di))
		return f;
	return di.dli_fbase == base ? f : NULL;
}

static uint32_t allocator_kind(const void *base, const char *path)
{
	if (next_sym_of("mallctl", base))
		return CULPERT_SAMPLER_ALLOC_JEMALLOC;
	if (next_sym_of("mi_version", base))
		return CULPERT_SAMPLER_ALLOC_MIMALLOC;
	if (next_sym_of("tc_malloc", base))
		return CULPERT_SAMPLER_ALLOC_TCMALLOC;
	if (path && strstr(path, "/libc.so"))
		return CULPERT_SAMPLER_ALLOC_GLIBC;
	return CULPERT_SAMPLER_ALLOC_UNKNOWN;
}

static const void *next_base;

/* a function of the allocator's object, for allocstats.c */
static void *allocator_sym(const char *name)
{
	return next_sym_of(name, next_base);
}

static int resolve(void)
{
	struct sampler_next *n = &sampler_next;
	const void *base = NULL;
	const char *path = NULL;
	Dl_info di;

	n->malloc = (void *(*)(size_t))sampler_sym("malloc");
	if (n->malloc && dladdr((void *)n->malloc, &di)) {
		base = di.dli_fbase;
		path = di.dli_fname;
	}
	n->free = (void (*)(void *))next_sym_of("free", base);
	n->realloc = (void *(*)(void *, size_t))next_sym_of("realloc", base);
	n->posix_memalign = (int (*)(void **, size_t, size_t))next_sym_of("posix_memalign", base);
	if (!n->malloc || !n->free || !n->realloc || !n->posix_memalign)
		return -ENOENT;
	n->calloc = (void *(*)(size_t, size_t))next_sym_of("calloc", base);
	n->memalign = (void *(*)(size_t, size_t))next_sym_of("memalign", base);
	n->aligned_alloc = (void *(*)(size_t, size_t))next_sym_of("aligned_alloc", base);
	n->valloc = (void *(*)(size_t))next_sym_of("valloc", base);
	n->pvalloc = (void *(*)(size_t))next_sym_of("pvalloc", base);
	n->malloc_usable_size = (size_t (*)(void *))next_sym_of("malloc_usable_size", base);
	culpert_sampler_page.allocator = allocator_kind(base, path);
	next_base = base;
	allocstats_init(culpert_sampler_page.allocator, allocator_sym);
	return 0;
}

const void *sampler_allocator_base(void)
{
	return next_base;
}

/* the state every entry point needs, once the next allocator is known */
static void make_ready(void)
{
	if (!cfg.rate)
		sampler_set_rate(DEFAULT_RATE);
	read_env();
	if (liveset_init(DEFAULT_MAX_LIVE))
		say("cannot map the set of sampled pointers: free will never fire", NULL);
	__atomic_store_n(&sampler_next.ready, 1, __ATOMIC_RELEASE);
}

void sampler_boot(void)
{
	int expect = BOOT_NONE;

	/* being resolved (dlsym allocating, or another thread): the arena serves meanwhile */
	if (!__atomic_compare_exchange_n(&boot_state, &expect, BOOT_RESOLVING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	if (resolve()) {
		say("no malloc, free, realloc and posix_memalign of one allocator after this library",
		    "; aborting");
		abort();
	}
	make_ready();
	__atomic_store_n(&boot_state, BOOT_READY, __ATOMIC_RELEASE);
}

static int same_object(void *a, void *b)
{
	Dl_info da, db;

	return a && b && dladdr(a, &da) && dladdr(b, &db) && da.dli_fbase == db.dli_fbase;
}

/*
 * Loaded late: the allocator the process is bound to now.  Called under
 * late.c's lock, before any GOT slot points at the entry points.
 */
int sampler_boot_late(void)
{
	int err;

	if (__atomic_load_n(&sampler_next.ready, __ATOMIC_ACQUIRE))
		return 0;
	lookup_late = 1;
	/*
	 * Another copy of this library interposing already (preloaded, and
	 * this one loaded from another path): sampling its calls again would
	 * count every sample twice.  Its own probes are the ones to use.
	 */
	if (same_object(sampler_sym("malloc"), sampler_sym("culpert_sampler_takeover")))
		return -EEXIST;
	err = resolve();
	if (err)
		return err;
	make_ready();
	return 0;
}

/* the process's malloc is this library's: preloaded, or linked before the allocator */
static int interposing(void)
{
	return same_object(got_definition("malloc", NULL, 0), (void *)sampler_boot);
}

/* a rate from the caller, or what the environment says (default 512 KiB) */
void sampler_configure(uint64_t rate)
{
	if (rate)
		sampler_set_rate(rate);
	else
		read_env();
}

int sampler_is_late(void)
{
	return __atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) == BOOT_LATE;
}

/* --- draws --- */

static uint64_t rng_next(struct sampler_thread *t)
{
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* uniform in [0, 1) */
static double uniform(struct sampler_thread *t)
{
	return (double)(rng_next(t) >> 11) * 0x1.0p-53;
}

/* bytes to the next sampling point, counting it */
static int64_t draw(struct sampler_thread *t)
{
	return geometric_draw(uniform(t), cfg.inv_log1m_p);
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void seed(struct sampler_thread *t)
{
	static uint64_t threads;
	struct timespec ts;
	uint64_t s;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	s = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
	s = splitmix64(s ^ ((uint64_t)getpid() << 40));
	s = splitmix64(s ^ (uintptr_t)t);
	s = splitmix64(s ^ ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec));
	t->rng = s ?: 1;
}

/*
 * Sampling points in the block past the first one (r bytes of it), the
 * countdown left for the bytes after it.  Blocks of very many points have
 * the rest counted by its expectation, which keeps the weight unbiased.
 */
static uint64_t more_points(struct sampler_thread *t, int64_t r)
{
	uint64_t points = 0;
	int64_t k;
	int i;

	for (i = 0; (k = draw(t)) <= r; i++) {
		points++;
		r -= k;
		if (i == MAX_POINT_DRAWS) {
			points += (uint64_t)((double)r / (double)cfg.rate + uniform(t));
			k = draw(t);
			r = 0;
			break;
		}
	}
	t->countdown = k - r;
	return points;
}

/* --- the sampled call --- */

void sampler_sampled(void *p, size_t size)
{
	struct sampler_thread *t = &sampler_thread;
	struct culpert_sampler_page *pg = &culpert_sampler_page;
	uint64_t points, weight;

	if (t->busy)
		return;
	t->busy = 1;
	__asm__ __volatile__("" ::: "memory");
	if (sampler_next.every) {
		t->countdown = 0;
		points = size;
		weight = size;
	} else {
		if (unlikely(t->gen != __atomic_load_n(&cfg.gen, __ATOMIC_ACQUIRE))) {
			/* a new thread, or a new rate: the first draw, then this block */
			if (!t->rng)
				seed(t);
			t->gen = __atomic_load_n(&cfg.gen, __ATOMIC_ACQUIRE);
			t->countdown = draw(t) - (int64_t)size;
			if (t->countdown > 0)
				goto out;
		}
		points = 1 + more_points(t, -t->countdown);
		weight = points * cfg.rate;
	}
	count(&pg->events, 1);
	count(&pg->points, points);
	count(&pg->weight_bytes, weight);
	if (listening(&otel_memory_free_semaphore)) {
		if (liveset_insert((uintptr_t)p))
			count(&pg->tracked, 1);
		else
			count(&pg->set_full, 1);
	}
	if (listening(&otel_memory_alloc_semaphore)) {
		fire_alloc(p, size, weight);
		count(&pg->alloc_fired, 1);
	}
	allocstats_maybe_refresh();
out:
	__asm__ __volatile__("" ::: "memory");
	t->busy = 0;
}

void sampler_forget(void *p)
{
	if (!liveset_remove((uintptr_t)p))
		return;
	count(&culpert_sampler_page.untracked, 1);
	if (listening(&otel_memory_free_semaphore)) {
		fire_free(p);
		count(&culpert_sampler_page.free_fired, 1);
	}
}

/* --- start, fork, exit --- */

/*
 * Linux 6.18 turns a uprobe on a 5-byte NOP into a call of a trampoline
 * page the kernel maps into the process.  A fork child gets the patched
 * code and the raised semaphore, but not the trampoline: executing the
 * site there jumps to an unmapped page (seen on 6.18.44).  No profiler
 * attached to the parent follows the child through that call, so a site
 * found patched is switched off in the child; a profiler attaching to the
 * child later raises the semaphore again.
 */
void sampler_drop_inherited_site(const unsigned char *site, volatile unsigned short *semaphore)
{
#if defined(__x86_64__)
	if (*semaphore && site[0] == 0xe8)	/* call rel32: an optimized uprobe */
		*semaphore = 0;
#endif
}

void sampler_child_after_fork(void)
{
	struct culpert_sampler_page *pg = &culpert_sampler_page;

	late_child_after_fork();
	sampler_drop_inherited_site(sampler_alloc_site, &otel_memory_alloc_semaphore);
	sampler_drop_inherited_site(sampler_free_site, &otel_memory_free_semaphore);
	allocstats_child_after_fork();
	/* a new seed at the next allocation; the countdown left is still a fair draw */
	sampler_thread.rng = 0;
	sampler_thread.gen = 0;
	sampler_thread.countdown = 0;
	pg->events = pg->points = pg->weight_bytes = 0;
	pg->alloc_fired = pg->free_fired = pg->set_full = 0;
	/* the set is the child's: what it tracks was inherited with the blocks */
	pg->tracked -= pg->untracked;
	pg->untracked = 0;
}

__attribute__((constructor)) static void sampler_start(void)
{
	int expect = BOOT_NONE;

	pthread_atfork(NULL, NULL, sampler_child_after_fork);
	/*
	 * Not the process's malloc: dlopen'd into a running process (or linked
	 * after the allocator).  Dormant until culpert_sampler_takeover().
	 */
	if (__atomic_load_n(&boot_state, __ATOMIC_ACQUIRE) == BOOT_NONE && !interposing() &&
	    __atomic_compare_exchange_n(&boot_state, &expect, BOOT_LATE, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		/* the page shows the rate a takeover with none of its own will use */
		read_env();
		return;
	}
	sampler_boot();
	/* the environment is certainly there now; the rate may differ from the first guess */
	read_env();
}

static void put(char **at, char *end, const char *key, unsigned long long v)
{
	int n = snprintf(*at, (size_t)(end - *at), " %s=%llu", key, v);

	if (n > 0 && n < end - *at)
		*at += n;
}

__attribute__((destructor)) static void sampler_stop(void)
{
	static const char *const names[] = { "unknown", "glibc", "jemalloc", "mimalloc", "tcmalloc" };
	const struct culpert_sampler_page *pg = &culpert_sampler_page;
	char line[512], *at = line, *end = line + sizeof(line);
	ssize_t r;
	int fd;

	if (!cfg.stats_path[0])
		return;
	at += snprintf(line, sizeof(line), "culpert-sampler pid=%d allocator=%s", (int)getpid(),
		       names[pg->allocator < 5 ? pg->allocator : 0]);
	put(&at, end, "rate", pg->rate);
	put(&at, end, "events", pg->events);
	put(&at, end, "points", pg->points);
	put(&at, end, "weight_bytes", pg->weight_bytes);
	put(&at, end, "alloc_fired", pg->alloc_fired);
	put(&at, end, "free_fired", pg->free_fired);
	put(&at, end, "tracked", pg->tracked);
	put(&at, end, "untracked", pg->untracked);
	put(&at, end, "set_full", pg->set_full);
	put(&at, end, "live", __atomic_load_n(&sampler_live.n, __ATOMIC_RELAXED));
	put(&at, end, "boot_bytes", __atomic_load_n(&boot_used, __ATOMIC_RELAXED));
	if (at < end - 1)
		*at++ = '\n';
	fd = open(cfg.stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	r = write(fd, line, (size_t)(at - line));
	(void)r;
	close(fd);
}
