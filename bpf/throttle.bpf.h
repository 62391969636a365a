/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A bound on what stack captures cost a process: a storm of large
 * allocations samples every call, and each capture (a frame-pointer walk,
 * or 16 KiB of stack copied for DWARF) and its record cost the target far
 * more than the probe itself.  Past the process's rate, a random subset of
 * its samples keeps their stacks, each with the probability p the rate
 * allows, and stands for 1 / p samples: every function's bytes stay
 * unbiased (docs/profile-format.md, "Throttling").  A sample picked to be
 * kept that still finds no token is counted -- by exact size, p and span
 * path, in a map -- so its bytes reach the profile under a [throttled]
 * frame; only its stack is not taken.  Every sample past the rate is also
 * counted there by size and span path, under keep 0: with that census
 * userspace makes the weights sum to the exact estimate of the bytes past
 * the rate, so totals are as tight as without thinning.
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

/* the window a process's sample rate is measured over: short, a storm is thinned within it */
#define KEEP_WINDOW_NS		(100 * 1000 * 1000ULL)

/*
 * The probability, in units of 1 / CULPERT_KEEP_ONE, that this sample of
 * the process keeps its stack: the samples the stack rate allows in a
 * window (7/8 of them, so that the kept ones seldom run out of tokens)
 * over those the process takes in one, the larger of the last window's
 * count and the current one's at its pace so far (a storm is thinned
 * from its start), and lower as the token bucket runs low.
 * Any p decided before the coin is tossed keeps the estimates unbiased:
 * races on the window only make it less exact.
 */
static __always_inline __u32 keep_prob(struct culpert_proc *p)
{
	__u64 now, start, n, est, allowed, left;

	if (!p || !p->tb_interval_ns)
		return CULPERT_KEEP_ONE;
	now = bpf_ktime_get_ns();
	start = p->kw_start_ns;
	if (now - start >= KEEP_WINDOW_NS &&
	    __sync_val_compare_and_swap(&p->kw_start_ns, start, now) == start) {
		n = __sync_lock_test_and_set(&p->kw_count, 0);
		/* one that lasted two or more (the process was idle): the current pace decides */
		p->kw_prev = now - start < 2 * KEEP_WINDOW_NS ? n : 0;
	}
	n = __sync_fetch_and_add(&p->kw_count, 1) + 1;
	/* the current window's count so far, at its pace (from an eighth of it on) */
	start = now - p->kw_start_ns;
	if (start < KEEP_WINDOW_NS / 8)
		start = KEEP_WINDOW_NS / 8;
	n = n * KEEP_WINDOW_NS / start;
	est = p->kw_prev > n ? p->kw_prev : n;
	allowed = KEEP_WINDOW_NS * 7 / 8 / p->tb_interval_ns ?: 1;
	n = est <= allowed ? CULPERT_KEEP_ONE : allowed * CULPERT_KEEP_ONE / est;
	/*
	 * Less than half the burst's tokens left (a burst the window did not
	 * see yet): fewer kept still, rather than kept ones without a stack
	 */
	left = now + p->tb_burst_ns - p->tb_tat_ns;
	if (p->tb_tat_ns > now && left < p->tb_burst_ns / 2)
		n = n * 2 * left / (p->tb_burst_ns ?: 1);
	return n ? (__u32)n : 1;
}

/* does a sample with keep probability `keep` keep its stack?  Exactly keep / CULPERT_KEEP_ONE */
static __always_inline bool keep_draw(__u32 keep)
{
	return keep >= CULPERT_KEEP_ONE || (bpf_get_prandom_u32() & (CULPERT_KEEP_ONE - 1)) < keep;
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
 * Count a throttled sample of `size` bytes, kept with probability `keep`,
 * under the thread's span path; keep 0: count a sample past the rate in
 * the census of them, kept or not (the exact bytes the kept samples'
 * weights are scaled to in userspace, per span path).
 * A global function with scalar arguments: verified once, not inlined
 * into every allocator program (which quintupled their load time).
 */
__noinline int culpert_throttle(__u64 size, __u64 sp, __u64 keep)
{
	struct culpert_throttle_key key = { .tgid = bpf_get_current_pid_tgid() >> 32,
					    .keep = (__u32)keep, .size = size };
	struct culpert_proc *p = proc_get();
	struct thread_state *ts = thread_state_find();
	struct culpert_throttle_path *path;
	__u64 one = 1, *n;
	__u32 zero = 0;

	if (!p)
		return 0;
	/* the path of every call of the storm: kept cheap, no second lookup of the process */
	if (keep)
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
	/* the census incomplete: userspace leaves the kept samples' weights as they are */
	if (!keep) {
		__sync_fetch_and_add(&p->counters[CULPERT_CNT_CENSUS_FULL], 1);
		return 0;
	}
	__sync_fetch_and_add(&p->counters[CULPERT_CNT_THROTTLE_FULL], 1);
	/* it stands for CULPERT_KEEP_ONE / keep samples: rounded at random, unbiased */
	if (keep && keep < CULPERT_KEEP_ONE)
		one = CULPERT_KEEP_ONE / keep +
		      (bpf_get_prandom_u32() % (__u32)keep < CULPERT_KEEP_ONE % (__u32)keep);
	__sync_fetch_and_add(&p->over_samples, one);
	__sync_fetch_and_add(&p->over_bytes, size * one);
	return 0;
}

#endif /* CULPERT_THROTTLE_BPF_H */
