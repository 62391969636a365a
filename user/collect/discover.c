// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "discover.h"
#include "discover.skel.h"
#include "discover_event.h"
#include "holdwatch.h"
#include "log.h"
#include "procmaps.h"
#include "readfile.h"

/* PF_KTHREAD in /proc/PID/stat's flags: kernel threads have no program to profile */
#define PF_KTHREAD_FLAG 0x00200000UL

/* a process stopped at exec whose entry point stops it again (discover__hold_entry) */
struct entry_hold {
	pid_t pid;
	struct bpf_link *link;
};

struct discover {
	struct discover_bpf *skel;
	struct ring_buffer *rb;
	discover_fn fn;
	void *ctx;
	uint64_t ns_per_tick;
	struct discover_counts counts;
	bool hold;			/* discover__open()'s: processes may be stopped */
	bool fork_hold;			/* the kernel stops a tracked process's children */
	bool closing;			/* discover__free: only let held processes go */
	struct entry_hold *holds;	/* max_tracked of them */
	size_t n_holds;
	int watch_fd;			/* the watchdog's pipe (holdwatch.h); -1: none */
};

/* the held processes' map holds this many per tracked process, for the forks among them */
#define HELD_PER_TRACKED 16

/* "pid (comm) S ppid ...": comm may hold ')' and blanks, so fields start after the last ')' */
static int parse_stat(const char *text, struct proc_info *pi)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')'), *p;
	unsigned long long start = 0;
	unsigned long flags = 0;
	int field;

	if (!open || !close || close < open || close[1] != ' ')
		return -EINVAL;
	snprintf(pi->comm, sizeof(pi->comm), "%.*s", (int)(close - open - 1), open + 1);
	pi->state = close[2];
	/* field 3 is the state; flags is field 9, starttime 22, startstack 28 */
	for (p = close + 2, field = 3; *p && field < 28; field++) {
		p += strcspn(p, " ");
		p += strspn(p, " ");
		if (field + 1 == 9)
			flags = strtoul(p, NULL, 10);
		else if (field + 1 == 22 && sscanf(p, "%llu", &start) != 1)
			return -EINVAL;
	}
	if (field < 22)
		return -EINVAL;
	pi->start_ticks = start;
	pi->start_stack = field == 28 ? strtoull(p, NULL, 10) : 0;
	pi->kernel_thread = flags & PF_KTHREAD_FLAG;
	return 0;
}

static int read_stat(pid_t pid, struct proc_info *pi)
{
	char path[32], *text;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ret = read_file_at(AT_FDCWD, path, &text, NULL);
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	ret = parse_stat(text, pi);
	free(text);
	return ret;
}

int proc_start_ticks(pid_t pid, bool live_only, uint64_t *out)
{
	struct proc_info pi = { 0 };
	int ret = read_stat(pid, &pi);

	if (ret)
		return ret;
	if (live_only && (pi.state == 'Z' || pi.state == 'X'))
		return -ESRCH;
	*out = pi.start_ticks;
	return 0;
}

int proc_info__read(pid_t pid, struct proc_info *pi)
{
	char path[64];
	ssize_t n;
	int ret;

	memset(pi, 0, sizeof(*pi));
	pi->pid = pid;
	ret = read_stat(pid, pi);
	if (ret)
		return ret;
	if (pi->kernel_thread || pi->state == 'Z' || pi->state == 'X')
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, pi->exe, sizeof(pi->exe) - 1);
	pi->exe[n > 0 ? n : 0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (read_file_at(AT_FDCWD, path, &pi->cgroup_text, NULL))
		pi->cgroup_text = strdup("");
	if (!pi->cgroup_text)
		return -ENOMEM;
	return 0;
}

void proc_info__free(struct proc_info *pi)
{
	free(pi->cgroup_text);
	pi->cgroup_text = NULL;
}

int proc_scan(void (*cb)(void *ctx, pid_t pid), void *ctx)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	long pid;
	char *end;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = strtol(de->d_name, &end, 10);
		if (!*end && pid > 0)
			cb(ctx, (pid_t)pid);
	}
	closedir(d);
	return 0;
}

/* "12 34 " */
static void each_pid(const char *text, void (*cb)(void *ctx, pid_t pid), void *ctx)
{
	const char *p = text;
	char *end;
	long v;

	for (;;) {
		p += strspn(p, " \n");
		v = strtol(p, &end, 10);
		if (end == p)
			return;
		if (v > 0)
			cb(ctx, (pid_t)v);
		p = end;
	}
}

int proc_children(pid_t pid, void (*cb)(void *ctx, pid_t pid), void *ctx)
{
	char path[64], *text;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid, de->d_name);
		/* CONFIG_PROC_CHILDREN; without it the rescan finds them */
		if (read_file_at(AT_FDCWD, path, &text, NULL))
			continue;
		each_pid(text, cb, ctx);
		free(text);
	}
	closedir(d);
	return 0;
}

int proc_release(pid_t pid, uint64_t start_ticks)
{
	uint64_t now;
	int ret = proc_start_ticks(pid, false, &now);

	/* the same process still (a held one can only die of SIGKILL): never another's */
	if (ret || now != start_ticks)
		return ret ? ret : -ESRCH;
	return kill(pid, SIGCONT) ? -errno : 0;
}

