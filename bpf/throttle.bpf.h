/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A bound on what stack captures cost a process: a storm of large
 * allocations samples every call, and each capture (a frame-pointer walk,
 * or 16 KiB of stack copied for DWARF) and its record cost the target far
 * more than the probe itself.  Past the process's rate, a sample is still
 * counted -- by exact size and span path, in a map -- so its bytes reach the
 * profile, unbiased, under a [throttled] frame; only its stack is not taken.
 */
#ifndef CULPERT_THROTTLE_BPF_H
#define CULPERT_THROTTLE_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CULPERT_MAX_THROTTLED);
	__type(key, struct culpert_throttle_key);
	__type(value, __u64);
} throttled SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CULPERT_MAX_THROTTLED);
	__type(key, __u64);
	__type(value, struct culpert_throttle_path);
} throttle_paths SEC(".maps");

/* a scratch path: 136 bytes do not belong on the BPF stack */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct culpert_throttle_path);
} path_scratch SEC(".maps");

/*
 * May the process have one more stack captured now?  GCRA: the capture is
 * due at tb_tat_ns; up to tb_burst_ns early is allowed.  CPUs updating it
 * at once retry; one that still loses is let through (the bound is on
 * cost, a capture more is not a harm; a sample throttled while tokens were
 * left would lose its stack for nothing).
 */
static __always_inline bool stack_token(struct culpert_proc *p)
{
	__u64 now, tat, next;
	int i;

	if (!p || !p->tb_interval_ns)
		return true;
	now = bpf_ktime_get_ns();
	for (i = 0; i < 4; i++) {
		tat = p->tb_tat_ns;
		next = tat;
		if (next + p->tb_burst_ns < now)
			next = now - p->tb_burst_ns;
		if (next > now)
			return false;
		if (__sync_val_compare_and_swap(&p->tb_tat_ns, tat, next + p->tb_interval_ns) == tat)
			return true;
	}
	return true;
}

/* FNV-1a over the name ids of the thread's open spans, into `path` as well */
static __always_inline __u64 path_hash(struct thread_state *ts, struct culpert_throttle_path *path)
{
	__u64 h = 0xcbf29ce484222325ULL;
	__u32 d = ts->span_depth, i;

	if (d > CULPERT_MAX_SPAN_DEPTH)
		d = CULPERT_MAX_SPAN_DEPTH;
	path->depth = d;
	for (i = 0; i < CULPERT_MAX_SPAN_DEPTH; i++) {
		if (i >= d)
			break;
		path->name_ids[i] = ts->spans[i].name_id;
		h = (h ^ path->name_ids[i]) * 0x100000001b3ULL;
	}
	return d ? h | 1 : 0;
}

/*
 * Count a throttled sample of `size` bytes under the thread's span path.
 * A global function with scalar arguments: verified once, not inlined
 * into every allocator program (which quintupled their load time).
 */
__noinline int culpert_throttle(__u64 size, __u64 sp)
{
	struct culpert_throttle_key key = { .tgid = bpf_get_current_pid_tgid() >> 32, .size = size };
	struct culpert_proc *p = proc_get();
	struct thread_state *ts = thread_state_find();
	struct culpert_throttle_path *path;
	__u64 one = 1, *n;
	__u32 zero = 0;

	if (!p)
		return 0;
	/* the path of every call of the storm: kept cheap, no second lookup of the process */
	__sync_fetch_and_add(&p->counters[CULPERT_CNT_THROTTLED], 1);
	path = ts && ts->span_depth ? bpf_map_lookup_elem(&path_scratch, &zero) : NULL;
	if (path && ts) {
		span_prune(ts, sp, PRUNE_SAMPLE, 0);
		key.path = path_hash(ts, path);
		if (key.path)
			bpf_map_update_elem(&throttle_paths, &key.path, path, BPF_NOEXIST);
	}
	n = bpf_map_lookup_elem(&throttled, &key);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	if (!bpf_map_update_elem(&throttled, &key, &one, BPF_NOEXIST))
		return 0;
	/* another CPU added it meanwhile, or the table is full */
	n = bpf_map_lookup_elem(&throttled, &key);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	__sync_fetch_and_add(&p->counters[CULPERT_CNT_THROTTLE_FULL], 1);
	__sync_fetch_and_add(&p->over_samples, 1);
	__sync_fetch_and_add(&p->over_bytes, size);
	return 0;
}

#endif /* CULPERT_THROTTLE_BPF_H */
