/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sampling helpers of the allocator probes: per-thread state, the byte
 * countdown, nested-call detection and the sample record.
 */
#ifndef CULPERT_SAMPLER_BPF_H
#define CULPERT_SAMPLER_BPF_H

/* load-time knobs, set by userspace before load */
const volatile __u32 stack_bytes = 65 * sizeof(__u64);	/* bytes of frames to walk: depth + 1 */
const volatile bool sample_every;			/* --rate 1: every call is a sample */
const volatile __u64 page_size = 4096;
/* runtime address ranges of the allocators' code, for nested-call detection */
const volatile __u64 alloc_text_lo[CULPERT_MAX_ALLOC_OBJS];
const volatile __u64 alloc_text_hi[CULPERT_MAX_ALLOC_OBJS];

static __always_inline __u64 mul_or_zero(__u64 a, __u64 b)
{
	__u64 limit;

	/* calloc(n, s) with n * s overflowing fails and allocates nothing */
	if (!(a >> 32) && !(b >> 32))
		return a * b;
	limit = ~0ULL / a;
	/* keep clang from folding the check into a 128-bit multiply BPF cannot do */
	barrier_var(limit);
	return b > limit ? 0 : a * b;
}

static __always_inline __u64 round_up_page(__u64 size)
{
	return (size + page_size - 1) & ~(page_size - 1);
}

static __always_inline bool in_allocator(__u64 addr)
{
	int i;

	for (i = 0; i < CULPERT_MAX_ALLOC_OBJS; i++)
		if (addr >= alloc_text_lo[i] && addr < alloc_text_hi[i])
			return true;
	return false;
}

/*
 * Allocators call their own public entry points: glibc's realloc(NULL, n)
 * and memalign(16, n) end up in malloc, reallocarray in realloc, musl's
 * calloc calls malloc.  The outer call is the one the program made, so the
 * inner one must not be counted again.  Without return probes, "still
 * inside the outer call" is judged from the stack, which must show the
 * outer call's frame intact:
 *  - a tail call (jmp malloc) runs at the outer entry's stack pointer, with
 *    the outer call's return address still in place, in another entry
 *    point (the same one there is the caller calling again from the same
 *    call site);
 *  - a plain call runs deeper, is made from allocator code, and the outer
 *    call's return address is still in place above it.
 * Any mismatch proves the outer call returned and clears the guard, so a
 * thread that never nests pays nothing here.
 */
static __always_inline bool nested_call(struct thread_state *ts, __u64 sp, __u64 ip)
{
	if (!ts->guard_sp)
		return false;
	if (sp > ts->guard_sp)
		goto stale;
	if (sp == ts->guard_sp && ip == ts->guard_ip)
		goto stale;
	if (sp < ts->guard_sp && !in_allocator(read_user_word(sp)))
		goto stale;
	if (read_user_word(ts->guard_sp) != ts->guard_ret)
		goto stale;
	count(CULPERT_CNT_NESTED);
	return true;
stale:
	ts->guard_sp = 0;
	return false;
}

static __always_inline void guard_set(struct thread_state *ts, __u64 sp, __u64 ip)
{
	ts->guard_sp = sp;
	ts->guard_ret = read_user_word(sp);
	ts->guard_ip = ip;
}

/* plain malloc never calls another allocator entry point; everything else may */
static __always_inline bool may_nest(__u32 fn)
{
	return fn != CULPERT_FN_MALLOC;
}

static __always_inline bool countdown_expired(struct thread_state *ts, __u64 size)
{
	if (sample_every)
		return true;
	/* > 2^63 bytes cannot be allocated; keep the arithmetic signed */
	if (size > (1ULL << 62))
		size = 1ULL << 62;
	ts->countdown -= (__s64)size;
	if (ts->countdown > 0)
		return false;
	/* memoryless: the next point is a fresh draw past the end of this block */
	ts->countdown = draw_countdown();
	return true;
}

static __always_inline void span_copy(struct thread_state *ts, struct culpert_alloc_event *e);
enum prune_mode;
static __always_inline void span_prune(struct thread_state *ts, __u64 sp, enum prune_mode mode,
				       __u32 name_id);

static __always_inline void emit_sample(struct pt_regs *ctx, struct thread_state *ts, __u64 size,
					__u32 fn, __u64 sp)
{
	struct culpert_alloc_event *e;
	long n;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(CULPERT_CNT_LOST_RINGBUF);
		return;
	}
	e->kind = CULPERT_EV_ALLOC;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->id = __sync_fetch_and_add(&next_sample_id, 1);
	e->size = size;
	e->ts_ns = bpf_ktime_get_ns();
	e->fn = fn;
	span_prune(ts, sp, PRUNE_SAMPLE, 0);
	span_copy(ts, e);
	/* at entry the allocator has no frame yet: its caller is only at [sp] */
	e->ret_addr = read_user_word(sp);
	n = bpf_get_stack(ctx, e->frames, stack_bytes, BPF_F_USER_STACK);
	if (n < 0) {
		count(CULPERT_CNT_STACK_ERR);
		e->nr_frames = n;
	} else {
		e->nr_frames = n / sizeof(__u64);
	}
	bpf_ringbuf_submit(e, 0);
}

static __always_inline int handle_alloc(struct pt_regs *ctx, __u64 size, __u32 fn)
{
	struct thread_state *ts;
	__u64 sp = PT_REGS_SP(ctx), ip = PT_REGS_IP(ctx);

	/*
	 * No pid check here: the probes are attached for the target only
	 * (uprobe_multi checks the thread group, perf uprobes the mm), and
	 * this runs on every allocation.
	 */
	ts = thread_state_get();
	if (!ts) {
		count(CULPERT_CNT_NO_STATE);
		return 0;
	}
	if (nested_call(ts, sp, ip))
		return 0;
	if (may_nest(fn))
		guard_set(ts, sp, ip);
	if (countdown_expired(ts, size))
		emit_sample(ctx, ts, size, fn, sp);
	return 0;
}

#endif /* CULPERT_SAMPLER_BPF_H */
