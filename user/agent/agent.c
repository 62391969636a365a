// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * culpert-bpf agent: set-up, the profiling thread's loop, shutdown.  The
 * main thread is the profiling thread: it owns discovery, the targets and
 * the collector; HTTP runs on libmicrohttpd's threads,
 * the Kubernetes API client on its own.  SIGINT and SIGTERM arrive through
 * a signalfd in the loop's epoll set, so no thread is interrupted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include "agent.h"
#include "clock.h"
#include "cmd.h"
#include "collector.h"
#include "container.h"
#include "discover.h"
#include "duty.h"
#include "endpoints.h"
#include "kfeatures.h"
#include "kubeapi.h"
#include "log.h"
#include "memlimit.h"
#include "otel.h"
#include "pictures.h"
#include "readfile.h"
#include "select.h"
#include "snapshot.h"
#include "targets.h"
#include "units.h"
#include "vec.h"

#define NS_PER_SEC 1000000000LL
#define LOOP_MS 100
#define KUBE_REFRESH_NS (30 * NS_PER_SEC)
/* the memory limit: checked every MEM_CHECK_NS; processes dropped for it remembered */
#define MEM_CHECK_NS (250 * 1000000LL)
#define MEM_DROPPED_KEPT 256

struct agent {
	struct agent_opts o;
	struct selectors *sel;
	struct selectors *inj;		/* --inject: NULL without */
	struct targets *targets;
	struct pictures *pictures;
	struct discover *disc;
	struct kubeapi *kube;
	struct duty *duty;
	struct collector *coll;
	struct http_server *http;
	struct endpoints ep;
	char *token;
	int sigfd, epfd;
	pid_t self;
	uint64_t rescans;
	uint64_t kube_gen;
	int64_t next_rescan;
	int64_t next_snapshot;
	bool warned_full;
	pid_t held_exec;		/* the process being considered is stopped at its exec */
	/* children of new targets, to look at once the current event is handled */
	pid_t *pending;
	size_t n_pending, cap_pending;
	struct memlimit mem;
	int64_t next_mem;
	bool mem_folded;
	/* targets dropped for memory, not to be picked up again (a ring) */
	struct { pid_t pid; uint64_t start; } dropped[MEM_DROPPED_KEPT];
	size_t n_dropped;
	bool said;			/* the loop's failure has had its error line */
	/* processes stopped for the agent, let go once the attach thread is done with them */
	struct held { pid_t pid; uint64_t start; enum discover_what what; bool held; } *held;
	size_t n_held, cap_held;
};

/* names of the container and pod: the API when it knows the pod, else the kubelet's logs */
static void attribute(struct agent *a, const char *cgroup_text, struct container_info *ci)
{
	container_parse_proc_cgroup(cgroup_text, ci);
	if (!ci->pod_uid[0])
		return;
	if (a->kube && kubeapi__lookup(a->kube, ci))
		return;
	container_names_from_logs(a->o.pods_log_dir, ci);
	container_service_name(ci, NULL);
}

static void describe_container(const struct container_info *ci, char *buf, size_t len)
{
	if (!ci->id[0]) {
		snprintf(buf, len, "no container");
		return;
	}
	snprintf(buf, len, "%s container %.12s%s%s%s%s%s%s", ci->runtime[0] ? ci->runtime : "a",
		 ci->id, ci->container_name[0] ? " (" : "", ci->container_name,
		 ci->container_name[0] ? ")" : "", ci->pod_name[0] ? " of pod " : "",
		 ci->pod_namespace, ci->pod_name[0] ? "/" : "");
	if (ci->pod_name[0])
		snprintf(buf + strlen(buf), len - strlen(buf), "%s", ci->pod_name);
}

static void log_pick_up(const struct agent_target *t, const char *sel)
{
	char where[512];

	describe_container(&t->ci, where, sizeof(where));
	pr_info("culpert-bpf: picked up pid %d (%s) %s, %s: --%s %s\n", (int)t->pid, t->comm,
		t->exe[0] ? t->exe : "(exe unreadable)", where, t->inject ? "inject" : "select", sel);
}

static void queue_child(void *ctx, pid_t pid)
{
	struct agent *a = ctx;

	if (!vec_reserve(&a->pending, &a->cap_pending, a->n_pending + 1, sizeof(pid_t)))
		a->pending[a->n_pending++] = pid;
}

