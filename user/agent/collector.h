/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The profiling core of the agent, over one BPF object shared by every
 * target (docs/agent.md, "The collector").  The HTTP side reaches it only
 * through function pointers (agent_profile_fn, agent_state_fn): NULL is
 * "no collector", answered 503 / null, so the frame is tested without it.
 *
 * Threads: collector__add/__remove/__poll run on the profiling thread,
 * planning and attaching on the collector's attach thread;
 * collector__profile and collector__state run on HTTP threads and must
 * hold a target's lock only to copy (or serialize) its aggregate.
 */
#ifndef CULPERT_COLLECTOR_H
#define CULPERT_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct session_opts;
struct agent_target;

enum agent_profile {
	AGENT_PROFILE_ALLOCS,	/* /debug/pprof/allocs: default sample type alloc_space */
	AGENT_PROFILE_HEAP,	/* /debug/pprof/heap: default sample type inuse_space */
};

/*
 * A target's profile as a gzip'd pprof in a malloc'd *buf of *len bytes:
 * cumulative since pick-up, or with seconds > 0 the difference over the
 * last `seconds` (the caller's thread sleeps that long, as Go's
 * net/http/pprof does).  0, or -errno with a reason for the client in err:
 * -ESRCH the target is gone and its data too, -EAGAIN nothing collected yet.
 */
typedef int (*agent_profile_fn)(void *ctx, const struct agent_target *t, enum agent_profile kind,
				uint64_t seconds, void **buf, size_t *len, char *err,
				size_t errlen);

struct span_totals;

/*
 * A target's exact span totals (proto/totals.h) into *out, for /metrics
 * (span_metrics.h); the caller frees them with span_totals__free().  0,
 * -ENOENT for a target the collector does not know, -ENODATA none yet.
 * The collector copies them under the target's lock, as for profiles.
 */
typedef int (*agent_span_totals_fn)(void *ctx, const struct agent_target *t,
				    struct span_totals *out);

/* what a target's heap covers, in its profile's comment and in /targets */
#define COLLECTOR_COVERAGE "blocks allocated before pick-up are not included"

/* what /targets shows beside the target's identity; absent (null) without a collector */
struct collector_state {
	char allocator[32];	/* "glibc", "jemalloc", ... */
	/*
	 * "pending" (not live yet: being attached, waiting for the loader's
	 * mappings or an allocator to be mapped), "attached", "off" (duty
	 * cycle), "failed" (error says why), "detached" (exited)
	 */
	char probes[16];
	/*
	 * "otel_memory" (its USDT probes), "inject" (those of the sampler the
	 * agent injected, --inject) or "uprobes"; "" before attach
	 */
	char sampler[16];
	char sampler_why[384];	/* the choice in a sentence, or why --inject was refused */
	char error[256];	/* why probes failed, "" */
	double duty;		/* share of time the allocation probes were on since pick-up, 0..1 */
	double overhead_pct;	/* estimated CPU the target pays, % of one CPU */
	uint64_t samples, lost;
	/*
	 * Probe hits counted by the BPF side since pick-up (monotonic, for
	 * the budget's call-rate estimate): allocator entries (nested calls
	 * included) and deallocator entries.  Hits while the allocation
	 * probes are off are not counted: calls_alloc stands still then.
	 */
	uint64_t calls_alloc, calls_free;
	/* of those, single-stepped sites' */
	uint64_t calls_alloc_stepped, calls_free_stepped;
	uint64_t observed_ns;	/* time the allocation probes were on since pick-up */
	int64_t live_unix_ns;	/* pick-up: when the probes went live, Unix ns; 0 while pending */
	uint64_t anon_rss_at;	/* the process's anonymous RSS then, bytes (RssAnon) */
	/*
	 * Unix ns since when the heap is complete: the free probes were off
	 * before (the budget switched them), blocks allocated then are not in
	 * it.  0: complete since pick-up.
	 */
	int64_t heap_since_unix_ns;
	bool session, every_return;	/* how its allocations' returns are probed */
};

/* the state of a target for /targets and /metrics: 0, or -ENOENT (fields null) */
typedef int (*agent_state_fn)(void *ctx, const struct agent_target *t,
			      struct collector_state *out);

struct collector;

/*
 * Loads the shared BPF object; NULL with the reason in err.  labels_all:
 * --labels all; injects: some targets may be injected (agent_target.inject)
 */
struct collector *collector__new(const struct session_opts *o, size_t max_targets,
				 size_t max_stacks, bool labels_all, bool injects, char *err,
				 size_t errlen);
