/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's targets: the processes it picked up, live or exited and kept
 * for --keep-exited.  The profiling thread is the only writer; HTTP
 * handlers read copies.  Every call takes the table's lock for as long as
 * a copy takes, never longer, so a slow client cannot hold up profiling.
 * Bounded: at most --max-targets entries, live and exited together; a new
 * live target evicts the oldest exited one, and when all are live it is
 * refused (and counted).
 */
#ifndef CULPERT_TARGETS_H
#define CULPERT_TARGETS_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "container.h"

struct agent_target {
	pid_t pid;
	uint64_t start_ticks;		/* /proc/PID/stat starttime: with pid, the identity */
	uint64_t seen_ns;		/* CLOCK_BOOTTIME after /proc was last read for it */
	uint64_t start_stack;		/* /proc/PID/stat startstack then: another after an exec */
	char comm[16];
	char exe[PATH_MAX];		/* /proc/PID/exe as the kernel reports it */
	struct container_info ci;	/* container, pod, cgroup path */
	int64_t since_ns;		/* picked up, Unix ns */
	int64_t exited_ns;		/* 0 while live */
	char exit_reason[16];		/* "exited", "exec'd" (another program), "gone" */
	bool inject;			/* selected by --inject: profiled through an injected sampler */
};

struct targets_counters {
	uint64_t picked_up;
	uint64_t dropped;		/* removed after --keep-exited, or evicted */
	uint64_t refused;		/* matched while the table was full of live targets */
	size_t live, exited;
};

struct targets;

struct targets *targets__new(size_t max);
void targets__free(struct targets *t);

/*
 * Add a live target.  0; -EEXIST when that process is there already;
 * -ENOSPC when the table is full of live targets (counted as refused).
 * *evicted (may be NULL) gets the exited target it replaced, pid 0 if none.
 */
int targets__add(struct targets *t, const struct agent_target *a, struct agent_target *evicted);
/* the live target of pid (a copy); false if none */
bool targets__get_live(struct targets *t, pid_t pid, struct agent_target *out);
/* replace the live target of the same pid and start (names refreshed); -ENOENT if gone */
int targets__update(struct targets *t, const struct agent_target *a);
/*
 * The live target of pid (of that start, or any if start is 0) has exited
 * at now_ns; 0 and a copy in *out (may be NULL), or -ENOENT.
 */
int targets__mark_exited(struct targets *t, pid_t pid, uint64_t start, const char *reason,
			 int64_t now_ns, struct agent_target *out);
/* remove the first exited target past keep_ns into *out; false if none */
bool targets__expire_one(struct targets *t, int64_t now_ns, uint64_t keep_ns,
			 struct agent_target *out);
/* a copy of every target, by pid then pick-up time; *v freed by the caller.  0 or -ENOMEM */
int targets__copy(struct targets *t, struct agent_target **v, size_t *n);
/* the pids of the live targets; *v freed by the caller.  0 or -ENOMEM */
int targets__live_pids(struct targets *t, pid_t **v, uint64_t **starts, size_t *n);
void targets__counters(struct targets *t, struct targets_counters *c);

#endif /* CULPERT_TARGETS_H */
