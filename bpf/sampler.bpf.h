/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sampling helpers of the allocator probes: per-thread state, the byte
 * countdown, nested-call detection and the sample record.
 */
#ifndef CULPERT_SAMPLER_BPF_H
#define CULPERT_SAMPLER_BPF_H

/* load-time knobs, set by userspace before load */
const volatile bool track_inuse;			/* --inuse */
const volatile __u32 stack_bytes = 65 * sizeof(__u64);	/* bytes of frames to walk: depth + 1 */
const volatile bool sample_every;			/* --rate 1: every call is a sample */
const volatile __u64 page_size = 4096;
/* the agent: count every probe hit per process, for its overhead budget */
const volatile bool count_calls;

/*
 * The smallest size no allocator can ever return: a block must fit in the
 * part of the address space mmap(NULL, ...) hands out, 47 bits on x86-64
 * (also with 5-level paging, unless asked for a hint above), 48 on arm64.
 * Such a call fails (NULL, or bad_alloc from operator new) whatever the
 * allocator: it is counted as failed, never as bytes (docs/profile-format.md).
 */
#if defined(__TARGET_ARCH_arm64)
#define NEVER_FITS (1ULL << 48)
#else
#define NEVER_FITS (1ULL << 47)
#endif

static __always_inline __u64 mul_or_never(__u64 a, __u64 b)
{
	__u64 limit;

	/* calloc(n, s) with n * s overflowing fails and allocates nothing */
	if (!(a >> 32) && !(b >> 32))
		return a * b;
	limit = ~0ULL / a;
	/* keep clang from folding the check into a 128-bit multiply BPF cannot do */
	barrier_var(limit);
	return b > limit ? NEVER_FITS : a * b;
}

static __always_inline __u64 round_up_page(__u64 size)
{
	return (size + page_size - 1) & ~(page_size - 1);
}

/* in the calling process's allocator code: looked up only on the (rare) nested path */
static __always_inline bool in_allocator(__u64 addr)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct culpert_alloc_text *t = bpf_map_lookup_elem(&alloc_text, &tgid);
	int i;

	if (!t)
		return false;
	for (i = 0; i < CULPERT_MAX_ALLOC_OBJS; i++)
		if (addr >= t->lo[i] && addr < t->hi[i])
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
static __always_inline bool nested_call(struct pt_regs *ctx, struct hot_state *ts, __u64 sp,
					__u64 ip)
{
	if (!ts->guard_sp)
		return false;
	if (sp > ts->guard_sp)
		goto stale;
	if (sp == ts->guard_sp && ip == ts->guard_ip)
		goto stale;
	if (sp < ts->guard_sp && !in_allocator(entry_return(ctx, sp)))
		goto stale;
	if (!outer_call_intact(ctx, ts->guard_sp, ts->guard_ret))
		goto stale;
	count(CULPERT_CNT_NESTED);
	return true;
stale:
	ts->guard_sp = 0;
	return false;
}

static __always_inline void guard_set(struct pt_regs *ctx, struct hot_state *ts, __u64 sp,
				      __u64 ip)
{
	ts->guard_sp = sp;
	ts->guard_ret = entry_return(ctx, sp);
	ts->guard_ip = ip;
}

/*
 * Entry points may call others (operator new[] jumps to operator new,
 * mimalloc's valloc to mi_valloc); the plan marks those known not to
 * (plain malloc), which then skip setting the guard on the hot path.
 */
static __always_inline bool may_nest(__u64 flags)
{
	return !(flags & CULPERT_PROBE_F_LEAF);
}

static __always_inline bool countdown_expired(struct hot_state *ts, __u64 size)
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

/*
 * How culpert_emit_sample() records a sample, in one argument (a global
 * function takes five): the contract's weight (0 on the allocator path;
 * below 2^46 bytes: 64 TiB a sample), the probability the sample's stack
 * was kept with (17 bits, up to CULPERT_KEEP_ONE), and EMIT_DWARF when the
 * process's samples carry stack copies.
 */
#define EMIT_DWARF		(1ULL << 63)
#define EMIT_KEEP_SHIFT		46
#define EMIT_WEIGHT_MASK	((1ULL << EMIT_KEEP_SHIFT) - 1)

static __always_inline __u64 emit_how(const struct culpert_proc *proc, __u64 weight, __u32 keep)
{
	if (weight > EMIT_WEIGHT_MASK)
		weight = EMIT_WEIGHT_MASK;
	return weight | (__u64)(keep & 0x1ffff) << EMIT_KEEP_SHIFT |
	       (proc && proc->unwind_dwarf ? EMIT_DWARF : 0);
}