static void add_target(struct agent *a, const struct proc_info *pi, uint64_t seen_ns,
		       const struct container_info *ci, const char *sel, bool inject)
{
	struct agent_target t = { .pid = pi->pid, .start_ticks = pi->start_ticks,
				  .seen_ns = seen_ns, .start_stack = pi->start_stack,
				  .inject = inject };
	struct agent_target evicted;
	int ret;

	memcpy(t.comm, pi->comm, sizeof(t.comm));
	snprintf(t.exe, sizeof(t.exe), "%s", pi->exe);
	t.ci = *ci;
	t.since_ns = (int64_t)clock_ns(CLOCK_REALTIME);
	ret = targets__add(a->targets, &t, &evicted);
	if (ret == -ENOSPC) {
		if (!a->warned_full)
			pr_warn("pid %d (%s) matches --select %s, but --max-targets %llu "
				"targets are live already: it is not profiled; raise "
				"--max-targets\n",
				(int)t.pid, t.comm, sel, (unsigned long long)a->o.max_targets);
		a->warned_full = true;
		return;
	}
	if (ret)
		return;
	if (evicted.pid) {
		collector__forget(a->coll, evicted.pid, evicted.start_ticks);
		pr_info("culpert-bpf: dropped pid %d (%s), exited, to make room for pid %d\n",
			(int)evicted.pid, evicted.comm, (int)t.pid);
	}
	if (discover__track(a->disc, t.pid))
		pr_debug("cannot track pid %d in the kernel: its exit is found by the rescan\n",
			 (int)t.pid);
	log_pick_up(&t, sel);
	/*
	 * Stopped at its exec, a dynamically linked program has only its
	 * executable and its loader mapped: planned at its entry point instead.
	 */
	if (a->held_exec == t.pid && proc_has_loader(t.pid))
		collector__add_later(a->coll, &t);
	else
		collector__add(a->coll, &t);
	/*
	 * Forks are reported from now on; a child forked between the exec and
	 * this moment was not, but it is in the children list now.
	 */
	proc_children(t.pid, queue_child, a);
}

static void exited(struct agent *a, pid_t pid, uint64_t start, const char *why)
{
	struct agent_target t;
	char keep[32];

	if (targets__mark_exited(a->targets, pid, start, why, clock_ns(CLOCK_REALTIME), &t))
		return;
	discover__untrack(a->disc, pid);
	discover__unhold_entry(a->disc, pid);
	collector__remove(a->coll, pid, start);
	a->warned_full = false;
	pr_info("culpert-bpf: pid %d (%s) %s; its data is kept for --keep-exited %s\n", (int)pid,
		t.comm, why, format_duration(keep, sizeof(keep), a->o.keep_exited_ns));
}

enum seen_by { SEEN_EXEC, SEEN_FORK, SEEN_RESCAN };

/* dropped for memory: that process (start 0: any start, the rescan's) is not taken again */
static bool mem_dropped(struct agent *a, pid_t pid, uint64_t start)
{
	size_t i, n = a->n_dropped < MEM_DROPPED_KEPT ? a->n_dropped : MEM_DROPPED_KEPT;
	uint64_t now_start;

	for (i = 0; i < n; i++) {
		if (a->dropped[i].pid != pid)
			continue;
		if (!start && proc_start_ticks(pid, true, &now_start))
			return false;
		return a->dropped[i].start == (start ? start : now_start);
	}
	return false;
}

/* a live target seen again: its names may have become known, its cgroup may have changed */
static void refresh(struct agent *a, struct agent_target *t, const struct proc_info *pi,
		    uint64_t seen_ns, const struct container_info *ci)
{
	t->seen_ns = seen_ns;
	if (!memcmp(&t->ci, ci, sizeof(*ci)) && !strcmp(t->comm, pi->comm) &&
	    !strcmp(t->exe, pi->exe))
		return;
	t->ci = *ci;
	memcpy(t->comm, pi->comm, sizeof(t->comm));
	snprintf(t->exe, sizeof(t->exe), "%s", pi->exe);
	targets__update(a->targets, t);
}

/*
 * Another program in the same process since /proc was read for the target:
 * what was collected belongs to the old one.  An exec event read late (the
 * shell's exec before the program's) is old news: only one that happened
 * after that read counts.  One during the read may be before or after what
 * it saw: the start of the stack, placed anew at each exec, tells; so does
 * another executable (an exec whose event is not read yet, or was lost).
 */
static bool new_image(const struct agent_target *live, const struct proc_info *pi,
		      enum seen_by by, uint64_t when)
{
	if (by == SEEN_EXEC && when > live->seen_ns)
		return true;
	if (live->start_stack && pi->start_stack && live->start_stack != pi->start_stack)
		return true;
	return live->exe[0] && pi->exe[0] && strcmp(live->exe, pi->exe);
}

/*
 * A process the kernel or /proc showed: pick it up if it matches.  start is
 * the one the event saw (0 from the rescan): a pid reused since is not it;
 * when is the event's time (0 from the rescan).
 */
static void consider(struct agent *a, pid_t pid, uint64_t start, uint64_t when,
		     enum seen_by by)
{
	struct agent_target live;
	struct container_info ci;
	struct select_input in;
	struct proc_info pi;
	const char *sel;
	uint64_t seen;
	bool have;

