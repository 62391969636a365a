// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-kernel allocation sampler.
 *
 * Every allocator entry point gets a uprobe.  Each thread keeps a countdown
 * of bytes to its next sample (a Poisson process over allocated bytes);
 * only the allocation that crosses zero pays for a stack walk and a ring
 * buffer record, every other call costs an array lookup by thread id and a
 * subtraction.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "culpert.h"
#include "state.bpf.h"
#include "uretprobe.bpf.h"
#include "arch.bpf.h"
#include "totals.bpf.h"
#include "spans.bpf.h"
#include "inuse.bpf.h"
#include "dwarf.bpf.h"
#include "throttle.bpf.h"
#include "sampler.bpf.h"
#include "otel.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Every allocator entry point, whatever its argument layout: the cookie
 * carries the entry's kind (which arguments are the size) and the probe's
 * flags.  One program rather than one per layout: the verifier checks the
 * sample path anew for each program, ~150 ms each with --unwind dwarf, and
 * attach waited for seven of them; the kind costs a switch on the hot path.
 * The return value only matters to sessions.
 */
SEC("uprobe")
int alloc_enter(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);

	return handle_alloc(ctx, (__u32)(cookie & CULPERT_PROBE_FN_MASK), cookie) ? 0 : 1;
}

SEC("uprobe")
int free_enter(struct pt_regs *ctx)
{
	struct culpert_proc *p;

	if (count_calls && (p = proc_get())) {
		__sync_fetch_and_add(&p->calls_free, 1);
		if (bpf_get_attach_cookie(ctx) & CULPERT_PROBE_F_STEPPED)
			__sync_fetch_and_add(&p->calls_free_stepped, 1);
	}
	inuse_free(entry_arg(ctx, bpf_get_attach_cookie(ctx), 0));
	return 0;
}

/* --inuse where the kernel has uprobe sessions: the return runs only for sampled calls */
extern bool bpf_session_is_return(void) __ksym __weak;

SEC("uprobe")
int alloc_session(struct pt_regs *ctx)
{
	__u64 cookie;

	if (bpf_session_is_return())
		return handle_alloc_return(ctx);
	cookie = bpf_get_attach_cookie(ctx);
	return handle_alloc(ctx, (__u32)(cookie & CULPERT_PROBE_FN_MASK), cookie) ? 0 : 1;
}

/* --inuse elsewhere (or --no-session): a return probe on every call */
SEC("uretprobe")
int alloc_exit(struct pt_regs *ctx)
{
	return handle_alloc_return(ctx);
}

/* --inuse: a return instruction of an entry point exceptions unwind through (operator new) */
SEC("uprobe")
int alloc_exit_point(struct pt_regs *ctx)
{
	return handle_alloc_exit(ctx);
}

/* ... or the branch before it, where the kernel emulates the probed instruction */
SEC("uprobe")
int alloc_exit_hoist(struct pt_regs *ctx)
{
	return handle_alloc_exit_hoisted(ctx, bpf_get_attach_cookie(ctx));
}

SEC("usdt")
int BPF_USDT(span_enter, __u64 id, __u64 parent_id, const char *name, __u64 name_len)
{
	return handle_span_enter(ctx, id, parent_id, name, name_len);
}

SEC("usdt")
int BPF_USDT(span_exit, __u64 id)
{
	return handle_span_exit(id);
}

/*
 * --span-fn: an entry probe, and plain uprobes on the function's return
 * instructions.  Never a return probe: the function may call back into
 * code that throws (qsort's comparator, an event loop's handler), and an
 * exception cannot unwind through a replaced return address.
 */
SEC("uprobe")
int span_fn_enter(struct pt_regs *ctx)
{
	handle_fn_span_enter(ctx);
	return 0;
}

SEC("uprobe")
int span_fn_exit(struct pt_regs *ctx)
{
	return handle_fn_span_exit(ctx);
}

/*
 * An exec of a registered process ends its capture (the probes were on the old program's code).
 * Noted here rather than found in /proc: a program exec'd and gone between
 * two polls of the reader would leave no trace there.  A BTF tracepoint
 * (raw_tp with BTF, 5.5+) rather than a classic one: attaching those needs
 * the tracepoint's id from tracefs, which a fresh machine or a container
 * often does not mount.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(target_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct culpert_proc *proc = proc_get();

	if (proc)
		proc->execed = 1;
	return 0;
}

/*
 * Exact totals of spans that never close (bpf/totals.bpf.h): a thread of a
 * target exiting inside spans, and at the end of the capture every thread
 * still inside one (userspace runs the task iterator once, after detaching).
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(totals_thread_exit, struct task_struct *p)
{
	struct thread_state *ts = thread_state_find();

	if (ts)
		totals_abandon(ts, hot_state_find(), bpf_get_current_pid_tgid() >> 32);
	return 0;
}

SEC("iter/task")
int totals_open_spans(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct thread_state *ts;
	struct hot_state *hs;
	__u32 tid, slot;

	if (!task)
		return 0;
	ts = bpf_task_storage_get(&thread_states, task, NULL, 0);
	if (!ts)
		return 0;
	tid = task->pid;
	slot = tid & (CULPERT_HOT_SLOTS - 1);
	hs = bpf_map_lookup_elem(&hot_states, &slot);
	totals_abandon(ts, hs && hs->tid == tid ? hs : NULL, task->tgid);
	return 0;
}