/*
 * The sample's record; its id, 0 when the ring buffer was full (or the
 * thread has no state).  A global function: verified once, on its own,
 * rather than along every path of every allocator program into it.  Its
 * context is bpf_user_pt_regs_t, the type the verifier knows a uprobe's
 * context by (struct user_pt_regs on arm64: a struct pt_regs argument
 * would be taken for plain memory there, and refused).
 */
__noinline __u64 culpert_emit_sample(bpf_user_pt_regs_t *uctx, __u64 size, __u32 fn, __u64 sp,
				     __u64 how)
{
	struct pt_regs *ctx = (struct pt_regs *)uctx;
	__u64 weight = how & EMIT_WEIGHT_MASK;
	__u32 cpu = bpf_get_smp_processor_id(), depth;
	struct thread_state *ts = thread_state_find();
	struct culpert_alloc_event *e;
	struct event_buf *buf;
	__u64 id = 0, len;
	__u8 *data;
	long n;

	buf = bpf_map_lookup_elem(&event_scratch, &cpu);
	if (!buf || !ts)
		return 0;
	if (__sync_lock_test_and_set(&buf->busy, 1)) {
		count(CULPERT_CNT_LOST_RINGBUF);
		return 0;
	}
	e = (struct culpert_alloc_event *)buf->bytes;
	id = __sync_fetch_and_add(&next_sample_id, 1) + 1;
	e->kind = CULPERT_EV_ALLOC;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->keep = (how >> EMIT_KEEP_SHIFT) & 0x1ffff;
	e->id = id;
	e->size = size;
	e->weight = weight;
	e->ts_ns = bpf_ktime_get_ns();
	e->fn = fn;
	e->stack_len = 0;
	span_prune(ts, sp, PRUNE_SAMPLE, 0);
	depth = span_copy(ts, (struct culpert_span_frame *)e->data);
	if (depth > CULPERT_MAX_SPAN_DEPTH)
		depth = CULPERT_MAX_SPAN_DEPTH;
	e->span_depth = depth;
	/*
	 * At entry the allocator has no frame yet: its caller is only at [sp]
	 * (x86), in lr (arm64).  An otel_memory site is inside a function
	 * whose frame the walk already goes through: nothing to put back.
	 */
	e->ret_addr = fn == CULPERT_FN_OTEL ? 0 : real_return(sp, entry_return(ctx, sp));
	data = e->data + depth * sizeof(struct culpert_span_frame);
	if (unwind_dwarf && (how & EMIT_DWARF)) {
		e->nr_frames = 0;
		n = copy_dwarf_state(ctx, e, data);
		e->stack_len = n;
	} else {
		n = bpf_get_stack(ctx, data, stack_bytes, BPF_F_USER_STACK);
		if (n < 0) {
			count(CULPERT_CNT_STACK_ERR);
			e->nr_frames = n;
			n = 0;
		} else {
			e->nr_frames = n / sizeof(__u64);
		}
	}
	len = sizeof(*e) + depth * sizeof(struct culpert_span_frame) + n;
	if (len > CULPERT_EVENT_MAX || bpf_ringbuf_output(&events, e, len, ringbuf_wakeup())) {
		count(CULPERT_CNT_LOST_RINGBUF);
		id = 0;
	}
	buf->busy = 0;
	return id;
}

/* the bytes a call of entry point `fn` asks for, from its arguments (cookie: where they are) */
static __always_inline __u64 alloc_size(struct pt_regs *ctx, __u32 fn, __u64 cookie)
{
	switch (fn) {
	case CULPERT_FN_CALLOC:
		return mul_or_never(entry_arg(ctx, cookie, 0), entry_arg(ctx, cookie, 1));
	case CULPERT_FN_REALLOC:
	case CULPERT_FN_MEMALIGN:
		return entry_arg(ctx, cookie, 1);
	case CULPERT_FN_REALLOCARRAY:
		return mul_or_never(entry_arg(ctx, cookie, 1), entry_arg(ctx, cookie, 2));
	case CULPERT_FN_POSIX_MEMALIGN:
		return entry_arg(ctx, cookie, 2);
	case CULPERT_FN_PVALLOC:
		/* rounding (size_t)-1 up would wrap to 0 */
		return entry_arg(ctx, cookie, 0) >= NEVER_FITS ? NEVER_FITS :
								round_up_page(entry_arg(ctx, cookie, 0));
	default:
		return entry_arg(ctx, cookie, 0);
	}
}

/*
 * --inuse: a nested call at the sampled call's own stack pointer is a tail
 * call out of it, and its return is the sampled call's.  When the sampled
 * entry point's return is seen by exit probes and this one's by a uprobe
 * session (a C function reached by `jmp`), the session must ask for it.
 */
static __always_inline bool tail_call_returns(struct hot_state *hs, __u64 sp, __u64 flags)
{
	return track_inuse && hs->pending_id && hs->pending_sp == sp &&
	       (hs->pending_flags & CULPERT_PROBE_F_EXITS) && !(flags & CULPERT_PROBE_F_EXITS);
}

