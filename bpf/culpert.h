/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one header shared by the BPF programs and userspace.
 *
 * No includes: the BPF side gets the __u* types from vmlinux.h, userspace
 * from <linux/types.h>.  Fixed-width types only, no pointers, explicit
 * padding, so both compilers agree on every offset.
 */
#ifndef CULPERT_H
#define CULPERT_H

/* frames kept per sample; bpf_get_stack() stops at kernel.perf_event_max_stack (127) anyway */
#define CULPERT_MAX_FRAMES		128
/* exponential variates for the byte countdown; power of two, indexed by a random mask */
#define CULPERT_EXP_TABLE_SHIFT		14
#define CULPERT_EXP_TABLE_SIZE		(1U << CULPERT_EXP_TABLE_SHIFT)
/* objects whose code counts as "inside the allocator" (an allocator plus prefixed families) */
#define CULPERT_MAX_ALLOC_OBJS		4
/* open spans kept per thread; deeper ones are counted, attributed to the deepest kept */
#define CULPERT_MAX_SPAN_DEPTH		32
/* span name bytes kept (docs/spans.md: at most 127) */
#define CULPERT_SPAN_NAME_MAX		127
/* distinct span names; more are counted and shown as "(unnamed span)" */
#define CULPERT_MAX_SPAN_NAMES		16384

/* record kinds in the ring buffer; the first __u32 of every record */
enum culpert_event_kind {
	CULPERT_EV_ALLOC = 1,		/* a sampled allocation: struct culpert_alloc_event */
	CULPERT_EV_ALLOC_RET,		/* --inuse: what it returned: struct culpert_ret_event */
	CULPERT_EV_FREE,		/* --inuse: a tracked block was freed: struct culpert_free_event */
	CULPERT_EV_SPAN_NAME,		/* a span name the kernel could not read: struct culpert_name_event */
};

/*
 * Which entry point fired; selects how the size is read from the arguments.
 * Userspace passes it as the BPF cookie of each probe.
 */
enum culpert_fn {
	CULPERT_FN_MALLOC = 1,		/* (size): malloc, valloc, operator new, mallocx, ... */
	CULPERT_FN_CALLOC,		/* (nmemb, size) */
	CULPERT_FN_REALLOC,		/* (ptr, size): realloc, rallocx */
	CULPERT_FN_REALLOCARRAY,	/* (ptr, nmemb, size) */
	CULPERT_FN_POSIX_MEMALIGN,	/* (memptr, align, size) */
	CULPERT_FN_MEMALIGN,		/* (align, size): memalign, aligned_alloc */
	CULPERT_FN_PVALLOC,		/* (size), rounded up to a page */
	CULPERT_FN_FREE,		/* (ptr, ...): free, sdallocx, mi_free, operator delete, ... */
	CULPERT_FN__MAX,
	/*
	 * Not an entry point (no program, no cookie): a sample an in-process
	 * sampler reported through otel_memory:alloc (bpf/otel.bpf.h), with
	 * its own weight and no return address to put back.
	 */
	CULPERT_FN_OTEL = 32,
};

/* an allocator probe's BPF cookie: enum culpert_fn in the low 16 bits, CULPERT_PROBE_F_* above */
#define CULPERT_PROBE_FN_MASK		0xffffU
/* the entry point calls no other probed one, so it need not guard against nested calls */
#define CULPERT_PROBE_F_LEAF		(1U << 16)
/*
 * An exception can unwind through the entry point (operator new): its
 * return address is never replaced; plain uprobes on its return
 * instructions (alloc_exit_point) see what it returned.
 */
#define CULPERT_PROBE_F_EXITS		(1U << 17)
/* such an entry point whose return instructions could not all be found: --inuse cannot track it */
#define CULPERT_PROBE_F_NO_RETURN	(1U << 18)
/*
 * ... whose result is the result of the allocator call it makes (libstdc++'s
 * operator new calling malloc): that nested call's return probe gives it
 */
#define CULPERT_PROBE_F_DELEGATE	(1U << 19)
/*
 * Bits 20..31, x86-64: a probe moved past instructions that copied an
 * argument to another register before overwriting it (mimalloc's malloc)
 * finds argument i (0..2) in register ((cookie >> (20 + 4 i)) & 0xf) ^
 * (7, 6, 2)[i]: 0 means still in rdi, rsi, rdx (docs/probe-offsets.md)
 */