/* cut short the ?seconds= waits of HTTP threads (before http__stop) */
void collector__stop(struct collector *c);
void collector__free(struct collector *c);
/*
 * A new target, planned and attached on the collector's attach thread:
 * pending until its probes are live (collector__attaching() false again,
 * collector__done_fd() readable).  A failure is kept in its state, not
 * fatal to the agent.  0, or -ENOSPC / -ENOMEM when it cannot be queued.
 */
int collector__add(struct collector *c, const struct agent_target *t);
/* queued for the attach thread, or being attached */
bool collector__attaching(struct collector *c, pid_t pid, uint64_t start_ticks);
/* an eventfd readable (a count) once attaches have finished since it was last read */
int collector__done_fd(const struct collector *c);
/*
 * A new target planned later, not now: a program stopped at its exec
 * whose loader has not mapped its libraries (its plan would find no
 * allocator).  Pending, retried as a failed target; 0 or -ENOSPC.
 */
int collector__add_later(struct collector *c, const struct agent_target *t);
/* a live target whose probes are not live yet (pending or failed) */
bool collector__pending(struct collector *c, pid_t pid, uint64_t start_ticks);
/* a pending target stopped at exec is planned at its entry point: no retries before */
void collector__await_entry(struct collector *c, pid_t pid, uint64_t start_ticks);
/*
 * A pending target planned and attached again now (at its entry point), on
 * the attach thread; 0 when queued, -ENOENT when it is not pending
 */
int collector__retry(struct collector *c, pid_t pid, uint64_t start_ticks);
/* the target exited: detach, keep its aggregate until collector__forget() */
void collector__remove(struct collector *c, pid_t pid, uint64_t start_ticks);
/*
 * Its data freed.  A sampler injected into a process still running (a
 * target dropped) is released first, on the attach thread.
 */
void collector__forget(struct collector *c, pid_t pid, uint64_t start_ticks);
/* memory pressure: no target's aggregate takes a new stack from now on (profiling thread) */
void collector__freeze_stacks(struct collector *c);
struct memlimit;
/*
 * Admission on memory: an encoding starts only when its estimated peak
 * fits under 7/8 of m's limit beside what is in use and what the
 * encodings under way reserved; else it waits for them, and with none
 * under way the scrape is refused (503, saying why).  m outlives c.
 */
void collector__set_memlimit(struct collector *c, const struct memlimit *m);
/* what the encodings under way reserved, bytes: admitted already, not the guard's to act on */
uint64_t collector__mem_reserved(struct collector *c);
/* the fd the profiling thread polls, and the work to do when it is readable or periodically */
int collector__fd(const struct collector *c);
int collector__poll(struct collector *c, uint64_t now_ns);
/* an agent_profile_fn, ctx the collector */
int collector__profile(void *ctx, const struct agent_target *t, enum agent_profile kind,
		       uint64_t seconds, void **buf, size_t *len, char *err, size_t errlen);
/* 0, or -ENOENT when the collector does not know the target (the live one of pid and start) */
int collector__state(struct collector *c, pid_t pid, uint64_t start_ticks,
		     struct collector_state *out);
/*
 * The profiling thread's pass over every target (the duty cycle): their
 * counters read at once (bpfobj__procs_read()), then collector__state_read()
 * for each, as collector__state() with the counters of that read.  Where
 * the kernel has no batch read, each reads the map as collector__state().
 */
void collector__read_counts(struct collector *c);
int collector__state_read(struct collector *c, pid_t pid, uint64_t start_ticks,
			  struct collector_state *out);
/* an agent_state_fn, ctx the collector: t's own state, exited or live */
int collector__state_cb(void *ctx, const struct agent_target *t, struct collector_state *out);

/* an agent_span_totals_fn, ctx the collector: the spans closed so far, live targets only */
int collector__span_totals(void *ctx, const struct agent_target *t, struct span_totals *out);

/*
 * Duty cycling (budget.c calls it on the profiling thread): detach (on
 * false) or re-attach (on true) the target's allocation probes.  Its free
 * probes stay attached either way, so a block freed while allocation
 * probes are off never stays live in /heap.  Idempotent.  0; -ENOENT for
 * a target the collector does not know or that exited; -errno when
 * re-attaching failed (kept in its state: probes "failed").
 */
int collector__set_alloc_probes(struct collector *c, pid_t pid, uint64_t start_ticks, bool on);
/*
 * The same for its free probes (--inuse), off only after the allocation
 * probes: back on, its heap restarts from then (collector_state's
 * heap_since_unix_ns says since when).  0 or -errno as above.
 */
int collector__set_free_probes(struct collector *c, pid_t pid, uint64_t start_ticks, bool on);
/* the CPU its allocation-side and free-side BPF programs ran so far, all targets (stats on) */
void collector__prog_run_ns(struct collector *c, uint64_t *alloc_ns, uint64_t *free_ns);

#endif /* CULPERT_COLLECTOR_H */
