/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One capture of one process: the target, its mappings and objects, the
 * probe plan, the attached sampler and the aggregate the records go to.
 * `attach` and `capture` are thin commands over this.
 */
#ifndef CULPERT_SESSION_H
#define CULPERT_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct session;
struct span_totals;

/* mean bytes between samples unless told (--rate) */
#define SESSION_DEFAULT_RATE	(512 * 1024)

/*
 * The ring buffer unless told (--ringbuf-size).  It is mapped twice into the
 * profiler (for wrap-around reads), so its size counts double in RSS: 2 MiB
 * holds ~10k frame-pointer records; DWARF records carry a stack copy
 * (~16 KiB each) and get 8 MiB, ~500 of them.
 */
#define SESSION_RINGBUF_FP	(2 << 20)
#define SESSION_RINGBUF_DWARF	(8 << 20)

enum session_unwind {
	SESSION_UNWIND_AUTO,		/* fp where the executable keeps frame pointers, else dwarf */
	SESSION_UNWIND_FP,
	SESSION_UNWIND_DWARF,
};

/*
 * The unwinding auto chooses for a process, with the evidence in a
 * sentence for `probes` and -v.  0 or -errno.
 */
struct target;
struct procmaps;
struct objcache;
struct mmapwatch;
struct unwind_choices;
int session_unwind__choose(const struct target *t, const struct procmaps *maps,
			   struct objcache *objs, enum session_unwind want, enum session_unwind *out,
			   char *why, size_t len);

struct session_opts {
	pid_t pid;
	uint64_t rate;
	bool rate_set;			/* --rate given: said when an in-process sampler's rate wins */
	unsigned int max_depth;
	const char *allocator;		/* "auto", a family, or a symbol prefix */
	bool symbolize;
	bool no_multi;			/* force perf-event uprobes */
	bool no_session;		/* entry + return probes even where sessions exist */
	bool no_exact;			/* --no-exact: no exact span totals */
	char **span_fns;		/* --span-fn patterns (not copied) */
	size_t n_span_fns;
	size_t max_span_fns;
	size_t ringbuf_bytes;		/* 0: by unwinding, see session.c */
	size_t max_entries;		/* aggregate keys */
	bool inuse;			/* --inuse: live heap and ages */
	enum session_unwind unwind;	/* --unwind */
	unsigned int stack_size;	/* --stack-size: bytes copied per sample for DWARF */
	size_t max_live;		/* --max-live */
	uint64_t stack_rate;		/* --max-stack-rate: stack captures per second (0: no limit) */
	bool stack_rate_auto;		/* ... not given: scaled with the rate used */
	int sampler;			/* --sampler: enum otel_mode (otel.h) */
	/*
	 * With sampler inject: a process that cannot take the sampler is
	 * profiled on uprobes (session__sampler_why() says why), not failed
	 */
	bool inject_fallback;
	/*
	 * The object cache of another session of the same program in the same
	 * mount namespace (a process tree's forks), which outlives this one;
	 * NULL: its own
	 */
	struct objcache *objs;
	/* new mappings through this shared watch (mmapwatch__new_shared()); NULL: rings of its own */
	struct mmapwatch *maps_watch;
	/* the unwinding chosen for other processes of the same files (unwind_choice.h); or NULL */
	struct unwind_choices *unwind_choices;
};

enum session_end {
	SESSION_END_DURATION,
	SESSION_END_SIGNAL,
	SESSION_END_TARGET_EXIT,
	SESSION_END_TARGET_EXEC,	/* another program now: the capture ends before it */
};

/* attach; 0 or -errno with the user-facing reason in err */
int session__open(const struct session_opts *o, struct session **out, char *err, size_t errlen);
/* sample until duration_ns (0 = no limit) passes, *stop is set, or the target exits */
int session__run(struct session *s, uint64_t duration_ns, volatile sig_atomic_t *stop,
		 enum session_end *why);
/* detach and drain what is queued; idempotent */
void session__detach(struct session *s);
/*
 * The free probes were off until since_ns (CLOCK_MONOTONIC): the live
 * blocks allocated before are forgotten, the heap holds those since.
 */
void session__heap_since(struct session *s, uint64_t since_ns);
/* one more "key=value" comment for the profile (copied); 0 or -errno */
int session__add_comment(struct session *s, const char *comment);
/* the same, for callbacks of type int (*)(void *ctx, const char *comment) */
int session__add_comment_cb(void *session, const char *comment);
/* write the profile; 0 or -errno */
int session__write(struct session *s, const char *path);
/* the same into a malloc'd buffer (gzip'd) */
int session__write_buf(struct session *s, void **buf, size_t *len);
/* the process exited or exec'd since the probes went in (why says which) */
bool session__ended(struct session *s, enum session_end *why);
uint64_t session__samples(const struct session *s);
/* no new stack in its aggregate from now on (aggregate__freeze()) */
void session__freeze_stacks(struct session *s);
/* the sampling rate of the capture: --rate, or the in-process sampler's (otel_memory) */
uint64_t session__rate(const struct session *s);
/* "otel_memory" or "uprobes": how allocations are seen */
const char *session__sampler(const struct session *s);
/* why: the choice's sentence, or the refusal of an injection that fell back */
const char *session__sampler_why(const struct session *s);
/* with inject_fallback: why the process is on uprobes, not injected; NULL if it is not */
const char *session__inject_refused(const struct session *s);
/* the sampler was injected and is not released yet */
bool session__injected(const struct session *s);
/*
 * Release an injected sampler now, by deadline_ns (CLOCK_MONOTONIC; 0: the
 * usual bounds), and not at close; nothing when not injected or the
 * process is gone or exec'd.  Its own thread may call it for each session.
 */
