/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What differs between x86-64 and arm64 at an allocator's entry: where the
 * return address is (the word at the stack pointer / the link register),
 * how far the stack pointer moves on return, which registers a CFI unwinder
 * needs, and how a caller's frame is found intact.  Everything else reads
 * registers through PT_REGS_* only.
 */
#ifndef CULPERT_ARCH_BPF_H
#define CULPERT_ARCH_BPF_H

#if defined(__TARGET_ARCH_arm64)

/* `ret` leaves sp where it was at entry: the return address never was on the stack */
#define ARCH_RET_SP_ADJUST	0

/* bl put the return address in lr (x30); nothing is on the stack yet */
static __always_inline __u64 entry_return(struct pt_regs *ctx, __u64 sp)
{
	return PT_REGS_RET(ctx);
}

static __always_inline void arch_copy_regs(struct pt_regs *ctx, struct culpert_regs *r)
{
	const struct user_pt_regs *u = (const struct user_pt_regs *)ctx;
	int i;

	r->ip = PT_REGS_IP(ctx);
	r->sp = PT_REGS_SP(ctx);
	r->lr = u->regs[30];
	r->fp = u->regs[29];
	for (i = 0; i < 10; i++)
		r->x19_28[i] = u->regs[19 + i];
}

/* the probe never moves past a register write on arm64 (docs/arm64.md): where the ABI has it */
static __always_inline __u64 entry_arg(struct pt_regs *ctx, __u64 cookie, __u32 i)
{
	return i == 0 ? PT_REGS_PARM1(ctx) : i == 1 ? PT_REGS_PARM2(ctx) : PT_REGS_PARM3(ctx);
}

/* frame records {x29, x30} followed from the inner call's x29 towards the outer entry */
#define ARCH_MAX_OUTER_RECORDS	4

static __always_inline bool is_return_of(__u64 val, __u64 outer_sp, __u64 outer_ret)
{
	return val == outer_ret ||
	       (val && val == uretprobe_trampoline() && parked_return(outer_sp) == outer_ret);
}

/*
 * Is the allocator call entered at `outer_sp` with return address
 * `outer_ret` still under way, seen from a later entry (ctx)?  A tail call
 * (b malloc) enters at the same sp with that call's lr restored.  A deeper
 * call: the outer one saved its lr in a frame record ({x29, x30}, stp x29,
 * x30, [sp, #-N]!) below outer_sp; allocator code keeps frame records
 * (GCC's aarch64 default), so the chain from the inner entry's x29 reaches
 * it within a few records.  A pending return probe may have parked the lr.
 */
static __always_inline bool outer_call_intact(struct pt_regs *ctx, __u64 outer_sp, __u64 outer_ret)
{
	__u64 fp = PT_REGS_FP(ctx), sp = PT_REGS_SP(ctx), lr;
	int i;

	if (sp == outer_sp)
		return is_return_of(PT_REGS_RET(ctx), outer_sp, outer_ret);
	for (i = 0; i < ARCH_MAX_OUTER_RECORDS; i++) {
		if (fp < sp || fp + 16 > outer_sp || (fp & 7))
			return false;
		lr = read_user_word(fp + 8);
		if (is_return_of(lr, outer_sp, outer_ret))
			return true;
		fp = read_user_word(fp);
	}
	return false;
}

#else /* x86-64 */

/* `ret` pops the return address: sp is one word above the entry's */
#define ARCH_RET_SP_ADJUST	8

/* call pushed the return address: the word at sp */
static __always_inline __u64 entry_return(struct pt_regs *ctx, __u64 sp)
{
	return read_user_word(sp);
}

static __always_inline void arch_copy_regs(struct pt_regs *ctx, struct culpert_regs *r)
{
	r->ip = PT_REGS_IP(ctx);
	r->sp = PT_REGS_SP(ctx);
	r->bp = ctx->bp;
	r->bx = ctx->bx;
	r->r12 = ctx->r12;
	r->r13 = ctx->r13;
	r->r14 = ctx->r14;
	r->r15 = ctx->r15;
}

/*
 * A general-purpose register by its x86-64 number.  Copied with constant
 * offsets first: a switch becomes one load at a computed offset into the
 * context, which the verifier refuses.
 */
static __always_inline __u64 reg_value(struct pt_regs *ctx, __u32 reg)
{
	__u64 r[16] = {
		ctx->ax, ctx->cx, ctx->dx, ctx->bx, 0, ctx->bp, ctx->si, ctx->di,
		ctx->r8, ctx->r9, ctx->r10, ctx->r11, ctx->r12, ctx->r13, ctx->r14, ctx->r15,
	};

	return r[reg & 15];
}

/*
 * Argument i (0..2) at an entry probe: where the ABI has it, or where the
 * instructions the probe was moved past copied it (CULPERT_PROBE_ARG_SHIFT)
 */
static __always_inline __u64 entry_arg(struct pt_regs *ctx, __u64 cookie, __u32 i)
{
	__u32 moved = (cookie >> (CULPERT_PROBE_ARG_SHIFT + CULPERT_PROBE_ARG_BITS * i)) & 0xf;

	/* no PT_REGS_PARMn shortcut: clang folds the choice into a computed context offset */
	return reg_value(ctx, (i == 0 ? 7 : i == 1 ? 6 : 2) ^ moved);
}

/* the outer call's return slot, at its entry's sp, still holds its return address */
static __always_inline bool outer_call_intact(struct pt_regs *ctx, __u64 outer_sp, __u64 outer_ret)
{
	return return_slot_holds(outer_sp, outer_ret);
}

#endif

#endif /* CULPERT_ARCH_BPF_H */
