// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ring's records into the session: samples unwound and aggregated,
 * the live heap kept and reconciled with the kernel's, span names read.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "aggregate.h"
#include "fpchain.h"
#include "live.h"
#include "log.h"
#include "mapview.h"
#include "session_internal.h"
#include "spanname.h"
#include "spans.h"
#include "stack.h"
#include "vec.h"

/*
 * The frames of a DWARF sample: unwound from the copied registers and
 * stack, the allocator's own frame dropped, a truncated copy marked.
 */
static size_t dwarf_stack(struct session *s, const struct culpert_alloc_event *e, uint64_t *out,
			  size_t max)
{
	uint64_t frames[CULPERT_MAX_FRAMES + 1];
	const __u8 *stack = event_stack(e);
	enum unwind_stop stop;
	size_t n = 0;
	int got, i;

	got = unwinder__unwind(s->unwinder, mapview__maps(s->view), &e->regs, stack,
			       e->stack_len, frames, max + 1, &stop);
	if (got == -EFAULT) {
		/* a new mapping the snapshot lacks: once more with fresh maps */
		mapview__refresh(s->view);
		got = unwinder__unwind(s->unwinder, mapview__maps(s->view), &e->regs, stack,
				       e->stack_len, frames, max + 1, &stop);
	}
	if (got < 0) {
		s->unwind_stops[UNWIND_STOP_ERROR]++;
		return 0;
	}
	s->unwind_stops[stop]++;
	for (i = 1; i < got && n < max; i++)
		out[n++] = frames[i];
	if (stop == UNWIND_STOP_TRUNCATED && n < max)
		out[n++] = CULPERT_FRAME_TRUNCATED;
	return n;
}

/* a frame-pointer stack whose walk went through code without a frame pointer: counted */
static void check_fp_chain(struct session *s, const uint64_t *frames, size_t n)
{
	int at = s->fpchain ? fpchain__check(s->fpchain, mapview__maps(s->view), frames, n) : -1;

	if (at < 0)
		return;
	if (!s->fp_broken++)
		s->fp_broken_at = frames[at];
}

/*
 * The allocations an otel_memory sample stands for: the contract's weight
 * estimates its bytes (nsamples x rate, docs/sampler.md), so weight / size
 * estimates its calls.  A 0-byte block has no sampling point: reported at
 * all, it is one call (rate 1).
 */
static double otel_objects(const struct culpert_alloc_event *e)
{
	return e->size ? (double)e->weight / (double)e->size : 1;
}

/* the allocations a sample stands for, however it was sampled */
static double sample_objects(const struct session *s, const struct culpert_alloc_event *e)
{
	return (e->fn == CULPERT_FN_OTEL ? otel_objects(e) : sample_weight(e->size, s->o.rate)) *
	       keep_scale(e->keep);
}

/*
 * The finest key is (stack, thread, span chain with ids); the aggregate
 * coarsens what does not fit (aggregate.h), keeping the stack as long as
 * distinct stacks fit in --max-stacks and the totals per span path always.
 */
static int add_sample(struct session *s, const struct culpert_alloc_event *e)
{
	bool fp = !s->unwinder || !e->stack_len;
	uint64_t frames[CULPERT_MAX_FRAMES];
	struct agg_sample a = { .frames = frames, .tid = e->tid, .size = e->size };

	/* every mapping made before this sample is known before its frames are looked up */
	mapview__update(s->view);
	if (!fp) {
		s->stack_copied += e->stack_len;
		a.n_frames = dwarf_stack(s, e, frames, s->o.max_depth);
	} else {
		a.n_frames = stack_from_event(e, frames, s->o.max_depth);
	}
	/* at an otel_memory site the walk starts in the sampler: its frames are not the program's */
	if (e->fn == CULPERT_FN_OTEL)
		a.n_frames = otel_plan__trim(&s->otel, frames, a.n_frames);
	if (e->fn == CULPERT_FN_OTEL || keep_scale(e->keep) != 1) {
		a.weighted = true;
		a.objects = sample_objects(s, e);
		a.thinned = keep_scale(e->keep) != 1;
		a.thin_var = thin_var(e->keep, a.objects * (double)e->size);
	}
	s->kept_scaled += keep_scale(e->keep) != 1;
	if (fp)
		check_fp_chain(s, frames, a.n_frames);
	/*
	 * A frame-pointer stack is taken as the BPF side found it, so its
	 * frames are checked against the view; DWARF stacks need no check: the
	 * unwinder keeps only frames in executable mappings of the view,
	 * refreshed on -EFAULT.
	 */
	mapview__frames(s->view, frames, a.n_frames, e->ts_ns, fp);
	a.chain = spans__chain(s->spans, event_spans(e), e->span_depth, true);
	a.path = spans__chain(s->spans, event_spans(e), e->span_depth, false);
	s->samples++;
	s->est_bytes += sample_objects(s, e) * (double)e->size;
	return aggregate__add_sample(s->agg, &a, s->o.rate);
}

struct mark_ctx {
	struct session *s;
	uint64_t unknown;
};