void session__release(struct session *s, uint64_t deadline_ns);
/* once detached: the allocator calls the probes saw and their bytes; false if unknown */
bool session__calls_seen(const struct session *s, uint64_t *calls, uint64_t *bytes);
/* allocator calls that could never succeed (docs/allocators.md): 0 when not counted */
uint64_t session__failed_calls(const struct session *s);
/*
 * The same while the probes stay in (the agent): the spans closed so far
 * (one still open is in them once it closes, or its thread exits), and
 * outside_bytes and outside_calls 0: not known before detach, nor per
 * process over a shared object.  -ENODATA with --no-exact or on the
 * otel_memory path.
 */
int session__span_totals_now(struct session *s, struct span_totals *out);
/* the target runs a Go program (exe_kind.h) */
bool session__is_go(const struct session *s);
/* from attach to detach */
uint64_t session__duration_ns(const struct session *s);
uint64_t session__lost(const struct session *s);
/*
 * --inuse: fn(ctx, size, weight) for each sampled block of that estimate
 * (requested size, w = 1 / P(sampled)), for sums the allocator's rounding
 * needs (decompose.h).  Detaches first.  -ENODATA without --inuse.
 */
int session__live_each(struct session *s, void (*fn)(void *ctx, uint64_t size, double weight),
		       void *ctx);
/* one warning line on stderr for each way the capture is incomplete, with what to do */
void session__warn_losses(const struct session *s);
/* --inuse: sampled blocks not tracked (live table full) */
uint64_t session__untracked(const struct session *s);
size_t session__n_sites(const struct session *s);
/* culpert:span_* USDT sites found (and attached) */
size_t session__n_span_sites(const struct session *s);
/* functions matched by --span-fn */
size_t session__n_span_fns(const struct session *s);
const char *session__comm(const struct session *s);
/* the unwinding used, fp or dwarf (auto decided) */
enum session_unwind session__unwind(const struct session *s);
/* its object cache, for session_opts.objs of a fork */
struct objcache *session__objs(const struct session *s);
pid_t session__pid(const struct session *s);
void session__close(struct session *s);

/* --- the agent: many sessions over one sampler ------------------------------------ */

struct bpfobj;
struct bpfobj_opts;
struct bpfobj_proc;
struct alloc_plan;
struct export_base;

/*
 * A session whose probes go into `shared` (bpfobj__open()), which
 * delivers every process's records to its caller: the caller hands this
 * session's (by the record's tgid) to session__on_event().  o->unwind must
 * not be dwarf unless the shared object was loaded for it, o->span_fns empty.
 */
/*
 * The BPF object's options that follow from o: rates, sizes, probe paths,
 * the stack copy when dwarf (the unwinding chosen); the rest is the caller's
 */
void session_opts__bpfobj(const struct session_opts *o, bool dwarf, struct bpfobj_opts *out);
int session__open_shared(const struct session_opts *o, struct bpfobj *shared,
			 struct session **out, char *err, size_t errlen);
int session__on_event(void *session, void *data, size_t size);
/* take in new mappings (also while no samples come) */
void session__sync_maps(struct session *s);
/*
 * When the process mapped an executable object since: plan again, and
 * attach the allocator objects the plans so far lack (a dlopen'd
 * allocator).  1 when some were attached, 0 when none, -errno with the
 * reason in err.
 */
int session__replan(struct session *s, char *err, size_t errlen);
/* the plans, the first one first, into out[ALLOC_MAX_OBJECTS]; how many */
size_t session__plans(const struct session *s, const struct alloc_plan **out);
struct bpfobj_proc *session__proc(const struct session *s);

struct session_profile_opts {
	const char *default_sample_type;	/* NULL: alloc_space */
	bool span_labels_only;
	const struct export_base *base;		/* from session__alloc_base(): a delta */
	size_t n_base;
	int64_t time_nanos;			/* 0: the start */
	int64_t duration_nanos;
	const char *const *extra;		/* more "key=value" comments, this profile only */
	size_t n_extra;
	/* the symbolizer kept for the next profile, until session__drop_symbolizer() */
	bool keep_symbolizer;
};

/* what session__profile() will take at its peak, bytes (an estimate: export_profile_need()) */
size_t session__profile_need(const struct session *s);
/* the profile so far, gzip'd into a malloc'd *buf, probes left in; 0 or -errno */
int session__profile(struct session *s, const struct session_profile_opts *po, void **buf,
		     size_t *len);
/* the symbolizer kept by session__profile() let go (its objects' DWARF and names) */
void session__drop_symbolizer(struct session *s);
/* the aggregate's cumulative alloc values now, per entry, malloc'd; 0 or -errno */
int session__alloc_base(const struct session *s, struct export_base **out, size_t *n);

#endif /* CULPERT_SESSION_H */
