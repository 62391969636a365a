/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Exact totals per span path: bytes and calls of every allocator call,
 * sampled or not, and a histogram of bytes per span instance.
 *
 * The allocator path pays nothing for them: it already adds every call to
 * its thread's hot state (hot_state.seen).  A span event reads those sums
 * instead: what the thread allocated since its previous span event (its
 * "mark") belongs to the span that was innermost meanwhile (self), what it
 * allocated between a span's entry and its exit is the span's inclusive
 * total.  So only span enters and exits, already probe hits of their own,
 * do the work; a closing span is folded into its path's culpert_span_total.
 *
 * A hot slot another thread took over in between (thread ids equal modulo
 * CULPERT_HOT_SLOTS, both running) mixes their sums: the slot's epoch tells,
 * the span event is counted in CULPERT_CNT_TOTALS_INEXACT and charges
 * nothing for that stretch.
 */
#ifndef CULPERT_TOTALS_BPF_H
#define CULPERT_TOTALS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CULPERT_MAX_TOTALS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct culpert_total_key);
	__type(value, struct culpert_span_total);
} span_totals SEC(".maps");

/* load-time knob: attach --no-exact turns the span events' bookkeeping off */
const volatile bool exact_totals = true;

/*
 * A span to fold, handed to culpert_totals_fold() (a key of 136 bytes is
 * not for the BPF stack).  Per CPU: a program preempting another on its CPU
 * between filling and folding would fold its own span twice, the other's
 * never -- the same bargain as the span name scratch.
 */
struct totals_fold_req {
	struct culpert_total_key key;
	struct culpert_span_tally tally;
	__u64 now_bytes;
	__u64 now_calls;
	__u32 epoch;
	__u32 open;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct totals_fold_req);
} total_fold_scratch SEC(".maps");

/* a zeroed value to create entries from; nothing writes it */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct culpert_span_total);
} total_zero SEC(".maps");

struct totals_ctx {
	struct thread_state *ts;
	struct culpert_proc *proc;
	struct totals_fold_req *req;
	__u64 now_bytes;		/* the thread's hot-state sums now */
	__u64 now_calls;
	__u32 epoch;			/* ... and its slot's epoch; 0: the slot is another's */
	__u32 tgid;
	__u32 to;			/* totals_close(): frames from here up are closing */
	__u32 depth;
	bool open;			/* they did not close: open at the end, or their thread exited */
};

/* what the totals need of a thread: its process, its slot's sums (hs NULL: not its own now) */
static __always_inline bool totals_begin(struct totals_ctx *c, struct thread_state *ts,
					 struct hot_state *hs, __u32 tgid)
{
	__u32 zero = 0;

	c->ts = ts;
	c->tgid = tgid;
	c->proc = bpf_map_lookup_elem(&procs, &tgid);
	c->req = bpf_map_lookup_elem(&total_fold_scratch, &zero);
	if (!c->proc || !c->req)
		return false;
	c->epoch = hs ? hs->epoch : 0;
	c->now_bytes = hs ? hs->seen.bytes : 0;
	c->now_calls = hs ? hs->seen.calls : 0;
	return true;
}

/* the innermost span is charged with what the thread allocated since the mark */
static __always_inline void totals_charge(struct totals_ctx *c)
{
	struct thread_state *ts = c->ts;
	__u32 d = ts->span_depth;
	struct culpert_span_tally *t;

	if (!c->proc)
		return;
	if (d && d <= CULPERT_MAX_SPAN_DEPTH) {
		t = &ts->tally[(d - 1) & (CULPERT_MAX_SPAN_DEPTH - 1)];
		if (c->epoch && c->epoch == ts->mark_epoch) {
			t->self_bytes += c->now_bytes - ts->mark_bytes;
			t->self_calls += c->now_calls - ts->mark_calls;
		} else if (ts->mark_epoch) {
			__sync_fetch_and_add(&c->proc->counters[CULPERT_CNT_TOTALS_INEXACT], 1);
		}
	}
	ts->mark_bytes = c->now_bytes;
	ts->mark_calls = c->now_calls;
	ts->mark_epoch = c->epoch;
}

static __always_inline void totals_max(__u64 *max, __u64 v)
{
	__u64 old;
	int i;

	/* CPUs racing retry; a loss past 4 tries leaves a smaller max, never a wrong total */
	for (i = 0; i < 4; i++) {
		old = *max;
		if (v <= old || __sync_val_compare_and_swap(max, old, v) == old)
			return;
	}
}

/* the entry of r->key, created if the process p may have one more path */
static __always_inline struct culpert_span_total *totals_entry(struct totals_fold_req *r,
							      struct culpert_proc *p)
{
	struct culpert_span_total *v = bpf_map_lookup_elem(&span_totals, &r->key), *zero;
	__u32 z = 0;

	if (v)
		return v;
	zero = bpf_map_lookup_elem(&total_zero, &z);
	if (!zero || __sync_fetch_and_add(&p->totals_paths, 1) >= CULPERT_MAX_TOTALS_PER_PROC)
		return NULL;
	bpf_map_update_elem(&span_totals, &r->key, zero, BPF_NOEXIST);
	/* created here or by another CPU meanwhile; NULL when the map is full */
	return bpf_map_lookup_elem(&span_totals, &r->key);
}

/*
 * Fold this CPU's totals_fold_req into its path's totals: its key holds the
 * name ids of every frame of the thread, the path is the first `prefix` of
 * them and then `name_id`.  A global function with scalar arguments:
 * verified once, on its own, rather than inside every loop over span
 * frames of every program (whose loads it had made ten times slower).
 */
