/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Spans: a per-thread stack of open spans, pushed by span_enter probes and
 * popped by span_exit, whose chain every sampled allocation carries.  Span
 * names are interned in a map keyed by the name itself; userspace reads
 * that map when it writes the profile, so each name crosses once.
 */
#ifndef CULPERT_SPANS_BPF_H
#define CULPERT_SPANS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CULPERT_MAX_SPAN_NAMES);
	__type(key, struct culpert_span_name);
	__type(value, __u32);
} span_names SEC(".maps");

/* a 136-byte key does not belong on the 512-byte BPF stack */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct culpert_span_name);
} name_scratch SEC(".maps");

/* next name id; userspace starts it past the ids it gives --span-fn names */
__u32 next_name_id = 1;
/* ids of function spans, far above what applications hand out */
__u64 next_fn_span_id = 1ULL << 62;

/* sequence numbers of names read once (CULPERT_NAME_F_ONCE) */
__u64 next_once_name;

struct vma_ctx {
	bool immutable;
};

static long vma_immutable(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_ctx *c = data;

	/* VM_WRITE (0x2): a writable mapping, even of a file, may change under the address */
	c->immutable = BPF_CORE_READ(vma, vm_file) && !(BPF_CORE_READ(vma, vm_flags) & 0x2);
	return 0;
}

/*
 * A name the kernel cannot read now: keyed by its address, which userspace
 * reads through /proc/PID/mem (faulting the page in) or from the mapped
 * file.  Only a read-only file mapping cannot change under the address; a
 * name elsewhere gets a key of its own each time.
 */
static __always_inline void name_by_address(struct culpert_span_name *key, const char *name,
					    __u64 len)
{
	struct vma_ctx c = { 0 };
	__u64 *words = (__u64 *)key->name;

	bpf_find_vma(bpf_get_current_task_btf(), (__u64)name, vma_immutable, &c, 0);
	key->flags = CULPERT_NAME_F_ADDR;
	words[0] = (__u64)name;
	if (!c.immutable) {
		key->flags |= CULPERT_NAME_F_ONCE;
		words[1] = __sync_fetch_and_add(&next_once_name, 1);
	}
}

static __always_inline void emit_name(__u32 id, const struct culpert_span_name *key)
{
	struct culpert_name_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	/* lost: userspace finds the key in the map at the end all the same */
	if (!e)
		return;
	e->kind = CULPERT_EV_SPAN_NAME;
	e->id = id;
	e->addr = *(const __u64 *)key->name;
	e->len = key->len;
	e->flags = key->flags;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->pad = 0;
	bpf_ringbuf_submit(e, ringbuf_wakeup());
}

/*
 * The name's id, reading at most CULPERT_SPAN_NAME_MAX bytes now: the
 * caller may free it later.  A global function (name as a plain address),
 * verified once.
 */
__noinline __u32 culpert_intern_name(__u64 name_addr, __u64 len)
{
	const char *name = (const char *)name_addr;
	struct culpert_span_name *key;
	__u32 zero = 0, id, *found;

	key = bpf_map_lookup_elem(&name_scratch, &zero);
	if (!key)
		return 0;
	__builtin_memset(key, 0, sizeof(*key));
	if (len > CULPERT_SPAN_NAME_MAX)
		len = CULPERT_SPAN_NAME_MAX;
	key->len = (__u32)len;
	if (bpf_probe_read_user(key->name, len, name)) {
		__builtin_memset(key->name, 0, sizeof(key->name));
		name_by_address(key, name, len);
	}
	found = bpf_map_lookup_elem(&span_names, key);
	if (found)
		return *found;
	id = __sync_fetch_and_add(&next_name_id, 1);
	if (bpf_map_update_elem(&span_names, key, &id, BPF_NOEXIST)) {
		/* another CPU interned it first, or the table is full */
		found = bpf_map_lookup_elem(&span_names, key);
		if (found)
			return *found;
		count(CULPERT_CNT_SPAN_NAMES_FULL);
		return 0;
	}
	if (key->flags)
		emit_name(id, key);
	return id;
}