	if (pid == a->self || mem_dropped(a, pid, start) || proc_info__read(pid, &pi))
		return;
	seen = clock_ns(CLOCK_BOOTTIME);
	if (start && pi.start_ticks != start)
		goto out;
	have = targets__get_live(a->targets, pid, &live);
	if (have && live.start_ticks != pi.start_ticks) {
		exited(a, pid, live.start_ticks, "gone");
		have = false;
	}
	if (have && new_image(&live, &pi, by, when)) {
		exited(a, pid, live.start_ticks, "exec'd");
		have = false;
	}
	attribute(a, pi.cgroup_text, &ci);
	if (have) {
		refresh(a, &live, &pi, seen, &ci);
		goto out;
	}
	in = (struct select_input){ .pid = pid, .comm = pi.comm, .exe = pi.exe,
				    .cgroup_text = pi.cgroup_text, .ci = &ci };
	/* --inject first: a process both select is injected */
	sel = a->inj ? selectors__match(a->inj, &in) : NULL;
	if (sel)
		add_target(a, &pi, seen, &ci, sel, true);
	else if ((sel = selectors__match(a->sel, &in)))
		add_target(a, &pi, seen, &ci, sel, false);
out:
	proc_info__free(&pi);
}

/* the queued children, and theirs: a loop, not a recursion, whatever the depth of the tree */
static void drain(struct agent *a)
{
	while (a->n_pending)
		consider(a, a->pending[--a->n_pending], 0, 0, SEEN_FORK);
}

/*
 * A process the kernel stopped for the agent goes on: picked up, with its
 * probes live; or not picked up.  One stopped at its exec whose allocator
 * is not mapped yet runs on to its entry point, where the loader is done,
 * and stops there again (docs/agent.md, "Pick-up at exec").
 */
static void let_go(struct agent *a, pid_t pid, uint64_t start, enum discover_what what)
{
	if (what == DISCOVERED_EXEC && collector__pending(a->coll, pid, start)) {
		if (!discover__hold_entry(a->disc, pid))
			collector__await_entry(a->coll, pid, start);
		else
			pr_debug("pid %d: cannot stop it at its entry point: its probes come at "
				 "the next try\n", (int)pid);
	}
	discover__release(a->disc, pid, start);
}

/* a target's entry point reached: its probes attached (or not), it goes on */
static void entry_done(struct agent *a, pid_t pid, uint64_t start, bool held)
{
	if (held)
		discover__release(a->disc, pid, start);
	/* after: a uprobe takes a while to go (RCU), and the hit was its last */
	discover__unhold_entry(a->disc, pid);
}

static void settle_one(struct agent *a, const struct held *h)
{
	if (h->what == DISCOVERED_ENTRY)
		entry_done(a, h->pid, h->start, h->held);
	else
		let_go(a, h->pid, h->start, h->what);
}

/* a process to let go once its attach is done; at once when it cannot wait */
static void defer(struct agent *a, pid_t pid, uint64_t start, enum discover_what what, bool held)
{
	struct held h = { pid, start, what, held };

	if (vec_reserve(&a->held, &a->cap_held, a->n_held + 1, sizeof(*a->held)))
		settle_one(a, &h);
	else
		a->held[a->n_held++] = h;
}

/* the processes whose attach is done go on (the attach thread's eventfd, every turn) */
static void settle(struct agent *a)
{
	size_t i = 0;

	while (i < a->n_held) {
		if (collector__attaching(a->coll, a->held[i].pid, a->held[i].start)) {
			i++;
			continue;
		}
		settle_one(a, &a->held[i]);
		a->held[i] = a->held[--a->n_held];
	}
}

static void on_discovered(void *ctx, enum discover_what what, pid_t pid, uint64_t start,
			  uint64_t when, bool held)
{
	struct agent *a = ctx;

	if (what == DISCOVERED_EXIT) {
		exited(a, pid, start, "exited");
	} else if (what == DISCOVERED_ENTRY) {
		/* planned again on the attach thread: it goes on once that is done */
		if (collector__retry(a->coll, pid, start))
			entry_done(a, pid, start, held);
		else
			defer(a, pid, start, what, held);
		held = false;
	} else {
		a->held_exec = held && what == DISCOVERED_EXEC ? pid : 0;
		consider(a, pid, start, when, what == DISCOVERED_EXEC ? SEEN_EXEC : SEEN_FORK);
		a->held_exec = 0;
	}
	/* a held process picked up waits for its probes; one not picked up goes at once */
	if (held && collector__attaching(a->coll, pid, start))
		defer(a, pid, start, what, held);
	else if (held)
		let_go(a, pid, start, what);
	drain(a);
}

static int hold_name(void *ctx, const char *name)
{
	struct agent *a = ctx;
	int ret = discover__hold_comm(a->disc, name);

	if (ret)
		pr_warn("cannot have programs named %s stopped at exec (%s): they are picked up "
			"after they start\n", name, strerror(-ret));
	return 0;
}

static void rescan_one(void *ctx, pid_t pid)
{
	consider(ctx, pid, 0, 0, SEEN_RESCAN);
	drain(ctx);
}

/* the safety net: exits and starts the ring buffer dropped, processes older than the agent */
static void rescan(struct agent *a)
{
	uint64_t *starts, now_start;
	size_t n, i;
	pid_t *pids;

	if (!targets__live_pids(a->targets, &pids, &starts, &n)) {
		for (i = 0; i < n; i++)
			if (proc_start_ticks(pids[i], true, &now_start) || now_start != starts[i])
				exited(a, pids[i], starts[i], "gone");
		free(pids);
		free(starts);
	}
	if (proc_scan(rescan_one, a))
		pr_warn("cannot read /proc: %s; only processes the kernel reports are picked up\n",
			strerror(errno));
	a->rescans++;
}

