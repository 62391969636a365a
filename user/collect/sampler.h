/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The BPF side's lifecycle: open the skeleton, set the load-time knobs,
 * load, fill the exponential table, attach the plan's probes to one
 * process, then deliver ring-buffer records until detached.
 */
#ifndef CULPERT_SAMPLER_H
#define CULPERT_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "culpert.h"
#include "uprobe.h"

struct alloc_plan;
struct sampler;
struct span_fn_plan;

/* a record from the ring buffer; return non-zero to stop consuming */
typedef int (*sampler_event_fn)(void *ctx, void *data, size_t size);

/* how --inuse sees the pointers sampled calls return */
enum sampler_inuse {
	SAMPLER_INUSE_OFF,
	SAMPLER_INUSE_SESSION,		/* uprobe sessions (6.13+): a return only for sampled calls */
	SAMPLER_INUSE_EVERY_RETURN,	/* a return probe on every allocator call */
};

struct sampler_opts {
	pid_t pid;
	uint64_t rate;			/* mean bytes between samples; 1 = every allocation */
	unsigned int max_depth;		/* frames per sample, 1..127 */
	size_t ringbuf_bytes;		/* rounded up to a power of two */
	bool no_multi;			/* force one perf-event uprobe per site */
	bool no_session;		/* entry + return probes even where uprobe sessions exist */
	bool track_inuse;		/* --inuse: pointers, frees, live blocks */
	bool unwind_dwarf;		/* copy registers + stack instead of a frame-pointer walk */
	unsigned int stack_copy_bytes;	/* --stack-size, with unwind_dwarf */
	size_t max_live;		/* --max-live: live blocks tracked (0: default) */
	uint64_t stack_rate;		/* --max-stack-rate: captures per second (0: no limit) */
	const struct alloc_plan *plan;
	/* objects (paths we can open) carrying culpert:span_* USDT probes */
	char *const *usdt_objects;
	size_t n_usdt_objects;
	const struct span_fn_plan *span_fns;	/* --span-fn matches, may be NULL */
	sampler_event_fn on_event;
	void *ctx;
};

/* 0 or -errno with a user-facing reason in err */
int sampler__new(const struct sampler_opts *opts, struct sampler **out, char *err, size_t errlen);
/* wait up to timeout_ms for records and deliver them; records consumed or -errno */
int sampler__poll(struct sampler *s, int timeout_ms);
/* remove every probe; records already queued can still be drained */
void sampler__detach(struct sampler *s);
/* deliver everything queued; records consumed or -errno */
int sampler__drain(struct sampler *s);
/*
 * The capture's window, CLOCK_MONOTONIC: from the moment every probe was
 * live to the moment the first one is let go of (0 while attached).
 * Outside it allocations are seen without their spans: their records are
 * to be dropped (sampler__in_window()).
 */
void sampler__window(const struct sampler *s, uint64_t *start_ns, uint64_t *end_ns);
bool sampler__in_window(const struct sampler *s, uint64_t ts_ns);
/* the target exec'd another program since the probes went in */
bool sampler__target_execed(const struct sampler *s);
void sampler__counters(const struct sampler *s, uint64_t out[CULPERT_CNT__MAX]);
/*
 * Samples past the stack rate: cb(ctx, size, path, count) for each size
 * and span path (path: the name ids outermost first, NULL outside spans);
 * then the ones the table had no room for, by number and bytes.  0 or -errno.
 */
int sampler__throttled(const struct sampler *s,
		       int (*cb)(void *ctx, uint64_t size, const struct culpert_throttle_path *path,
				 uint64_t count),
		       void *ctx, uint64_t *over_samples, uint64_t *over_bytes);
/*
 * --inuse: the sample id of every block the kernel's live table holds: the
 * truth about what is live (its records in the ring buffer may be lost, a
 * free that reached the BPF side is never lost).  cb returns non-zero to
 * stop; 0 or -errno.
 */
int sampler__live_ids(const struct sampler *s, int (*cb)(void *ctx, uint64_t id), void *ctx);
/*
 * Probe hits the kernel skipped without running their program (it does
 * not nest BPF programs on a CPU): over all programs, and over those that
 * see frees -- a skipped free leaves its block looking live.
 */
void sampler__misses(const struct sampler *s, uint64_t *all, uint64_t *frees);
/* allocator calls the probes saw, and their bytes, summed over every thread; 0 or -errno */
int sampler__calls_seen(const struct sampler *s, struct culpert_calls_seen *out);
/*
 * Every span name the BPF side interned, as its map key (name bytes, or an
 * address with CULPERT_NAME_F_ADDR); cb returns non-zero to stop.  0 or -errno
 */
int sampler__span_names(const struct sampler *s,
			int (*cb)(void *ctx, uint32_t id, const struct culpert_span_name *key),
			void *ctx);
size_t sampler__n_sites(const struct sampler *s);
/* how long sampler__new() took to load (and verify) the BPF programs, and to attach them */
void sampler__timing(const struct sampler *s, uint64_t *load_ns, uint64_t *attach_ns);
enum sampler_inuse sampler__inuse(const struct sampler *s);
const char *sampler_inuse__name(enum sampler_inuse m);
/* will uprobe sessions be used (uprobe_multi and 6.13+, not --no-session/--no-multi)? */
bool sampler_sessions(bool no_multi, bool no_session);
/* how the allocator probes attach: uprobe_multi links unless --no-multi or too old a kernel */
enum uprobe_mode sampler_uprobe_mode(bool no_multi);
/* how --inuse would see returns, given the same options */
enum sampler_inuse sampler_inuse_mode(bool no_multi, bool no_session);
void sampler__free(struct sampler *s);

/* fill table[CULPERT_EXP_TABLE_SIZE] with exponential variates of mean `rate` */
void sampler_fill_exp_table(__s64 *table, uint64_t rate);

#endif /* CULPERT_SAMPLER_H */