int discover__release(struct discover *d, pid_t pid, uint64_t start_ticks)
{
	__u32 key = (__u32)pid;
	__u64 start;
	int fd = bpf_map__fd(d->skel->maps.held_procs);

	/* its entry, not a later process's of the same pid */
	if (!bpf_map_lookup_elem(fd, &key, &start) && start / d->ns_per_tick == start_ticks)
		bpf_map_delete_elem(fd, &key);
	return proc_release(pid, start_ticks);
}

/*
 * The watchdog, forked before anything is attached, so that it holds no
 * link: it knows the programs that stop processes by their ids
 */
static int start_watchdog(struct discover *d)
{
	struct bpf_program *progs[] = { d->skel->progs.discover_exec,
					d->skel->progs.discover_fork_hold,
					d->skel->progs.discover_entry };
	struct bpf_prog_info info;
	__u32 ids[3], len;
	size_t i, n = 0;

	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		if (bpf_program__fd(progs[i]) < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len))
			return -errno;
		ids[n++] = info.id;
	}
	return holdwatch__start(bpf_map__fd(d->skel->maps.held_procs), ids, n, d->ns_per_tick,
				&d->watch_fd);
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct discover *d = ctx;
	const struct discover_event *e = data;
	uint64_t start;
	enum discover_what what;

	if (len < sizeof(*e))
		return 0;
	start = e->start_boottime / d->ns_per_tick;
	if (d->closing) {
		if (e->held)
			discover__release(d, (pid_t)e->tgid, start);
		return 0;
	}
	switch (e->kind) {
	case DISCOVER_EXEC:
		what = DISCOVERED_EXEC;
		d->counts.execs++;
		break;
	case DISCOVER_FORK:
		what = DISCOVERED_FORK;
		d->counts.forks++;
		break;
	case DISCOVER_EXIT:
		what = DISCOVERED_EXIT;
		d->counts.exits++;
		break;
	case DISCOVER_ENTRY:
		what = DISCOVERED_ENTRY;
		d->counts.entries++;
		break;
	default:
		return 0;
	}
	d->counts.held += e->held != 0;
	/* /proc/PID/stat's starttime is nsec_to_clock_t(start_boottime) */
	d->fn(d->ctx, what, (pid_t)e->tgid, start, e->time_boottime, e->held != 0);
	return 0;
}

static struct discover *fail_open(struct discover *d, char *err, size_t errlen, const char *what,
				  int ret)
{
	snprintf(err, errlen, "cannot %s the agent's process discovery (BPF tracepoints "
		 "sched_process_exec/fork/exit): %s; run with -vv for libbpf's reason", what,
		 strerror(ret < 0 ? -ret : ret));
	discover__free(d);
	return NULL;
}

/* a function in the kernel's BTF: a kfunc the BPF side may call */
static bool kernel_has_func(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool found;

	if (!btf)
		return false;
	found = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) >= 0;
	btf__free(btf);
	return found;
}

struct discover *discover__open(size_t max_tracked, bool hold, discover_fn fn, void *ctx,
				char *err, size_t errlen)
{
	struct discover *d = calloc(1, sizeof(*d));
	long hz = sysconf(_SC_CLK_TCK);
	int ret;

	if (!d)
		return fail_open(d, err, errlen, "allocate", ENOMEM);
	d->fn = fn;
	d->ctx = ctx;
	d->watch_fd = -1;
	d->ns_per_tick = 1000000000ULL / (uint64_t)(hz > 0 ? hz : 100);
	d->holds = calloc(max_tracked ?: 1, sizeof(*d->holds));
	if (!d->holds)
		return fail_open(d, err, errlen, "allocate", ENOMEM);
	d->skel = discover_bpf__open();
	if (!d->skel)
		return fail_open(d, err, errlen, "open", errno);
	/* one of the two fork programs: the one that holds the child needs a 6.13+ kfunc */
	d->hold = hold;
	d->fork_hold = hold && kernel_has_func("bpf_send_signal_task");
	bpf_program__set_autoload(d->fork_hold ? d->skel->progs.discover_fork :
				  d->skel->progs.discover_fork_hold, false);
	/* attached per held process, by discover__hold_entry() */
	bpf_program__set_autoattach(d->skel->progs.discover_entry, false);
	ret = bpf_map__set_max_entries(d->skel->maps.tracked_tgids, (__u32)max_tracked);
	ret = ret ?: bpf_map__set_max_entries(d->skel->maps.hold_entry, (__u32)max_tracked);
	ret = ret ?: bpf_map__set_max_entries(d->skel->maps.held_procs,
					      (__u32)(max_tracked * HELD_PER_TRACKED));
	ret = ret ?: discover_bpf__load(d->skel);
	if (ret)
		return fail_open(d, err, errlen, "load", ret);
	/* nothing is ever stopped without it: a process held when the agent died would stay so */
	ret = hold ? start_watchdog(d) : 0;
	if (ret)
		return fail_open(d, err, errlen, "start the watchdog of", ret);
	ret = discover_bpf__attach(d->skel);
	if (ret)
		return fail_open(d, err, errlen, "attach", ret);
	d->rb = ring_buffer__new(bpf_map__fd(d->skel->maps.discover_events), on_event, d, NULL);
	if (!d->rb)
		return fail_open(d, err, errlen, "read", errno);
	d->n_holds = max_tracked;
	return d;
}

