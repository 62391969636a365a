// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Process discovery for `culpert-bpf agent`: every exec on the machine, and
 * the forks and exits of the processes the agent tracks, as ring-buffer
 * records.  BTF tracepoints (tp_btf, 5.5+) rather than classic ones: those
 * need the tracepoint's id from tracefs, which a fresh machine or a
 * container often does not mount.  A record that does not fit is counted;
 * the agent's periodic /proc rescan finds what it missed.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "discover_event.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DISCOVER_RINGBUF_BYTES);
} discover_events SEC(".maps");

/* tgids the agent tracks (userspace sizes it to --max-targets): only theirs fork and exit */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u8);
} tracked_tgids SEC(".maps");

/* records dropped because the ring buffer was full */
__u64 lost_events;

static __always_inline void emit(__u32 kind, struct task_struct *task, __u32 parent_tgid)
{
	struct discover_event *e;

	e = bpf_ringbuf_reserve(&discover_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost_events, 1);
		return;
	}
	e->kind = kind;
	e->tgid = BPF_CORE_READ(task, tgid);
	e->parent_tgid = parent_tgid;
	e->pad = 0;
	/* the leader's: what /proc/PID/stat reports as the process's start */
	e->start_boottime = BPF_CORE_READ(task, group_leader, start_boottime);
	/* an event read late may be older than what /proc shows by then */
	e->time_boottime = bpf_ktime_get_boot_ns();
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	bpf_ringbuf_submit(e, 0);
}

static __always_inline bool is_tracked(__u32 tgid)
{
	return bpf_map_lookup_elem(&tracked_tgids, &tgid) != NULL;
}

/* after de_thread(): p is the leader, with the process's tgid and start time */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(discover_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	emit(DISCOVER_EXEC, p, 0);
	return 0;
}

/* a pre-forking server's workers run the same program without an exec */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(discover_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);

	if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid) || !is_tracked(ptgid))
		return 0;
	emit(DISCOVER_FORK, child, ptgid);
	return 0;
}

/*
 * Once per thread; the process is gone when the last one leaves.  do_exit()
 * decrements signal->live before this tracepoint, on every kernel (6.16
 * added a group_dead argument; older ones have only the task).
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(discover_exit, struct task_struct *p)
{
	if (!is_tracked(BPF_CORE_READ(p, tgid)) || BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	emit(DISCOVER_EXIT, p, 0);
	return 0;
}