static void expire(struct agent *a)
{
	struct agent_target t;
	char ago[32];
	int64_t now = (int64_t)clock_ns(CLOCK_REALTIME);

	while (targets__expire_one(a->targets, now, a->o.keep_exited_ns, &t)) {
		collector__forget(a->coll, t.pid, t.start_ticks);
		pr_info("culpert-bpf: dropped pid %d (%s): %s %s ago\n", (int)t.pid, t.comm,
			t.exit_reason,
			format_duration(ago, sizeof(ago), (uint64_t)(now - t.exited_ns)));
	}
}

static void publish(struct agent *a)
{
	pthread_mutex_lock(&a->ep.stats.lock);
	discover__counts(a->disc, &a->ep.stats.discover);
	a->ep.stats.rescans = a->rescans;
	a->ep.stats.loop_mono_ns = (int64_t)clock_ns(CLOCK_MONOTONIC);
	pthread_mutex_unlock(&a->ep.stats.lock);
}

/*
 * The exited target that exited first and still has data: its data goes,
 * its record stays in /targets (its profile routes say it is not profiled
 * any more).  false when there is none.
 */
static bool drop_exited(struct agent *a, const char *used, const char *limit)
{
	struct agent_target *v, *best = NULL;
	struct collector_state st;
	size_t n, i;
	bool ret = false;

	if (targets__copy(a->targets, &v, &n))
		return false;
	for (i = 0; i < n; i++)
		if (v[i].exited_ns && (!best || v[i].exited_ns < best->exited_ns) &&
		    !collector__state_cb(a->coll, &v[i], &st))
			best = &v[i];
	if (best) {
		collector__forget(a->coll, best->pid, best->start_ticks);
		pr_warn("memory: %s used of the %s limit (%s): dropped the data of pid %d (%s), "
			"%s\n", used, limit, a->mem.source, (int)best->pid, best->comm,
			best->exit_reason);
		ret = true;
	}
	free(v);
	return ret;
}

/*
 * Near the memory limit, the coldest target goes: an exited one first (the
 * oldest), else the live one with the fewest samples, whose data is freed
 * and which is not picked up again.  false when there is none.
 */
static bool drop_coldest(struct agent *a, uint64_t used)
{
	struct collector_state st;
	char u[32], l[32];
	struct agent_target t;
	uint64_t *starts, best_samples = UINT64_MAX, best_start = 0;
	pid_t *pids, best = 0;
	size_t n, i;

	format_bytes(u, sizeof(u), (double)used);
	format_bytes(l, sizeof(l), (double)a->mem.limit);
	if (drop_exited(a, u, l))
		return true;
	if (targets__live_pids(a->targets, &pids, &starts, &n))
		return false;
	for (i = 0; i < n; i++)
		if (!collector__state(a->coll, pids[i], starts[i], &st) &&
		    st.samples < best_samples) {
			best_samples = st.samples;
			best = pids[i];
			best_start = starts[i];
		}
	free(pids);
	free(starts);
	if (!best)
		return false;
	a->dropped[a->n_dropped++ % MEM_DROPPED_KEPT] = (typeof(a->dropped[0])){ best, best_start };
	if (targets__mark_exited(a->targets, best, best_start, "dropped", clock_ns(CLOCK_REALTIME),
				 &t))
		return false;
	discover__untrack(a->disc, best);
	/* its data too: the exited record says "dropped" */
	collector__remove(a->coll, best, best_start);
	collector__forget(a->coll, best, best_start);
	pr_warn("memory: %s used of the %s limit (%s): dropped pid %d (%s), the coldest target "
		"(%llu samples); it is not profiled any more\n", u, l, a->mem.source, (int)best,
		t.comm, (unsigned long long)best_samples);
	return true;
}

/*
 * The memory limit (docs/agent.md, "Memory"): at 3/4 of it no target takes
 * a new stack (its samples fold), at 7/8 the coldest target goes, one per
 * check, so that the agent never reaches it.
 */
static void mem_guard(struct agent *a, int64_t now)
{
	char u[32], l[32];
	uint64_t used, reserved;

	if (!a->mem.limit || now < a->next_mem)
		return;
	a->next_mem = now + MEM_CHECK_NS;
	/*
	 * Less what the encodings under way reserved: their peak was admitted
	 * under 7/8 already, and passes (folding for it would freeze every
	 * target's stacks for a moment's memory)
	 */
	used = memlimit__usage(&a->mem);
	reserved = collector__mem_reserved(a->coll);
	used = used > reserved ? used - reserved : 0;
	if (used < a->mem.limit / 4 * 3)
		return;
	/* every check: targets picked up since have aggregates of their own */
	collector__freeze_stacks(a->coll);
	if (!a->mem_folded) {
		pr_warn("memory: %s used of the %s limit (%s): new stacks of every target are "
			"folded from now on\n", format_bytes(u, sizeof(u), (double)used),
			format_bytes(l, sizeof(l), (double)a->mem.limit), a->mem.source);
		a->mem_folded = true;
	}
	if (used >= a->mem.limit / 8 * 7 && drop_coldest(a, used))
		malloc_trim(0);	/* what the dropped target held, back to the kernel */
}

