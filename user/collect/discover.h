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
	uint64_t start_stack;	/* its stack's start, another at each exec (ASLR); 0: unknown */
	char state;		/* /proc/PID/stat: 'R', 'S', 'Z' (zombie), ... */
	bool kernel_thread;
	char comm[16];
	char exe[PATH_MAX];	/* "" when it cannot be read */
	char *cgroup_text;	/* /proc/PID/cgroup, malloc'd; "" when it cannot be read */
};

/* 0, -ESRCH (gone, or a kernel thread), or -errno */
int proc_info__read(pid_t pid, struct proc_info *pi);
void proc_info__free(struct proc_info *pi);
/* the start of a process: 0, or -ESRCH when it is gone (or a zombie, when live_only) */
int proc_start_ticks(pid_t pid, bool live_only, uint64_t *out);
/* cb(ctx, pid) for every process in /proc; 0 or -errno */
int proc_scan(void (*cb)(void *ctx, pid_t pid), void *ctx);
/* cb(ctx, child) for the children of every thread of pid (/proc/PID/task/TID/children) */
int proc_children(pid_t pid, void (*cb)(void *ctx, pid_t pid), void *ctx);

/*
 * Let a process the kernel stopped for the agent go on (SIGCONT), if it is
 * still the one of start_ticks; 0 or -errno (-ESRCH: gone).
 */
int proc_release(pid_t pid, uint64_t start_ticks);

/* the program of pid has a dynamic loader (the kernel mapped an interpreter for it) */
bool proc_has_loader(pid_t pid);

/* DISCOVERED_ENTRY: a process discover__hold_entry() named reached its entry point */
enum discover_what { DISCOVERED_EXEC, DISCOVERED_FORK, DISCOVERED_EXIT, DISCOVERED_ENTRY };

/*
 * time_ns: when it happened, CLOCK_BOOTTIME (clock_ns(CLOCK_BOOTTIME) reads it).
 * held: the kernel stopped the process for the agent (docs/agent.md,
 * "Pick-up at exec"); fn must see that proc_release() is called for it.
 */
typedef void (*discover_fn)(void *ctx, enum discover_what what, pid_t pid, uint64_t start_ticks,
			    uint64_t time_ns, bool held);

struct discover_counts {
	uint64_t execs, forks, exits;
	uint64_t entries;	/* held processes that reached their entry point */
	uint64_t held;		/* stops the kernel made for the agent */
	uint64_t lost;		/* events the ring buffer had no room for */
};

struct discover;

/*
 * load and attach the BPF side; NULL and a user-facing reason in err.  hold:
 * a tracked process's forked children, and programs discover__hold_comm()
 * names at exec, are stopped until fn's caller lets them go (proc_release());
 * without it nothing is ever stopped.
 */
struct discover *discover__open(size_t max_tracked, bool hold, discover_fn fn, void *ctx,
				char *err, size_t errlen);
void discover__free(struct discover *d);
/* the fd to poll; discover__consume() calls fn for each event waiting */
int discover__fd(const struct discover *d);
int discover__consume(struct discover *d);
/* forks and exits are reported for tracked processes only */
int discover__track(struct discover *d, pid_t pid);
void discover__untrack(struct discover *d, pid_t pid);
void discover__counts(const struct discover *d, struct discover_counts *c);
/*
 * The exec of a program of this comm stops it before its first instruction
 * (the event says held); 0 or -errno.
 */
int discover__hold_comm(struct discover *d, const char *comm);
/* a tracked process's children are stopped when forked (a 6.13+ kernel); else not */
bool discover__holds_forks(const struct discover *d);
/*
 * pid, stopped at its exec, stops again at its program's entry point
 * (AT_ENTRY: its libraries mapped, main not run yet), reported as
 * DISCOVERED_ENTRY, held.  0 or -errno; discover__unhold_entry() undoes it.
 */
int discover__hold_entry(struct discover *d, pid_t pid);
void discover__unhold_entry(struct discover *d, pid_t pid);
/*
 * proc_release() of a process the kernel stopped for the agent, and its
 * entry gone from the map of the watchdog that lets every held process go
 * if the agent dies (holdwatch.h)
 */
int discover__release(struct discover *d, pid_t pid, uint64_t start_ticks);

#endif /* CULPERT_DISCOVER_H */
