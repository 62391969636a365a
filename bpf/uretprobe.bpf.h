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

/*
 * Internals of kernel/events/uprobes.c, not an ABI: each read is checked
 * against the running kernel's BTF when the program loads (CO-RE), and a
 * kernel that renamed one loses only this repair of parked return
 * addresses (stacks through other tools' return probes then end at the
 * trampoline), not the programs.
 */
static __always_inline bool uprobe_internals_known(void)
{
	return bpf_core_field_exists(struct task_struct, utask) &&
	       bpf_core_field_exists(struct uprobe_task, return_instances) &&
	       bpf_core_field_exists(struct return_instance, stack) &&
	       bpf_core_field_exists(struct return_instance, orig_ret_vaddr) &&
	       bpf_core_field_exists(struct return_instance, next) &&
	       bpf_core_field_exists(struct mm_struct, uprobes_state) &&
	       bpf_core_field_exists(struct xol_area, vaddr);
}

/* "no trampoline known": an address no user stack slot holds, so comparing needs no branch */
#define CULPERT_NO_TRAMPOLINE (~0ULL)

/*
 * The uretprobe trampoline: where return probes park a hijacked return
 * address (0 while the task has no [uprobes] page); CULPERT_NO_TRAMPOLINE
 * on a kernel whose internals are unknown.  Inline on purpose: the guard
 * is a constant once loaded, and a call here from the span-pruning loop
 * multiplied the verifier's states.
 */
static __always_inline __u64 uretprobe_trampoline(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (!uprobe_internals_known())
		return CULPERT_NO_TRAMPOLINE;
	return BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
}

static __always_inline struct return_instance *first_return_instance(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (!uprobe_internals_known())
		return NULL;
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

	if (!ri || !uprobe_internals_known())
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
__noinline __u64 culpert_parked_return(__u64 slot)
{
	struct parked_ctx c = { .ri = first_return_instance(), .slot = slot };

	if (c.ri)
		bpf_loop(CULPERT_MAX_RETURN_INSTANCES, find_parked, &c, 0);
	return c.ret;
}

static __always_inline __u64 parked_return(__u64 slot)
{
	return culpert_parked_return(slot);
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
