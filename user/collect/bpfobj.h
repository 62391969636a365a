/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The BPF side's lifecycle: open the skeleton, set the load-time knobs,
 * load, fill the exponential table, attach the plan's probes to one
 * process (attach: bpfobj__new()) or to each of many (the agent:
 * bpfobj__open(), then bpfobj__add_proc() per process, every record
 * carrying its tgid), then deliver ring-buffer records until detached.
 */
#ifndef CULPERT_BPFOBJ_H
#define CULPERT_BPFOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "culpert.h"
#include "uprobe.h"

struct alloc_plan;
struct culpert_proc;
struct otel_plan;
struct bpfobj;
struct bpfobj_proc;
struct span_fn_plan;

/* a record from the ring buffer; return non-zero to stop consuming */
typedef int (*bpfobj_event_fn)(void *ctx, void *data, size_t size);

/* how --inuse sees the pointers sampled calls return */
enum bpfobj_inuse {
	BPFOBJ_INUSE_OFF,
	BPFOBJ_INUSE_SESSION,		/* uprobe sessions (6.13+): a return only for sampled calls */
	BPFOBJ_INUSE_EVERY_RETURN,	/* a return probe on every allocator call */
	BPFOBJ_INUSE_OTEL,		/* otel_memory: the pointer at alloc, free for sampled blocks only */
};

struct bpfobj_opts {
	pid_t pid;
	uint64_t rate;			/* mean bytes between samples; 1 = every allocation */
	unsigned int max_depth;		/* frames per sample, 1..127 */
	size_t ringbuf_bytes;		/* rounded up to a power of two */
	bool no_multi;			/* force one perf-event uprobe per site */
	bool no_session;		/* entry + return probes even where uprobe sessions exist */
	bool track_inuse;		/* --inuse: pointers, frees, live blocks */
	bool no_exact;			/* --no-exact: no exact span totals (bpf/totals.bpf.h) */
	bool unwind_dwarf;		/* copy registers + stack instead of a frame-pointer walk */
	unsigned int stack_copy_bytes;	/* --stack-size, with unwind_dwarf */
	size_t max_live;		/* --max-live: live blocks tracked (0: default) */
	uint64_t stack_rate;		/* --max-stack-rate: captures per second (0: no limit) */
	const struct alloc_plan *plan;
	/* with otel->use: the otel_memory probes instead of the plan's allocator entry points */
	const struct otel_plan *otel;
	/* objects (paths we can open) carrying culpert:span_* USDT probes */
	char *const *usdt_objects;
	size_t n_usdt_objects;
	const struct span_fn_plan *span_fns;	/* --span-fn matches, may be NULL */
	bpfobj_event_fn on_event;
	void *ctx;
	/* bpfobj__open(): */
	size_t max_procs;		/* processes at once (0: CULPERT_MAX_PROCS) */
	bool count_calls;		/* count every probe hit per process (culpert_proc.calls_*) */
	/*
	 * load the otel_memory programs beside the allocator's (free with
	 * track_inuse): each process then takes one path (its opts' otel)
	 */
	bool otel_progs;
	/*
	 * a leaving process's links released and its live entries swept on a
	 * thread of the object's (reaper.h), not in bpfobj_proc__free() and
	 * __unregister()
	 */
	bool async_teardown;
};

/* one process's part: what bpfobj__add_proc() attaches */
struct bpfobj_proc_opts {
	pid_t pid;
	const struct alloc_plan *plan;	/* kept by pointer until bpfobj_proc__free() */
	char *const *usdt_objects;
	size_t n_usdt_objects;
	const struct span_fn_plan *span_fns;
	uint64_t stack_rate;
	bool unwind_dwarf;		/* its samples carry stack copies (the object must allow it) */
	/* with otel->use: the otel_memory probes instead of the plan's allocator entry points */
	const struct otel_plan *otel;
};

/* load and attach to opts->pid; 0 or -errno with a user-facing reason in err */
int bpfobj__new(const struct bpfobj_opts *opts, struct bpfobj **out, char *err, size_t errlen);
/* bpfobj__new()'s process */
struct bpfobj_proc *bpfobj__proc(const struct bpfobj *s);
/* load only (opts->pid, plan, usdt_objects unused): processes come with bpfobj__add_proc() */
int bpfobj__open(const struct bpfobj_opts *opts, struct bpfobj **out, char *err, size_t errlen);
/* register a process and attach its probes, frees first; 0 or -errno with the reason in err */
int bpfobj__add_proc(struct bpfobj *s, const struct bpfobj_proc_opts *o,
		      struct bpfobj_proc **out, char *err, size_t errlen);