#define CULPERT_PROBE_ARG_SHIFT		20
#define CULPERT_PROBE_ARG_BITS		4
/*
 * the probe sits on an instruction the kernel single-steps (not one it
 * emulates): its hits are counted apart (calls_*_stepped), since each
 * costs several times an emulated one (docs/agent.md, "Overhead budget")
 */
#define CULPERT_PROBE_F_STEPPED		(1ULL << 32)

/* kernel-side counters, one __u64 each in the `counters` array */
enum culpert_counter {
	CULPERT_CNT_LOST_RINGBUF,	/* sampled, but the ring buffer was full */
	CULPERT_CNT_STACK_ERR,		/* bpf_get_stack() failed; sample kept with its caller only */
	CULPERT_CNT_NO_STATE,		/* no per-thread state could be created: allocation not seen */
	CULPERT_CNT_NESTED,		/* allocator entry reached from inside another one, not counted twice */
	CULPERT_CNT_SPAN_OVERFLOW,	/* span entered deeper than CULPERT_MAX_SPAN_DEPTH */
	CULPERT_CNT_SPAN_UNMATCHED,	/* span exit whose id is not open on the thread: ignored */
	CULPERT_CNT_SPAN_NAMES_FULL,	/* span name table full: span kept without a name */
	CULPERT_CNT_LIVE_FULL,		/* --inuse: live table full, block not tracked */
	CULPERT_CNT_LOST_FREE,		/* --inuse: free of a tracked block not delivered */
	CULPERT_CNT_LOST_RET,		/* --inuse: return of a sampled call not delivered */
	CULPERT_CNT_RET_UNSEEN,		/* --inuse: sampled call that threw, or left where no probe saw it */
	CULPERT_CNT_THROTTLED,		/* sampled past the process's stack rate: counted, no stack */
	CULPERT_CNT_THROTTLE_FULL,	/* ... with the table of throttled sizes full: in the overflow */
	CULPERT_CNT_TOTALS_FULL,	/* span instance past the process's span paths: in the overflow */
	CULPERT_CNT_TOTALS_INEXACT,	/* span event on a thread whose hot slot another thread used */
	CULPERT_CNT_THINNED,		/* past the stack rate, not kept: the kept samples weigh for it */
	CULPERT_CNT_CENSUS_FULL,	/* past the stack rate, not in the census: its table was full */
	CULPERT_CNT__MAX,
};

/*
 * An exit "hoisted" to the emulated branch leading into a function's last
 * straight-line stretch before `ret` (user/probe/exits.c): a uprobe on a
 * jump costs ~1 us, one on `ret` is single-stepped (~20 us).  x86-64 only:
 * arm64 simulates `ret`, its exits stay there.  The cookie of such a probe
 * says, for each way the branch can go, where the result is and how far
 * the stack pointer is from the return slot:
 *   bits 0-3   the jcc's condition code (the low nibble of its opcode)
 *   bit 4      conditional: else the jump is always taken
 *   bits 8-31  taken:     bit 8 valid, 9-13 register, 16-23 slot distance / 8 (signed)
 *   bits 32-55 not taken: the same, 32 bits higher
 * Registers by their x86-64 encoding (0 rax, 1 rcx, 2 rdx, 3 rbx, 5 rbp,
 * 6 rsi, 7 rdi, 8-15 r8-r15); CULPERT_REG_ZERO: the result is NULL.
 */
#define CULPERT_REG_ZERO		16
#define CULPERT_HOIST_CC(c)		((c) & 0xfULL)
#define CULPERT_HOIST_COND		(1ULL << 4)
#define CULPERT_HOIST_SPEC(valid, reg, slots)	\
	((valid ? 1ULL : 0) | ((__u64)(reg) & 0x1f) << 1 | ((__u64)(__u8)(__s8)(slots)) << 8)
#define CULPERT_HOIST_TAKEN(spec)	((__u64)(spec) << 8)
#define CULPERT_HOIST_NOT_TAKEN(spec)	((__u64)(spec) << 32)

/* processes one loaded BPF object serves at once (entries of the procs map) */
#define CULPERT_MAX_PROCS		64

/*
 * Per-process state, in the `procs` map keyed by tgid: created by
 * userspace before the first probe goes in, then written by the BPF side
 * only (atomically), read when the capture ends.  A process is also in the
 * `armed_procs` map once every one of its probes is live.
 * Per process rather than per BPF object, so one object can serve many.
 */
