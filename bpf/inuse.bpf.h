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
	__type(key, __u64);
	__type(value, struct live_alloc);
} live_allocs SEC(".maps");

/* kernels without uprobe sessions: a return probe runs for every call */
const volatile bool return_every_call;

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
	e->pad = 0;
	e->id = id;
	bpf_ringbuf_submit(e, ringbuf_wakeup());
}

static __always_inline void inuse_free(__u64 ptr)
{
	struct live_alloc *a;

	if (!ptr)
		return;
	a = bpf_map_lookup_elem(&live_allocs, &ptr);
	if (!a)
		return;
	emit_free(a->id);
	bpf_map_delete_elem(&live_allocs, &ptr);
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
	bpf_ringbuf_submit(e, ringbuf_wakeup());
}

/*
 * The return of a sampled call.  With a return probe on every call, only
 * the return from the sampled call's own frame counts (an inner, nested
 * allocator call returns first, deeper in the stack).
 */
static __always_inline int handle_alloc_return(struct pt_regs *ctx)
{
	/* a thread without state has no sampled call pending: do not make one */
	struct thread_state *ts = thread_state_find();
	struct live_alloc val;
	__u64 ptr;
	bool tracked = false;

	if (!ts || !ts->pending_id)
		return 0;
	/* x86's ret popped the return address: sp is one word above the entry's */
	if (return_every_call && PT_REGS_SP(ctx) != ts->pending_sp + ARCH_RET_SP_ADJUST)
		return 0;
	ptr = PT_REGS_RC(ctx);
	if (ts->pending_memptr)
		ptr = ptr ? 0 : read_user_word(ts->pending_memptr);
	val.id = ts->pending_id;
	ts->pending_id = 0;
	if (ptr) {
		/* a block we still hold at this address was freed where we could not see it */
		inuse_free(ptr);
		tracked = !bpf_map_update_elem(&live_allocs, &ptr, &val, BPF_NOEXIST);
		if (!tracked)
			count(CULPERT_CNT_LIVE_FULL);
	}
	emit_ret(val.id, ptr, tracked);
	return 0;
}

#endif /* CULPERT_INUSE_BPF_H */
