/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --unwind dwarf: for sampled allocations only, the registers at the
 * allocator's entry and the top of the user stack go into the record;
 * userspace unwinds them with the objects' CFI (user/unwind.c).
 */
#ifndef CULPERT_DWARF_BPF_H
#define CULPERT_DWARF_BPF_H

/* --unwind dwarf, or some process may need it (the agent): the copy is loaded, culpert_proc says who */
const volatile bool unwind_dwarf;
/* --stack-size, <= CULPERT_MAX_STACK_COPY */
const volatile __u32 stack_copy_bytes = CULPERT_DEFAULT_STACK_COPY;

#define PAGE_BYTES 4096

struct stack_copy {
	__u8 *dst;
	__u64 sp;
	__u32 copied;
};

/*
 * One piece, up to the next page boundary: a single read of the whole
 * range fails as a whole when the stack's top is nearer than the limit
 * (a main thread's shallow stack), and every byte up to the outermost
 * frame matters to the unwinder.
 */
static long copy_piece(__u32 i, void *data)
{
	struct stack_copy *c = data;
	__u32 copied = c->copied, chunk;
	__u64 at = c->sp + copied;

	if (copied >= stack_copy_bytes || copied > CULPERT_MAX_STACK_COPY)
		return 1;
	chunk = PAGE_BYTES - (at & (PAGE_BYTES - 1));
	if (chunk > stack_copy_bytes - copied)
		chunk = stack_copy_bytes - copied;
	if (chunk > PAGE_BYTES)
		return 1;
	if (bpf_probe_read_user(c->dst + copied, chunk, (void *)at))
		return 1;
	c->copied = copied + chunk;
	return 0;
}

struct unhijack_ctx {
	struct return_instance *ri;
	__u8 *dst;
	__u64 sp;
	__u64 tramp;
	__u32 copied;
	__u32 word;		/* arm64: words searched below the current instance's entry sp */
};

#if defined(__TARGET_ARCH_arm64)
/* below an instance's entry sp, how far its function's frame record may lie */
#define UNHIJACK_SCAN_WORDS	64
#define UNHIJACK_STEPS		(CULPERT_MAX_RETURN_INSTANCES * UNHIJACK_SCAN_WORDS)

/*
 * arm64: the parked address was in lr, and the function stored lr in its
 * frame record, below its entry sp (the instance's `stack`): at the bottom
 * of a small frame (stp x29, x30, [sp, #-N]!, N <= 504) or at the top of a
 * large one.  Newest instance first, so the first trampoline below an
 * instance's sp is its own: those of deeper frames are already restored.
 */
static long unhijack_one(__u32 i, void *data)
{
	struct unhijack_ctx *c = data;
	struct return_instance *ri = c->ri;	/* CO-RE reads need the kernel type itself */
	__u64 at, off, *slot;

	if (!ri || !uprobe_internals_known())
		return 1;
	at = BPF_CORE_READ(ri, stack) - 8 * (__u64)(c->word + 1);
	off = at - c->sp;
	if (at >= c->sp && off + 8 <= c->copied && off < CULPERT_MAX_STACK_COPY) {
		slot = (__u64 *)(c->dst + (off & (CULPERT_MAX_STACK_COPY - 1)));
		if (*slot == c->tramp) {
			*slot = BPF_CORE_READ(ri, orig_ret_vaddr);
			c->word = UNHIJACK_SCAN_WORDS;
		}
	}
	if (++c->word < UNHIJACK_SCAN_WORDS && at > c->sp)
		return 0;
	c->word = 0;
	c->ri = BPF_CORE_READ(ri, next);
	return 0;
}
#else
#define UNHIJACK_STEPS		CULPERT_MAX_RETURN_INSTANCES

static long unhijack_one(__u32 i, void *data)
{
	struct unhijack_ctx *c = data;
	struct return_instance *ri = c->ri;	/* CO-RE reads need the kernel type itself */
	__u64 at, off, *slot;

	if (!ri || !uprobe_internals_known())
		return 1;
	at = BPF_CORE_READ(ri, stack);
	off = at - c->sp;
	if (at >= c->sp && off + 8 <= c->copied && off < CULPERT_MAX_STACK_COPY) {
		slot = (__u64 *)(c->dst + (off & (CULPERT_MAX_STACK_COPY - 1)));
		/* the newest of chained instances restores the slot; the others see it done */
		if (*slot == c->tramp)
			*slot = BPF_CORE_READ(ri, orig_ret_vaddr);
	}
	c->ri = BPF_CORE_READ(ri, next);
	return 0;
}
#endif

/*
 * A pending return probe (another tool's uretprobe, culpert's own on an
 * allocator no exception unwinds through) parks the trampoline's address
 * in its function's return slot (arm64: its frame record's lr), and the
 * trampoline has no CFI: the unwinder would stop there.  The kernel's
 * return instances say what each slot held, so the copy gets it back.
 */
static __always_inline void unhijack(__u8 *dst, __u64 sp, __u32 copied)
{
	struct unhijack_ctx c = { .ri = first_return_instance(), .dst = dst, .sp = sp,
				  .copied = copied };

	if (!c.ri)
		return;
	c.tramp = uretprobe_trampoline();
	if (c.tramp == CULPERT_NO_TRAMPOLINE)
		return;
	bpf_loop(UNHIJACK_STEPS, unhijack_one, &c, 0);
}

/* registers and stack into the record at dst; returns the bytes of stack copied */
static __always_inline __u32 copy_dwarf_state(struct pt_regs *ctx, struct culpert_alloc_event *e,
					      __u8 *dst)
{
	struct stack_copy c = { .dst = dst, .sp = PT_REGS_SP(ctx) };

	arch_copy_regs(ctx, &e->regs);
	bpf_loop(CULPERT_MAX_STACK_COPY / PAGE_BYTES + 1, copy_piece, &c, 0);
	unhijack(dst, c.sp, c.copied);
	return c.copied;
}

#endif /* CULPERT_DWARF_BPF_H */
