// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Process discovery for `culpert-bpf agent`: every exec on the machine, and
 * the forks and exits of the processes the agent tracks, as ring-buffer
 * records; the processes it is about to profile stopped until their probes
 * are in (docs/agent.md, "Pick-up at exec").  BTF tracepoints (tp_btf,
 * 5.5+) rather than classic ones: those need the tracepoint's id from
 * tracefs, which a fresh machine or a container often does not mount.  A
 * record that does not fit is counted; the agent's periodic /proc rescan
 * finds what it missed.
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

/*
 * Comms whose exec stops the process (SIGSTOP) until the agent has looked
 * at it: the names the agent's selectors give (docs/agent.md, "Pick-up at
 * exec").  Keys NUL-padded to DISCOVER_COMM_LEN, as bpf_get_current_comm()
 * writes them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, char[DISCOVER_COMM_LEN]);
	__type(value, __u8);
} hold_comms SEC(".maps");

/* tgids discover_entry stops once, at their program's entry point (userspace sizes it) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u8);
} hold_entry SEC(".maps");

/*
 * Every process stopped for the agent and not let go yet: tgid -> its
 * start (ns since boot).  A child of the agent holds it and lets them all
 * go if the agent dies (user/collect/holdwatch.c); no stop without its
 * entry here.  Userspace sizes it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} held_procs SEC(".maps");

/* records dropped because the ring buffer was full */
__u64 lost_events;

/* SIGSTOP: the same number on every architecture the agent runs on */
#define HOLD_SIGNAL 19

/* 6.13+; userspace loads discover_fork_hold only when the kernel has it */
extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) __ksym __weak;

/*
 * Stop the process of e (current, or task for a child not yet run) with
 * its entry in held_procs first, so a watchdog can always let it go
 */
static __always_inline void hold(struct discover_event *e, struct task_struct *task)
{
	__u32 tgid = e->tgid;
	__u64 start = e->start_boottime;

	if (bpf_map_update_elem(&held_procs, &tgid, &start, BPF_ANY))
		return;
	if (task ? !bpf_send_signal_task(task, HOLD_SIGNAL, PIDTYPE_TGID, 0) :
		   !bpf_send_signal(HOLD_SIGNAL))
		e->held = 1;
	else
		bpf_map_delete_elem(&held_procs, &tgid);
}

/* a record of task, not submitted yet (held 0); NULL, counted, when the ring is full */
static __always_inline struct discover_event *fill(__u32 kind, struct task_struct *task,
						   __u32 parent_tgid)
{
	struct discover_event *e;

	e = bpf_ringbuf_reserve(&discover_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost_events, 1);
		return NULL;
	}
	e->kind = kind;
	e->tgid = BPF_CORE_READ(task, tgid);
	e->parent_tgid = parent_tgid;
	e->held = 0;
	/* the leader's: what /proc/PID/stat reports as the process's start */
	e->start_boottime = BPF_CORE_READ(task, group_leader, start_boottime);
	/* an event read late may be older than what /proc shows by then */
	e->time_boottime = bpf_ktime_get_boot_ns();
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	return e;
}

static __always_inline bool is_tracked(__u32 tgid)
{
	return bpf_map_lookup_elem(&tracked_tgids, &tgid) != NULL;
}

/*
 * After de_thread(): p is the leader, with the process's tgid and start
 * time, and the current task.  A comm the selectors name is stopped before
 * its first instruction: the signal is taken on the way back to user space.
 * Only with its record in the ring, so the agent always learns of a stop.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(discover_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	char comm[DISCOVER_COMM_LEN];
	struct discover_event *e;

	e = fill(DISCOVER_EXEC, p, 0);
	if (!e)
		return 0;
	bpf_get_current_comm(comm, sizeof(comm));
	if (bpf_map_lookup_elem(&hold_comms, comm))
		hold(e, NULL);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline void on_fork(struct task_struct *parent, struct task_struct *child,
				    bool want_hold)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	struct discover_event *e;

	if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid) || !is_tracked(ptgid))
		return;
	e = fill(DISCOVER_FORK, child, ptgid);
	if (!e)
		return;
	/*
	 * The child has not run yet: stopped, it runs its first instruction
	 * probed.  Not a vfork()/posix_spawn() child, which shares its parent's
	 * memory only to exec: its parent waits for it, and its exec is seen.
	 */
	if (want_hold && BPF_CORE_READ(child, mm) != BPF_CORE_READ(parent, mm))
		hold(e, child);
	bpf_ringbuf_submit(e, 0);
}

/* a pre-forking server's workers run the same program without an exec */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(discover_fork, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child, false);
	return 0;
}

/* the same, the child held until the agent has attached to it (bpf_send_signal_task) */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(discover_fork_hold, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child, true);
	return 0;
}

/*
 * A uprobe on a held process's entry point (attached per pid by the agent):
 * its libraries are mapped and relocated by then, its main not run.  Once:
 * the entry in hold_entry goes with the first hit.
 */
SEC("uprobe")
int discover_entry(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct discover_event *e;

	if (bpf_map_delete_elem(&hold_entry, &tgid))
		return 0;
	e = fill(DISCOVER_ENTRY, (struct task_struct *)bpf_get_current_task(), 0);
	if (!e)
		return 0;
	hold(e, NULL);
	bpf_ringbuf_submit(e, 0);
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
	struct discover_event *e;

	if (!is_tracked(BPF_CORE_READ(p, tgid)) || BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	e = fill(DISCOVER_EXIT, p, 0);
	if (e)
		bpf_ringbuf_submit(e, 0);
	return 0;
}