__noinline int culpert_totals_fold(__u32 prefix, __u32 name_id)
{
	struct totals_fold_req *r;
	struct culpert_span_total *v;
	struct culpert_proc *p;
	__u64 incl_bytes, incl_calls;
	__u32 zero = 0, b, i;

	r = bpf_map_lookup_elem(&total_fold_scratch, &zero);
	if (!r || prefix >= CULPERT_MAX_SPAN_DEPTH)
		return 0;
	for (i = 0; i < CULPERT_MAX_SPAN_DEPTH; i++)
		if (i > prefix)
			r->key.name_ids[i] = 0;
	r->key.name_ids[prefix & (CULPERT_MAX_SPAN_DEPTH - 1)] = name_id;
	r->key.depth = prefix + 1;
	p = bpf_map_lookup_elem(&procs, &r->key.tgid);
	if (!p)
		return 0;
	incl_bytes = r->now_bytes - r->tally.entry_bytes;
	incl_calls = r->now_calls - r->tally.entry_calls;
	if (!r->epoch || r->tally.entry_epoch != r->epoch) {
		/* the slot's sums are another thread's too: inclusive is at least self */
		__sync_fetch_and_add(&p->counters[CULPERT_CNT_TOTALS_INEXACT], 1);
		incl_bytes = r->tally.self_bytes;
		incl_calls = r->tally.self_calls;
	}
	v = totals_entry(r, p);
	if (!v) {
		__sync_fetch_and_add(&p->counters[CULPERT_CNT_TOTALS_FULL], 1);
		__sync_fetch_and_add(&p->totals_over_bytes, r->tally.self_bytes);
		__sync_fetch_and_add(&p->totals_over_calls, r->tally.self_calls);
		__sync_fetch_and_add(&p->totals_over_instances, 1);
		return 0;
	}
	__sync_fetch_and_add(&v->self_bytes, r->tally.self_bytes);
	__sync_fetch_and_add(&v->self_calls, r->tally.self_calls);
	__sync_fetch_and_add(&v->incl_bytes, incl_bytes);
	__sync_fetch_and_add(&v->incl_calls, incl_calls);
	if (r->open) {
		__sync_fetch_and_add(&v->open, 1);
		return 0;
	}
	__sync_fetch_and_add(&v->instances, 1);
	__sync_fetch_and_add(&v->closed_bytes, incl_bytes);
	b = culpert_hist_bucket(incl_bytes);
	if (b < CULPERT_HIST_BUCKETS)
		__sync_fetch_and_add(&v->hist[b], 1);
	totals_max(&v->max_bytes, incl_bytes);
	return 0;
}

/*
 * Fold the span at ts->spans[at], whose path is spans[0..prefix) and
 * itself.  Straight-line: every frame's name id is copied, the global
 * function keeps the ones of the path.
 */
static __always_inline void totals_fold(struct totals_ctx *c, __u32 prefix, __u32 at)
{
	struct totals_fold_req *r = c->req;
	int i;

	at &= CULPERT_MAX_SPAN_DEPTH - 1;
	if (!r || !c->proc)
		return;
	r->key.tgid = c->tgid;
#pragma unroll
	for (i = 0; i < CULPERT_MAX_SPAN_DEPTH; i++)
		r->key.name_ids[i] = c->ts->spans[i].name_id;
	r->tally = c->ts->tally[at];
	r->now_bytes = c->now_bytes;
	r->now_calls = c->now_calls;
	r->epoch = c->epoch;
	r->open = c->open;
	culpert_totals_fold(prefix, c->ts->spans[at].name_id);
}

static long totals_close_one(__u32 i, void *data)
{
	struct totals_ctx *c = data;
	__u32 at = c->depth - 1 - i;

	if (i >= c->depth - c->to)
		return 1;
	totals_fold(c, at, at);
	return 0;
}

/* fold the spans at depth `to` and up, innermost first (the caller then pops them) */
static __always_inline void totals_close(struct totals_ctx *c, __u32 to)
{
	if (!c->proc)
		return;
	c->depth = c->ts->span_depth;
	if (c->depth > CULPERT_MAX_SPAN_DEPTH)
		c->depth = CULPERT_MAX_SPAN_DEPTH;
	c->to = to;
	if (to < c->depth)
		bpf_loop(CULPERT_MAX_SPAN_DEPTH, totals_close_one, c, 0);
}

/* a span pushed at `at`: its counts start now */
static __always_inline void totals_open(struct totals_ctx *c, __u32 at)
{
	struct culpert_span_tally *t;

	if (!c->proc)
		return;
	t = &c->ts->tally[at & (CULPERT_MAX_SPAN_DEPTH - 1)];
	t->entry_bytes = c->now_bytes;
	t->entry_calls = c->now_calls;
	t->entry_epoch = c->epoch;
	t->self_bytes = 0;
	t->self_calls = 0;
}

/* a span event of the current thread: charge the innermost span, then the event changes the stack */
static __always_inline bool totals_event(struct totals_ctx *c, struct thread_state *ts)
{
	c->ts = ts;
	if (!exact_totals)
		return false;
	if (!totals_begin(c, ts, hot_state_get(), bpf_get_current_pid_tgid() >> 32))
		return false;
	totals_charge(c);
	return true;
}

/*
 * The thread's spans that never closed, folded as open: at its exit, or at
 * the end of the capture.  hs: the thread's hot slot if it still holds it.
 */
static __always_inline void totals_abandon(struct thread_state *ts, struct hot_state *hs,
					   __u32 tgid)
{
	struct totals_ctx c = { .open = true };

	if (!ts->span_depth || !totals_begin(&c, ts, hs, tgid))
		return;
	totals_charge(&c);
	totals_close(&c, 0);
	ts->span_depth = 0;
	ts->span_overflow = 0;
}

#endif /* CULPERT_TOTALS_BPF_H */