static __always_inline __u64 span_top_id(struct thread_state *ts)
{
	__u32 d = ts->span_depth;

	if (!d || d > CULPERT_MAX_SPAN_DEPTH)
		return 0;
	return ts->spans[(d - 1) & (CULPERT_MAX_SPAN_DEPTH - 1)].id;
}

static __always_inline void span_push(struct thread_state *ts, __u64 id, __u64 parent_id,
				      __u32 name_id, __u32 flags, __u64 sp)
{
	__u32 d = ts->span_depth, at = d & (CULPERT_MAX_SPAN_DEPTH - 1);
	struct culpert_span_frame *f;

	if (d >= CULPERT_MAX_SPAN_DEPTH) {
		/* counted so the matching exits pop nothing real */
		ts->span_overflow++;
		count(CULPERT_CNT_SPAN_OVERFLOW);
		return;
	}
	f = &ts->spans[at];
	f->id = id;
	f->parent_id = parent_id ? parent_id : span_top_id(ts);
	f->name_id = name_id;
	f->flags = flags;
	ts->span_sp[at] = sp;
	ts->span_ret[at] = sp ? read_user_word(sp) : 0;
	ts->span_depth = d + 1;
}

/*
 * Close span `id` and any span opened above it that did not close (async
 * code resuming elsewhere).  An id that is not open on this thread changes
 * nothing, unless spans overflowed the stack: then it closes one of those.
 */
static __always_inline void span_pop_to(struct thread_state *ts, __u64 id, struct totals_ctx *tc)
{
	__u32 d = ts->span_depth;
	int i;

	for (i = 0; i < CULPERT_MAX_SPAN_DEPTH; i++) {
		__u32 at = d - 1 - i;

		if (i >= (int)d)
			break;
		if (ts->spans[at & (CULPERT_MAX_SPAN_DEPTH - 1)].id == id) {
			totals_close(tc, at);
			ts->span_depth = at;
			ts->span_overflow = 0;
			return;
		}
	}
	if (ts->span_overflow)
		ts->span_overflow--;
	else
		count(CULPERT_CNT_SPAN_UNMATCHED);
}

/*
 * Which function spans are still running.  A function span's function
 * entered with the stack pointer at span_sp and its return address in that
 * slot; the program has left it once the stack is back above that point,
 * or once the slot holds anything else: a later call at that depth reused
 * it (a return, or a longjmp or an exception that skipped the return).  A
 * return probe parks the trampoline's address in the slot meanwhile.
 */
enum prune_mode {
	PRUNE_SAMPLE,	/* a sampled allocation at sp: check every slot */
	PRUNE_ENTER,	/* a function span opening at sp: see prune_one() */
	PRUNE_RETURN,	/* a return instruction at sp: frames at or below sp end */
};

struct prune_ctx {
	struct thread_state *ts;
	struct totals_ctx *tc;	/* where the spans found over go */
	__u64 sp;
	__u64 tramp;
	__u64 slot;		/* PRUNE_ENTER: the word at sp, read once if needed */
	__u32 name_id;		/* PRUNE_ENTER: the span opening */
	__u32 depth;
	__u32 kept;
	__u32 dead;		/* with totals: the frames found over, by index */
	__u32 mode;
};

static __always_inline bool slot_holds(struct prune_ctx *c, __u32 at, __u64 slot)
{
	if (!c->tramp)
		c->tramp = uretprobe_trampoline();
	return slot == c->ts->span_ret[at] || slot == c->tramp;
}