struct culpert_proc {
	__u64 counters[CULPERT_CNT__MAX];	/* enum culpert_counter */
	/*
	 * The stack captures a process may cost, as a token bucket (the
	 * generic cell rate algorithm): one capture per tb_interval_ns, up to
	 * tb_burst_ns worth of them at once; 0: no limit.  Set by userspace.
	 */
	__u64 tb_interval_ns;
	__u64 tb_burst_ns;
	__u64 tb_tat_ns;		/* when the next capture is due (BPF side) */
	/* throttled samples the culpert_throttle table had no room for */
	__u64 over_samples;
	__u64 over_bytes;
	__u64 execed;			/* the process exec'd another program (BPF side sets it) */
	__u64 unwind_dwarf;		/* its samples carry registers and stack (set by userspace) */
	/* with count_calls (the agent): allocator and deallocator probe hits */
	__u64 calls_alloc;
	__u64 calls_free;
	/* exact totals (bpf/totals.bpf.h): span paths created, and instances past the bound */
	__u64 totals_paths;
	__u64 totals_over_bytes;	/* their self bytes and calls, and how many */
	__u64 totals_over_calls;
	__u64 totals_over_instances;
	/*
	 * of calls_alloc and calls_free, the hits on single-stepped probes
	 * (CULPERT_PROBE_F_STEPPED)
	 */
	__u64 calls_alloc_stepped;
	__u64 calls_free_stepped;
	/*
	 * The process's sample rate, for keeping a random subset of stacks
	 * past the stack rate (bpf/throttle.bpf.h): samples in the window
	 * begun at kw_start_ns, and in the one before it (BPF side)
	 */
	__u64 kw_start_ns;
	__u64 kw_count;
	__u64 kw_prev;
};

/*
 * Runtime address ranges of a process's allocator code, for nested-call
 * detection (its own: every process maps them elsewhere), in the
 * `alloc_text` map keyed by tgid.  Apart from culpert_proc: userspace
 * rewrites it when an allocator is loaded later (dlopen), while the BPF
 * side adds to the counters there.
 */
struct culpert_alloc_text {
	__u64 lo[CULPERT_MAX_ALLOC_OBJS];
	__u64 hi[CULPERT_MAX_ALLOC_OBJS];
};

/* the key of the live table: one BPF object tracks the blocks of many processes */
struct culpert_live_key {
	__u32 tgid;
	__u32 pad;
	__u64 ptr;
};

/*
 * Past its stack rate, a process's samples keep their stacks with a
 * probability p (docs/profile-format.md, "Throttling"), in units of
 * 1 / CULPERT_KEEP_ONE: a kept sample stands for 1 / p of them.
 */
#define CULPERT_KEEP_ONE		65536U

/* distinct (size, keep, span path) keys of throttled samples kept per BPF object */
#define CULPERT_MAX_THROTTLED		16384

/*
 * Throttled samples, counted by exact size (their unbiased weight depends
 * on it), keep probability and span path, in the `throttled` map: a
 * culpert_throttle_key -> __u64 count; under keep 0, the census of every
 * sample past the stack rate.  The path is a hash of its name ids, spelled
 * out once in the `throttle_paths` map.
 */
struct culpert_throttle_key {
	__u32 tgid;
	__u32 keep;			/* the samples' keep probability, CULPERT_KEEP_ONE = 1; 0: census */
	__u64 size;
	__u64 path;			/* 0: outside any span */
};

struct culpert_throttle_path {
	__u32 depth;
	__u32 pad;
	__u32 name_ids[CULPERT_MAX_SPAN_DEPTH];	/* outermost first */
};

/*
 * Allocator calls a slot of the BPF side's per-thread hot state has seen
 * (nested calls not counted), and the bytes they asked for: the last member
 * of that state, so userspace finds it at value_size - sizeof() of each
 * entry.  Plain adds: two threads sharing a slot may lose one now and then.
 */
struct culpert_calls_seen {
	__u64 calls;
	__u64 bytes;
	/*
	 * calls asking for more than any allocator can give (docs/profile-format.md,
	 * alloc_failed=): they fail, and are neither in calls/bytes nor sampled
	 */
	__u64 failed;
};

