/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which processes exist: the kernel's exec, fork and exit events
 * (bpf/discover.bpf.c, BTF tracepoints, never tracefs) as they happen, and
 * a walk of /proc as the safety net for what the ring buffer dropped or a
 * process that was there before the agent.  A process is named by its pid
 * and its start time (/proc/PID/stat starttime, clock ticks since boot):
 * a pid the kernel reuses is another process.
 */
#ifndef CULPERT_DISCOVER_H
#define CULPERT_DISCOVER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* what /proc says about a process */
struct proc_info {
	pid_t pid;
	uint64_t start_ticks;
	char state;		/* /proc/PID/stat: 'R', 'S', 'Z' (zombie), ... */
	bool kernel_thread;
	char comm[16];
	char exe[PATH_MAX];	/* "" when it cannot be read */
	char *cgroup_text;	/* /proc/PID/cgroup, malloc'd; "" when it cannot be read */
};

/* now, CLOCK_BOOTTIME: the clock of the events' times */
uint64_t boot_ns(void);
/* 0, -ESRCH (gone, or a kernel thread), or -errno */
int proc_info__read(pid_t pid, struct proc_info *pi);
void proc_info__free(struct proc_info *pi);
/* the start of a process: 0, or -ESRCH when it is gone (or a zombie, when live_only) */
int proc_start_ticks(pid_t pid, bool live_only, uint64_t *out);
/* cb(ctx, pid) for every process in /proc; 0 or -errno */
int proc_scan(void (*cb)(void *ctx, pid_t pid), void *ctx);
/* cb(ctx, child) for the children of every thread of pid (/proc/PID/task/TID/children) */
int proc_children(pid_t pid, void (*cb)(void *ctx, pid_t pid), void *ctx);

enum discover_what { DISCOVERED_EXEC, DISCOVERED_FORK, DISCOVERED_EXIT };

/* time_ns: when it happened, CLOCK_BOOTTIME (boot_ns() is the same clock) */
typedef void (*discover_fn)(void *ctx, enum discover_what what, pid_t pid, uint64_t start_ticks,
			    uint64_t time_ns);

struct discover_counts {
	uint64_t execs, forks, exits;
	uint64_t lost;		/* events the ring buffer had no room for */
};

struct discover;

/* load and attach the BPF side; NULL and a user-facing reason in err */
struct discover *discover__open(size_t max_tracked, discover_fn fn, void *ctx, char *err,
				size_t errlen);
void discover__free(struct discover *d);
/* the fd to poll; discover__consume() calls fn for each event waiting */
int discover__fd(const struct discover *d);
int discover__consume(struct discover *d);
/* forks and exits are reported for tracked processes only */
int discover__track(struct discover *d, pid_t pid);
void discover__untrack(struct discover *d, pid_t pid);
void discover__counts(const struct discover *d, struct discover_counts *c);

#endif /* CULPERT_DISCOVER_H */
