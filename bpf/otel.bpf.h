/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The otel_memory USDT contract (docs/sampler.md, docs/otel.md): an
 * in-process sampler decides which allocations are samples and fires
 * otel_memory:alloc(ptr, size, weight) for those only, and
 * otel_memory:free(ptr) for the frees of blocks it reported.  Attached
 * there instead of the allocator's entry points, the BPF side pays
 * nothing for unsampled calls: no countdown, no nesting guard, no return
 * probe.  The stack, the spans and --inuse are the allocator path's.
 */
#ifndef CULPERT_OTEL_BPF_H
#define CULPERT_OTEL_BPF_H

/*
 * --inuse: the block of sample `id` is live at ptr.  The contract fires
 * alloc once the block is returned, so the pointer is known at once.  A
 * block still held at that address was freed where no probe saw it (free
 * has no listener, or its site was not reached): dropped first.
 */
static __always_inline void otel_track(__u64 id, __u64 ptr)
{
	struct live_alloc val = { .id = id };
	struct culpert_live_key k;
	bool tracked;

	inuse_free(ptr);
	live_key(&k, ptr);
	tracked = !bpf_map_update_elem(&live_allocs, &k, &val, BPF_NOEXIST);
	if (!tracked)
		count(CULPERT_CNT_LIVE_FULL);
	emit_ret(id, ptr, tracked);
}

static __always_inline int handle_otel_alloc(struct pt_regs *ctx, __u64 ptr, __u64 size,
					     __u64 weight)
{
	__u64 sp = PT_REGS_SP(ctx), id;
	struct culpert_proc *proc;
	__u32 keep;

	/* a failed allocation is no sample the contract reports; one that says so is ignored */
	if (!ptr)
		return 0;
	proc = proc_get();
	/* the agent's budget: a hit here is a sampled call, the only kind this path pays for */
	if (count_calls && proc)
		__sync_fetch_and_add(&proc->calls_alloc, 1);
	/* every call here is a sample: the thread's state is created now if it has none */
	if (!thread_state_get()) {
		count(CULPERT_CNT_NO_STATE);
		return 0;
	}
	/*
	 * The bound on stack captures holds here too (a sampler at rate 1 fires
	 * for every call).  Throttled samples are unbiased in userspace from
	 * their size at the sampler's rate: Poisson byte sampling, as the
	 * contract's samplers do.
	 */
	keep = keep_prob(proc);
	if (keep < CULPERT_KEEP_ONE)
		culpert_throttle(size, sp, 0);
	if (!keep_draw(keep)) {
		count(CULPERT_CNT_THINNED);
		return 0;
	}
	if (!stack_token(proc)) {
		culpert_throttle(size, sp, keep);
		return 0;
	}
	id = culpert_emit_sample((bpf_user_pt_regs_t *)ctx, size, CULPERT_FN_OTEL, sp,
				 emit_how(proc, weight, keep));
	if (track_inuse && id)
		otel_track(id, ptr);
	return 0;
}

SEC("usdt")
int BPF_USDT(otel_alloc, __u64 ptr, __u64 size, __u64 weight)
{
	return handle_otel_alloc(ctx, ptr, size, weight);
}

/* attached only with --inuse: without a listener the sampler keeps no pointer at all */
SEC("usdt")
int BPF_USDT(otel_free, __u64 ptr)
{
	struct culpert_proc *proc;

	if (count_calls && (proc = proc_get()))
		__sync_fetch_and_add(&proc->calls_free, 1);
	inuse_free(ptr);
	return 0;
}

#endif /* CULPERT_OTEL_BPF_H */