/*
 * Registers a CFI-driven unwinder needs to start at an allocator's entry:
 * the return-address rule needs ip and sp (and lr on arm64, where the
 * return address is at entry), the callee-saved ones may be what a caller's
 * CFA or saved registers are computed from.  The BPF object and userspace
 * are built for one architecture (__TARGET_ARCH_arm64 / __aarch64__).
 */
#if defined(__TARGET_ARCH_arm64) || defined(__aarch64__)
struct culpert_regs {
	__u64 ip;
	__u64 sp;
	__u64 lr;			/* x30 */
	__u64 fp;			/* x29 */
	__u64 x19_28[10];
};
#else
struct culpert_regs {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u64 bx;
	__u64 r12;
	__u64 r13;
	__u64 r14;
	__u64 r15;
};
#endif

/* one open span; a thread's stack of them is outermost first */
struct culpert_span_frame {
	__u64 id;
	__u64 parent_id;		/* explicit parent, or the span below it on the thread */
	__u32 name_id;			/* key of the span_names map; 0 = no name */
	__u32 flags;			/* CULPERT_SPAN_F_* */
};

#define CULPERT_SPAN_F_FUNCTION		(1U << 0)	/* opened by a --span-fn probe */

/* the key of the span_names map: the name bytes, zero-padded, and their length */
struct culpert_span_name {
	__u32 len;
	__u32 flags;			/* CULPERT_NAME_F_*; 0: name[] holds the name */
	char name[CULPERT_SPAN_NAME_MAX + 1];
};

/*
 * A name bpf_probe_read_user() could not read (its page not mapped in the
 * process yet: a string the program never touched): name[0..8) holds its
 * address, for userspace to read through /proc/PID/mem or the mapped file.
 */
#define CULPERT_NAME_F_ADDR		(1U << 0)
/* ... in writable memory: not shared by address (name[8..16) a sequence number), read at once */
#define CULPERT_NAME_F_ONCE		(1U << 1)

struct culpert_name_event {
	__u32 kind;			/* CULPERT_EV_SPAN_NAME */
	__u32 id;			/* name id of the span_names map */
	__u64 addr;
	__u32 len;
	__u32 flags;			/* CULPERT_NAME_F_* */
	__u32 tgid;			/* the process whose memory holds it */
	__u32 pad;
};

/*
 * A sampled allocation.  Only the used part of data[] crosses the ring
 * buffer: span_depth struct culpert_span_frame (outermost first), then
 * either nr_frames __u64 of the frame-pointer walk (frames[0] = the
 * probed instruction) or, for DWARF unwinding, stack_len bytes of the
 * user stack from regs.sp up.
 */
struct culpert_alloc_event {
	__u32 kind;			/* CULPERT_EV_ALLOC */
	__u32 tid;
	__u64 id;			/* unique per sample within one run, never 0 */
	__u64 size;			/* bytes requested */
	__u64 ts_ns;			/* CLOCK_MONOTONIC (bpf_ktime_get_ns) at entry */
	__u64 ret_addr;			/* return address into the caller: [sp] on x86-64, lr on arm64 */
	/* CULPERT_FN_OTEL: the bytes the sample stands for, as the in-process sampler weighed it */
	__u64 weight;
	__u32 fn;			/* enum culpert_fn */
	__s32 nr_frames;		/* frames in data[]; < 0 is the bpf_get_stack() error */
	__u32 span_depth;		/* spans in data[] */
	__u32 stack_len;		/* bytes of user stack in data[] (DWARF unwinding) */
	__u32 tgid;			/* the process: one BPF object serves many */
	/*
	 * the probability its stack was kept with, CULPERT_KEEP_ONE = 1 (0: 1
	 * too): it stands for CULPERT_KEEP_ONE / keep samples
	 */
	__u32 keep;
	struct culpert_regs regs;	/* registers at entry (DWARF unwinding) */
	__u8 data[];
};

/*
 * Exact totals: every allocator call counts, sampled or not, in the
 * innermost open span of its thread; a span's totals are folded, when it
 * closes, into a culpert_span_total of its path (name ids outermost
 * first) in the `span_totals` map.  docs/profile-format.md says how they
 * reach the profile.
 */
/* span paths one process keeps; instances of more go to culpert_proc.totals_over_* */
#define CULPERT_MAX_TOTALS_PER_PROC	1024
/* entries of the span_totals map (every process of the object) */
#define CULPERT_MAX_TOTALS		4096
/*
 * Bytes per instance, log-linear: 0..3 one bucket each, then 4 per power of
 * two ([4 << k, 5 << k), [5 << k, 6 << k) ...), up to 2^48; the last bucket
 * holds everything from 2^48 up.  A bucket is at most 25% of its lower bound
 * wide: its middle is within 12.5% of any value in it.
 */
