/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --inuse: the pointers of sampled allocations, captured when the call
 * returns, live in a bounded hash until freed.  Only a free of a tracked
 * pointer produces a record; every other free costs one hash lookup.
 */
#ifndef CULPERT_INUSE_BPF_H
#define CULPERT_INUSE_BPF_H

struct live_alloc {
	__u64 id;			/* of the sample's culpert_alloc_event */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* only sampled blocks go in: allocate entries as they come */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 20);	/* resized by userspace (--max-live) */
	__type(key, struct culpert_live_key);
	__type(value, struct live_alloc);
} live_allocs SEC(".maps");

static __always_inline void emit_free(__u64 id)
{
	struct culpert_free_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		/* the block will look live until the end: counted, never silent */
		count(CULPERT_CNT_LOST_FREE);
		return;
	}
	e->kind = CULPERT_EV_FREE;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->id = id;
	bpf_ringbuf_submit(e, ringbuf_wakeup());
}

static __always_inline void live_key(struct culpert_live_key *k, __u64 ptr)
{
	k->tgid = bpf_get_current_pid_tgid() >> 32;
	k->pad = 0;
	k->ptr = ptr;
}

static __always_inline void inuse_free(__u64 ptr)
{
	struct culpert_live_key k;
	struct live_alloc *a;

	if (!ptr)
		return;
	live_key(&k, ptr);
	a = bpf_map_lookup_elem(&live_allocs, &k);
	if (!a)
		return;
	emit_free(a->id);
	bpf_map_delete_elem(&live_allocs, &k);
}

static __always_inline void emit_ret(__u64 id, __u64 ptr, bool tracked)
{
	struct culpert_ret_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(CULPERT_CNT_LOST_RET);
		return;
	}
	e->kind = CULPERT_EV_ALLOC_RET;
	e->tracked = tracked;
	e->id = id;
	e->ptr = ptr;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->pad = 0;
	bpf_ringbuf_submit(e, ringbuf_wakeup());
}

/* the sampled call awaited in hs returned `ret`: track the block it got */
static __always_inline void inuse_returned(struct hot_state *hs, __u64 ret)
{
	struct live_alloc val = { .id = hs->pending_id };
	struct culpert_live_key k;
	__u64 ptr = ret;
	bool tracked = false;

	if (hs->pending_memptr)
		ptr = ret ? 0 : read_user_word(hs->pending_memptr);
	hs->pending_id = 0;
	if (ptr) {
		/* a block we still hold at this address was freed where we could not see it */
		inuse_free(ptr);
		live_key(&k, ptr);
		tracked = !bpf_map_update_elem(&live_allocs, &k, &val, BPF_NOEXIST);
		if (!tracked)
			count(CULPERT_CNT_LIVE_FULL);
	}
	emit_ret(val.id, ptr, tracked);
}

/*
 * A return probe (uprobe session, or uretprobe on every call) of an entry
 * point no exception can unwind through.  Only the return from the
 * sampled call's own frame counts: the stack pointer is back at the
 * entry's, plus the return slot x86's ret popped (ARCH_RET_SP_ADJUST; an
 * inner, nested call returns first, deeper in the stack).
 */
static __always_inline int handle_alloc_return(struct pt_regs *ctx)
{
	/* a thread without a slot has no sampled call pending: do not take one */
	struct hot_state *hs = hot_state_find();
	__u64 sp = PT_REGS_SP(ctx), ret = PT_REGS_RC(ctx);

	if (!hs || !hs->pending_id)
		return 0;
	if (sp == hs->pending_sp + ARCH_RET_SP_ADJUST) {
		inuse_returned(hs, ret);
	} else if (hs->deleg_sp && sp == hs->deleg_sp + ARCH_RET_SP_ADJUST) {
		/* NULL: operator new calls the new_handler and tries again, or throws */
		hs->deleg_sp = 0;
		if (ret)
			inuse_returned(hs, ret);
	}
	return 0;
}

/*
 * A plain uprobe on a return instruction of an entry point an exception
 * can unwind through (or of code it tail-calls): about to return, the
 * stack pointer is the entry's (x86: at the return slot; arm64: ret
 * leaves it alone), the value in the return register.
 */
static __always_inline int handle_alloc_exit(struct pt_regs *ctx)
{
	struct hot_state *hs = hot_state_find();

	if (hs && hs->pending_id && PT_REGS_SP(ctx) == hs->pending_sp)
		inuse_returned(hs, PT_REGS_RC(ctx));
	return 0;
}

#if defined(__TARGET_ARCH_x86)
/* would a jcc of condition code cc jump, with these flags?  (x86 EFLAGS) */
static __always_inline bool jcc_taken(__u64 flags, __u32 cc)
{
	bool cf = flags & 0x1, pf = flags & 0x4, zf = flags & 0x40, sf = flags & 0x80;
	bool of = flags & 0x800, r;

	switch (cc >> 1) {
	case 0: r = of; break;			/* jo */
	case 1: r = cf; break;			/* jb */
	case 2: r = zf; break;			/* je */
	case 3: r = cf || zf; break;		/* jbe */
	case 4: r = sf; break;			/* js */
	case 5: r = pf; break;			/* jp */
	case 6: r = sf != of; break;		/* jl */
	default: r = zf || sf != of; break;	/* jle */
	}
	/* odd condition codes are the negations */
	return (cc & 1) ? !r : r;
}

/*
 * An exit hoisted to a branch before a return instruction (culpert.h,
 * CULPERT_HOIST_*): the way the branch goes decides whether the call ends
 * in the stretch after it, and where the result is and the return slot
 * are then.
 */
static __always_inline int handle_alloc_exit_hoisted(struct pt_regs *ctx, __u64 cookie)
{
	struct hot_state *hs = hot_state_find();
	bool taken = true;
	__u32 spec, reg;
	__s64 slots;

	if (!hs || !hs->pending_id)
		return 0;
	if (cookie & CULPERT_HOIST_COND)
		taken = jcc_taken(ctx->flags, (__u32)(cookie & 0xf));
	spec = (__u32)(taken ? cookie >> 8 : cookie >> 32) & 0xffff;
	if (!(spec & 1))
		return 0;
	reg = (spec >> 1) & 0x1f;
	slots = (__s8)(spec >> 8);
	if (PT_REGS_SP(ctx) + slots * 8 != hs->pending_sp)
		return 0;
	inuse_returned(hs, reg == CULPERT_REG_ZERO ? 0 : reg_value(ctx, reg));
	return 0;
}
#else
/*
 * arm64 exits stay on their return instructions (user/probe/exits.c): the
 * kernel simulates ret there, so there is nothing to gain by moving them,
 * and this program is never attached.
 */
static __always_inline int handle_alloc_exit_hoisted(struct pt_regs *ctx, __u64 cookie)
{
	return 0;
}
#endif

#endif /* CULPERT_INUSE_BPF_H */
