/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The records of bpf/discover.bpf.c, the agent's process discovery, shared
 * with userspace (user/agent/discover.c).  No includes, fixed-width types,
 * explicit padding, as bpf/culpert.h.
 */
#ifndef CULPERT_DISCOVER_EVENT_H
#define CULPERT_DISCOVER_EVENT_H

/* what happened to the process; the first __u32 of a record */
enum discover_kind {
	DISCOVER_EXEC = 1,	/* a process exec'd a program (every process of the machine) */
	DISCOVER_FORK,		/* a tracked process forked a new process (threads are not) */
	DISCOVER_EXIT,		/* the last thread of a tracked process exited */
	DISCOVER_ENTRY,		/* a held process reached its program's entry point */
};

struct discover_event {
	__u32 kind;		/* enum discover_kind */
	__u32 tgid;		/* the process (for DISCOVER_FORK: the child) */
	__u32 parent_tgid;	/* DISCOVER_FORK: the tracked parent; else 0 */
	__u32 held;		/* 1: the process is stopped (SIGSTOP) until the agent lets it go */
	__u64 start_boottime;	/* start, ns since boot: with tgid, the process's identity */
	__u64 time_boottime;	/* when it happened, ns since boot (CLOCK_BOOTTIME) */
	char comm[16];		/* TASK_COMM_LEN */
};

/* the keys of the hold_comms map: a comm, NUL-padded */
#define DISCOVER_COMM_LEN	16

/* the ring buffer between the two; events are small and rare next to allocations */
#define DISCOVER_RINGBUF_BYTES	(256 * 1024)

#endif /* CULPERT_DISCOVER_EVENT_H */
