/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The BPF object's state, shared by its parts and by no one else: open,
 * load and run (bpfobj.c), each process's probes attached and detached
 * (bpfobj_attach.c), the maps read out (bpfobj_maps.c).
 */
#ifndef CULPERT_BPFOBJ_INTERNAL_H
#define CULPERT_BPFOBJ_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bpfobj.h"
#include "usdt_link.h"

struct bpf_link;
struct culpert_bpf;
struct reaper;
struct ring_buffer;

/* USDT links of one kind: uprobe_multi links (usdt_link.h), or libbpf's perf-event uprobes */
struct usdt_links {
	struct uprobe_set *multi;
	struct usdt_held held;		/* the multi links' argument specs */
	struct bpf_link **links;
	size_t n, cap;
};

/* one process's probes over the shared object */
struct bpfobj_proc {
	struct bpfobj *s;
	pid_t pid;
	const struct alloc_plan *plan;	/* the one attach_plan() works on */
	/* the caller's, kept for re-attaching (duty cycling): the first, then later objects' */
	const struct alloc_plan *plans[CULPERT_MAX_ALLOC_OBJS];
	size_t n_plans, n_objects;
	struct culpert_alloc_text text;
	struct uprobe_set *alloc_probes;	/* allocator entries and returns */
	struct uprobe_set *probes;	/* --span-fn: attached for good */
	struct uprobe_set *free_probes;	/* deallocators: off only when the budget says so */
	/* per plan, per point: 0 not looked at yet, else CULPERT_PROBE_F_STEPPED or 1 */
	uint32_t *site_class[CULPERT_MAX_ALLOC_OBJS];
	struct usdt_links usdt;		/* span probes and otel_memory:free: attached for good */
	/* with otel: the otel_memory probes instead of the allocator's entry points */
	const struct otel_plan *otel;	/* the caller's, kept for re-attaching */
	struct usdt_links otel_alloc;	/* otel_memory:alloc: duty cycling takes it out */
	size_t n_otel_alloc, n_otel_free;	/* their sites */
	uint64_t armed_ns, disarmed_ns;	/* the window where every probe was live */
	uint64_t add_ns;		/* bpfobj__add_proc()'s time: the kernel's attaches */
	bool alloc_on;			/* allocation probes attached */
	/* deallocator probes detached (bpfobj_proc__set_free) */
	bool free_off;
	/* blocks allocated before this are not in the live table */
	uint64_t heap_since_ns;
	uint64_t on_since_ns, observed_ns;	/* time they were on */
	bool registered;		/* in the procs map */
	struct culpert_proc final;	/* its entry when it left the map (unregistered) */
};

struct bpfobj {
	struct culpert_bpf *skel;
	struct ring_buffer *rb;
	struct usdt_spec_ids spec_ids;	/* USDT argument specs stored (uprobe_multi links) */
	/*
	 * spec_ids and libbpf's USDT manager of the object: an agent attaches
	 * on one thread while its event thread releases and switches
	 */
	pthread_mutex_t usdt_lock;
	struct bpf_link *exec_link;	/* notes an exec of the target */
	struct bpf_link *exit_link;	/* folds the totals of spans a thread exits inside */
	enum uprobe_mode mode;
	enum bpfobj_inuse inuse;
	bool otel_loaded;		/* the otel_memory programs are loaded */
	struct bpfobj_proc *only;	/* bpfobj__new(): the one process */
	bpfobj_event_fn on_event;	/* the caller's, behind deliver() */
	void *ctx;
	bool bounded;			/* in bpfobj__poll(), not draining */
	uint64_t poll_deadline_ns;	/* CLOCK_MONOTONIC; 0: set at the first record */
	unsigned int since_check;	/* records since the clock was last read */
	bool budget_spent;		/* deliver() stopped the ring at the deadline */
	uint64_t load_ns, attach_ns;	/* bpfobj__timing() */
	struct reaper *reaper;		/* async_teardown: links and live entries let go of there */
	bool closing;			/* bpfobj__closing(): the maps go with the object */
};

/* span probes through uprobe_multi links (usdt_link.h), or libbpf's perf-event uprobes */
static inline bool usdt_multi(const struct bpfobj *s)
{
	return s->mode == UPROBE_MODE_MULTI && usdt_link__supported();
}

#endif /* CULPERT_BPFOBJ_INTERNAL_H */