static int mark_live(void *ctx, uint64_t id)
{
	struct mark_ctx *m = ctx;

	/* ids outside the window's are blocks allocated while probes went in or out */
	if (!live__mark(m->s->live, id) && id >= m->s->first_id && id <= m->s->last_id)
		m->unknown++;
	return 0;
}

/*
 * The kernel's live table is the truth (a free that reached the BPF side
 * is never lost; its record in the ring buffer may be): keep the blocks it
 * holds, drop the others.  Returns the ids it holds that this side does
 * not know, or -errno.
 */
static int64_t reconcile_live(struct session *s)
{
	struct mark_ctx m = { .s = s };
	int err;

	live__mark_begin(s->live);
	err = bpfobj_proc__live_ids(s->proc, mark_live, &m);
	if (err) {
		pr_warn("cannot read the kernel's live table: %s; the live heap keeps the blocks the "
			"ring buffer did not say were freed\n", strerror(-err));
		return err;
	}
	live__sweep(s->live);
	return (int64_t)m.unknown;
}

static void sync_live(struct session *s)
{
	s->live_syncs++;
	reconcile_live(s);
}

/* once, after the capture: only what the kernel still tracks is live */
void session_settle_live(struct session *s)
{
	int64_t unknown;

	if (s->live_settled)
		return;
	s->live_settled = true;
	unknown = reconcile_live(s);
	if (unknown > 0)
		s->kernel_only = (uint64_t)unknown;
}

static int on_alloc(struct session *s, const struct culpert_alloc_event *e)
{
	struct live_block b = { .id = e->id, .size = e->size, .ts_ns = e->ts_ns };
	int entry;

	/* before every probe was live or after the first went: its spans are not known */
	if (!bpfobj_proc__in_window(s->proc, e->ts_ns)) {
		s->outside_window++;
		return 0;
	}
	entry = add_sample(s, e);

	if (entry < 0)
		return entry;
	/* allocated before the free probes came back: its free may have gone unseen */
	if (!s->live || e->ts_ns < s->heap_since_ns)
		return 0;
	b.entry = (uint32_t)entry;
	b.weight = sample_objects(s, e);
	if (!s->first_id || e->id < s->first_id)
		s->first_id = e->id;
	if (e->id > s->last_id)
		s->last_id = e->id;
	/* full of blocks whose free records were lost: the kernel's table says which */
	if (live__full(s->live))
		sync_live(s);
	/* still full: if the kernel tracks it, it is counted at the end (kernel_only) */
	if (live__alloc(s->live, &b) == -ENOSPC)
		s->live_full++;
	return 0;
}

/* a name the kernel could not read, read here; 0 or -errno (counted at the end) */
static int read_late_name(struct session *s, uint32_t id, uint64_t addr, uint32_t len)
{
	char buf[CULPERT_SPAN_NAME_MAX + 1];
	int err;

	if (spans__name(s->spans, id))
		return 0;
	err = span_name__read(s->mem_fd, mapview__maps(s->view), s->objs, addr, len, buf);
	if (!err)
		err = spans__set_name(s->spans, id, buf, len);
	if (!err)
		s->names_late++;
	return err;
}

int session__on_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const __u32 *kind = data;

	if (size < sizeof(*kind))
		return 0;
	switch (*kind) {
	case CULPERT_EV_ALLOC:
		if (!event_complete(data, size))
			return 0;
		/* out of memory ends the capture; what was aggregated is still written */
		return on_alloc(s, data);
	case CULPERT_EV_ALLOC_RET:
		if (s->live && size >= sizeof(struct culpert_ret_event)) {
			const struct culpert_ret_event *r = data;

			live__ret(s->live, r->id, r->tracked);
		}
		return 0;
	case CULPERT_EV_FREE:
		if (s->live && size >= sizeof(struct culpert_free_event))
			live__release(s->live, ((const struct culpert_free_event *)data)->id);
		return 0;
	case CULPERT_EV_SPAN_NAME:
		if (size >= sizeof(struct culpert_name_event)) {
			const struct culpert_name_event *n = data;

			/* now: a name in writable memory may change; failing, the end tries again */
			read_late_name(s, n->id, n->addr, n->len);
		}
		return 0;
	default:
		return 0;
	}
}

void session__heap_since(struct session *s, uint64_t since_ns)
{
	s->heap_since_ns = since_ns;
	if (s->live)
		live__drop_before(s->live, since_ns);
}

int session_store_name(void *ctx, uint32_t id, const struct culpert_span_name *key)
{
	struct session *s = ctx;
	uint64_t addr;

	if (!(key->flags & CULPERT_NAME_F_ADDR))
		return spans__set_name(s->spans, id, key->name, key->len);
	/* an address in some process: only the one that sent it (its record) can read it */
	if (s->shared)
		return 0;
	memcpy(&addr, key->name, sizeof(addr));
	if (read_late_name(s, id, addr, key->len) == -ENOMEM)
		return -ENOMEM;
	s->names_unresolved += !spans__name(s->spans, id);
	return 0;
}