/*
 * --inuse: a nested call from inside a sampled call whose result is its
 * nested allocator call's (libstdc++'s operator new calling malloc): that
 * call's return, through a uprobe session or a return probe on every call,
 * gives the pointer.  The nested function is C, no exception passes it.
 */
static __always_inline bool delegated_return(struct hot_state *hs, __u64 sp, __u32 fn,
					     __u64 flags)
{
	if (!track_inuse || !hs->pending_id || !(hs->pending_flags & CULPERT_PROBE_F_DELEGATE) ||
	    (flags & CULPERT_PROBE_F_EXITS) || fn == CULPERT_FN_POSIX_MEMALIGN ||
	    sp >= hs->pending_sp)
		return false;
	hs->deleg_sp = sp;
	return true;
}

/*
 * An outer allocator call entered at or below this stack pointer is over:
 * a sampled call still awaited there threw, or returned where no probe
 * could see it (its block stays untracked).  Without this, a later call at
 * the same depth would hand its pointer to that old sample.
 */
static __always_inline void pending_expire(struct hot_state *hs, __u64 sp)
{
	if (track_inuse && hs->pending_id && sp >= hs->pending_sp) {
		count(CULPERT_CNT_RET_UNSEEN);
		hs->pending_id = 0;
	}
}

/*
 * An allocator entry of kind `fn`, with the CULPERT_PROBE_F_* `flags` of
 * its probe.  Returns true when the call's return must be seen through a
 * uprobe session (--inuse): session programs return 0 then, so the kernel
 * runs them again at the return, and 1 otherwise.  Entry points an
 * exception can unwind through (CULPERT_PROBE_F_EXITS) are never attached
 * through sessions: their return address stays untouched.
 */
static __always_inline bool handle_alloc(struct pt_regs *ctx, __u32 fn, __u64 flags)
{
	__u64 sp = PT_REGS_SP(ctx), ip = PT_REGS_IP(ctx), size, id;
	struct culpert_proc *proc;
	__u32 keep;
	struct thread_state *ts;
	struct hot_state *hs;

	/*
	 * No pid check here: the probes are attached for the target only
	 * (uprobe_multi checks the thread group, perf uprobes the mm), and
	 * this runs on every allocation.
	 */
	if (count_calls && (proc = proc_get())) {
		__sync_fetch_and_add(&proc->calls_alloc, 1);
		if (flags & CULPERT_PROBE_F_STEPPED)
			__sync_fetch_and_add(&proc->calls_alloc_stepped, 1);
	}
	hs = hot_state_get();
	if (!hs) {
		count(CULPERT_CNT_NO_STATE);
		return false;
	}
	if (nested_call(ctx, hs, sp, ip))
		return delegated_return(hs, sp, fn, flags) || tail_call_returns(hs, sp, flags);
	pending_expire(hs, sp);
	if (may_nest(flags))
		guard_set(ctx, hs, sp, ip);
	size = alloc_size(ctx, fn, flags);
	/* a call that must fail allocates nothing: no bytes, no sample; a realloc's block stays */
	if (size >= NEVER_FITS) {
		hs->seen.failed++;
		return false;
	}
	if (track_inuse && (fn == CULPERT_FN_REALLOC || fn == CULPERT_FN_REALLOCARRAY))
		inuse_free(entry_arg(ctx, flags, 0));
	hs->seen.calls++;
	hs->seen.bytes += size;
	if (!countdown_expired(hs, size))
		return false;
	/* only a sample pays for the rest of the thread's state */
	ts = thread_state_get();
	if (!ts) {
		count(CULPERT_CNT_NO_STATE);
		return false;
	}
	proc = proc_get();
	keep = keep_prob(proc);
	if (keep < CULPERT_KEEP_ONE)
		culpert_throttle(size, sp, 0);
	if (!keep_draw(keep)) {
		count(CULPERT_CNT_THINNED);
		return false;
	}
	if (!stack_token(proc)) {
		culpert_throttle(size, sp, keep);
		return false;
	}
	id = culpert_emit_sample((bpf_user_pt_regs_t *)ctx, size, fn, sp, emit_how(proc, 0, keep));
	if (!track_inuse || !id)
		return false;
	if (flags & CULPERT_PROBE_F_NO_RETURN) {
		count(CULPERT_CNT_RET_UNSEEN);
		return false;
	}
	hs->pending_id = id;
	hs->pending_sp = sp;
	hs->pending_memptr = fn == CULPERT_FN_POSIX_MEMALIGN ? entry_arg(ctx, flags, 0) : 0;
	hs->pending_flags = (__u32)flags;
	hs->deleg_sp = 0;
	return !(flags & CULPERT_PROBE_F_EXITS);
}

#endif /* CULPERT_SAMPLER_BPF_H */
