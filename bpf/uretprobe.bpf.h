/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Return addresses parked by return probes.  A uretprobe (ours, another
 * culpert-bpf's on the same library, bpftrace's...) replaces its function's
 * return address on the user stack with the address of the trampoline in
 * the [uprobes] page until the function returns; the kernel keeps the real
 * one in the task's list of pending return instances, newest first, each
 * with the stack pointer at the function's entry: the address of the slot.
 */
#ifndef CULPERT_URETPROBE_BPF_H
#define CULPERT_URETPROBE_BPF_H

/* the kernel's MAX_URETPROBE_DEPTH: no task has more pending */
#define CULPERT_MAX_RETURN_INSTANCES 64

/* the uretprobe trampoline: where return probes park a hijacked return address */
static __always_inline __u64 uretprobe_trampoline(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
}

static __always_inline struct return_instance *first_return_instance(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return BPF_CORE_READ(task, utask, return_instances);
}

struct parked_ctx {
	struct return_instance *ri;
	__u64 slot;
	__u64 ret;
};

static long find_parked(__u32 i, void *data)
{
	struct parked_ctx *c = data;
	struct return_instance *ri = c->ri;	/* CO-RE reads need the kernel type itself */

	if (!ri)
		return 1;
	if (BPF_CORE_READ(ri, stack) == c->slot) {
		/* a chained instance (a tail call) holds the real address too */
		c->ret = BPF_CORE_READ(ri, orig_ret_vaddr);
		return 1;
	}
	c->ri = BPF_CORE_READ(ri, next);
	return 0;
}

/* the real return address of the frame whose return slot is at `slot`; 0 if none is parked */
static __always_inline __u64 parked_return(__u64 slot)
{
	struct parked_ctx c = { .ri = first_return_instance(), .slot = slot };

	if (c.ri)
		bpf_loop(CULPERT_MAX_RETURN_INSTANCES, find_parked, &c, 0);
	return c.ret;
}

/* `val`, read from the return slot at `slot`: the real address if a return probe parked it */
static __always_inline __u64 real_return(__u64 slot, __u64 val)
{
	__u64 parked;

	if (!val || val != uretprobe_trampoline())
		return val;
	parked = parked_return(slot);
	return parked ?: val;
}

/*
 * Does the return slot at `slot` still hold `want`, the address read there
 * at entry?  A return probe parking it meanwhile does not change that; the
 * common case (it does hold it) costs one user read.
 */
static __always_inline bool return_slot_holds(__u64 slot, __u64 want)
{
	__u64 val = read_user_word(slot);

	if (val == want)
		return true;
	return val == uretprobe_trampoline() && parked_return(slot) == want;
}

#endif /* CULPERT_URETPROBE_BPF_H */
