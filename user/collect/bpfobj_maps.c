// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What the BPF maps and programs hold, read out: span names, live ids,
 * misses, the samples past the stack rate, span totals, counters, calls.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpfobj_internal.h"
#include "bsearch.h"
#include "culpert.skel.h"
#include "log.h"

int bpfobj__span_names(const struct bpfobj *s,
			int (*cb)(void *ctx, uint32_t id, const struct culpert_span_name *key),
			void *ctx)
{
	struct culpert_span_name key, next;
	int fd = bpf_map__fd(s->skel->maps.span_names);
	void *prev = NULL;
	__u32 id;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (next.len > CULPERT_SPAN_NAME_MAX)
			next.len = CULPERT_SPAN_NAME_MAX;
		if (bpf_map_lookup_elem(fd, &next, &id) == 0 && cb(ctx, id, &next))
			break;
		key = next;
		prev = &key;
	}
	return 0;
}

/* the ids in the live table, a batch at a time (5.6+), else one key after another */
static int live_ids_batch(int fd, __u32 tgid, int (*cb)(void *ctx, uint64_t id), void *ctx,
			  bool *unsupported)
{
	enum { BATCH = 2048 };
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	static __thread struct culpert_live_key keys[BATCH];
	struct culpert_live_key in = { 0 }, out = { 0 };
	struct live_value { __u64 id; } vals[BATCH];
	bool first = true;
	__u32 n, i;
	int err, ret;

	for (;;) {
		n = BATCH;
		err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &n, &opts);
		err = err ? -errno : 0;
		/* 524: the kernel's ENOTSUPP, for a map type without batch operations */
		if (err && err != -ENOENT) {
			*unsupported = first && (err == -EINVAL || err == -EOPNOTSUPP || err == -524);
			return err;
		}
		for (i = 0; i < n; i++) {
			if (keys[i].tgid != tgid)
				continue;
			ret = cb(ctx, vals[i].id);
			if (ret)
				return ret;
		}
		if (err == -ENOENT)
			return 0;
		in = out;
		first = false;
	}
}

int bpfobj_proc__live_ids(const struct bpfobj_proc *pr, int (*cb)(void *ctx, uint64_t id),
			   void *ctx)
{
	int fd = bpf_map__fd(pr->s->skel->maps.live_allocs), ret;
	struct culpert_live_key key, next, *prev = NULL;
	__u32 tgid = (__u32)pr->pid;
	bool unsupported = false;
	__u64 id;

	ret = live_ids_batch(fd, tgid, cb, ctx, &unsupported);
	if (!unsupported)
		return ret;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (next.tgid == tgid && bpf_map_lookup_elem(fd, &next, &id) == 0 &&
		    (ret = cb(ctx, id)))
			return ret;
		key = next;
		prev = &key;
	}
	return 0;
}

/* probe hits the kernel did not run a program for (another BPF program was running on the CPU) */
static uint64_t prog_misses(const struct bpf_program *p)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(p);

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.recursion_misses;
}

void bpfobj__misses(const struct bpfobj *s, uint64_t *all, uint64_t *frees)
{
	struct bpf_program *p;

	*all = 0;
	bpf_object__for_each_program(p, s->skel->obj)
		*all += prog_misses(p);
	/*
	 * Frees are also seen at realloc's entry, which shares its program
	 * with every allocating entry: a miss there may have been a free;
	 * otel_memory:free for the contract.
	 */
	*frees = prog_misses(s->skel->progs.free_enter) + prog_misses(s->skel->progs.alloc_enter) +
		 prog_misses(s->skel->progs.otel_free);
}