/* every live target's duty cycle, one turn */
static void duty_turn(struct agent *a, int64_t now)
{
	uint64_t *starts;
	pid_t *pids;
	size_t n;

	if (targets__live_pids(a->targets, &pids, &starts, &n))
		return;
	duty__tick(a->duty, pids, starts, n, (uint64_t)now);
	free(pids);
	free(starts);
}

/* a new pod list may name processes a pod=/namespace= selector passed over: look again soon */
static void kube_changed(struct agent *a, int64_t now)
{
	struct kubeapi_counts k;

	if (!a->kube)
		return;
	kubeapi__counts(a->kube, &k);
	if (k.generation != a->kube_gen) {
		a->kube_gen = k.generation;
		a->next_rescan = now;
	}
}

struct snap_ctx {
	struct agent *a;
	const struct agent_target *t;
};

static int write_snapshot(void *ctx, int fd, char *err, size_t errlen)
{
	struct snap_ctx *sc = ctx;
	size_t len = 0, off = 0;
	void *buf = NULL;
	ssize_t n;
	int ret;

	ret = collector__profile(sc->a->coll, sc->t, AGENT_PROFILE_HEAP, 0, &buf, &len, err,
				 errlen);
	while (!ret && off < len) {
		n = write(fd, (char *)buf + off, len - off);
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "%s", strerror(errno));
		}
		off += n > 0 ? (size_t)n : 0;
	}
	free(buf);
	return ret;
}

/* --snapshot-dir: every live target's heap profile (its four sample types), rotated */
static void snapshots(struct agent *a)
{
	struct agent_target *v;
	char path[PATH_MAX], err[512];
	size_t n, i;

	if (targets__copy(a->targets, &v, &n))
		return;
	for (i = 0; i < n; i++) {
		struct snap_ctx sc = { a, &v[i] };
		struct snapshot_target st = { v[i].comm, v[i].pid, clock_ns(CLOCK_REALTIME) };

		if (v[i].exited_ns)
			continue;
		if (snapshot__write(a->o.snapshot_dir, (unsigned int)a->o.keep, &st,
				    write_snapshot, &sc, path, sizeof(path), err, sizeof(err)))
			pr_warn("no snapshot of pid %d (%s): %s\n", (int)v[i].pid, v[i].comm, err);
		else
			pr_debug("snapshot %s\n", path);
	}
	free(v);
}

/*
 * A budget that cannot be enforced is no budget: the calibration runs while
 * the agent starts serving (it takes seconds), and its failure stops the
 * agent rather than leave the targets' probes on behind a warning.
 */
static int check_calibration(struct agent *a)
{
	char err[256];
	int ret;

	if (!a->o.max_overhead_pct || !(ret = duty__calibration_failed(a->duty, err, sizeof(err))))
		return 0;
	pr_error("--max-overhead %g%% cannot be enforced: the calibration of what a probe hit "
		 "costs failed: %s; run with --max-overhead 0 to profile without a budget\n",
		 a->o.max_overhead_pct, err);
	a->said = true;
	return ret;
}

/* until SIGINT or SIGTERM: events, the rescan, expiry; 0, or the signal's number */
static int loop(struct agent *a)
{
	struct epoll_event ev[8];
	struct signalfd_siginfo si;
	uint64_t done;
	int64_t now;
	int n, i, ret;

	for (;;) {
		n = epoll_wait(a->epfd, ev, 8, LOOP_MS);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (i = 0; i < n; i++) {
			if (ev[i].data.fd == a->sigfd && read(a->sigfd, &si, sizeof(si)) > 0)
				return (int)si.ssi_signo;
			if (ev[i].data.fd == discover__fd(a->disc))
				discover__consume(a->disc);
			if (ev[i].data.fd == collector__done_fd(a->coll) &&
			    read(ev[i].data.fd, &done, sizeof(done)) < 0 && errno != EAGAIN)
				pr_debug("cannot read the attach thread's eventfd: %s\n",
					 strerror(errno));
		}
		settle(a);
		/* every turn: the BPF side wakes the reader only once the ring is a quarter full */
		collector__poll(a->coll, clock_ns(CLOCK_MONOTONIC));
		now = (int64_t)clock_ns(CLOCK_MONOTONIC);
		kube_changed(a, now);
		if (now >= a->next_rescan) {
			rescan(a);
			a->next_rescan = now + (int64_t)a->o.rescan_ns;
		}
		expire(a);
		mem_guard(a, now);
		ret = check_calibration(a);
		if (ret)
			return ret;
		duty_turn(a, now);
		if (a->o.snapshot_dir && now >= a->next_snapshot) {
			snapshots(a);
			a->next_snapshot = now + (int64_t)a->o.interval_ns;
		}
		publish(a);
	}
}