void discover__free(struct discover *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n_holds; i++)
		bpf_link__destroy(d->holds[i].link);
	/* no more stops; then every process stopped whose record is unread goes on */
	if (d->skel)
		discover_bpf__detach(d->skel);
	d->closing = true;
	if (d->rb)
		ring_buffer__consume(d->rb);
	ring_buffer__free(d->rb);
	discover_bpf__destroy(d->skel);
	/* the watchdog finds nothing left to let go, and exits once the programs are gone */
	if (d->watch_fd >= 0)
		close(d->watch_fd);
	free(d->holds);
	free(d);
}

bool discover__holds_forks(const struct discover *d)
{
	return d->fork_hold;
}

int discover__hold_comm(struct discover *d, const char *comm)
{
	char key[DISCOVER_COMM_LEN] = { 0 };
	__u8 one = 1;

	if (!d->hold)
		return -EPERM;
	/* the kernel keeps the first 15 bytes of a program's name as its comm */
	strncpy(key, comm, sizeof(key) - 1);
	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.hold_comms), key, &one, BPF_ANY))
		return -errno;
	return 0;
}

/* the auxiliary vector's value of type for pid: AT_ENTRY, AT_BASE */
static int auxv_get(pid_t pid, uint64_t type, uint64_t *out)
{
	char path[64], *text;
	size_t len, i;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	ret = read_file_at(AT_FDCWD, path, &text, &len);
	if (ret)
		return ret;
	ret = -ENOENT;
	for (i = 0; i + 2 * sizeof(uint64_t) <= len; i += 2 * sizeof(uint64_t)) {
		uint64_t kv[2];

		memcpy(kv, text + i, sizeof(kv));
		if (kv[0] == type) {
			*out = kv[1];
			ret = 0;
			break;
		}
	}
	free(text);
	return ret;
}

bool proc_has_loader(pid_t pid)
{
	uint64_t base = 0;

	/* AT_BASE: where the kernel mapped the program's interpreter; 0 for a static one */
	return !auxv_get(pid, AT_BASE, &base) && base;
}

int discover__hold_entry(struct discover *d, pid_t pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct entry_hold *h = NULL;
	struct procmaps maps = { 0 };
	const struct procmap *m;
	char path[96];
	uint64_t entry;
	__u32 key = (__u32)pid;
	__u8 one = 1;
	size_t i;
	int ret;

	for (i = 0; i < d->n_holds && !h; i++)
		if (!d->holds[i].link)
			h = &d->holds[i];
	if (!h)
		return -ENOSPC;
	ret = auxv_get(pid, AT_ENTRY, &entry);
	ret = ret ?: procmaps__read(pid, &maps);
	if (ret)
		return ret;
	m = procmaps__find(&maps, entry);
	if (!m || !procmap__is_file(m)) {
		procmaps__free(&maps);
		return -ENOENT;
	}
	/* the mapped file itself, whatever mount namespace the process sees it in */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	entry = entry - m->start + m->offset;
	procmaps__free(&maps);
	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.hold_entry), &key, &one, BPF_ANY))
		return -errno;
	h->link = bpf_program__attach_uprobe_opts(d->skel->progs.discover_entry, pid, path,
						  (size_t)entry, &uo);
	if (!h->link) {
		ret = -errno;
		bpf_map_delete_elem(bpf_map__fd(d->skel->maps.hold_entry), &key);
		return ret;
	}
	h->pid = pid;
	return 0;
}

void discover__unhold_entry(struct discover *d, pid_t pid)
{
	__u32 key = (__u32)pid;
	size_t i;

	for (i = 0; i < d->n_holds; i++) {
		if (!d->holds[i].link || d->holds[i].pid != pid)
			continue;
		bpf_link__destroy(d->holds[i].link);
		d->holds[i].link = NULL;
		bpf_map_delete_elem(bpf_map__fd(d->skel->maps.hold_entry), &key);
	}
}

int discover__fd(const struct discover *d)
{
	return ring_buffer__epoll_fd(d->rb);
}

int discover__consume(struct discover *d)
{
	int n = ring_buffer__consume(d->rb);

	return n < 0 ? n : 0;
}

int discover__track(struct discover *d, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u8 one = 1;

	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.tracked_tgids), &key, &one, BPF_ANY))
		return -errno;
	return 0;
}

void discover__untrack(struct discover *d, pid_t pid)
{
	__u32 key = (__u32)pid;

	/* -ENOENT: it was never tracked (the table was full), nothing to undo */
	bpf_map_delete_elem(bpf_map__fd(d->skel->maps.tracked_tgids), &key);
}

void discover__counts(const struct discover *d, struct discover_counts *c)
{
	*c = d->counts;
	c->lost = d->skel->bss->lost_events;
}