int bpfobj_proc__throttled(const struct bpfobj_proc *pr,
			    int (*cb)(void *ctx, uint64_t size, uint32_t keep,
				      const struct culpert_throttle_path *path, uint64_t count),
			    void *ctx, uint64_t *over_samples, uint64_t *over_bytes)
{
	const struct bpfobj *s = pr->s;
	int fd = bpf_map__fd(s->skel->maps.throttled);
	int paths = bpf_map__fd(s->skel->maps.throttle_paths);
	struct culpert_throttle_key key, next, *prev = NULL;
	struct culpert_throttle_path path;
	struct culpert_proc p;
	__u32 tgid = (__u32)pr->pid;
	__u64 n;
	int ret;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (next.tgid != tgid || bpf_map_lookup_elem(fd, &next, &n))
			continue;
		/* a path the map could not spell out is counted outside spans */
		if (!next.path || bpf_map_lookup_elem(paths, &next.path, &path))
			ret = cb(ctx, next.size, next.keep, NULL, n);
		else
			ret = cb(ctx, next.size, next.keep, &path, n);
		if (ret)
			return ret;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.procs), &tgid, &p))
		return -errno;
	*over_samples = p.over_samples;
	*over_bytes = p.over_bytes;
	return 0;
}

/* the process's entry in the procs map; zeroes once it is gone */
void bpfobj_proc__state(const struct bpfobj_proc *pr, struct culpert_proc *out)
{
	__u32 key = (__u32)pr->pid;

	if (!pr->registered)
		*out = pr->final;
	else if (bpf_map_lookup_elem(bpf_map__fd(pr->s->skel->maps.procs), &key, out))
		memset(out, 0, sizeof(*out));
}

static int by_pid(const void *a, const void *b, void *ctx)
{
	const __u32 *pids = ctx, x = pids[*(const __u32 *)a], y = pids[*(const __u32 *)b];

	return x < y ? -1 : x > y;
}

struct pid_key {
	const struct bpfobj_procs *snap;
	__u32 pid;
};

static bool pid_before(size_t i, void *ctx)
{
	const struct pid_key *k = ctx;

	return k->snap->pids[k->snap->order[i]] < k->pid;
}

int bpfobj__procs_read(const struct bpfobj *s, struct bpfobj_procs *snap)
{
	const struct bpf_map *m = s->skel->maps.procs;
	int fd = bpf_map__fd(m), ret;
	__u32 count, in_batch, out_batch;
	void *in = NULL;

	snap->s = s;
	snap->n = 0;
	if (!snap->pids) {
		snap->max = bpf_map__max_entries(m);
		snap->pids = calloc(snap->max, sizeof(*snap->pids));
		snap->v = calloc(snap->max, sizeof(*snap->v));
		snap->order = calloc(snap->max, sizeof(*snap->order));
		if (!snap->pids || !snap->v || !snap->order) {
			bpfobj_procs__free(snap);
			return -ENOMEM;
		}
	}
	/* bounded: each batch returns one entry at least, or ends */
	while (snap->n < snap->max) {
		count = (__u32)(snap->max - snap->n);
		ret = bpf_map_lookup_batch(fd, in, &out_batch, snap->pids + snap->n,
					   snap->v + snap->n, &count, NULL);
		if (ret && errno != ENOENT) {
			ret = -errno;
			snap->n = 0;
			return ret;
		}
		snap->n += count;
		if (ret || !count)
			break;
		in_batch = out_batch;
		in = &in_batch;
	}
	for (count = 0; count < snap->n; count++)
		snap->order[count] = count;
	qsort_r(snap->order, snap->n, sizeof(*snap->order), by_pid, snap->pids);
	return 0;
}

void bpfobj_procs__free(struct bpfobj_procs *snap)
{
	free(snap->pids);
	free(snap->v);
	free(snap->order);
	memset(snap, 0, sizeof(*snap));
}

void bpfobj_proc__state_in(const struct bpfobj_proc *pr, const struct bpfobj_procs *snap,
			   struct culpert_proc *out)
{
	struct pid_key k = { snap, (__u32)pr->pid };
	size_t i;

	if (!pr->registered || snap->s != pr->s) {
		bpfobj_proc__state(pr, out);
		return;
	}
	i = lower_bound_at(snap->n, pid_before, &k);
	if (i < snap->n && snap->pids[snap->order[i]] == k.pid)
		*out = snap->v[snap->order[i]];
	else
		memset(out, 0, sizeof(*out));
}