/* the token without trailing blanks; one error line and -errno when unusable */
static int load_token(const char *path, char **out)
{
	struct stat st;
	size_t n;
	int ret = read_file_at(AT_FDCWD, path, out, &n);

	if (ret) {
		pr_error("cannot read --token-file %s: %s\n", path, strerror(-ret));
		return ret;
	}
	while (n && strchr(" \t\r\n", (*out)[n - 1]))
		(*out)[--n] = 0;
	if (!n || strchr(*out, '\n')) {
		pr_error("--token-file %s must hold one token on one line; write e.g. the output "
			 "of 'openssl rand -hex 32' to it\n", path);
		return -EINVAL;
	}
	if (!stat(path, &st) && (st.st_mode & 0077))
		pr_warn("--token-file %s can be read by other users (mode %03o): chmod 600 it\n",
			path, (unsigned int)(st.st_mode & 0777));
	return 0;
}

static int start_kube(struct agent *a)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"),
		   *port = getenv("KUBERNETES_SERVICE_PORT"), *node = getenv("NODE_NAME");
	struct kubeapi_opts ko = { .sa_dir = a->o.kube_sa_dir, .node = node,
				   .refresh_ns = KUBE_REFRESH_NS };
	char url[512], err[1024];

	if (!node || !node[0]) {
		pr_error("--kube-api lists the pods of this node only, and NODE_NAME is not set: "
			 "set it from the downward API (fieldRef spec.nodeName)\n");
		return -EINVAL;
	}
	if (!a->o.kube_api_url && (!host || !port)) {
		pr_error("--kube-api: KUBERNETES_SERVICE_HOST and _PORT are not set, so this is "
			 "not a pod: give the API server's address as "
			 "--kube-api=https://HOST:PORT\n");
		return -EINVAL;
	}
	snprintf(url, sizeof(url), strchr(host ? host : "", ':') ? "https://[%s]:%s" :
		 "https://%s:%s", host, port);
	ko.url = a->o.kube_api_url ? a->o.kube_api_url : url;
	a->kube = kubeapi__start(&ko, err, sizeof(err));
	if (!a->kube) {
		pr_error("%s\n", err);
		return -EINVAL;
	}
	a->ep.kube = a->kube;
	return 0;
}

static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
}

/*
 * SIGINT and SIGTERM blocked from the start, in every thread (the ones
 * started later inherit it): one that arrives while the BPF objects load
 * waits for the loop and a clean stop.  Unblocked with an inherited
 * SIG_IGN (a shell's background job), it would be dropped.
 */
static void block_stop_signals(void)
{
	sigset_t set;

	stop_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* the loop's events: the stop signals, discovery, the attach thread */
static int setup_loop(struct agent *a, char *err, size_t errlen)
{
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t set;

	stop_signals(&set);
	signal(SIGPIPE, SIG_IGN);
	a->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	a->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (a->sigfd < 0 || a->epfd < 0) {
		snprintf(err, errlen, "cannot set up the agent's event loop: %s", strerror(errno));
		return -errno;
	}
	ev.data.fd = a->sigfd;
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->sigfd, &ev);
	ev.data.fd = discover__fd(a->disc);
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	ev.data.fd = collector__fd(a->coll);
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	ev.data.fd = collector__done_fd(a->coll);
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	return 0;
}

static int start_http(struct agent *a, char *err, size_t errlen)
{
	struct http_opts ho = {
		.token = a->token,
		.routes = agent_routes,
		.ctx = &a->ep,
		.max_connections = 64,
		.max_per_client = 16,
		.timeout_s = 10,
		.max_request_bytes = 32 * 1024,
	};

	http_parse_listen(a->o.listen, &ho.listen);
	a->http = http__start(&ho, err, errlen);
	if (!a->http)
		return -EINVAL;
	a->ep.http = a->http;
	return 0;
}

static void announce(struct agent *a)
{
	static const char *const unwind[] = {
		[SESSION_UNWIND_AUTO] = "auto", [SESSION_UNWIND_FP] = "fp",
		[SESSION_UNWIND_DWARF] = "dwarf",
	};
	char rate[32], addr[80];

	http__address(a->http, addr, sizeof(addr));
	fprintf(stderr, "culpert-bpf: agent listening on http://%s (%zu selectors, pid %d)\n",
		addr, a->o.n_selects + a->o.n_injects, (int)a->self);
	pr_info("culpert-bpf: collection options: --rate %s, %s, "
		"--unwind %s, --max-depth %u, %zu --span-fn, --max-overhead %g%%, --labels %s, "
		"--max-stacks %llu, --sampler %s\n",
		format_bytes(rate, sizeof(rate), (double)a->o.collect.rate),
		a->o.collect.inuse ? "--inuse" : "--no-inuse", unwind[a->o.collect.unwind],
		a->o.collect.max_depth, a->o.collect.n_span_fns,
		a->o.max_overhead_pct, a->o.labels == AGENT_LABELS_ALL ? "all" : "span",
		(unsigned long long)a->o.max_stacks, otel_mode_names[a->o.collect.sampler]);
	if (a->o.collect.n_span_fns)
		pr_warn("--span-fn is not applied by the agent yet: span names of functions are "
			"per process and the BPF object is shared; use USDT span probes\n");
}