static __always_inline bool fn_frame_live(struct prune_ctx *c, __u32 at)
{
	__u64 sp_f = c->ts->span_sp[at];

	switch (c->mode) {
	case PRUNE_RETURN:
		return sp_f > c->sp;
	case PRUNE_ENTER:
		if (sp_f != c->sp)
			return sp_f > c->sp;
		/*
		 * A frame at our very stack pointer is a caller that tail-called
		 * us (it still owns the slot) -- unless it is this function being
		 * called again from the same place.
		 */
		if (c->ts->spans[at].name_id == c->name_id)
			return false;
		if (!c->slot)
			c->slot = read_user_word(c->sp);
		return slot_holds(c, at, c->slot);
	default:
		return sp_f > c->sp && slot_holds(c, at, read_user_word(sp_f));
	}
}

/* spans opened by USDT probes are the program's to close */
static __always_inline bool frame_over(struct prune_ctx *c, __u32 at)
{
	return (c->ts->spans[at].flags & CULPERT_SPAN_F_FUNCTION) && !fn_frame_live(c, at);
}

/* frame i kept: moved down over the frames dropped below it */
static __always_inline void prune_keep(struct prune_ctx *c, __u32 i)
{
	struct thread_state *ts = c->ts;
	__u32 at = i & (CULPERT_MAX_SPAN_DEPTH - 1), to = c->kept & (CULPERT_MAX_SPAN_DEPTH - 1);

	if (to != at) {
		ts->spans[to] = ts->spans[at];
		ts->span_sp[to] = ts->span_sp[at];
		ts->span_ret[to] = ts->span_ret[at];
		ts->tally[to] = ts->tally[at];
	}
	c->kept++;
}

/* the sampled path's (every allocator program's): judge and compact in one pass */
static long prune_one(__u32 i, void *data)
{
	struct prune_ctx *c = data;

	if (i >= c->depth)
		return 1;
	if (!frame_over(c, i & (CULPERT_MAX_SPAN_DEPTH - 1)))
		prune_keep(c, i);
	return 0;
}

/*
 * With totals, a first pass folds each frame found over under its path as
 * it was opened (every frame below it, over or not: its samples carried
 * that chain), before the second pass compacts.  Apart from the sampled
 * path: the fold's verification in every allocator program made loads
 * several times slower.
 */
static long prune_mark_fold(__u32 i, void *data)
{
	struct prune_ctx *c = data;
	__u32 at = i & (CULPERT_MAX_SPAN_DEPTH - 1);

	if (i >= c->depth)
		return 1;
	if (frame_over(c, at)) {
		totals_fold(c->tc, at, at);
		c->dead |= 1U << at;
	}
	return 0;
}

static long prune_compact(__u32 i, void *data)
{
	struct prune_ctx *c = data;

	if (i >= c->depth)
		return 1;
	if (!(c->dead & (1U << (i & (CULPERT_MAX_SPAN_DEPTH - 1)))))
		prune_keep(c, i);
	return 0;
}

/*
 * Drop the function spans that are no longer running, wherever they sit.
 * bpf_loop() (5.17+) keeps the verifier from walking every kept/dropped
 * combination of 32 frames.
 */
static __always_inline void span_prune_totals(struct thread_state *ts, __u64 sp,
					      enum prune_mode mode, __u32 name_id,
					      struct totals_ctx *tc)
{
	struct prune_ctx c = {
		.ts = ts,
		.tc = tc,
		.sp = sp,
		.name_id = name_id,
		.depth = ts->span_depth,
		.mode = mode,
	};

	if (c.depth > CULPERT_MAX_SPAN_DEPTH)
		c.depth = CULPERT_MAX_SPAN_DEPTH;
	if (tc) {
		bpf_loop(CULPERT_MAX_SPAN_DEPTH, prune_mark_fold, &c, 0);
		c.kept = c.dead ? 0 : c.depth;
		if (c.dead)
			bpf_loop(CULPERT_MAX_SPAN_DEPTH, prune_compact, &c, 0);
	} else {
		bpf_loop(CULPERT_MAX_SPAN_DEPTH, prune_one, &c, 0);
	}
	if (c.kept != ts->span_depth) {
		ts->span_depth = c.kept;
		ts->span_overflow = 0;
	}
}

