/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Internal to libculpert-sampler.so: the state the entry points read on
 * every call, and the inline countdown.  Everything here is hidden.
 */
#ifndef CULPERT_SAMPLER_INTERNAL_H
#define CULPERT_SAMPLER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <culpert/sampler.h>

#define SAMPLER_HIDDEN	__attribute__((visibility("hidden")))
#define SAMPLER_EXPORT	__attribute__((visibility("default")))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/*
 * The next allocator, resolved once and read-only afterwards: the entry
 * points read this line and their thread's state, nothing any other
 * thread writes.
 */
struct sampler_next {
	int ready;			/* resolved; until then calls go to the bootstrap arena */
	int every;			/* rate 1: every call is a sample */
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	/* NULL when the allocator of malloc lacks them: emulated with posix_memalign */
	void *(*memalign)(size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
} __attribute__((aligned(64)));

extern struct sampler_next sampler_next SAMPLER_HIDDEN;

/* sampled blocks in the set, on a line of its own: while 0, free looks no further */
struct sampler_live {
	unsigned long n;
} __attribute__((aligned(64)));

extern struct sampler_live sampler_live SAMPLER_HIDDEN;

struct sampler_thread {
	int64_t countdown;		/* bytes to the next sampling point, counting it; <= 0: passed */
	uint64_t rng;			/* xorshift64* state; 0: not seeded yet */
	uint32_t gen;			/* rate generation the countdown was drawn for */
	uint32_t busy;			/* in the slow path: a nested call (signal handler) is not sampled */
};

extern __thread struct sampler_thread sampler_thread
	__attribute__((tls_model("initial-exec"))) SAMPLER_HIDDEN;

/* slow paths, out of line */
void sampler_boot(void) SAMPLER_HIDDEN;
void sampler_sampled(void *p, size_t size) SAMPLER_HIDDEN;
void sampler_forget(void *p) SAMPLER_HIDDEN;
void sampler_child_after_fork(void) SAMPLER_HIDDEN;
/* in a fork child: switch off a site the parent's profiler had patched (sampler.c) */
void sampler_drop_inherited_site(const unsigned char *site, volatile unsigned short *semaphore)
	SAMPLER_HIDDEN;

/* the next allocator: its functions, its object (sampler.c) */
void *sampler_sym(const char *name) SAMPLER_HIDDEN;
const void *sampler_allocator_base(void) SAMPLER_HIDDEN;
void sampler_set_rate(uint64_t rate) SAMPLER_HIDDEN;
void sampler_configure(uint64_t rate) SAMPLER_HIDDEN;
/* loaded by dlopen rather than interposing: late.c takes over */
int sampler_is_late(void) SAMPLER_HIDDEN;
int sampler_boot_late(void) SAMPLER_HIDDEN;
void late_child_after_fork(void) SAMPLER_HIDDEN;

/* the entry points by name, at their addresses in this library (wrap.c) */
struct sampler_entry {
	const char *name;
	void *fn;
	int cxx;			/* operator new/delete */
};
extern const struct sampler_entry sampler_entries[] SAMPLER_HIDDEN;
extern const size_t sampler_n_entries SAMPLER_HIDDEN;

/* the bootstrap arena: what is handed out before the next allocator is known */
void *boot_alloc(size_t size, size_t align) SAMPLER_HIDDEN;
size_t boot_size(const void *p) SAMPLER_HIDDEN;
extern unsigned char boot_arena[] SAMPLER_HIDDEN;
#define BOOT_ARENA_SIZE	(64 * 1024)

static inline int in_boot_arena(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_arena < BOOT_ARENA_SIZE;
}

/*
 * Subtract from the countdown and say whether it passed 0.  On x86-64 one
 * read-modify-write instruction, so that a signal handler that allocates
 * cannot run between a load and a store of the countdown and be lost.
 */
static inline int countdown_passed(int64_t *countdown, int64_t size)
{
#if defined(__x86_64__)
	int le;

	__asm__("subq %[size], %[cd]" : [cd] "+m"(*countdown), "=@ccle"(le) : [size] "er"(size));
	return le;
#else
	*countdown -= size;
	return *countdown <= 0;
#endif
}

/*
 * The whole cost of an unsampled allocation: the thread's own countdown
 * and a branch.
 */
static inline void sampler_account(void *p, size_t size)
{
	/* a block that was allocated is far below 2^63 bytes: the arithmetic can be signed */
	if (unlikely(!p))
		return;
	if (unlikely(countdown_passed(&sampler_thread.countdown, (int64_t)size)))
		sampler_sampled(p, size);
}

/* the block goes back to the allocator: forget it first if it was sampled */
static inline void sampler_release(void *p)
{
	if (unlikely(__atomic_load_n(&sampler_live.n, __ATOMIC_RELAXED)))
		sampler_forget(p);
}

/* the published counters (exported: a reader finds them by name) */
extern struct culpert_sampler_page culpert_sampler_page;

/* the allocator's own statistics in the published page (allocstats.c) */
void allocstats_init(uint32_t kind, void *(*sym)(const char *name)) SAMPLER_HIDDEN;
void allocstats_maybe_refresh(void) SAMPLER_HIDDEN;
void allocstats_child_after_fork(void) SAMPLER_HIDDEN;

/* the live set of sampled pointers (liveset.c) */
int liveset_init(size_t max_entries) SAMPLER_HIDDEN;
int liveset_insert(uintptr_t p) SAMPLER_HIDDEN;
int liveset_remove(uintptr_t p) SAMPLER_HIDDEN;
/* forget every sampled pointer: after a release, their free is never seen */
void liveset_clear(void) SAMPLER_HIDDEN;

#endif /* CULPERT_SAMPLER_INTERNAL_H */