/* the duty cycles' side of the collector: its probe-hit counters and its switch */
static void duty_read_all(void *ctx)
{
	collector__read_counts(ctx);
}

/* from the tick's read of them all: a map lookup per target was a fifth of an idle agent's CPU */
static int duty_counters(void *ctx, pid_t pid, uint64_t start, struct budget_counts *out)
{
	struct collector_state st;
	int ret = collector__state_read(ctx, pid, start, &st);

	out->alloc = st.calls_alloc;
	out->free = st.calls_free;
	out->alloc_stepped = st.calls_alloc_stepped;
	out->free_stepped = st.calls_free_stepped;
	return ret;
}

static int duty_returns(void *ctx, pid_t pid, uint64_t start, bool *session, bool *every_return)
{
	struct collector_state st;
	int ret = collector__state(ctx, pid, start, &st);

	*session = st.session;
	*every_return = st.every_return;
	return ret;
}

static void duty_prog_run_ns(void *ctx, uint64_t *alloc_ns, uint64_t *free_ns)
{
	collector__prog_run_ns(ctx, alloc_ns, free_ns);
}

static int duty_set_free(void *ctx, pid_t pid, uint64_t start, bool on)
{
	return collector__set_free_probes(ctx, pid, start, on);
}

static int duty_set_alloc(void *ctx, pid_t pid, uint64_t start, bool on)
{
	return collector__set_alloc_probes(ctx, pid, start, on);
}

/* the budget: the calibration starts on its own thread now, the cycles with the targets */
static int start_duty(struct agent *a)
{
	/* no drop_inuse: the free probes are cycled with the allocation probes instead */
	static const struct duty_ops ops = { .read_all = duty_read_all,
					     .counters = duty_counters,
					     .set_alloc = duty_set_alloc,
					     .set_free = duty_set_free,
					     .returns = duty_returns,
					     .prog_run_ns = duty_prog_run_ns };
	struct duty_opts o = {
		.max_pct = a->o.max_overhead_pct,
		.period_ns = a->o.duty_period_ns,
		.inuse = a->o.collect.inuse,
		.max_targets = a->o.max_targets,
		.calibrate = true,
	};

	a->duty = duty__new(&o, &ops, a->coll);
	if (!a->duty)
		pr_error("cannot start the agent: %s\n", strerror(ENOMEM));
	a->ep.duty = a->duty;
	return a->duty ? 0 : -ENOMEM;
}

/*
 * Each target holds a few descriptors (its links, its memory, its mapping
 * watch): a soft limit of 1024, the default of many systems and
 * container runtimes, ran out at about 100 targets, and the calibration
 * with them.  The hard limit is ours to take.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_warn("cannot raise the open files limit to its hard limit %llu: %s\n",
			(unsigned long long)rl.rlim_max, strerror(errno));
	else
		pr_debug("open files limit raised to %llu\n", (unsigned long long)rl.rlim_max);
}

static int start(struct agent *a)
{
	const char *blocker = features__blocker();
	char err[1024];
	int ret;

	block_stop_signals();
	if (blocker) {
		pr_error("%s\n", blocker);
		return -EPERM;
	}
	if (a->o.token_file && load_token(a->o.token_file, &a->token))
		return -EINVAL;
	raise_nofile();
	memlimit__init(&a->mem, a->o.max_memory);
	if (a->mem.limit)
		pr_info("culpert-bpf: memory limit %llu bytes (%s)\n",
			(unsigned long long)a->mem.limit, a->mem.source);
	a->targets = targets__new(a->o.max_targets);
	a->pictures = a->targets ? pictures__new(a->targets) : NULL;
	if (!a->pictures) {
		pr_error("cannot start the agent: %s\n", strerror(a->targets ? errno : ENOMEM));
		return -ENOMEM;
	}
	a->ep.targets = a->targets;
	a->ep.pictures = a->pictures;
	a->ep.opts = &a->o;
	a->ep.start_unix_ns = (int64_t)clock_ns(CLOCK_REALTIME);
	pthread_mutex_init(&a->ep.stats.lock, NULL);
	a->disc = discover__open(a->o.max_targets, a->o.hold_start, on_discovered, a, err, sizeof(err));
	if (a->disc)
		a->coll = collector__new(&a->o.collect, a->o.max_targets, a->o.max_stacks,
					 a->o.labels == AGENT_LABELS_ALL, a->inj != NULL, err,
					 sizeof(err));
	if (a->coll && a->mem.limit)
		collector__set_memlimit(a->coll, &a->mem);
	ret = a->disc && a->coll ? setup_loop(a, err, sizeof(err)) : -EINVAL;
	a->ep.profile = collector__profile;
	a->ep.state = collector__state_cb;
	a->ep.profile_ctx = a->coll;
	a->ep.span_totals = collector__span_totals;
	a->ep.span_totals_ctx = a->coll;
	if (ret) {
		pr_error("%s\n", err);
		return ret;
	}
	if (start_duty(a))
		return -ENOMEM;
	if (a->o.hold_start)
		selectors__names(a->sel, hold_name, a);
	if (a->o.hold_start && a->inj)
		selectors__names(a->inj, hold_name, a);
	if (a->o.hold_start && !discover__holds_forks(a->disc))
		pr_info("culpert-bpf: this kernel cannot stop a new child (bpf_send_signal_task, "
			"6.13+): a target's children are probed once they are seen, not from their "
			"first allocation\n");
	if (a->o.kube_api && start_kube(a))
		return -EINVAL;
	if (a->o.snapshot_dir)
		snapshot__clean(a->o.snapshot_dir);
	/* the processes already there, before anyone can ask: events cover what starts meanwhile */
	rescan(a);
	a->next_rescan = (int64_t)clock_ns(CLOCK_MONOTONIC) + (int64_t)a->o.rescan_ns;
	a->next_snapshot = (int64_t)clock_ns(CLOCK_MONOTONIC) + (int64_t)a->o.interval_ns;
	publish(a);
	if (start_http(a, err, sizeof(err))) {
		pr_error("--listen %s: %s\n", a->o.listen, err);
		return -EINVAL;
	}
	announce(a);
	return 0;
}