/*
 * The same, from a sampled allocation, without the totals: folding there
 * made every allocator program's load several times slower.  A function
 * span found over only here (left by longjmp or an exception past its
 * return probes) is left out of the totals (docs/spans.md).
 */
static __always_inline void span_prune(struct thread_state *ts, __u64 sp, enum prune_mode mode,
				       __u32 name_id)
{
	span_prune_totals(ts, sp, mode, name_id, NULL);
}

/* push, and start the new span's totals */
static __always_inline void span_open(struct thread_state *ts, struct totals_ctx *tc, __u64 id,
				      __u64 parent_id, __u32 name_id, __u32 flags, __u64 sp)
{
	__u32 d = ts->span_depth;

	span_push(ts, id, parent_id, name_id, flags, sp);
	if (ts->span_depth == d + 1)
		totals_open(tc, d);
}

/* the chain of open spans, outermost first, into a sample record's data[]; returns the count */
static __always_inline __u32 span_copy(struct thread_state *ts, struct culpert_span_frame *out)
{
	__u32 d = ts->span_depth;
	int i;

	if (d > CULPERT_MAX_SPAN_DEPTH)
		d = CULPERT_MAX_SPAN_DEPTH;
	for (i = 0; i < CULPERT_MAX_SPAN_DEPTH; i++) {
		if (i >= (int)d)
			break;
		out[i] = ts->spans[i];
	}
	return d;
}

static __always_inline int handle_span_enter(struct pt_regs *ctx, __u64 id, __u64 parent_id,
					     const char *name, __u64 len)
{
	struct totals_ctx tc = {};
	struct thread_state *ts;
	__u32 name_id;

	if (!id || !spans_armed())
		return 0;
	ts = thread_state_get();
	if (!ts)
		return 0;
	name_id = culpert_intern_name((__u64)name, len);
	totals_event(&tc, ts);
	/* the implied parent must be a span that is still open */
	span_prune_totals(ts, PT_REGS_SP(ctx), PRUNE_SAMPLE, 0, &tc);
	span_open(ts, &tc, id, parent_id, name_id, 0, 0);
	return 0;
}

static __always_inline int handle_span_exit(__u64 id)
{
	struct totals_ctx tc = {};
	struct thread_state *ts;

	if (!id || !spans_armed())
		return 0;
	ts = thread_state_get();
	if (!ts)
		return 0;
	totals_event(&tc, ts);
	span_pop_to(ts, id, &tc);
	return 0;
}

/* --span-fn entry: the function's name id is the probe's cookie */
static __always_inline void handle_fn_span_enter(struct pt_regs *ctx)
{
	__u32 name_id = (__u32)bpf_get_attach_cookie(ctx);
	__u64 sp = PT_REGS_SP(ctx);
	struct totals_ctx tc = {};
	struct thread_state *ts;

	if (!spans_armed())
		return;
	ts = thread_state_get();
	if (!ts)
		return;
	totals_event(&tc, ts);
	span_prune_totals(ts, sp, PRUNE_ENTER, name_id, &tc);
	span_open(ts, &tc, __sync_fetch_and_add(&next_fn_span_id, 1), 0, name_id,
		  CULPERT_SPAN_F_FUNCTION, sp);
}

/*
 * --span-fn: a return instruction of the function (or of code it jumps
 * to), about to return with the stack pointer back at its entry's (the
 * return slot x86's ret pops; arm64's ret leaves sp alone): the call
 * entered at that stack pointer ends here, and with it recursion's inner
 * frames and spans left open inside it.
 */
static __always_inline int handle_fn_span_exit(struct pt_regs *ctx)
{
	/* a thread without state has no function span open to close */
	struct thread_state *ts = thread_state_find();
	struct totals_ctx tc = {};

	if (!ts)
		return 0;
	totals_event(&tc, ts);
	span_prune_totals(ts, PT_REGS_SP(ctx), PRUNE_RETURN, 0, &tc);
	return 0;
}

#endif /* CULPERT_SPANS_BPF_H */
