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

/* the name's id, reading at most CULPERT_SPAN_NAME_MAX bytes now: the caller may free it later */
static __always_inline __u32 intern_name(const char *name, __u64 len)
{
	struct culpert_span_name *key;
	__u32 zero = 0, id, *found;

	key = bpf_map_lookup_elem(&name_scratch, &zero);
	if (!key)
		return 0;
	__builtin_memset(key, 0, sizeof(*key));
	if (len > CULPERT_SPAN_NAME_MAX)
		len = CULPERT_SPAN_NAME_MAX;
	if (bpf_probe_read_user(key->name, len, name))
		return 0;
	key->len = (__u32)len;
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
	__u32 d = ts->span_depth;
	struct culpert_span_frame *f;

	if (d >= CULPERT_MAX_SPAN_DEPTH) {
		/* counted so the matching exits pop nothing real */
		ts->span_overflow++;
		count(CULPERT_CNT_SPAN_OVERFLOW);
		return;
	}
	f = &ts->spans[d & (CULPERT_MAX_SPAN_DEPTH - 1)];
	f->id = id;
	f->parent_id = parent_id ? parent_id : span_top_id(ts);
	f->name_id = name_id;
	f->flags = flags;
	ts->span_sp[d & (CULPERT_MAX_SPAN_DEPTH - 1)] = sp;
	ts->span_depth = d + 1;
}

/*
 * Close span `id` and any span opened above it that did not close (async
 * code resuming elsewhere).  An id that is not open on this thread changes
 * nothing, unless spans overflowed the stack: then it closes one of those.
 */
static __always_inline void span_pop_to(struct thread_state *ts, __u64 id)
{
	__u32 d = ts->span_depth;
	int i;

	for (i = 0; i < CULPERT_MAX_SPAN_DEPTH; i++) {
		__u32 at = d - 1 - i;

		if (i >= (int)d)
			break;
		if (ts->spans[at & (CULPERT_MAX_SPAN_DEPTH - 1)].id == id) {
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

/* the chain of open spans, outermost first, into a sample record */
static __always_inline void span_copy(struct thread_state *ts, struct culpert_alloc_event *e)
{
	__u32 d = ts->span_depth;
	int i;

	if (d > CULPERT_MAX_SPAN_DEPTH)
		d = CULPERT_MAX_SPAN_DEPTH;
	for (i = 0; i < CULPERT_MAX_SPAN_DEPTH; i++) {
		if (i >= (int)d)
			break;
		e->spans[i] = ts->spans[i];
	}
	e->span_depth = d;
}

static __always_inline int handle_span_enter(__u64 id, __u64 parent_id, const char *name,
					     __u64 len)
{
	struct thread_state *ts;

	if (!id)
		return 0;
	ts = thread_state_get();
	if (!ts)
		return 0;
	span_push(ts, id, parent_id, intern_name(name, len), 0, 0);
	return 0;
}

static __always_inline int handle_span_exit(__u64 id)
{
	struct thread_state *ts;

	if (!id)
		return 0;
	ts = thread_state_get();
	if (ts)
		span_pop_to(ts, id);
	return 0;
}

#endif /* CULPERT_SPANS_BPF_H */