/* detach, forget its kernel state (procs entry, live blocks) */
void bpfobj_proc__free(struct bpfobj_proc *pr);
/*
 * The same, keeping the userspace side: the pid may be registered again
 * (an exec, a reuse); its procs entry as it was stays readable
 * (bpfobj_proc__state()).
 */
void bpfobj_proc__unregister(struct bpfobj_proc *pr);
/* remove every probe of the process; its records already queued can still be drained */
void bpfobj_proc__detach(struct bpfobj_proc *pr);
/*
 * Duty cycling: detach (on false) or re-attach its allocation probes (the
 * allocator's entry points, or otel_memory:alloc), keeping deallocators
 * (otel_memory:free) and span probes.  0 or -errno with the reason.
 */
int bpfobj_proc__set_alloc(struct bpfobj_proc *pr, bool on, char *err, size_t errlen);
/*
 * The budget's second step, with --inuse: detach (on false, only once the
 * allocation probes are off) or re-attach its deallocator probes.  On
 * their return the live table forgets the process's blocks (any may have
 * been freed unseen): it holds those allocated since
 * bpfobj_proc__heap_since().  0 or -errno with the reason (-EOPNOTSUPP on
 * otel_memory probes, -EBUSY with the allocation probes on).
 */
int bpfobj_proc__set_free(struct bpfobj_proc *pr, bool on, char *err, size_t errlen);
/* CLOCK_MONOTONIC since when the live table is complete; 0: since the probes went in */
uint64_t bpfobj_proc__heap_since(const struct bpfobj_proc *pr);
/*
 * An allocator object mapped after the start (dlopen): attach its plan
 * (kept by pointer) beside the first, frees first.  0 or -errno with the
 * reason (-EINVAL for a process on its otel_memory probes); a failure may
 * leave part of it attached.
 */
int bpfobj_proc__extend(struct bpfobj_proc *pr, const struct alloc_plan *more, char *err,
			 size_t errlen);
/* time its allocation probes were on, from arming to now or to detach */
uint64_t bpfobj_proc__observed_ns(const struct bpfobj_proc *pr);
/* how long its bpfobj__add_proc() took: registering it and the kernel's attaches, ns */
uint64_t bpfobj_proc__add_ns(const struct bpfobj_proc *pr);
/* its procs map entry (counters, calls); zeroes when gone */
void bpfobj_proc__state(const struct bpfobj_proc *pr, struct culpert_proc *out);
/*
 * Every entry of the procs map read at once (BPF_MAP_LOOKUP_BATCH, 5.6+),
 * for a pass over hundreds of processes (the agent's duty cycle) that would
 * make a lookup each.  Reused from one read to the next; the caller frees
 * it with bpfobj_procs__free().
 */
struct bpfobj_procs {
	const struct bpfobj *s;		/* whose map */
	__u32 *pids;
	struct culpert_proc *v;		/* pids[i]'s entry */
	__u32 *order;			/* indices of pids in increasing order */
	size_t n, max;
};
/* 0, or -errno (-EINVAL, -ENOTSUPP: no batch operations): then look up one by one */
int bpfobj__procs_read(const struct bpfobj *s, struct bpfobj_procs *snap);
void bpfobj_procs__free(struct bpfobj_procs *snap);
/* bpfobj_proc__state() from a read of its object's map; that of the map itself otherwise */
void bpfobj_proc__state_in(const struct bpfobj_proc *pr, const struct bpfobj_procs *snap,
			   struct culpert_proc *out);
/*
 * The object is being freed: processes freed from now on skip deleting
 * their map entries (the maps go with the object).
 */
void bpfobj__closing(struct bpfobj *s);
/* async_teardown: pid's links still being released */
bool bpfobj__releasing(struct bpfobj *s, pid_t pid);
/* async_teardown: wait up to timeout_ns until they are; false on timeout */
bool bpfobj__wait_released(struct bpfobj *s, pid_t pid, uint64_t timeout_ns);
/* the ring buffer's epoll fd */
int bpfobj__fd(const struct bpfobj *s);
/* wait up to timeout_ms for records and deliver them; records consumed or -errno */
int bpfobj__poll(struct bpfobj *s, int timeout_ms);
/* deliver everything queued; records consumed or -errno */
int bpfobj__drain(struct bpfobj *s);
/*
 * The capture's window, CLOCK_MONOTONIC: from the moment every probe was
 * live to the moment the first one is let go of (0 while attached).
 * Outside it allocations are seen without their spans: their records are
 * to be dropped (bpfobj__in_window()).
 */
