/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The session's state, shared by its parts and by no one else: the
 * lifecycle (session.c), the ring's intake (session_intake.c) and the
 * profiles written from it (session_export.c).
 */
#ifndef CULPERT_SESSION_INTERNAL_H
#define CULPERT_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocator.h"
#include "bpfobj.h"
#include "otel.h"
#include "session.h"
#include "spanfn.h"
#include "target.h"
#include "unwind.h"

struct census_entry;

struct session {
	struct session_opts o;
	struct target t;
	struct mapview *view;		/* its mappings, kept current */
	struct objcache *objs;
	/* kept from one profile to the next (the agent): each object's DWARF is read once */
	struct symbolizer *sym;
	uint64_t sym_gen;		/* the mappings' generation it was made for */
	struct alloc_plan plan;
	struct alloc_plan *more[ALLOC_MAX_OBJECTS];	/* objects mapped after the start (dlopen) */
	size_t n_more;
	uint64_t plan_gen;		/* the mappings' generation the plans are of */
	struct otel_plan otel;		/* the otel_memory contract, used when otel.use */
	const char *rate_from;		/* where the rate came from with otel.use */
	struct span_fn_plan fns;
	struct bpfobj *sampler;	/* its own (attach), or shared (the agent) */
	struct bpfobj_proc *proc;	/* this process's part of it */
	bool shared;			/* the sampler is the caller's */
	bool injected;			/* --sampler inject took over: release at detach */
	char *inject_refused;		/* inject_fallback: why it is on uprobes instead */
	struct aggregate *agg;
	struct spans *spans;
	enum session_unwind unwind;	/* fp or dwarf, after auto */
	struct unwinder *unwinder;	/* dwarf */
	struct fpchain *fpchain;	/* fp: stacks checked against the CFI */
	uint64_t fp_broken;		/* fp stacks through code without a frame pointer */
	uint64_t fp_broken_at;		/* the first such return address */
	uint64_t unwind_stops[UNWIND_STOP__MAX];
	uint64_t stack_copied;		/* bytes of stack the DWARF samples carried */
	struct live *live;		/* --inuse */
	uint64_t live_full;		/* blocks this side could not hold, even after a sync */
	uint64_t live_syncs;		/* reconciliations with the kernel's table while running */
	uint64_t kernel_only;		/* live in the kernel, unknown here: untracked */
	uint64_t first_id, last_id;	/* sample ids seen within the capture's window */
	uint64_t misses, free_misses;	/* probe hits the kernel skipped (bpfobj__misses()) */
	int mem_fd;			/* /proc/PID/mem: span names the kernel could not read */
	uint64_t names_late;		/* such names read here */
	uint64_t names_unresolved;	/* such names that could not be read at all */
	uint64_t throttled, throttled_over;	/* samples past the stack rate; of those, in the overflow */
	uint64_t kept_scaled;			/* samples kept past the stack rate, weighed by 1 / p */
	/* the kernel's census of the samples past the stack rate: by size and span path */
	struct census_entry *census;
	size_t n_census, cap_census;
	bool live_settled;
	char **usdt_objects;		/* paths of objects with culpert span probes */
	size_t n_usdt_objects, cap_usdt_objects;
	size_t n_usdt_sites;
	uint64_t samples;
	uint64_t outside_window;	/* records of the attach and detach moments, dropped */
	double est_bytes;		/* running estimate, for the status line */
	uint64_t counters[CULPERT_CNT__MAX];
	struct culpert_calls_seen seen;	/* allocator calls the probes saw, once detached */
	bool have_seen;
	bool go;			/* a Go program: its heap is not malloc's */
	bool pymalloc;			/* CPython: its small objects are not malloc's */
	size_t n_sites;
	uint64_t heap_since_ns;		/* live blocks allocated before this are dropped */
	char **comments;		/* extra "key=value" comments */
	size_t n_comments, cap_comments;
	bool run_comments;		/* add_run_comments() done */
	int64_t start_wall_ns;
	uint64_t start_ns, end_ns;
	bool detached;
};

/*
 * How many samples one stands for: past the stack rate, a sample keeps
 * its stack with probability keep / CULPERT_KEEP_ONE (bpf/throttle.bpf.h),
 * and the inverse of that weighs it (docs/profile-format.md, "Throttling").
 */
static inline double keep_scale(uint32_t keep)
{
	return keep && keep < CULPERT_KEEP_ONE ? (double)CULPERT_KEEP_ONE / keep : 1;
}

/*
 * The variance a sample kept with probability p adds to the bytes it stands
 * for, estimated from it (Horvitz-Thompson): (1 - p) W^2, W its bytes with
 * the 1 / p weight in
 */
static inline double thin_var(uint32_t keep, double bytes)
{
	double p = keep && keep < CULPERT_KEEP_ONE ? (double)keep / CULPERT_KEEP_ONE : 1;

	return (1 - p) * bytes * bytes;
}

/* the live heap settled against the kernel's table, once, after the capture */
void session_settle_live(struct session *s);
/* a span name from the kernel's table (bpfobj__span_names()); 0 or -ENOMEM */
int session_store_name(void *ctx, uint32_t id, const struct culpert_span_name *key);

#endif /* CULPERT_SESSION_INTERNAL_H */