#define CULPERT_HIST_MAX_LOG2		48
#define CULPERT_HIST_BUCKETS		(4 * (CULPERT_HIST_MAX_LOG2 - 1) + 1)

struct culpert_total_key {
	__u32 tgid;
	__u32 depth;
	__u32 name_ids[CULPERT_MAX_SPAN_DEPTH];	/* depth of them, the rest 0 */
};

struct culpert_span_total {
	__u64 self_bytes;		/* allocated while it was the innermost open span */
	__u64 self_calls;
	__u64 incl_bytes;		/* allocated between its entry and exit: self + children */
	__u64 incl_calls;
	__u64 instances;		/* closed instances */
	__u64 open;			/* never closed: open at the end, or their thread exited */
	__u64 max_bytes;		/* the largest closed instance, inclusive bytes */
	__u64 closed_bytes;		/* inclusive bytes of the closed instances */
	__u64 hist[CULPERT_HIST_BUCKETS];	/* closed instances by inclusive bytes */
};

/* an open span's counts, beside its culpert_span_frame in the thread's state */
struct culpert_span_tally {
	__u64 entry_bytes;		/* the thread's hot-state totals at entry */
	__u64 entry_calls;
	__u64 self_bytes;
	__u64 self_calls;
	__u32 entry_epoch;		/* the hot slot's epoch at entry */
	__u32 pad;
};

/* the bucket of v bytes (see CULPERT_HIST_BUCKETS); no loop, for the BPF side */
static inline __u32 culpert_hist_bucket(__u64 v)
{
	__u64 x = v;
	__u32 e = 0;

	if (v < 4)
		return (__u32)v;
	if (v >> CULPERT_HIST_MAX_LOG2)
		return CULPERT_HIST_BUCKETS - 1;
	if (x >> 32) { e += 32; x >>= 32; }
	if (x >> 16) { e += 16; x >>= 16; }
	if (x >> 8) { e += 8; x >>= 8; }
	if (x >> 4) { e += 4; x >>= 4; }
	if (x >> 2) { e += 2; x >>= 2; }
	if (x >> 1) { e += 1; }
	return 4 * (e - 1) + (__u32)((v >> (e - 2)) & 3);
}

/* the smallest value in bucket b */
static inline __u64 culpert_hist_lower(__u32 b)
{
	if (b < 4)
		return b;
	if (b >= CULPERT_HIST_BUCKETS - 1)
		return 1ULL << CULPERT_HIST_MAX_LOG2;
	return (__u64)(4 + b % 4) << (b / 4 - 1);
}

/* a stack "frame" standing for the frames a DWARF unwind could not reach: its copy ended */
#define CULPERT_FRAME_TRUNCATED		1
/* one standing for the callers of a stack cut to its leaf: more distinct stacks than --max-stacks */
#define CULPERT_FRAME_FOLDED		2
/* the stack of samples past the process's stack rate: their bytes without their stacks */
#define CULPERT_FRAME_THROTTLED		3

/* most user stack bytes one sample carries (--stack-size is capped here), and the default */
#define CULPERT_MAX_STACK_COPY		(32 * 1024)
#define CULPERT_DEFAULT_STACK_COPY	(16 * 1024)
/* room for the largest record */
#define CULPERT_EVENT_MAX	(sizeof(struct culpert_alloc_event) +				\
				 CULPERT_MAX_SPAN_DEPTH * sizeof(struct culpert_span_frame) +	\
				 CULPERT_MAX_STACK_COPY)

/* what a sampled allocation returned; follows its culpert_alloc_event */
struct culpert_ret_event {
	__u32 kind;			/* CULPERT_EV_ALLOC_RET */
	__u32 tracked;			/* 1: in the live table, a free will be reported */
	__u64 id;			/* of the culpert_alloc_event */
	__u64 ptr;			/* 0: the allocation failed */
	__u32 tgid;
	__u32 pad;
};

struct culpert_free_event {
	__u32 kind;			/* CULPERT_EV_FREE */
	__u32 tgid;
	__u64 id;			/* of the culpert_alloc_event */
};

#endif /* CULPERT_H */