void bpfobj_proc__window(const struct bpfobj_proc *pr, uint64_t *start_ns, uint64_t *end_ns);
bool bpfobj_proc__in_window(const struct bpfobj_proc *pr, uint64_t ts_ns);
/* the process exec'd another program since the probes went in */
bool bpfobj_proc__execed(const struct bpfobj_proc *pr);
void bpfobj_proc__counters(const struct bpfobj_proc *pr, uint64_t out[CULPERT_CNT__MAX]);
/*
 * Exact totals, once detached (spans still open by then are folded as
 * open): cb(ctx, key, total) for each span path of the process, then its
 * culpert_proc (totals_over_*) into *proc.  0 or -errno.
 */
int bpfobj_proc__span_totals(const struct bpfobj_proc *pr,
			      int (*cb)(void *ctx, const struct culpert_total_key *key,
					const struct culpert_span_total *total),
			      void *ctx, struct culpert_proc *proc);
/*
 * Samples past the stack rate: cb(ctx, size, keep, path, count) for each size, keep
 * probability and span path (path: the name ids outermost first, NULL outside spans);
 * then the ones the table had no room for, by number and bytes.  0 or -errno.
 */
int bpfobj_proc__throttled(const struct bpfobj_proc *pr,
			    int (*cb)(void *ctx, uint64_t size, uint32_t keep,
				      const struct culpert_throttle_path *path, uint64_t count),
			    void *ctx, uint64_t *over_samples, uint64_t *over_bytes);
/*
 * --inuse: the sample id of every block the kernel's live table holds: the
 * truth about what is live (its records in the ring buffer may be lost, a
 * free that reached the BPF side is never lost).  cb returns non-zero to
 * stop; 0 or -errno.
 */
int bpfobj_proc__live_ids(const struct bpfobj_proc *pr, int (*cb)(void *ctx, uint64_t id),
			   void *ctx);
/*
 * Probe hits the kernel skipped without running their program (it does
 * not nest BPF programs on a CPU): over all programs, and over those that
 * see frees -- a skipped free leaves its block looking live.
 */
void bpfobj__misses(const struct bpfobj *s, uint64_t *all, uint64_t *frees);
/* allocator calls the probes saw, and their bytes, summed over every thread; 0 or -errno */
int bpfobj__calls_seen(const struct bpfobj *s, struct culpert_calls_seen *out);
/*
 * Every span name the BPF side interned, as its map key (name bytes, or an
 * address with CULPERT_NAME_F_ADDR); cb returns non-zero to stop.  0 or -errno
 */
int bpfobj__span_names(const struct bpfobj *s,
			int (*cb)(void *ctx, uint32_t id, const struct culpert_span_name *key),
			void *ctx);
size_t bpfobj_proc__n_sites(const struct bpfobj_proc *pr);
/* how long bpfobj__new() took to load (and verify) the BPF programs, and to attach them */
void bpfobj__timing(const struct bpfobj *s, uint64_t *load_ns, uint64_t *attach_ns);
/* the process's: its otel_memory probes (BPFOBJ_INUSE_OTEL) or the object's uprobe path */
enum bpfobj_inuse bpfobj_proc__inuse(const struct bpfobj_proc *pr);
/* the object can attach otel_memory probes (attach's when used, the agent's with otel_progs) */
bool bpfobj__otel_loaded(const struct bpfobj *s);
const char *bpfobj_inuse__name(enum bpfobj_inuse m);
/* will uprobe sessions be used (uprobe_multi and 6.13+, not --no-session/--no-multi)? */
bool bpfobj_sessions(bool no_multi, bool no_session);
/*
 * The CPU time the object's allocation-side programs (entries, returns,
 * sessions) and its free-side programs have run, every process together;
 * 0 unless BPF run-time stats are on (bpf_enable_stats()).
 */
void bpfobj__prog_run_ns(const struct bpfobj *s, uint64_t *alloc_ns, uint64_t *free_ns);
/* how the allocator probes attach: uprobe_multi links unless --no-multi or too old a kernel */
enum uprobe_mode bpfobj_uprobe_mode(bool no_multi);
/* how --inuse would see returns, given the same options */
enum bpfobj_inuse bpfobj_inuse_mode(bool no_multi, bool no_session);
void bpfobj__free(struct bpfobj *s);
/* the tgid a ring-buffer record belongs to; 0 for a record too short to say */
uint32_t bpfobj_record_tgid(const void *data, size_t size);

/* fill table[CULPERT_EXP_TABLE_SIZE] with exponential variates of mean `rate` */
void bpfobj_fill_exp_table(__s64 *table, uint64_t rate);

#endif /* CULPERT_BPFOBJ_H */
