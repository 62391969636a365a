/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every program shares: the per-thread state (byte countdown, nesting
 * guard, open spans), the ring buffer, and the counters.
 */
#ifndef CULPERT_STATE_BPF_H
#define CULPERT_STATE_BPF_H

/*
 * What every allocator call touches, in a plain array indexed by thread id:
 * its lookup is inlined, where task storage costs two helper calls -- about
 * 30 ns of the ~80 ns a call spends in BPF (measured with bpf_stats).  A
 * slot remembers its thread; a thread finding another's id takes the slot
 * over with a fresh countdown.  Two threads whose ids collide modulo
 * CULPERT_HOT_SLOTS then take turns: every turn is a fresh exponential draw,
 * so sampling stays unbiased (the draw is memoryless); only a nesting guard
 * can be lost, counting an inner allocator call of such a thread twice.
 */
#define CULPERT_HOT_SLOTS (1 << 16)

struct hot_state {
	__u32 tid;		/* owner of the slot */
	__u32 epoch;		/* owners so far: exact totals tell a slot taken over (totals.bpf.h) */
	__s64 countdown;	/* bytes left until the next sample */
	__u64 guard_sp;		/* stack pointer at entry of an open outer allocator call */
	__u64 guard_ret;	/* the return address stored there */
	__u64 guard_ip;		/* the entry point that call went to */
	/*
	 * --inuse: the sampled call whose return is awaited.  Here rather
	 * than in task storage: every allocator entry checks it (a call at
	 * or above its stack pointer proves it over) and exit probes on hot
	 * return instructions look it up.
	 */
	__u64 pending_id;
	__u64 pending_sp;	/* its stack pointer at entry: the return slot */
	__u64 pending_memptr;	/* posix_memalign: where the pointer will be stored */
	__u32 pending_flags;	/* its probe's CULPERT_PROBE_F_* */
	__u32 pad2;
	__u64 deleg_sp;		/* CULPERT_PROBE_F_DELEGATE: entry sp of the nested call giving its result */
	/* why a profile is empty: calls and bytes seen (last member, see culpert.h) */
	struct culpert_calls_seen seen;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CULPERT_HOT_SLOTS);
	__type(key, __u32);
	__type(value, struct hot_state);
} hot_states SEC(".maps");

/* the rest of a thread's state, in task storage: freed with the thread */
struct thread_state {
	__u32 span_depth;	/* spans kept in spans[] */
	__u32 span_overflow;	/* spans open beyond CULPERT_MAX_SPAN_DEPTH */
	struct culpert_span_frame spans[CULPERT_MAX_SPAN_DEPTH];
	__u64 span_sp[CULPERT_MAX_SPAN_DEPTH];	/* function spans: stack pointer at entry */
	__u64 span_ret[CULPERT_MAX_SPAN_DEPTH];	/* function spans: the return address there */
	/* exact totals (totals.bpf.h): each open span's, and the hot-state totals last charged */
	struct culpert_span_tally tally[CULPERT_MAX_SPAN_DEPTH];
	__u64 mark_bytes;
	__u64 mark_calls;
	__u32 mark_epoch;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} thread_states SEC(".maps");

/*
 * Records are assembled here, one buffer per CPU, then only their used part
 * is copied to the ring buffer.  An array indexed by CPU rather than a
 * per-CPU map: per-CPU values stop at 32 KiB, a record with a stack copy
 * does not.  Uprobe programs run with migration disabled but can be
 * preempted: `busy` keeps a second thread on the same CPU from writing into
 * a half-built record (its sample is counted as lost instead).
 */
struct event_buf {
	__u32 busy;
	__u32 pad;
	/* a page of slack: the verifier bounds each write, not their sum */
	__u8 bytes[CULPERT_EVENT_MAX + 4096];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* set to the number of possible CPUs by userspace */
	__type(key, __u32);
	__type(value, struct event_buf);
} event_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);	/* resized by userspace (--ringbuf-size) */
} events SEC(".maps");