int bpfobj_proc__span_totals(const struct bpfobj_proc *pr,
			      int (*cb)(void *ctx, const struct culpert_total_key *key,
					const struct culpert_span_total *total),
			      void *ctx, struct culpert_proc *proc)
{
	int fd = bpf_map__fd(pr->s->skel->maps.span_totals);
	struct culpert_total_key key, next, *prev = NULL;
	struct culpert_span_total v;
	__u32 tgid = (__u32)pr->pid;
	int ret;

	/* bounded: the map holds at most CULPERT_MAX_TOTALS keys */
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (next.tgid != tgid || bpf_map_lookup_elem(fd, &next, &v))
			continue;
		ret = cb(ctx, &next, &v);
		if (ret)
			return ret;
	}
	bpfobj_proc__state(pr, proc);
	return 0;
}

void bpfobj_proc__counters(const struct bpfobj_proc *pr, uint64_t out[CULPERT_CNT__MAX])
{
	struct culpert_proc p;

	bpfobj_proc__state(pr, &p);
	memcpy(out, p.counters, CULPERT_CNT__MAX * sizeof(uint64_t));
}

/* the calls seen of `n` hot-state entries of value_size bytes each, added to *out */
static void add_seen(const char *values, size_t n, size_t value_size,
		     struct culpert_calls_seen *out)
{
	struct culpert_calls_seen c;
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(&c, values + i * value_size + value_size - sizeof(c), sizeof(c));
		out->calls += c.calls;
		out->bytes += c.bytes;
		out->failed += c.failed;
	}
}

/*
 * One batch read of the whole array where the kernel has it (5.6+); a
 * lookup per slot otherwise.  Read once, after detaching.
 */
int bpfobj__calls_seen(const struct bpfobj *s, struct culpert_calls_seen *out)
{
	const struct bpf_map *m = s->skel->maps.hot_states;
	size_t vsz = bpf_map__value_size(m), n = bpf_map__max_entries(m), done = 0, i;
	__u32 *keys = calloc(n, sizeof(*keys)), count, in_batch, out_batch;
	char *values = calloc(n, vsz);
	int fd = bpf_map__fd(m), err = 0, ret;
	void *in = NULL;

	memset(out, 0, sizeof(*out));
	if (!keys || !values || vsz < sizeof(*out)) {
		err = -ENOMEM;
		goto out;
	}
	/* at most n / 1 + 1 batches: each returns at least one entry or ends */
	while (done < n) {
		count = (__u32)(n - done);
		ret = bpf_map_lookup_batch(fd, in, &out_batch, keys, values, &count, NULL);
		if (ret && errno != ENOENT)
			break;
		add_seen(values, count, vsz, out);
		done += count;
		if (ret || !count)
			goto out;
		in_batch = out_batch;
		in = &in_batch;
	}
	if (done >= n)
		goto out;
	/* no batch operations (before 5.6): one lookup per slot */
	pr_debug("batch read of hot_states: %s; one lookup per slot\n", strerror(errno));
	memset(out, 0, sizeof(*out));
	for (i = 0; i < n && !err; i++) {
		__u32 k = (__u32)i;

		if (bpf_map_lookup_elem(fd, &k, values))
			err = -errno;
		else
			add_seen(values, 1, vsz, out);
	}
out:
	free(keys);
	free(values);
	return err;
}

/* a loaded program's CPU time in its runs so far (BPF run-time stats on), else 0 */
static uint64_t prog_run_ns(const struct bpf_program *prog)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(prog);

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.run_time_ns;
}

void bpfobj__prog_run_ns(const struct bpfobj *s, uint64_t *alloc_ns, uint64_t *free_ns)
{
	const struct culpert_bpf *k = s->skel;

	*alloc_ns = prog_run_ns(k->progs.alloc_enter) + prog_run_ns(k->progs.alloc_exit) +
		    prog_run_ns(k->progs.alloc_exit_point) +
		    prog_run_ns(k->progs.alloc_exit_hoist) +
		    prog_run_ns(k->progs.alloc_session) + prog_run_ns(k->progs.otel_alloc);
	*free_ns = prog_run_ns(k->progs.free_enter) + prog_run_ns(k->progs.otel_free);
}