/*
 * Many targets: the kernel's release of a uprobe link walks every process
 * mapping the probed file, for each consumer of the same probe (every
 * target's link on libc's malloc is one), under that probe's lock, so
 * overlapping the releases does not help: minutes for 1000 targets.  A
 * child holding a copy of every descriptor makes the agent's own closes
 * cheap; it exits once the agent has (the write end of its pipe closes
 * last), and the kernel releases the links in its exit, in the
 * background.  Fewer targets: released in the agent (about 100 ms).
 */
#define STOP_HOLD_TARGETS 32

static void hold_links(struct agent *a)
{
	uint64_t *starts;
	pid_t *pids, child;
	int p[2];
	char c;
	size_t n;

	/* a start that failed before the table: nothing to hold */
	if (!a->targets || targets__live_pids(a->targets, &pids, &starts, &n))
		return;
	free(pids);
	free(starts);
	if (n <= STOP_HOLD_TARGETS || pipe(p))
		return;
	child = fork();
	if (child == 0) {
		close(p[1]);
		/* every other descriptor held until the agent is gone; nothing else runs here */
		while (read(p[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(p[0]);
	if (child < 0)
		close(p[1]);
	/* else p[1] stays open until the agent exits: the child's signal */
	pr_debug("%zu targets: their links released by pid %d after the agent exits\n", n,
		 (int)child);
}

static void stop(struct agent *a)
{
	size_t i;

	/* no process stays stopped for an attach that will not come */
	for (i = 0; i < a->n_held; i++) {
		if (a->held[i].held)
			discover__release(a->disc, a->held[i].pid, a->held[i].start);
		if (a->held[i].what == DISCOVERED_ENTRY)
			discover__unhold_entry(a->disc, a->held[i].pid);
	}
	free(a->held);
	/* HTTP first: no handler may look at what is freed below */
	collector__stop(a->coll);
	http__stop(a->http);
	pictures__free(a->pictures);
	hold_links(a);
	collector__free(a->coll);
	kubeapi__stop(a->kube);
	duty__free(a->duty);
	discover__free(a->disc);
	targets__free(a->targets);
	selectors__free(a->sel);
	selectors__free(a->inj);
	if (a->sigfd > 0)
		close(a->sigfd);
	if (a->epfd > 0)
		close(a->epfd);
	free(a->token);
	free(a->pending);
	agent_opts__free(&a->o);
}

int cmd_agent(int argc, char **argv)
{
	struct agent a = { .sigfd = -1, .epfd = -1 };
	int ret;

	a.self = getpid();
	/*
	 * A thread per HTTP connection: glibc would give each its own arena
	 * (up to 8 per core), and a profile serialized on each leaves its
	 * arena's pages behind.  Two arenas bound the agent's RSS whatever
	 * the clients do.
	 */
	mallopt(M_ARENA_MAX, 2);
	/*
	 * An encoding's arrays (megabytes each) are mapped and unmapped with
	 * it: glibc's threshold would otherwise rise past them after the first
	 * free, and the next encodings' pages would stay in the arenas, the
	 * RSS a memory limit sees (docs/agent.md, "Memory").
	 */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	ret = agent_opts__parse(argc, argv, &a.o);
	if (ret || selectors__parse("--select", a.o.selects, a.o.n_selects, &a.sel) ||
	    (a.o.n_injects && selectors__parse("--inject", a.o.injects, a.o.n_injects, &a.inj))) {
		agent_opts__free(&a.o);
		return ret == CMD_HELP ? CMD_OK : CMD_ERROR;
	}
	ret = start(&a);
	if (!ret) {
		ret = loop(&a);
		if (ret > 0)
			fprintf(stderr, "culpert-bpf: %s: agent stopping\n", strsignal(ret));
		else if (!a.said)
			pr_error("the agent's event loop failed: %s\n", strerror(-ret));
	}
	stop(&a);
	return ret > 0 ? CMD_OK : CMD_FAIL;
}