/* ring bytes pending above which a record wakes the reader (a quarter of the ring) */
const volatile __u64 wakeup_bytes = 1 << 20;

/*
 * The reader polls every 100 ms anyway: wake it only when the ring fills,
 * not for every record (each wakeup costs the target an irq_work and the
 * wakeup of a task, more than the sample itself).
 */
static __always_inline __u64 ringbuf_wakeup(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
		       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CULPERT_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct culpert_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CULPERT_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct culpert_alloc_text);
} alloc_text SEC(".maps");

/* tgid -> 1 once every probe of the process is live (see spans_armed()) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CULPERT_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} armed_procs SEC(".maps");

__u64 next_sample_id;

/* the calling process's state; NULL for one userspace did not register */
static __always_inline struct culpert_proc *proc_get(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return bpf_map_lookup_elem(&procs, &tgid);
}

/*
 * Rare events only: a shared atomic add is cheaper than a per-CPU map
 * lookup.  A global function, so the verifier checks it once rather than
 * at each of its call sites in every program (which doubled load times).
 */
__noinline int culpert_count(__u32 c)
{
	struct culpert_proc *p = proc_get();

	if (p && c < CULPERT_CNT__MAX)
		__sync_fetch_and_add(&p->counters[c], 1);
	return 0;
}

static __always_inline void count(enum culpert_counter c)
{
	culpert_count(c);
}

/*
 * Spans are tracked once every probe of the process is live: span_enter
 * sites firing while span_exit sites were still being attached would push
 * spans never popped (a stack overflowing within seconds, a dead span
 * becoming the root of everything).
 */
static __always_inline bool spans_armed(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return bpf_map_lookup_elem(&armed_procs, &tgid) != NULL;
}

static __always_inline __u64 read_user_word(__u64 addr)
{
	__u64 val = 0;

	bpf_probe_read_user(&val, sizeof(val), (void *)addr);
	return val;
}

/*
 * Exponential variates with mean `rate`, filled by userspace after load and
 * before attach (no floating point here).  In .bss rather than .rodata so
 * the 128 KiB table does not sit in the object file as zeroes.
 */
__s64 exp_table[CULPERT_EXP_TABLE_SIZE];

static __always_inline __s64 draw_countdown(void)
{
	return exp_table[bpf_get_prandom_u32() & (CULPERT_EXP_TABLE_SIZE - 1)];
}

static __always_inline struct thread_state *thread_state_get(void)
{
	return bpf_task_storage_get(&thread_states, bpf_get_current_task_btf(), NULL,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* a thread's state only if it has one: for probes with nothing to record on a new thread */
static __always_inline struct thread_state *thread_state_find(void)
{
	return bpf_task_storage_get(&thread_states, bpf_get_current_task_btf(), NULL, 0);
}

static __always_inline struct hot_state *hot_state_get(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), slot = tid & (CULPERT_HOT_SLOTS - 1);
	struct hot_state *hs = bpf_map_lookup_elem(&hot_states, &slot);

	if (hs && hs->tid != tid) {
		/* a new thread, or another one's turn: a fresh draw, not a full interval */
		hs->tid = tid;
		hs->epoch++;
		hs->countdown = draw_countdown();
		hs->guard_sp = 0;
		/* the other thread's awaited return is lost with its slot: counted */
		if (hs->pending_id)
			count(CULPERT_CNT_RET_UNSEEN);
		hs->pending_id = 0;
	}
	return hs;
}

/* this thread's slot only if it holds this thread: for probes that must not take one over */
static __always_inline struct hot_state *hot_state_find(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), slot = tid & (CULPERT_HOT_SLOTS - 1);
	struct hot_state *hs = bpf_map_lookup_elem(&hot_states, &slot);

	return hs && hs->tid == tid ? hs : NULL;
}

#endif /* CULPERT_STATE_BPF_H */
